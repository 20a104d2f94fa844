package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPack(t *testing.T) {
	packed, n, err := pack([]byte("IQ== 0\naGVsbG8= 1\n\nIHdvcmxk 2\n"))
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, []byte("\x01!\x05hello\x06 world"), raw)

	for _, tc := range []struct{ name, src, want string }{
		{"ranks out of order", "IQ== 0\nIg== 2\n", "want 1"},
		{"no rank", "IQ==\n", "no rank"},
		{"not base64", "!!! 0\n", "line 1"},
		{"empty token", " 0\n", "does not fit"},
	} {
		_, _, err := pack([]byte(tc.src))
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}
