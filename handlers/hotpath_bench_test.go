package handlers

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/handlers/responses"
	"cursor2api/services"
	"cursor2api/services/cursortest"
	"cursor2api/services/state"
)

// BenchmarkDoorHotPath is the gateway's own work for bench/e2e's streamed
// request, without the network: an in-memory upstream in reads of 35
// frames, as e2e counts them, and a discarding writer. Without kernel time,
// ns/op and allocs/op are steady enough to compare two builds.
func BenchmarkDoorHotPath(b *testing.B) {
	prompt := strconv.Quote(strings.Repeat("Summarise the design of a small HTTP gateway. ", 45))
	doors := []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":` + prompt + `}]}`},
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":` + prompt + `}]}`},
		{"responses", "/v1/responses", `{"model":"claude-sonnet-4.6","stream":true,"input":` + prompt + `}`},
		{"gemini", "/v1beta/models/claude-sonnet-4.6:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":` + prompt + `}]}]}`},
	}
	h := hotPathGateway(b)
	for _, d := range doors {
		b.Run(d.name, func(b *testing.B) {
			w := &discardWriter{header: http.Header{}}
			serve := func() {
				req, _ := http.NewRequest(http.MethodPost, d.path, strings.NewReader(d.body))
				req.Header.Set("Content-Type", "application/json")
				clear(w.header)
				w.status, w.n = 0, 0
				h.ServeHTTP(w, req)
			}
			serve()
			require.Equal(b, http.StatusOK, w.status)
			require.Greater(b, w.n, 2048, "the answer went out")
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// hotPathGateway is the gateway as newStack wires it, on an upstream
// transport that answers from memory.
func hotPathGateway(b *testing.B) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	cfg, err := config.FromMap(map[string]string{"CURSOR_API_URL": "http://upstream.invalid/api/chat", "MODELS": "claude-sonnet-4.6", "LOG_LEVEL": "warn"})
	require.NoError(b, err)
	logger := slog.New(slog.DiscardHandler)
	gw, err := services.FromConfig(cfg, logger, services.StaticHuman("bench"), services.WebTransport(memoryUpstream{reads: hotPathReads(35)}))
	require.NoError(b, err)
	store := responses.NewStore(state.NewQueue(state.NewMemory(nil), 0, nil), responses.DefaultStoreLimits)
	return New(Options{
		Chat: gw.Chat, Catalog: gw.Catalog, Aliases: gw.Aliases, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Logger: logger, Backend: cfg.Backend,
		Responses: store, Metrics: gw.Metrics, Readiness: gw.Readiness, BodyReadTimeout: cfg.BodyReadTimeout.Duration(),
	})
}

// memoryUpstream answers every request with the same reads of bench/e2e's
// frames.
type memoryUpstream struct{ reads [][]byte }

func (m memoryUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    &batchedBody{reads: m.reads},
		Request: req,
	}, nil
}

var hotPathFrames = func() [][]byte {
	words := strings.Fields("the gateway reads each frame of the upstream and writes it to the client at once so that no byte waits")
	var deltas []string
	for i, size := 0, 0; size < 2048; i++ {
		w := words[i%len(words)]
		if i%2 == 1 {
			w = " " + w
		}
		for len(w) > 6 {
			deltas, size, w = append(deltas, w[:4]), size+4, w[4:]
		}
		deltas, size = append(deltas, w), size+len(w)
	}
	var out [][]byte
	for _, ev := range cursortest.Frames(&cursortest.Usage{Input: 500, Output: 520}, nil, deltas) {
		out = append(out, []byte(fmt.Sprintf("data: %s\n\n", ev)))
	}
	return out
}()

// hotPathReads groups the frames into reads of n.
func hotPathReads(n int) [][]byte {
	var reads [][]byte
	for i := 0; i < len(hotPathFrames); i += n {
		reads = append(reads, bytes.Join(hotPathFrames[i:min(i+n, len(hotPathFrames))], nil))
	}
	return reads
}

// batchedBody hands out one read's bytes per Read, as a socket would.
type batchedBody struct {
	reads [][]byte
	cur   []byte
}

func (b *batchedBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if len(b.reads) == 0 {
			return 0, io.EOF
		}
		b.cur, b.reads = b.reads[0], b.reads[1:]
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

func (*batchedBody) Close() error { return nil }

// discardWriter is a client that reads everything at once.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
func (*discardWriter) Flush() {}
