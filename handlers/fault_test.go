package handlers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"cursor2api/services/cursortest"
)

// TestFaultsLeaveNothingBehind proves that under a faulty upstream (cuts,
// stalls, error frames) and clients leaving at random, every response read
// to its end is well-formed and no goroutine is left once all is closed.
func TestFaultsLeaveNothingBehind(t *testing.T) {
	requests := 2000
	if testing.Short() {
		requests = 300
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	words := []string{"alpha ", "beta ", "gamma ", "delta "}
	faults := []func() cursortest.Response{
		func() cursortest.Response { return cursortest.Text(&defaultUsage, words...) },
		func() cursortest.Response { // cut: no finish, the connection ends
			return cursortest.Response{Events: []string{`{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"cut "}`}}
		},
		func() cursortest.Response { // stall past TIMEOUT
			return cursortest.Response{Events: []string{`{"type":"text-delta","id":"t","delta":"stalled "}`}, Hang: true}
		},
		func() cursortest.Response { // an error frame mid-answer
			return cursortest.Response{Events: []string{`{"type":"text-delta","id":"t","delta":"half "}`, `{"type":"error","errorText":"overloaded"}`}}
		},
		func() cursortest.Response {
			return cursortest.Response{Status: http.StatusServiceUnavailable, Body: "busy"}
		},
		func() cursortest.Response { // slow but complete
			r := cursortest.Text(&defaultUsage, words...)
			r.Delay = 2 * time.Millisecond
			return r
		},
	}
	var seed atomic.Uint64
	s := newStack(t, map[string]string{"TIMEOUT": "0.5", "LOG_LEVEL": "warn"}, func(n int, _ cursortest.Request) cursortest.Response {
		return faults[(seed.Add(1)*2654435761)%uint64(len(faults))]()
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}

	var wg sync.WaitGroup
	var next, complete, errored, left atomic.Int64
	var mu sync.Mutex
	var malformed []string
	for w := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 18))
			for next.Add(1) <= int64(requests) {
				stream := rng.IntN(3) > 0
				body := fmt.Sprintf(`{"model":"claude-sonnet-4.6","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, stream)
				ctx, cancel := context.WithCancel(context.Background())
				leaveAfter := -1 // bytes read before the client leaves; -1: never
				if rng.IntN(4) == 0 {
					leaveAfter = rng.IntN(300)
				}
				if leaveAfter == 0 {
					time.AfterFunc(time.Duration(rng.IntN(3))*time.Millisecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					cancel()
					if leaveAfter < 0 {
						mu.Lock()
						malformed = append(malformed, "request failed: "+err.Error())
						mu.Unlock()
					}
					left.Add(1)
					continue
				}
				var out []byte
				if leaveAfter > 0 {
					out, _ = io.ReadAll(io.LimitReader(resp.Body, int64(leaveAfter)))
					cancel()
					resp.Body.Close()
					left.Add(1)
					continue
				}
				out, err = io.ReadAll(bufio.NewReader(resp.Body))
				resp.Body.Close()
				cancel()
				if err != nil {
					left.Add(1)
					continue
				}
				if problem := wellFormed(resp, string(out)); problem != "" {
					mu.Lock()
					malformed = append(malformed, problem)
					mu.Unlock()
				} else if resp.StatusCode == http.StatusOK && !strings.Contains(string(out), `"error"`) {
					complete.Add(1)
				} else {
					errored.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests: %d complete, %d errors, %d left early", requests, complete.Load(), errored.Load(), left.Load())
	assert.Empty(t, malformed, "every response read to its end is well-formed")
	assert.Positive(t, complete.Load())
	assert.Positive(t, errored.Load())

	client.CloseIdleConnections()
	s.Close()
	s.up.Close()
}

// wellFormed returns what is wrong with a whole response, or "".
func wellFormed(resp *http.Response, body string) string {
	if resp.StatusCode != http.StatusOK {
		if !gjson.Valid(body) || gjson.Get(body, "error.message").String() == "" {
			return fmt.Sprintf("status %d without an OpenAI error: %q", resp.StatusCode, body)
		}
		return ""
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if gjson.Get(body, "choices.0.message").Type == gjson.Null {
			return "a 200 that is not a completion: " + body
		}
		return ""
	}
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		return fmt.Sprintf("a stream that does not end with [DONE]: %q", body)
	}
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok && !strings.HasPrefix(ev, ":") {
			return fmt.Sprintf("an event that is neither data nor a comment: %q", ev)
		}
		if ok && data != "[DONE]" && !gjson.Valid(data) {
			return fmt.Sprintf("an event whose data is not JSON: %q", ev)
		}
	}
	return ""
}
