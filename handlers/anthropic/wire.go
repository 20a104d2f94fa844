// Package anthropic is the Anthropic Messages door (POST /v1/messages),
// which Claude Code and the Anthropic SDKs speak: its wire types, ToRequest,
// the answer as named events (StreamWriter) or whole, the error body, the
// model list and count_tokens.
//
// Fields the gateway does not use (cache_control, context_management,
// output_config's effort, citations, ...) are not declared, so unknown extras never
// fail a request.
package anthropic

import (
	"encoding/json"
	"errors"

	"cursor2api/utils"
	"cursor2api/utils/jsondec"
)

// MessagesRequest is the body of POST /v1/messages (and, without
// max_tokens, of POST /v1/messages/count_tokens).
type MessagesRequest struct {
	Model         string    `json:"model"`
	System        Content   `json:"system"`
	Messages      []Message `json:"messages"`
	MaxTokens     *int      `json:"max_tokens,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	Stream        bool      `json:"stream"`
	Tools         []Tool    `json:"tools,omitempty"`
	// MCPServers are the MCP connector's servers for this request.
	MCPServers []MCPServerParam `json:"mcp_servers,omitempty"`
	ToolChoice *ToolChoice      `json:"tool_choice,omitempty"`
	Thinking   *Thinking        `json:"thinking,omitempty"`
	// Metadata is kept raw: only the session in its user_id is read
	// (SessionOf), and a shape the gateway does not know fails nothing.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// OutputConfig is kept raw: only its format is read (formatNote), and
	// its other settings (effort, task_budget) fail nothing.
	OutputConfig json.RawMessage `json:"output_config,omitempty"`
	// OutputFormat is the structured-outputs beta's form of
	// output_config.format.
	OutputFormat json.RawMessage `json:"output_format,omitempty"`
}

// Message is one entry of the conversation: a user or assistant turn.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a string or an array of content blocks; a string is kept as
// one text block. It is also the form of system and of tool_result content.
type Content []Block

// UnmarshalJSON accepts a string, null, an array of blocks, or a single
// block object.
func (c *Content) UnmarshalJSON(data []byte) error {
	*c = nil
	return utils.DecodeTextOrArray(data, errContent,
		func(s string) error { *c = Content{{Type: "text", Text: s}}; return nil },
		func(array []byte) error { return jsondec.Unmarshal(array, (*[]Block)(c)) })
}

var errContent = errors.New("content must be a string or an array of content blocks")

// Block is one content block. Which fields are set depends on Type:
// text (Text), image and document (Source), tool_use (ID, Name, Input),
// tool_result (ToolUseID, Content, IsError), thinking (Thinking,
// Signature) and redacted_thinking (Data).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   Content         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	// ServerName is an mcp_tool_use block's MCP server.
	ServerName string `json:"server_name,omitempty"`
	// ToolName is the deferred tool a tool_reference block (in a
	// tool_result: a client's tool search found it) loads.
	ToolName string `json:"tool_name,omitempty"`
	// Source is an image's or a document's.
	Source *Source `json:"source,omitempty"`
}

// Source is where an image or a document is: inline (base64, with
// MediaType and Data), or elsewhere (url, file), which the gateway does
// not fetch.
type Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

// Tool is one entry of tools: a custom tool (Type absent or "custom") with
// the JSON Schema of its input, or a server tool such as
// web_search_20250305, which only Anthropic can run.
type Tool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// DeferLoading holds the tool back from the model until a
	// tool_reference names it (tool search, advanced-tool-use-2025-11-20).
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// ToolChoice is tool_choice: auto, any, tool (with Name) or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking is the thinking request field: enabled (with a budget),
// adaptive, or disabled. Display "omitted" asks for the reasoning without
// its text.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

// Response is a whole message, the non-streaming answer and the message
// of a stream's message_start.
type Response struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []ResponseBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        Usage           `json:"usage"`
}

// ResponseBlock is a content block of an answer. Its fields are exactly
// those Anthropic sends for each type, so it is built by the helpers
// below.
type ResponseBlock map[string]any

// TextBlock is a text block.
func TextBlock(text string) ResponseBlock { return ResponseBlock{"type": "text", "text": text} }

// ThinkingBlock is a thinking block with its signature.
func ThinkingBlock(thinking, signature string) ResponseBlock {
	return ResponseBlock{"type": "thinking", "thinking": thinking, "signature": signature}
}

// ToolUseBlock is a tool_use block; input is a JSON object.
func ToolUseBlock(id, name string, input json.RawMessage) ResponseBlock {
	return ResponseBlock{"type": "tool_use", "id": id, "name": name, "input": input}
}

// Usage is the token accounting of a message. As Anthropic counts,
// InputTokens excludes cache reads and writes, so the three input fields
// add up to the prompt. Cache fields and details are zero unless the back
// door reports them (the native one does).
type Usage struct {
	InputTokens              int                  `json:"input_tokens"`
	OutputTokens             int                  `json:"output_tokens"`
	CacheCreationInputTokens int                  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                  `json:"cache_read_input_tokens"`
	OutputTokensDetails      *OutputTokensDetails `json:"output_tokens_details,omitempty"`
}

// DeltaUsage is message_delta's usage: totals that overwrite message_start's
// estimate. The SDKs keep message_start's value of a field left out, so
// cache fields and details are sent only when not zero.
type DeltaUsage struct {
	InputTokens              int                  `json:"input_tokens"`
	OutputTokens             int                  `json:"output_tokens"`
	CacheCreationInputTokens int                  `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int                  `json:"cache_read_input_tokens,omitempty"`
	OutputTokensDetails      *OutputTokensDetails `json:"output_tokens_details,omitempty"`
}

// OutputTokensDetails breaks the output down: the tokens spent thinking.
type OutputTokensDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

// TokenCount is the response of POST /v1/messages/count_tokens.
type TokenCount struct {
	InputTokens int `json:"input_tokens"`
}
