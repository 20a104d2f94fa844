package mcp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScrub(t *testing.T) {
	cases := []struct{ in, want string }{
		{`Post "https://mcp.example.com/v1/mcp?api_key=s3cret": dial tcp: refused`, `Post "https://mcp.example.com": dial tcp: refused`},
		{"see http://user:pw@h.example:8080/x?y=z and https://b.example/", "see http://h.example:8080 and https://b.example"},
		{"line\nbreak\x1b[31m", "line break [31m"},
		{"no url here", "no url here"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Scrub(tc.in), tc.in)
	}
	long := Scrub(strings.Repeat("é", 1000))
	assert.LessOrEqual(t, len(long), maxErrorText+len("…"))
	assert.True(t, strings.HasSuffix(long, "…"))
	assert.Equal(t, "https://h.example", ShortURL("https://h.example/p?q=1"))
}

// TestReadyHidesURL: a configured server's error in /ready (States) and
// the log shows its URL cut to scheme and host, not its query's key.
func TestReadyHidesURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	var log syncBuffer
	b := startBridge(t, Options{Servers: map[string]ServerConfig{"remote": {URL: u + "/mcp?api_key=s3cret"}},
		ConnectTimeout: 2 * time.Second, MinBackoff: time.Hour, Logger: newTextLogger(&log)})
	st := waitState(t, b, "remote", StateDown)
	assert.NotEmpty(t, st.Error)
	assert.NotContains(t, st.Error, "s3cret")
	assert.NotContains(t, st.Error, "/mcp")
	assert.Contains(t, st.Error, u)
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "MCP server unavailable") }, 10*time.Second, 20*time.Millisecond)
	assert.NotContains(t, log.String(), "s3cret")
}

func TestLimitedBody(t *testing.T) {
	for _, n := range []int{0, 99, 100} {
		body := &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", n))), left: 100}
		data, err := io.ReadAll(body)
		require.NoError(t, err, n)
		assert.Len(t, data, n)
	}
	body := &limitedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", 101))), left: 100}
	data, err := io.ReadAll(body)
	assert.ErrorIs(t, err, errTooLarge)
	assert.LessOrEqual(t, len(data), 100)
}
