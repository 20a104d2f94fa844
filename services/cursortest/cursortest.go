// Package cursortest fakes Cursor's web chat endpoint in-process for tests,
// speaking the real frame format: a Vercel AI SDK v5 UI message stream of
// "data: <json>" lines ending with "data: [DONE]".
package cursortest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Message is one message of a recorded upstream request.
type Message struct {
	Role string
	Text string
}

// Request is what the gateway sent.
type Request struct {
	Header   http.Header
	Body     []byte
	Model    string
	Messages []Message
}

// Response is what the fake answers.
type Response struct {
	// Status is the HTTP status; 0 means 200 with an event stream.
	Status int
	Header map[string]string
	// Body is the body of a non-200 answer.
	Body string
	// Events are data payloads, written one per "data:" line and flushed.
	Events []string
	// Delay is waited before each event.
	Delay time.Duration
	// Pause is waited once more before Events[PauseAt]: an upstream that
	// goes silent in the middle of an answer.
	Pause   time.Duration
	PauseAt int
	// Hang keeps the connection open after the events, without finishing,
	// until the client gives up.
	Hang bool
}

// Server is a fake upstream.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	requests Recorder[Request]
	canceled chan struct{}
	once     sync.Once
	// gate, when set, answers a request before the chat does (the
	// Vercel checkpoint, checkpoint.go); it reports whether it did.
	gate func(http.ResponseWriter, *http.Request) bool
	// conns counts accepted connections (conns.go).
	conns atomic.Int64
}

// NewServer starts a fake upstream; reply chooses the answer to the n-th
// request (from 0). The server is closed when the test ends.
func NewServer(t testing.TB, reply func(n int, req Request) Response) *Server {
	s := &Server{canceled: make(chan struct{}), gate: sitePage}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		gate := s.gate
		s.mu.Unlock()
		if gate != nil && gate(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := Request{Header: r.Header.Clone(), Body: body, Model: gjson.GetBytes(body, "model").String()}
		gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
			req.Messages = append(req.Messages, Message{Role: m.Get("role").String(), Text: m.Get("parts.0.text").String()})
			return true
		})
		n := s.requests.Add(req)

		resp := reply(n, req)
		for k, v := range resp.Header {
			w.Header().Set(k, v)
		}
		if resp.Status != 0 && resp.Status != http.StatusOK {
			w.WriteHeader(resp.Status)
			_, _ = io.WriteString(w, resp.Body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		flusher := w.(http.Flusher)
		flusher.Flush()
		for i, ev := range resp.Events {
			wait := resp.Delay
			if i == resp.PauseAt {
				wait += resp.Pause
			}
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-r.Context().Done():
					s.markCanceled()
					return
				}
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", ev); err != nil {
				s.markCanceled()
				return
			}
			flusher.Flush()
		}
		if resp.Hang {
			<-r.Context().Done()
			s.markCanceled()
		}
	}))
	s.Config.ConnState = s.countConn // conns.go
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *Server) markCanceled() { s.once.Do(func() { close(s.canceled) }) }

// Canceled is closed when the gateway abandoned a request mid-stream.
func (s *Server) Canceled() <-chan struct{} { return s.canceled }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request { return s.requests.All() }

// Always answers every request with resp.
func Always(resp Response) func(int, Request) Response {
	return func(int, Request) Response { return resp }
}

// Sequence answers the n-th request with resps[n], repeating the last.
func Sequence(resps ...Response) func(int, Request) Response {
	return func(n int, _ Request) Response { return resps[min(n, len(resps)-1)] }
}

// Usage is the token count a Text reply reports in its finish frame.
type Usage struct{ Input, Output int }

// Text is a well-formed reply streaming deltas as text-delta frames, with
// the usage in the finish frame when usage is not nil.
func Text(usage *Usage, deltas ...string) Response {
	return Response{Events: Frames(usage, nil, deltas)}
}

// Frames builds the full frame sequence of a reply: start, start-step,
// optional reasoning, text-start, one text-delta per delta, text-end,
// finish-step, finish, [DONE].
func Frames(usage *Usage, reasoning []string, deltas []string) []string {
	ev := []string{`{"type":"start","messageId":"msg_fake"}`, `{"type":"start-step"}`}
	if len(reasoning) > 0 {
		ev = append(ev, `{"type":"reasoning-start","id":"r0"}`)
		for _, r := range reasoning {
			ev = append(ev, frame("reasoning-delta", "r0", r))
		}
		ev = append(ev, `{"type":"reasoning-end","id":"r0"}`)
	}
	ev = append(ev, `{"type":"text-start","id":"t0"}`)
	for _, d := range deltas {
		ev = append(ev, frame("text-delta", "t0", d))
	}
	ev = append(ev, `{"type":"text-end","id":"t0"}`, `{"type":"finish-step"}`)
	if usage != nil {
		ev = append(ev, fmt.Sprintf(`{"type":"finish","finishReason":"stop","messageMetadata":{"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}}`, usage.Input, usage.Output, usage.Input+usage.Output))
	} else {
		ev = append(ev, `{"type":"finish","finishReason":"stop"}`)
	}
	return append(ev, "[DONE]")
}

// frame is a delta frame as the upstream writes it: the keys in the AI
// SDK's order, and <, > and & as they are (JSON.stringify escapes no HTML).
func frame(typ, id, delta string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Delta string `json:"delta"`
	}{typ, id, delta})
	return strings.TrimSuffix(b.String(), "\n")
}

// LogBuffer collects log lines written from several goroutines and can be
// read while they write.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Await waits, at most five seconds, until the log holds substr. A
// request's access line is written after its epilogue, and a whole answer
// reaches the client before that, so a test that has read the answer may
// still be ahead of the line.
func (b *LogBuffer) Await(t testing.TB, substr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s the log still lacks %q:\n%s", substr, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
