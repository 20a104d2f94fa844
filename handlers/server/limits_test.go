package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

func TestShutdownEndsOpenStreamsWithAnErrorEvent(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{
		Events: []string{`{"type":"text-start","id":"t"}`, `{"type":"text-delta","id":"t","delta":"half an answer"}`}, Hang: true,
	}))
	url, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "SHUTDOWN_TIMEOUT": "0.3"})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n')
	require.NoError(t, err)

	shutdown()
	rest, err := io.ReadAll(r)
	require.NoError(t, err, "the stream ends cleanly, not cut mid-chunk")
	body := string(rest)
	require.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"), "the stream ends with [DONE]: %q", body)
	events := strings.Split(strings.TrimSuffix(body, "data: [DONE]\n\n"), "\n\n")
	last := strings.TrimPrefix(events[len(events)-2], "data: ")
	assert.Equal(t, "shutting_down", gjson.Get(last, "error.code").String(), "an error event before [DONE]: %s", last)
	assert.Contains(t, gjson.Get(last, "error.message").String(), "send the request again")
	assert.NoError(t, serveResult(t, done, 10*time.Second, "Serve did not return"))
}

func TestMaxConnectionsBoundsConcurrentConnections(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hi")))
	url, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "MAX_CONNECTIONS": "2"})
	addr := strings.TrimPrefix(url, "http://")
	// Two idle connections take both slots.
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		held = append(held, c)
		_, err = c.Write([]byte("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	third, err := net.Dial("tcp", addr) // the kernel accepts it into the backlog
	require.NoError(t, err)
	defer third.Close()
	_, err = third.Write([]byte("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
	require.NoError(t, err)
	br := bufio.NewReader(third)
	require.NoError(t, third.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, err = br.ReadByte()
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "the third connection waits while two are open: %v", err)

	held[0].Close() // frees a slot
	require.NoError(t, third.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "served once a slot is free")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	held[1].Close()
}

// TestShutdownEndsWholeAnswersToo: a non-streamed answer still waiting at
// SHUTDOWN_TIMEOUT gets the door's 503, whichever door it came by.
func TestShutdownEndsWholeAnswersToo(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Hang: true}))
	url, shutdown, done := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "SHUTDOWN_TIMEOUT": "0.3"})
	type answer struct {
		status int
		body   string
	}
	ask := func(path, body string, header ...string) <-chan answer {
		out := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- answer{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- answer{resp.StatusCode, string(b)}
		}()
		return out
	}
	messages := ask("/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01")
	responses := ask("/v1/responses", `{"model":"claude-sonnet-4.6","input":"hi"}`)
	require.Eventually(t, func() bool { return len(up.Requests()) == 2 }, 10*time.Second, 10*time.Millisecond, "both answers wait on the upstream")
	shutdown()
	m, r := <-messages, <-responses
	assert.Equal(t, http.StatusServiceUnavailable, m.status, m.body)
	assert.Equal(t, "overloaded_error", gjson.Get(m.body, "error.type").String(), m.body)
	assert.Contains(t, gjson.Get(m.body, "error.message").String(), "send the request again")
	assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
	assert.Equal(t, "shutting_down", gjson.Get(r.body, "error.code").String(), r.body)
	assert.NoError(t, serveResult(t, done, 10*time.Second, "Serve did not return"))
}
