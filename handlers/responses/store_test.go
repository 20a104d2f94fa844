package responses

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a settable time for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestStore(max int, ttl time.Duration) (*Store, *clock) {
	return newTestStoreLimits(StoreLimits{Max: max, TTL: ttl})
}

func newTestStoreLimits(l StoreLimits) (*Store, *clock) {
	c := &clock{t: time.Unix(1700000000, 0)}
	s := NewStore(l)
	s.SetClock(c.now)
	return s, c
}

func stored(id string) Stored {
	return Stored{Response: Response{ID: id}, Items: []json.RawMessage{json.RawMessage(`{"role":"user","content":"` + id + `"}`)}}
}

func TestStoreKeepsTheLastN(t *testing.T) {
	s, c := newTestStore(3, time.Hour)
	for i := range 5 {
		s.Put(fmt.Sprintf("r%d", i), stored(fmt.Sprintf("r%d", i)))
		c.add(time.Second)
	}
	assert.Equal(t, 3, s.Len())
	for i, want := range []bool{false, false, true, true, true} {
		got, ok := s.Get(fmt.Sprintf("r%d", i))
		assert.Equal(t, want, ok, "r%d", i)
		if ok {
			assert.Equal(t, fmt.Sprintf("r%d", i), got.Response.ID)
		}
	}
}

func TestStoreExpires(t *testing.T) {
	s, c := newTestStore(10, time.Minute)
	s.Put("old", stored("old"))
	c.add(40 * time.Second)
	s.Put("new", stored("new"))
	c.add(30 * time.Second) // old is 70s old, new 30s

	_, ok := s.Get("old")
	assert.False(t, ok, "expired")
	_, ok = s.Get("new")
	assert.True(t, ok)
	assert.Equal(t, 1, s.Len(), "an expired response is dropped when it is asked for")

	c.add(time.Minute)
	s.Put("newer", stored("newer"))
	assert.Equal(t, 1, s.Len(), "putting evicts the expired ones")
	assert.False(t, s.Delete("new"), "an expired one is not deleted: it was gone")
}

func TestStoreDelete(t *testing.T) {
	s, _ := newTestStore(10, time.Minute)
	s.Put("a", stored("a"))
	assert.True(t, s.Delete("a"))
	assert.False(t, s.Delete("a"))
	_, ok := s.Get("a")
	assert.False(t, ok)
	assert.Zero(t, s.Len())
}

func TestStoreOfNoneKeepsNothing(t *testing.T) {
	s, _ := newTestStore(0, time.Minute)
	s.Put("a", stored("a"))
	_, ok := s.Get("a")
	assert.False(t, ok)
	assert.Zero(t, s.Len())
}

func TestStoreReplace(t *testing.T) {
	s, _ := newTestStore(2, time.Minute)
	s.Put("a", stored("a"))
	s.Put("a", Stored{Response: Response{ID: "a", Status: StatusCompleted}})
	got, ok := s.Get("a")
	require.True(t, ok)
	assert.Equal(t, StatusCompleted, got.Response.Status)
	assert.Equal(t, 1, s.Len())
}

func TestStoreConcurrent(t *testing.T) {
	s, _ := newTestStore(50, time.Minute)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("g%d-%d", g, i)
				s.Put(id, stored(id))
				s.Get(id)
				if i%3 == 0 {
					s.Delete(id)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, s.Len(), 50)
}

func TestStoreByteBudget(t *testing.T) {
	big := func(id string, n int) Stored {
		return Stored{Response: Response{ID: id}, Items: []json.RawMessage{json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}}
	}
	one := big("x", 10_000).size()
	s, _ := newTestStoreLimits(StoreLimits{Max: 100, MaxBytes: 3 * one, TTL: time.Hour})
	for i := range 5 {
		s.Put(fmt.Sprintf("r%d", i), big(fmt.Sprintf("r%d", i), 10_000))
	}
	assert.Equal(t, 3, s.Len(), "the oldest go first to stay within the bytes")
	assert.Equal(t, 3*one, s.Bytes())
	_, ok := s.Get("r1")
	assert.False(t, ok)
	_, ok = s.Get("r4")
	assert.True(t, ok)

	s.Put("huge", big("huge", 40_000))
	_, ok = s.Get("huge")
	assert.False(t, ok, "a response over the whole budget is not kept")
	assert.Equal(t, 3, s.Len(), "and evicts nothing")

	assert.True(t, s.Delete("r4"))
	assert.Equal(t, 2*one, s.Bytes(), "deleting gives its bytes back")
}

func TestStoredSize(t *testing.T) {
	instr := "be brief"
	st := Stored{
		Response: Response{Tools: []json.RawMessage{json.RawMessage(`{"type":"web_search"}`)}, Instructions: &instr,
			Output: []OutputItem{{Type: ItemMessage, Text: "hello"}, {Type: ItemFunctionCall, Arguments: `{"a":1}`}}},
		Items: []json.RawMessage{json.RawMessage(`"abc"`)},
	}
	assert.EqualValues(t, 512+5+21+len(instr)+5+7, st.size())
}
