package cursortest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecorder(t *testing.T) {
	var r Recorder[string]
	assert.Nil(t, r.All(), "nothing recorded yet")
	assert.Equal(t, 0, r.Add("GET /a"))
	assert.Equal(t, 1, r.Add("POST /b"))
	assert.Equal(t, 2, r.Add("GET /c"))

	all := r.All()
	require.Equal(t, []string{"GET /a", "POST /b", "GET /c"}, all)
	all[0] = "changed"
	assert.Equal(t, "GET /a", r.All()[0], "All returns a copy")

	gets := r.Where(func(s string) bool { return s[0] == 'G' })
	assert.Equal(t, []string{"GET /a", "GET /c"}, gets)
	assert.Nil(t, r.Where(func(string) bool { return false }))
}

// Fakes record from their handlers' goroutines while the test reads.
func TestRecorderConcurrent(t *testing.T) {
	var r Recorder[int]
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				r.Add(i*100 + j)
				_ = r.All()
			}
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, v := range r.All() {
		seen[v] = true
	}
	assert.Len(t, seen, 800, "every Add is kept once")
}
