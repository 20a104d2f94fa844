package chat

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"cursor2api/models"
)

// plainDoor is a whole front door for a toy protocol, to show that a new
// protocol needs nothing from the core but its three calls: the body is
// the user's prompt, ?model= names the model, and the answer streams back
// as plain text with calls written as "[call name args]".
type plainDoor struct{ core *Service }

func (d plainDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prompt, _ := io.ReadAll(r.Body)
	req := &models.Request{Model: r.URL.Query().Get("model"), Stream: true, Tools: []models.Tool{{Name: "ls"}},
		Messages: []models.Message{{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: string(prompt)}}}}}
	p, err := d.core.Prepare(req, "req_plain")
	if err == nil {
		err = d.core.Stream(r.Context(), p, &plainSink{w: w})
	}
	if e, ok := err.(*models.Error); ok {
		http.Error(w, e.Message, e.Status)
	}
}

// plainSink encodes the answer stream.
type plainSink struct{ w io.Writer }

func (s *plainSink) Text(t string) error    { _, err := io.WriteString(s.w, t); return err }
func (s *plainSink) Reasoning(string) error { return nil }
func (s *plainSink) ToolCallArguments(a string) error {
	return s.Text(a)
}
func (s *plainSink) ToolCallStart(_, name string) error { return s.Text("[call " + name + " ") }
func (s *plainSink) ToolCallEnd(bool) error             { return s.Text("]") }
func (s *plainSink) Finish(r models.FinishReason, u models.Usage) error {
	return s.Text(fmt.Sprintf("\n(finish %d, %d tokens)", r, u.TotalTokens))
}

func TestToyDoorNeedsNoCoreChange(t *testing.T) {
	up := &fakeUpstream{deltas: []string{"Looking.\n", "TRIGGER\n<invoke name=\"ls\">{\"dir\":\"src\"}</invoke>"},
		usage: &models.Usage{TotalTokens: 9}}
	door := plainDoor{core: newCore(t, up, Settings{})}

	rec := httptest.NewRecorder()
	door.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plain?model=claude-sonnet-4.6", strings.NewReader("list src")))
	assert.Equal(t, 200, rec.Code)
	assert.Equal(t, "Looking.\n[call ls {\"dir\":\"src\"}]\n(finish 2, 9 tokens)", rec.Body.String())
	assert.Contains(t, up.requests[0].Messages[0].Text, `<function name="ls">`, "the core taught the upstream the tool")

	rec = httptest.NewRecorder()
	door.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/plain?model=nope", strings.NewReader("hi")))
	assert.Equal(t, 404, rec.Code)
	assert.Contains(t, rec.Body.String(), "available models: claude-sonnet-4.6")
}
