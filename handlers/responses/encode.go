package responses

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/handlers/openai"
	"cursor2api/models"
	"cursor2api/utils"
)

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// NewID returns a response id.
func NewID() string { return "resp_" + utils.RandomString(utils.Alphanumerics, 32) }

// itemID returns an output item id with the API's prefix for its type.
func itemID(prefix string) string { return prefix + "_" + utils.RandomString(utils.Alphanumerics, 32) }

// NewResponse is the response object of req before any output: in
// progress, with the request's settings echoed as the API echoes them.
func NewResponse(id string, createdAt int64, req *Request) Response {
	r := Response{
		ID: id, Object: "response", CreatedAt: createdAt, Status: StatusInProgress,
		MaxOutputTokens:   req.MaxOutputTokens,
		Model:             req.Model,
		Output:            []OutputItem{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		Store:             req.Stored(),
		Text:              TextConfig{Format: &TextFormat{Type: "text"}},
		ToolChoice:        json.RawMessage(`"auto"`),
		Tools:             redactHeaders(req.Tools),
		Truncation:        "disabled",
		Metadata:          req.Metadata,
	}
	if req.Instructions != "" {
		s := req.Instructions
		r.Instructions = &s
	}
	if req.PreviousResponseID != "" {
		s := req.PreviousResponseID
		r.PreviousResponseID = &s
	}
	if req.Reasoning != nil {
		r.Reasoning = *req.Reasoning
	}
	if req.Text != nil && req.Text.Format != nil {
		r.Text = *req.Text
	}
	if len(req.ToolChoice) > 0 {
		r.ToolChoice = req.ToolChoice
	}
	if r.Tools == nil {
		r.Tools = []json.RawMessage{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return r
}

// Redacted replaces the value of each header of an mcp tool in what is
// echoed and kept of a request.
const Redacted = "<redacted>"

// redactHeaders are tools with the values of their mcp tools' headers
// (bearer tokens) replaced by Redacted, their names kept: the response
// object echoes the tools, the store keeps it and GET serves it.
func redactHeaders(tools []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	for i, raw := range tools {
		h := gjson.GetBytes(raw, "headers")
		if !h.IsObject() || gjson.GetBytes(raw, "type").String() != "mcp" || h.Index <= 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(tools)
		}
		redacted := []byte{'{'}
		h.ForEach(func(k, _ gjson.Result) bool {
			if len(redacted) > 1 {
				redacted = append(redacted, ',')
			}
			redacted = append(redacted, k.Raw...)
			redacted = append(redacted, `:"`+Redacted+`"`...)
			return true
		})
		redacted = append(redacted, '}')
		tool := make(json.RawMessage, 0, len(raw))
		tool = append(tool, raw[:h.Index]...)
		tool = append(tool, redacted...)
		tool = append(tool, raw[h.Index+len(h.Raw):]...)
		out[i] = tool
	}
	if out == nil {
		return tools
	}
	return out
}

// callItem is the output item, without arguments or input, of the call
// id to the core's tool name: a function_call, a custom_tool_call for a
// custom tool, named back into its namespace, or a tool_search_call.
func (n Names) callItem(id, name string) OutputItem {
	q := n.Split(name)
	if q.Search {
		return OutputItem{ID: itemID("tsc"), Type: ItemToolSearchCall, CallID: id}
	}
	if q.Custom {
		return OutputItem{ID: itemID("ctc"), Type: ItemCustomToolCall, CallID: id, Name: q.Name, Namespace: q.Namespace}
	}
	return OutputItem{ID: itemID("fc"), Type: ItemFunctionCall, CallID: id, Name: q.Name, Namespace: q.Namespace}
}

// FromAnswer completes base with a whole answer: its reasoning (when
// shown), its text, then its calls, named back into their namespaces.
func FromAnswer(base Response, ans *models.Answer, names Names) Response {
	out := base
	out.Output = []OutputItem{}
	if ans.Thinking != "" {
		out.Output = append(out.Output, OutputItem{ID: itemID("rs"), Type: ItemReasoning, Status: StatusCompleted, Text: ans.Thinking})
	}
	for _, run := range ans.ToolRuns {
		out.Output = append(out.Output, mcpItem(run))
	}
	if len(ans.ToolCalls) == 0 || strings.Trim(ans.Text, utils.JSONSpace) != "" {
		out.Output = append(out.Output, OutputItem{ID: itemID("msg"), Type: ItemMessage, Status: StatusCompleted, Text: ans.Text})
	}
	for _, c := range ans.ToolCalls {
		it := names.callItem(c.ID, c.Name)
		it.Status = StatusCompleted
		if it.Type == ItemCustomToolCall {
			it.Input = CustomCallInput(c.Arguments)
		} else {
			it.Arguments = c.Arguments
		}
		out.Output = append(out.Output, it)
	}
	out.Status = StatusCompleted
	if ans.Finish == models.FinishLength {
		// The answer was cut in its text or reasoning, the last item.
		out.Status, out.IncompleteDetails = StatusIncomplete, &maxOutputTokensReached
		out.Output[len(out.Output)-1].Status = StatusIncomplete
	}
	u := toUsage(ans.Usage)
	out.Usage = &u
	return out
}

// toUsage renders the core's usage. The Responses API has no field for
// the tokens written to the cache: they are part of input_tokens.
func toUsage(u models.Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens, InputTokensDetails: InputTokensDetails{CachedTokens: u.CacheReadTokens},
		OutputTokens: u.OutputTokens, OutputTokensDetails: OutputTokensDetails{ReasoningTokens: u.ReasoningTokens},
		TotalTokens: u.TotalTokens,
	}
}

// OutputItems returns the response's output items as JSON, to be stored
// as history for previous_response_id.
func OutputItems(r Response) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(r.Output))
	for _, it := range r.Output {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// ErrorBodyOf renders a neutral error as the OpenAI error body, which the
// Responses API shares.
func ErrorBodyOf(e *models.Error) openai.ErrorBody { return openai.ErrorBodyOf(e) }

// failureCode names a failure as the error codes of a failed response do.
func failureCode(e *models.Error) string {
	switch {
	case e.Kind == models.KindRateLimit || e.Status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case e.Code != "":
		return e.Code
	}
	return "server_error"
}
