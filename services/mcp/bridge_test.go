package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/services/mcp/mcptest"
)

var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest")
	if err != nil {
		panic(err)
	}
	if serverBin, err = mcptest.BuildTo(dir); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			panic(err)
		}
	}
	os.Exit(code)
}

// outcomes records Observe's calls.
type outcomes struct {
	mu   sync.Mutex
	list []string
}

func (o *outcomes) observe(server, tool, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, server+"/"+tool+"/"+outcome)
}

func (o *outcomes) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.list...)
}

func startBridge(t *testing.T, opts Options) *Bridge {
	t.Helper()
	b := New(opts)
	b.Start(context.Background())
	t.Cleanup(b.Close)
	return b
}

func waitState(t *testing.T, b *Bridge, server, state string) ServerState {
	t.Helper()
	var last ServerState
	require.Eventually(t, func() bool {
		for _, s := range b.States() {
			if s.Name == server {
				last = s
				return s.State == state
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "server %s never %s", server, state)
	return last
}

func TestParseConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"]}}}`), 0o600))
	tests := []struct {
		name, value string
		servers     []string
		err         string
	}{
		{"empty", "", nil, ""},
		{"inline", `{"mcpServers":{"a":{"command":"x"},"b":{"url":"https://h/mcp","headers":{"X":"1"}}}}`, []string{"a", "b"}, ""},
		{"file", file, []string{"fs"}, ""},
		{"disabled left out", `{"mcpServers":{"a":{"command":"x","disabled":true}}}`, []string{}, ""},
		{"missing file", "/nonexistent/mcp.json", nil, "reading the file"},
		{"not json", "{nope", nil, "not JSON"},
		{"no mcpServers", `{"servers":{}}`, nil, `no "mcpServers"`},
		{"both", `{"mcpServers":{"a":{"command":"x","url":"http://h"}}}`, nil, "both command and url"},
		{"neither", `{"mcpServers":{"a":{}}}`, nil, "needs a command"},
		{"bad scheme", `{"mcpServers":{"a":{"url":"ftp://h"}}}`, nil, "http:// or https://"},
		{"bad name", `{"mcpServers":{"a__b":{"command":"x"}}}`, nil, "server name"},
		{"bad type", `{"mcpServers":{"a":{"command":"x","type":"ws"}}}`, nil, "unknown type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(tt.value)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				assert.Contains(t, err.Error(), "MCP_SERVERS")
				return
			}
			require.NoError(t, err)
			names := sortedNames(got)
			if tt.servers == nil {
				assert.Empty(t, names)
			} else {
				assert.ElementsMatch(t, tt.servers, names)
			}
		})
	}
}

func TestGlobsAndNames(t *testing.T) {
	assert.ErrorContains(t, CheckGlobs([]string{"mcp__[a"}), "MCP_ALLOWED_TOOLS")
	assert.True(t, allowed(nil, "mcp__a__b"))
	assert.True(t, allowed([]string{"mcp__x__*", "mcp__a__b"}, "mcp__a__b"))
	assert.False(t, allowed([]string{"mcp__x__*"}, "mcp__a__b"))
	s, tool, ok := SplitName("mcp__srv__do_it")
	assert.True(t, ok)
	assert.Equal(t, []string{"srv", "do_it"}, []string{s, tool})
	_, _, ok = SplitName("read_file")
	assert.False(t, ok)
}

func TestStdioServer(t *testing.T) {
	obs := &outcomes{}
	b := startBridge(t, Options{
		Servers:        map[string]ServerConfig{"local": {Command: serverBin}},
		Allowed:        []string{"mcp__local__*"},
		CallTimeout:    500 * time.Millisecond,
		MaxResultBytes: 1000,
		MinBackoff:     50 * time.Millisecond,
		Observe:        obs.observe,
	})
	st := waitState(t, b, "local", StateReady)
	assert.Equal(t, "stdio", st.Transport)
	assert.Equal(t, 8, st.Tools)
	var names []string
	for _, tool := range b.Tools() {
		names = append(names, tool.Name)
		if tool.Name == "mcp__local__add" {
			assert.Contains(t, string(tool.Parameters), `"a"`, "the schema as the server gave it")
		}
	}
	assert.Contains(t, names, "mcp__local__echo")
	assert.True(t, b.Has("mcp__local__echo"))
	assert.False(t, b.Has("mcp__other__echo"))
	ctx := context.Background()

	out, isErr := b.Run(ctx, "mcp__local__echo", `{"text":"hi"}`)
	assert.False(t, isErr)
	assert.Equal(t, "echo: hi", out)
	out, isErr = b.Run(ctx, "mcp__local__add", `{"a":2,"b":40}`)
	assert.False(t, isErr)
	assert.Equal(t, "42", out)

	out, isErr = b.Run(ctx, "mcp__local__fail", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, out, "the disk is on fire")

	out, isErr = b.Run(ctx, "mcp__local__huge", `{"n":5000}`)
	assert.False(t, isErr)
	assert.True(t, strings.HasPrefix(out, strings.Repeat("x", 1000)+"\n[the gateway clipped this result: 1000 of 5000 bytes"), out[990:])

	out, isErr = b.Run(ctx, "mcp__local__hang", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, out, "did not answer within 500ms")

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	out, isErr = b.Run(cctx, "mcp__local__hang", `{}`)
	assert.True(t, isErr)
	assert.Equal(t, "the call was cancelled", out)

	out, isErr = b.Run(ctx, "mcp__local__echo", `[1]`)
	assert.True(t, isErr)
	assert.Contains(t, out, "not a JSON object")

	pidText, _ := b.Run(ctx, "mcp__local__pid", `{}`)
	pid, err := strconv.Atoi(pidText)
	require.NoError(t, err)
	require.True(t, mcptest.Alive(pid))

	// A crash mid-call is the call's error, and the server comes back.
	out, isErr = b.Run(ctx, "mcp__local__crash", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, out, "the tool failed")
	require.Eventually(t, func() bool {
		o, e := b.Run(ctx, "mcp__local__echo", `{"text":"back"}`)
		return !e && o == "echo: back"
	}, 20*time.Second, 50*time.Millisecond)
	assert.False(t, mcptest.Alive(pid), "the crashed process is reaped")

	assert.Subset(t, obs.all(), []string{"local/echo/ok", "local/fail/error", "local/hang/timeout", "local/hang/cancelled", "local/crash/failed"})
}

func TestStdioProcessGroupEndsWithBridge(t *testing.T) {
	b := New(Options{Servers: map[string]ServerConfig{"local": {Command: serverBin}}})
	b.Start(context.Background())
	waitState(t, b, "local", StateReady)
	pidText, _ := b.Run(context.Background(), "mcp__local__pid", `{}`)
	childText, isErr := b.Run(context.Background(), "mcp__local__spawn", `{}`)
	require.False(t, isErr, childText)
	pid, _ := strconv.Atoi(pidText)
	child, _ := strconv.Atoi(childText)
	require.True(t, mcptest.Alive(pid))
	require.True(t, mcptest.Alive(child))
	b.Close()
	assert.False(t, mcptest.Alive(pid), "the server process is gone")
	assert.Eventually(t, func() bool { return !mcptest.Alive(child) }, 5*time.Second, 20*time.Millisecond, "its grandchild is gone with its group")
	assert.Empty(t, b.Tools())
}

func TestHTTPServer(t *testing.T) {
	var mu sync.Mutex
	var auth string
	h := mcptest.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("MCPTEST_TOKEN", "s3cret")
	b := startBridge(t, Options{
		Servers: map[string]ServerConfig{"remote": {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${MCPTEST_TOKEN}"}}},
		Allowed: []string{"mcp__remote__echo", "mcp__remote__a*"},
	})
	st := waitState(t, b, "remote", StateReady)
	assert.Equal(t, "http", st.Transport)
	assert.Equal(t, 2, st.Tools, "the globs keep echo and add")
	out, isErr := b.Run(context.Background(), "mcp__remote__add", `{"a":1,"b":2}`)
	assert.False(t, isErr)
	assert.Equal(t, "3", out)
	mu.Lock()
	assert.Equal(t, "Bearer s3cret", auth)
	mu.Unlock()
	cat := b.Catalog()
	require.Len(t, cat, 2)
	assert.Equal(t, ToolInfo{ID: "mcp__remote__add", Name: "add", Server: "remote", Description: "Add two integers.", InputSchema: cat[0].InputSchema}, cat[0])
}

func TestDeadServer(t *testing.T) {
	obs := &outcomes{}
	b := startBridge(t, Options{
		Servers:    map[string]ServerConfig{"gone": {Command: filepath.Join(t.TempDir(), "missing")}, "closed": {URL: "http://127.0.0.1:1/mcp"}},
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Observe: obs.observe,
	})
	st := waitState(t, b, "gone", StateDown)
	assert.Contains(t, st.Error, "missing")
	waitState(t, b, "closed", StateDown)
	assert.Empty(t, b.Tools())
	start := time.Now()
	out, isErr := b.Run(context.Background(), "mcp__gone__echo", `{}`)
	assert.True(t, isErr)
	assert.Contains(t, out, `"gone" is not connected`)
	assert.Less(t, time.Since(start), time.Second, "a dead server never blocks")
	assert.Equal(t, []string{"gone/echo/unavailable"}, obs.all())
}
