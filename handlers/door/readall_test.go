package door

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 300)
	cases := []struct {
		name        string
		size, limit int64
	}{
		{"declared size", int64(len(body)), 1 << 20},
		{"no size declared", -1, 1 << 20},
		{"declared too small", 10, 1 << 20},
		{"declared too large", int64(len(body)) * 2, 1 << 20},
		{"declared over the limit", 2 << 20, 1 << 20},
		{"declared larger than what is set aside", 1 << 20, 2 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per read: the buffer's edges are met on every read.
			got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), tc.size, tc.limit)
			require.NoError(t, err)
			assert.Equal(t, body, string(got))
		})
	}
	boom := errors.New("boom")
	_, err := readAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 3, 100)
	assert.ErrorIs(t, err, boom, "a read error is returned")
}

// TestReadAllSetsAsideLittleForADeclaredSize: a body that declares a
// large size and sends a few bytes costs at most maxPrealloc.
func TestReadAllSetsAsideLittleForADeclaredSize(t *testing.T) {
	got, err := readAll(strings.NewReader("{}"), 64<<20, 128<<20)
	require.NoError(t, err)
	assert.Equal(t, "{}", string(got))
	assert.LessOrEqual(t, cap(got), maxPrealloc)
}
