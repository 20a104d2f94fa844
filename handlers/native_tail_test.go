package handlers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// TestNativeTailAfterTheAnswer: Cursor's stream lingers after turn_ended,
// yet every door's answer is complete while the fake holds it open, and the
// tail is then read to its end, so the run ends cleanly, not cancelled.
func TestNativeTailAfterTheAnswer(t *testing.T) {
	// The last line of each door's streamed answer.
	last := map[string]func(line string) bool{
		"openai":    func(l string) bool { return l == "data: [DONE]" },
		"anthropic": func(l string) bool { return l == "event: message_stop" },
		"responses": func(l string) bool {
			return strings.HasPrefix(l, "data: ") && strings.Contains(l, `"type":"response.completed"`)
		},
		"gemini": func(l string) bool { return strings.HasPrefix(l, "data: ") && strings.Contains(l, `"finishReason"`) },
	}
	for _, door := range agentDoors {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", door.name, stream), func(t *testing.T) {
				release := make(chan struct{})
				released := false
				defer func() {
					if !released {
						close(release)
					}
				}()
				s, up := newNativeStack(t, func(*agentv1.AgentRunRequest) nativetest.Script {
					return nativetest.Script{
						Steps: []nativetest.Step{nativetest.Text("Hello, world")},
						Usage: nativetest.Usage{Input: 10, Output: 4},
						After: []nativetest.Step{nativetest.Linger(release)},
					}
				})
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				resp := door.request("composer-2", "hi", stream, false).send(t, ctx, s)
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				var answer string
				if stream {
					br := bufio.NewReader(resp.Body)
					var b strings.Builder
					for {
						line, err := br.ReadString('\n')
						require.NoError(t, err, "the stream ended before its last event:\n%s", b.String())
						b.WriteString(line)
						if last[door.name](strings.TrimRight(line, "\r\n")) {
							break
						}
					}
					answer = b.String()
				} else {
					require.Positive(t, resp.ContentLength, "a whole answer carries its length, so that the client has it before the response ends")
					body := make([]byte, resp.ContentLength)
					_, err := io.ReadFull(resp.Body, body)
					require.NoError(t, err)
					answer = string(body)
				}
				assert.Contains(t, answer, "Hello, world")
				runs := up.Runs()
				require.Len(t, runs, 1)
				assert.False(t, runs[0].Ended, "the client had the whole answer while Cursor's stream lingered")

				close(release)
				released = true
				rest, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				if stream {
					// A stream's body ends when the handler returns, after
					// the tail.
					runs = up.Runs()
					assert.True(t, runs[0].Ended, "the stream ends once the tail is read")
				} else {
					assert.Empty(t, rest, "the body was whole at its length")
					assert.Eventually(t, func() bool { return up.Runs()[0].Ended }, 10*time.Second, 5*time.Millisecond)
				}
				assert.NoError(t, up.Runs()[0].Err, "the tail was read to the stream's end, not cut")
			})
		}
	}
}
