package webchat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// bodyTransport answers every request with body, without a network.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(b)), Request: r}, nil
}

// referenceText is the text a stream carries, read the simplest way: line
// by line, up to the first [DONE], finish or error frame (ended).
func referenceText(body string) (text string, ended bool) {
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			return b.String(), true
		}
		// A frame is the JSON value the data holds: data that does not
		// start with one (junk before an object) is no frame, although
		// gjson.Get would find keys in it.
		frame := gjson.Parse(data)
		switch frame.Get("type").String() {
		case "text-delta":
			b.WriteString(frame.Get("delta").String())
		case "finish", "error":
			return b.String(), true
		}
	}
	return b.String(), false
}

// FuzzFrameReader feeds any body to the upstream reader: it never panics,
// its errors are *models.Error, and the text it delivers, however merged,
// is the text a line-by-line reading finds.
func FuzzFrameReader(f *testing.F) {
	for _, seed := range []string{
		"data: {\"type\":\"text-delta\",\"delta\":\"Hel\"}\n\ndata: {\"type\":\"text-delta\",\"delta\":\"lo\"}\n\ndata: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n",
		"data: {\"type\":\"reasoning-delta\",\"delta\":\"r\"}\r\n\r\ndata: {\"type\":\"text-delta\",\"delta\":\"t\"}\r\n\r\n: comment\n\ndata: [DONE]\n",
		"data: {\"type\":\"error\",\"errorText\":\"boom\"}\n\n",
		"data: {\"type\":\"text-delta\",\"delta\":\"cut",
		"event: x\ndata:{\"type\":\"finish\",\"messageMetadata\":{\"usage\":{\"inputTokens\":3,\"outputTokens\":4}}}\n",
		"", "\n\n\n", "data: not json\n\n",
		// the docs persona's native tool calls
		"data: {\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"a\"}\n\ndata: {\"type\":\"tool-input-start\",\"toolCallId\":\"c1\",\"toolName\":\"read_file\"}\n\n" +
			"data: {\"type\":\"tool-input-delta\",\"toolCallId\":\"c1\",\"inputTextDelta\":\"{\\\"path\\\":\"}\n\ndata: {\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"b\"}\n\n" +
			"data: {\"type\":\"tool-input-available\",\"toolCallId\":\"c1\",\"toolName\":\"read_file\",\"input\":{\"path\":\"x\"}}\n\n" +
			"data: {\"type\":\"tool-output-available\",\"toolCallId\":\"c1\",\"output\":\"doc\"}\n\ndata: {\"type\":\"finish\",\"finishReason\":\"stop\"}\n\n",
		"data: {\"type\":\"tool-input-start\",\"toolCallId\":\"c2\",\"toolName\":\"write\"}\n\n" +
			"data: {\"type\":\"tool-input-error\",\"toolCallId\":\"c2\",\"toolName\":\"write\",\"input\":\"{\\\"a\\\":\",\"errorText\":\"no such tool\"}\n\n" +
			"data: {\"type\":\"tool-output-error\",\"toolCallId\":\"c2\",\"errorText\":\"no such tool\"}\n\ndata: {\"type\":\"finish\",\"finishReason\":\"tool-calls\"}\n\ndata: [DONE]\n\n",
		"data: {\"type\":\"tool-input-delta\",\"toolCallId\":\"c3\",\"inputTextDelta\":\"{}\"}\n\ndata: {\"type\":\"tool-input-start\",\"toolName\":\"ls\"}\n\ndata: [DONE]\n\n",
		"data: {\"type\":\"start-step\"}\n\ndata: {\"type\":\"finish-step\"}\n\ndata: {\"type\":\"finish\",\"finishReason\":\"tool-calls\"}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<20 {
			t.Skip()
		}
		c := &Client{HTTP: &http.Client{Transport: bodyTransport(body)}, URL: "http://upstream.invalid/api/chat",
			IdleTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}
		var got strings.Builder
		_, _, err := c.attempt(context.Background(), hiRequest, func(d upstream.Delta) error {
			switch {
			case d.Kind == upstream.DeltaToolCall:
				if d.Call.ID == "" || d.Call.Name == "" || d.Call.Arguments == "" || d.Text != "" {
					t.Fatalf("a tool call without an id, a name or arguments: %+v", d)
				}
			case d.Text == "":
				t.Fatal("an empty delta")
			}
			if d.Kind == upstream.DeltaText {
				got.WriteString(d.Text)
			}
			return nil
		}, true)
		var apiErr *models.Error
		if err != nil && !errors.As(err, &apiErr) {
			t.Fatalf("an error that is not a *models.Error: %v", err)
		}
		want, ended := referenceText(string(body))
		if got.String() != want {
			t.Fatalf("delivered %q, a line-by-line reading finds %q", got.String(), want)
		}
		if !ended && err == nil {
			t.Fatal("a stream without an end is not an answer")
		}
	})
}
