package agentcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// event is one line of the CLI's stream-json output. Only the fields the
// gateway reads are decoded.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// Text is a thinking delta (and, in older CLIs, assistant text).
	Text    string `json:"text"`
	Message *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	IsError  bool                       `json:"is_error"`
	Result   string                     `json:"result"`
	CallID   string                     `json:"call_id"`
	ToolCall map[string]json.RawMessage `json:"tool_call"`
	Usage    *usageWire                 `json:"usage"`
}

// usageWire is the result event's token count, in either spelling.
type usageWire struct {
	InputTokens       int `json:"inputTokens"`
	OutputTokens      int `json:"outputTokens"`
	InputTokensSnake  int `json:"input_tokens"`
	OutputTokensSnake int `json:"output_tokens"`
}

// assistantText is the text of an assistant event: its text content
// parts, or its text field.
func (e *event) assistantText() string {
	if e.Message == nil {
		return e.Text
	}
	var b strings.Builder
	for _, c := range e.Message.Content {
		if c.Type == "text" || c.Type == "" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// toolName names the CLI tool of a tool_call event: the key ending in
// ToolCall, or the function's name.
func (e *event) toolName() string {
	for k, v := range e.ToolCall {
		if k == "function" {
			var f struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(v, &f) == nil && f.Name != "" {
				return f.Name
			}
		}
		return k
	}
	return "unknown"
}

// reader turns the CLI's events into deltas. With --stream-partial-output
// the CLI repeats each segment whole after its deltas; the repeat is known
// by its text and dropped. After a single delta it is ambiguous ("ha" then
// "ha"), so it is held: more text next means it was a real delta.
type reader struct {
	log       *slog.Logger
	segment   strings.Builder // the current segment's text
	segDeltas int             // the deltas that made it
	all       strings.Builder // every text delta sent
	allDeltas int
	held      string // an assistant event that may be a summary
	holding   bool
	wrote     bool
	result    *event
	stray     boundedBuffer // lines that were not JSON, for error messages
	drift     *utils.Drift  // told of event types and subtypes the reader does not know
}

func newReader(log *slog.Logger, scrub func(string) string, drift *utils.Drift) *reader {
	return &reader{log: log, stray: boundedBuffer{max: maxStderr, scrub: scrub}, drift: drift}
}

// knownEvents are the CLI's stream-json event types and their subtypes
// ("" for none): what the reader reads, and what it passes over knowingly
// (system init, the user's own message). Anything else is ignored too,
// and noted as drift.
var knownEvents = map[string][]string{
	"system":    {"", "init"},
	"user":      {""},
	"assistant": {""},
	"thinking":  {"", "delta", "completed"},
	"tool_call": {"", "started", "completed"},
	"result":    {"", "success", "error"},
}

// noteUnknown notes an event of a type or subtype the reader does not know.
func (r *reader) noteUnknown(ev *event) {
	subs, ok := knownEvents[ev.Type]
	switch {
	case !ok:
		r.drift.Note("agent cli", fmt.Sprintf("event type %q", ev.Type))
	case !slices.Contains(subs, ev.Subtype):
		r.drift.Note("agent cli", fmt.Sprintf("%s event subtype %q", ev.Type, ev.Subtype))
	}
}

// failed reports whether the CLI ended with an error result.
func (r *reader) failed() bool {
	return r.result != nil && (r.result.IsError || r.result.Subtype == "error")
}

// line reads one line of output.
func (r *reader) line(b []byte, fn func(upstream.Delta) error) error {
	b = bytes.TrimSpace(stripANSIBytes(b))
	if len(b) == 0 {
		return nil
	}
	var ev event
	if b[0] != '{' || json.Unmarshal(b, &ev) != nil {
		_, _ = r.stray.Write(b) // b is the scanner's buffer: never append to it
		_, _ = r.stray.Write([]byte{'\n'})
		r.log.Debug("agent: a line of output is not an event", "line", utils.Clip(r.stray.scrubbed(string(b)), 200))
		return nil
	}
	r.noteUnknown(&ev)
	if ev.Type != "assistant" {
		r.settle()
	}
	switch ev.Type {
	case "assistant":
		text := ev.assistantText()
		if text == "" {
			return nil
		}
		if r.holding {
			r.holding = false
			if err := r.emit(r.held, fn); err != nil {
				return err
			}
		}
		isSegment := r.segDeltas > 0 && text == r.segment.String()
		isAll := r.allDeltas > 0 && text == r.all.String()
		switch {
		case isSegment && r.segDeltas > 1, isAll && r.allDeltas > 1:
			r.endSegment()
			return nil
		case isSegment || isAll:
			r.held, r.holding = text, true
			return nil
		}
		return r.emit(text, fn)
	case "thinking":
		if ev.Text != "" && (ev.Subtype == "" || ev.Subtype == "delta") {
			return fn(upstream.Delta{Kind: upstream.DeltaReasoning, Text: ev.Text})
		}
	case "tool_call":
		// The CLI tried one of its own tools despite the workspace's deny
		// rules. Its answer is text only: the call is not forwarded.
		r.endSegment()
		if ev.Subtype != "completed" {
			r.log.Warn("agent: the CLI called one of its own tools; ignored", "tool", ev.toolName(), "call_id", ev.CallID)
		}
	case "result":
		r.endSegment()
		r.result = &ev
	}
	return nil
}

// settle decides a held event was its segment's summary, and drops it.
func (r *reader) settle() {
	if r.holding {
		r.holding, r.held = false, ""
		r.endSegment()
	}
}

// endSegment starts a new segment.
func (r *reader) endSegment() {
	r.segment.Reset()
	r.segDeltas = 0
}

// flush ends the output: a held summary is dropped, and a successful
// result whose text was never streamed is sent whole.
func (r *reader) flush(fn func(upstream.Delta) error) error {
	r.settle()
	if !r.wrote && r.result != nil && !r.failed() && r.result.Result != "" {
		return r.emit(r.result.Result, fn)
	}
	return nil
}

func (r *reader) emit(text string, fn func(upstream.Delta) error) error {
	r.segment.WriteString(text)
	r.all.WriteString(text)
	r.segDeltas++
	r.allDeltas++
	r.wrote = true
	return fn(upstream.Delta{Kind: upstream.DeltaText, Text: text})
}

// usage is the usage the result event reported, or nil.
func (r *reader) usage() *models.Usage {
	if r.result == nil || r.result.Usage == nil {
		return nil
	}
	w := r.result.Usage
	u := models.Usage{InputTokens: max(w.InputTokens, w.InputTokensSnake), OutputTokens: max(w.OutputTokens, w.OutputTokensSnake)}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if u.TotalTokens == 0 {
		return nil
	}
	return &u
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }

func stripANSIBytes(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	return ansiRE.ReplaceAll(b, nil)
}

// The CLI's failures, recognised in its error result and stderr.
var (
	notLoggedInRE = regexp.MustCompile(`(?i)not logged in|not authenticated|unauthori[sz]ed|authentication (failed|required|error)|(invalid|missing|expired) api key|api key (is )?(invalid|missing|expired|required)|(log ?in|sign ?in) (is )?required|run .?agent login`)
	rateLimitRE   = regexp.MustCompile(`(?i)usage limit|rate[ -]?limit|quota|too many requests|\b429\b`)
	badModelRE    = regexp.MustCompile(`(?i)model not found|(invalid|unknown|unsupported|unavailable) model|cannot use (this|the) model|no such model|model \S+ (is )?(not (available|supported|found)|does not exist)`)
)

// rateLimitRetry is the Retry-After of a usage or rate limit, which the
// CLI does not state.
const rateLimitRetry = 60

// modelListTimeout bounds the `agent models` run behind a model error.
const modelListTimeout = 15 * time.Second

// classify turns what a failed CLI said into the error to send.
func (c *CLI) classify(ctx context.Context, model, said string) *models.Error {
	said = strings.TrimSpace(stripANSI(said))
	clipped := utils.Clip(strings.Join(strings.Fields(said), " "), 500)
	switch {
	case notLoggedInRE.MatchString(said):
		return &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "agent_not_logged_in",
			Message: "the Cursor Agent CLI is not logged in: set CURSOR_API_KEY to a Cursor user API key (Cursor dashboard, Integrations, User API Keys) " +
				"or run `agent login` on the gateway's host. The CLI said: " + orNone(clipped)}
	case rateLimitRE.MatchString(said):
		return &models.Error{Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "quota_exceeded", RetryAfter: rateLimitRetry,
			Message: "Cursor refused the request for a usage or rate limit of the subscription: " + orNone(clipped)}
	case badModelRE.MatchString(said):
		listCtx, cancel := context.WithTimeout(ctx, modelListTimeout)
		defer cancel()
		offered := "unknown (`agent models` failed; run it on the gateway's host)"
		if ids, err := c.ListModels(listCtx); err == nil && len(ids) > 0 {
			offered = strings.Join(ids, ", ")
		}
		return &models.Error{Status: http.StatusBadRequest, Kind: models.KindInvalidRequest, Code: "model_not_found", Param: "model",
			Message: fmt.Sprintf("the Cursor Agent CLI does not offer the model %q; `agent models` lists: %s", utils.Clip(model, utils.QuoteLen), offered)}
	}
	return models.Upstream(http.StatusBadGateway, "agent_failed", nil, "the Cursor Agent CLI failed: %s", orNone(clipped))
}
