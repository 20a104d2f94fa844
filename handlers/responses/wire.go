// Package responses is the OpenAI Responses API door (POST /v1/responses),
// which Codex CLI and newer OpenAI SDKs speak: its wire types, ToRequest,
// the answer as typed events (StreamWriter) or whole, and the bounded
// Store of earlier responses for previous_response_id. Errors are OpenAI's.
//
// Fields the gateway does not use (include, client_metadata, ...) are not
// declared, so unknown extras never fail a request.
package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"cursor2api/handlers/openai"
	"cursor2api/models"
)

// Request is the body of POST /v1/responses.
type Request struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	// Input is a string (one user message) or an array of items; it is
	// kept raw so that the items can be stored as they came.
	Input             json.RawMessage   `json:"input"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Stream            bool              `json:"stream"`
	// Background asks for the response to run on after the request
	// returns (the cloud models only).
	Background         bool   `json:"background,omitempty"`
	Store              *bool  `json:"store,omitempty"`
	PreviousResponseID string `json:"previous_response_id,omitempty"`
	// Generate false asks for no answer (Codex's warm-up on the
	// WebSocket): the response completes empty at once, and a later
	// request continues from its input.
	Generate        *bool             `json:"generate,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Text            *TextConfig       `json:"text,omitempty"`
	Reasoning       *Reasoning        `json:"reasoning,omitempty"`
	MaxOutputTokens *int              `json:"max_output_tokens,omitempty"`
	// PromptCacheKey is the client's key of the conversation (Codex sends
	// its conversation id), kept raw so that a value of another type is
	// ignored rather than refused.
	PromptCacheKey json.RawMessage `json:"prompt_cache_key,omitempty"`
}

// Stored reports whether the response may be kept for
// previous_response_id: store defaults to true, as in OpenAI's API.
func (r *Request) Stored() bool { return r.Store == nil || *r.Store }

// TextConfig is the text field: the format of the answer.
type TextConfig struct {
	Format *TextFormat `json:"format,omitempty"`
}

// TextFormat is text.format: {"type":"text"}, {"type":"json_object"} or
// {"type":"json_schema","name":...,"schema":{...}}.
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Reasoning is the reasoning field. Summary, when set, asks for the
// model's reasoning as a summary item.
type Reasoning struct {
	Effort  *string `json:"effort,omitempty"`
	Summary *string `json:"summary,omitempty"`
}

// Tool is one entry of tools: a function, a custom (freeform) tool, a
// namespace of them, tool_search, or a built-in tool (web_search,
// file_search, ...) that only Type names.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// DeferLoading (on a function or a namespace) holds the tool back
	// until a tool_search_output loads it.
	DeferLoading bool `json:"defer_loading,omitempty"`
	// Execution is tool_search's: "client" when the client runs the
	// search, as Codex CLI does; else OpenAI runs it.
	Execution string `json:"execution,omitempty"`
	// Format is a custom tool's input format: unconstrained text when
	// absent.
	Format *CustomFormat `json:"format,omitempty"`
	// Tools are the members of a namespace.
	Tools []Tool `json:"tools,omitempty"`
	// The fields of an mcp tool: a server for this request.
	ServerLabel     string            `json:"server_label,omitempty"`
	ServerURL       string            `json:"server_url,omitempty"`
	ConnectorID     string            `json:"connector_id,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	AllowedTools    json.RawMessage   `json:"allowed_tools,omitempty"`
	RequireApproval json.RawMessage   `json:"require_approval,omitempty"`
}

// CustomFormat is the input format of a custom tool: {"type":"text"}, or
// {"type":"grammar","syntax":"lark"|"regex","definition":...}, which
// Codex CLI uses for apply_patch.
type CustomFormat struct {
	Type       string `json:"type"`
	Syntax     string `json:"syntax,omitempty"`
	Definition string `json:"definition,omitempty"`
}

// InputItem is one item of input: a message (with or without "type"), a
// function_call or custom_tool_call, their outputs, or a reasoning item.
// Other types are history of built-in tools the gateway does not run.
type InputItem struct {
	Type    string         `json:"type"`
	Role    string         `json:"role"`
	Content openai.Content `json:"content"`
	// CallID, Name, Namespace and Arguments describe a function_call,
	// Input instead of Arguments a custom_tool_call; CallID and Output a
	// function_call_output or custom_tool_call_output.
	CallID    string         `json:"call_id"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Arguments Arguments      `json:"arguments"`
	Input     string         `json:"input"`
	Output    openai.Content `json:"output"`
	// ServerLabel and Error belong to an mcp_call; Output is its result.
	ServerLabel string          `json:"server_label"`
	Error       json.RawMessage `json:"error"`
	// Summary is a reasoning item's summary.
	Summary openai.Content `json:"summary"`
	// EncryptedContent is a compaction item's sealed summary (a
	// reasoning item's is opaque to the gateway and unused).
	EncryptedContent string `json:"encrypted_content"`
	// Execution and Tools belong to tool_search_call (with CallID and
	// Arguments) and tool_search_output: the tools the search loaded.
	// Tools stays raw: other items (mcp_list_tools) have their own.
	Execution string          `json:"execution"`
	Tools     json.RawMessage `json:"tools"`
}

// Arguments are a call's arguments: a JSON string (the API's form) or a
// raw JSON object, which some clients send back in history.
type Arguments string

// UnmarshalJSON accepts a string, an object or null.
func (a *Arguments) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0 || bytes.Equal(data, []byte("null")):
		*a = ""
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*a = Arguments(s)
	case data[0] == '{':
		*a = Arguments(data)
	default:
		return fmt.Errorf("arguments must be a JSON string or object")
	}
	return nil
}

// Response is the response object: the body of a non-streamed answer, of
// GET /v1/responses/{id}, and the response field of the lifecycle events.
type Response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              *ResponseError    `json:"error"`
	IncompleteDetails  *json.RawMessage  `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []OutputItem      `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          Reasoning         `json:"reasoning"`
	Store              bool              `json:"store"`
	Text               TextConfig        `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	Truncation         string            `json:"truncation"`
	Usage              *Usage            `json:"usage"`
	Metadata           map[string]string `json:"metadata"`
}

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is the token accounting of a response.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails is part of Usage: the part of the prompt read from
// the upstream's cache (zero unless the back door reports it).
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails is part of Usage: the part of the output spent
// reasoning (zero unless the back door reports it).
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Output item types.
const (
	ItemMessage        = "message"
	ItemFunctionCall   = "function_call"
	ItemCustomToolCall = "custom_tool_call"
	ItemReasoning      = "reasoning"
	// ItemToolSearchCall is a call of the client's tool_search: its
	// Arguments are a JSON object, and the client answers with a
	// tool_search_output item holding the tools it loaded.
	ItemToolSearchCall   = "tool_search_call"
	ItemToolSearchOutput = "tool_search_output"
	// ItemMCPCall is a call the gateway ran on an MCP server.
	ItemMCPCall = "mcp_call"
	// ItemMCPListTools lists the tools of an MCP server the request named.
	ItemMCPListTools = "mcp_list_tools"
	// ItemCompaction holds the conversation compacted into a summary that
	// only this gateway opens (EncryptedContent).
	ItemCompaction = "compaction"
)

// OutputItem is one item of a response's output: a message, a
// function_call, a custom_tool_call, a tool_search_call, a reasoning item,
// or one of the gateway's MCP and compaction items. It marshals to its
// type's shape.
type OutputItem struct {
	ID   string
	Type string
	// Status is in_progress, completed or incomplete; a reasoning item
	// does not show it.
	Status string
	// Text is a message's output_text, or a reasoning item's summary text.
	Text string
	// CallID, Name, Namespace and Arguments describe a function_call,
	// Input instead of Arguments a custom_tool_call; CallID and Arguments
	// (a JSON object) a tool_search_call.
	CallID, Name, Namespace, Arguments, Input string
	// ServerLabel, Output and Error describe an mcp_call (with Name and
	// Arguments); Error is "" when the call succeeded.
	ServerLabel, Output, Error string
	// Tools are an mcp_list_tools item's tools (with ServerLabel, and
	// Error when the listing failed).
	Tools []models.Tool
	// EncryptedContent is a compaction item's sealed summary.
	EncryptedContent string
}

// MarshalJSON writes the item as the Responses API does.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case ItemMessage:
		content := []Part{}
		if it.Status != "in_progress" {
			content = append(content, TextPart(it.Text))
		}
		return json.Marshal(struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Status  string `json:"status"`
			Role    string `json:"role"`
			Content []Part `json:"content"`
		}{it.ID, it.Type, it.Status, "assistant", content})
	case ItemReasoning:
		summary := []Part{}
		if it.Status != "in_progress" {
			summary = append(summary, SummaryPart(it.Text))
		}
		return json.Marshal(struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Summary []Part `json:"summary"`
		}{it.ID, it.Type, summary})
	case ItemFunctionCall, ItemCustomToolCall:
		// The API's custom_tool_call has no status; Codex CLI reads one
		// when it is there, and an incomplete call must say so.
		call := struct {
			ID        string  `json:"id"`
			Type      string  `json:"type"`
			Status    string  `json:"status"`
			CallID    string  `json:"call_id"`
			Name      string  `json:"name"`
			Namespace string  `json:"namespace,omitempty"`
			Arguments *string `json:"arguments,omitempty"`
			Input     *string `json:"input,omitempty"`
		}{ID: it.ID, Type: it.Type, Status: it.Status, CallID: it.CallID, Name: it.Name, Namespace: it.Namespace}
		if it.Type == ItemFunctionCall {
			call.Arguments = &it.Arguments
		} else {
			call.Input = &it.Input
		}
		return json.Marshal(call)
	case ItemToolSearchCall:
		return json.Marshal(struct {
			ID        string          `json:"id"`
			Type      string          `json:"type"`
			Status    string          `json:"status"`
			CallID    string          `json:"call_id"`
			Execution string          `json:"execution"`
			Arguments json.RawMessage `json:"arguments"`
		}{it.ID, it.Type, it.Status, it.CallID, "client", searchArguments(it.Arguments)})
	case ItemMCPCall:
		return json.Marshal(mcpCallItem(&it))
	case ItemMCPListTools:
		return json.Marshal(mcpListItem(&it))
	case ItemCompaction:
		return json.Marshal(struct {
			ID               string `json:"id"`
			Type             string `json:"type"`
			EncryptedContent string `json:"encrypted_content"`
		}{it.ID, it.Type, it.EncryptedContent})
	}
	return nil, fmt.Errorf("unknown output item type %q", it.Type)
}

// Part is a content part of a message (output_text) or a summary part of
// a reasoning item (summary_text).
type Part struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Annotations *[]any           `json:"annotations,omitempty"`
	Logprobs    *json.RawMessage `json:"logprobs,omitempty"`
}

// TextPart is an output_text part.
func TextPart(text string) Part {
	return Part{Type: "output_text", Text: text, Annotations: &[]any{}, Logprobs: emptyList()}
}

// SummaryPart is a summary_text part.
func SummaryPart(text string) Part { return Part{Type: "summary_text", Text: text} }

func emptyList() *json.RawMessage {
	l := json.RawMessage("[]")
	return &l
}

// Event is one streamed event. Every event has its type and a sequence
// number; the other fields are those of its type.
type Event struct {
	Type           string           `json:"type"`
	SequenceNumber int              `json:"sequence_number"`
	Response       *Response        `json:"response,omitempty"`
	OutputIndex    *int             `json:"output_index,omitempty"`
	ItemID         string           `json:"item_id,omitempty"`
	Item           *OutputItem      `json:"item,omitempty"`
	ContentIndex   *int             `json:"content_index,omitempty"`
	SummaryIndex   *int             `json:"summary_index,omitempty"`
	Part           *Part            `json:"part,omitempty"`
	Delta          *string          `json:"delta,omitempty"`
	Text           *string          `json:"text,omitempty"`
	Name           string           `json:"name,omitempty"`
	Arguments      *string          `json:"arguments,omitempty"`
	Logprobs       *json.RawMessage `json:"logprobs,omitempty"`
}

// ErrorEvent is the error event of a stream: the OpenAI error object's
// fields, code and param null when unknown.
type ErrorEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

// Deleted is the body of DELETE /v1/responses/{id}.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
