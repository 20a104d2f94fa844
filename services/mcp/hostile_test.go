package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/mcp/mcptest"
)

// memLimit is how much more heap the gateway may use while it serves a
// hostile server than before.
const memLimit = 100 << 20

// memory runs f and returns the peak of the heap in use above its level
// before (sampled while f runs) and the bytes allocated meanwhile.
func memory(f func()) (peak, allocated uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, total := ms.HeapInuse, ms.TotalAlloc
	var mu sync.Mutex
	high := base
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		high = max(high, ms.HeapInuse)
		mu.Unlock()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	sample()
	runtime.ReadMemStats(&ms)
	return high - base, ms.TotalAlloc - total
}

// syncBuffer is a log the test reads while the bridge writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// hostileRemote is a Remote allowed to reach srv (on any port), logging
// into log.
func hostileRemote(log *syncBuffer, callTimeout time.Duration) *Remote {
	return &Remote{
		// The bare address is for the gateway before host:port entries.
		Hosts: []string{"127.0.0.1", "127.0.0.1:*"},
		Options: Options{ConnectTimeout: 20 * time.Second, CallTimeout: callTimeout,
			Logger: slog.New(slog.NewTextHandler(log, nil))},
	}
}

// TestHostileServerConnect: a server that answers initialize with a
// gigabyte, lists pages forever or too many tools is refused with a
// clear error, and the gateway's heap stays within memLimit meanwhile.
func TestHostileServerConnect(t *testing.T) {
	srv := httptest.NewServer(&mcptest.Hostile{})
	defer srv.Close()
	cases := []struct {
		path, client, log string
	}{
		// The client learns nothing of why a handshake failed; the log does.
		{"/huge-init", `the MCP server "evil" could not be connected`, "larger than 4194304 bytes"},
		{"/endless-pages", "its tools/list goes on past 100 pages", "past 100 pages"},
		{"/many-tools", "it offers more than 200 tools (the gateway's MCP_MAX_TOOLS)", "more than 200 tools"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			var log syncBuffer
			r := hostileRemote(&log, time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var err error
			peak, _ := memory(func() {
				var b *Bridge
				b, err = r.Dial(ctx, []models.MCPServer{{Label: "evil", URL: srv.URL + tc.path, Param: "tools[0].server_url"}})
				if err == nil {
					b.Close()
				}
			})
			t.Logf("heap peak +%d KB", peak>>10)
			require.Error(t, err)
			var re *RemoteError
			require.True(t, errors.As(err, &re), "%v", err)
			assert.Equal(t, "tools[0].server_url", re.Param)
			assert.Contains(t, re.Message, tc.client)
			assert.NotContains(t, re.Message, "127.0.0.1", "no address in the client's error")
			assert.Contains(t, log.String(), tc.log)
			assert.Less(t, peak, uint64(memLimit), "heap grew by %d MB", peak>>20)
		})
	}

	t.Run("initialize never answered", func(t *testing.T) {
		var log syncBuffer
		r := hostileRemote(&log, time.Minute)
		r.Options.ConnectTimeout = 2 * time.Second
		_, err := r.Dial(context.Background(), []models.MCPServer{{Label: "evil", URL: srv.URL + "/hang-init", Param: "p"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `the MCP server "evil" could not be connected`)
	})

	t.Run("too many servers", func(t *testing.T) {
		var log syncBuffer
		r := hostileRemote(&log, time.Minute)
		var servers []models.MCPServer
		for i := range 11 {
			servers = append(servers, models.MCPServer{Label: fmt.Sprintf("s%d", i), URL: srv.URL + "/mcp", Param: fmt.Sprintf("tools[%d].server_url", i)})
		}
		b, err := r.Dial(context.Background(), servers)
		if err == nil {
			b.Close()
		}
		require.Error(t, err)
		var re *RemoteError
		require.True(t, errors.As(err, &re))
		assert.True(t, re.Refused)
		assert.Equal(t, "tools[10].server_url", re.Param)
		assert.Contains(t, re.Message, "at most 10 MCP servers")
	})
}

// TestHostileServerCalls: a result of tens of thousands of parts is
// joined within the result cap, a gigabyte result is refused, and a call
// that never ends or drips forever ends at the call's timeout; the heap
// stays within memLimit.
func TestHostileServerCalls(t *testing.T) {
	srv := httptest.NewServer(&mcptest.Hostile{})
	defer srv.Close()
	var log syncBuffer
	// A generous timeout for the calls that must finish (a loaded CI
	// machine parses 50,000 parts slowly under -race), a short one for
	// those that must be cut.
	r := hostileRemote(&log, time.Minute)
	ctx := context.Background()
	b, err := r.Dial(ctx, []models.MCPServer{{Label: "evil", URL: srv.URL + "/mcp", Param: "p"}})
	require.NoError(t, err)
	defer b.Close()

	t.Run("parts", func(t *testing.T) {
		var out string
		var isErr bool
		peak, allocated := memory(func() { out, isErr = b.Run(ctx, "mcp__evil__parts", "{}") })
		t.Logf("heap peak +%d KB, %d KB allocated", peak>>10, allocated>>10)
		require.False(t, isErr, out)
		assert.Contains(t, out, "part 0\npart 1\npart 2\n")
		assert.Contains(t, out, "[the gateway clipped this result: ")
		assert.Less(t, len(out), 100_000+200)
		assert.Less(t, peak, uint64(memLimit), "heap grew by %d MB", peak>>20)
		// A quadratic join allocates gigabytes here.
		assert.Less(t, allocated, uint64(memLimit), "allocated %d MB", allocated>>20)
	})
	t.Run("huge", func(t *testing.T) {
		var out string
		var isErr bool
		peak, _ := memory(func() { out, isErr = b.Run(ctx, "mcp__evil__huge", "{}") })
		t.Logf("heap peak +%d KB", peak>>10)
		require.True(t, isErr)
		assert.Contains(t, out, "larger than 4194304 bytes")
		assert.Less(t, peak, uint64(memLimit), "heap grew by %d MB", peak>>20)
	})
	for _, tool := range []string{"hang", "drip"} {
		t.Run(tool, func(t *testing.T) {
			// a new session: the huge answer above broke the first one
			r := hostileRemote(&log, 3*time.Second)
			b, err := r.Dial(ctx, []models.MCPServer{{Label: "evil", URL: srv.URL + "/mcp", Param: "p"}})
			require.NoError(t, err)
			defer b.Close()
			out, isErr := b.Run(ctx, "mcp__evil__"+tool, "{}")
			require.True(t, isErr)
			assert.Contains(t, out, "did not answer within 3s")
		})
	}
}
