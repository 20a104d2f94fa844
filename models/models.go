// Package models holds the gateway's protocol-neutral types: the request
// every front door decodes into, the answer every door encodes from, the
// text conversation every back door takes, the neutral error, and the
// public model catalog. It knows no wire format and imports nothing of the
// project.
package models

import (
	"encoding/json"
	"strings"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool messages carry the result of one tool call.
	RoleTool Role = "tool"
)

// BlockKind says what a Block carries.
type BlockKind uint8

const (
	// BlockText is plain text.
	BlockText BlockKind = iota + 1
	// BlockMedia stands for content the upstream cannot take (an image, a
	// file, audio); Text names its type, and the prompt says it was omitted.
	BlockMedia
	// BlockThinking is earlier reasoning of the assistant. It is history
	// the model need not see again, and never text.
	BlockThinking
	// BlockToolCall is a call the assistant made: ID, Name, Arguments.
	BlockToolCall
	// BlockImage is an image sent inline: MediaType (image/png, …) and
	// Data, its standard base64, as the client sent it. A back door that
	// takes text only treats it as BlockMedia named "image".
	BlockImage
	// BlockToolReference, in a tool result, names a deferred tool (Name)
	// that the client's tool search found: from then on the model is
	// offered it. The core turns it into words before any back door sees it.
	BlockToolReference
)

// Block is one piece of a message's content.
type Block struct {
	Kind BlockKind
	Text string
	// ID, Name and Arguments (a JSON object) describe a tool call; Name
	// alone a tool reference's tool.
	ID, Name, Arguments string
	// MediaType and Data (base64) are an image's.
	MediaType, Data string
}

// Message is one entry of the conversation history.
type Message struct {
	Role Role
	// Blocks are the content: text and media of any role, thinking and
	// tool calls of the assistant, the result's content of RoleTool.
	Blocks []Block
	// ToolCallID and ToolName name the call a RoleTool message answers
	// (ToolName may be empty: the call's own block names it).
	ToolCallID, ToolName string
	// IsError marks a tool result that reports a failure.
	IsError bool
}

// Text returns the text of the message's text blocks, joined by newlines.
func (m Message) Text() string {
	// The common message of one text block is that block's text, shared
	// rather than copied.
	var only *Block
	for i := range m.Blocks {
		if m.Blocks[i].Kind != BlockText {
			continue
		}
		if only != nil {
			only = nil
			break
		}
		only = &m.Blocks[i]
	}
	if only != nil {
		return only.Text
	}
	var b strings.Builder
	n := 0
	for _, blk := range m.Blocks {
		if blk.Kind == BlockText {
			if n > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Text)
			n++
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool-call blocks.
func (m Message) ToolCalls() []Block { return m.blocks(BlockToolCall) }

func (m Message) blocks(kind BlockKind) []Block {
	var out []Block
	for _, b := range m.Blocks {
		if b.Kind == kind {
			out = append(out, b)
		}
	}
	return out
}

// Tool is a function the client can run, with the JSON Schema of its
// arguments (nil when the client gave none).
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// RawInput, when set, names the one string parameter of a tool whose
	// input is free text (a Responses custom tool): a call written with
	// that text bare rather than as JSON still counts, the text being that
	// parameter's value. Models asked for "a freeform tool, not JSON" do
	// write it so.
	RawInput string
	// Deferred holds the tool back from the model until a BlockToolReference
	// in the conversation names it (Anthropic's defer_loading): a client
	// with many tools sends them all and lets its tool search load a few.
	Deferred bool
	// Annotations are an MCP tool's hints (readOnlyHint, title, …) as its
	// server gave them, a JSON object; only listings show them.
	Annotations json.RawMessage
}

// ToolChoiceMode is how the request wants tools used.
type ToolChoiceMode uint8

const (
	ChoiceAuto     ToolChoiceMode = iota // the model decides
	ChoiceNone                           // no tool may be called
	ChoiceRequired                       // at least one call
	ChoiceFunction                       // a call of one named tool
)

// ToolChoice is the request's tool choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string // for ChoiceFunction: a declared tool
	// Server, when set, is the label of an MCP server the request named
	// (MCPServers): the choice is of its tools, which the gateway runs,
	// rather than of the client's. The answer's first round must call its
	// tool Name (ChoiceFunction, Name as MCPToolName gives it) or any of
	// its tools (ChoiceRequired); the rounds after it choose freely.
	Server string
}

// Request is one turn asked of the gateway, whichever door it came in by.
type Request struct {
	// Model is the public model name the client asked for.
	Model    string
	Messages []Message
	Tools    []Tool
	Choice   ToolChoice
	// SingleCall allows at most one tool call in the answer (OpenAI's
	// parallel_tool_calls: false, Anthropic's disable_parallel_tool_use).
	SingleCall bool
	// Stream asks for the answer as it is produced.
	Stream bool
	// IncludeUsage asks a streamed answer to report its usage.
	IncludeUsage bool
	// Thinking asks the model to reason first, whatever the model name.
	Thinking bool
	// ShowThinking sends the reasoning to the client (EXPOSE_THINKING
	// does so for every request).
	ShowThinking bool
	// MaxOutputTokens bounds the answer's text and reasoning, in the
	// gateway's estimate of tokens; 0: no bound. An answer cut there ends
	// with FinishLength.
	MaxOutputTokens int
	// StopSequences end the answer's text before the first of them that
	// the model writes; nothing of the answer after it is sent, and the
	// answer ends with FinishStopSequence.
	StopSequences []string
	// Client identifies the calling application.
	Client Client
	// Session is the client's own id for the conversation, when it sends
	// one (Claude Code's session id, Codex's session_id header,
	// prompt_cache_key): a back door with several accounts keeps the
	// conversation on one by it.
	Session string
	// Tenant is the fingerprint of the client key the request came with
	// ("" with auth off). What a request leaves behind for a later one (a
	// native turn parked at its tool calls) belongs to it: a request of
	// another tenant does not find it.
	Tenant string
	// MCPServers are MCP servers the request names for itself (the
	// Responses mcp tool, Anthropic's mcp_servers): the gateway connects
	// to them for this request, when MCP_REMOTE_HOSTS allows.
	MCPServers []MCPServer
}

// Client is what the calling application says of itself in its HTTP
// headers. Agents that fail a turn without a tool call are known by it.
type Client struct {
	UserAgent string
	Title     string // X-Title
	Referer   string // HTTP-Referer or Referer
}

// Usage is the token accounting of an answer.
type Usage struct {
	// InputTokens counts the whole prompt, cached parts included.
	InputTokens  int
	OutputTokens int
	TotalTokens  int
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the upstream's prompt cache;
	// ReasoningTokens the part of OutputTokens spent reasoning. Zero when
	// the upstream does not say.
	CacheReadTokens  int
	CacheWriteTokens int
	ReasoningTokens  int
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens, TotalTokens: u.TotalTokens + v.TotalTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens: u.ReasoningTokens + v.ReasoningTokens,
	}
}

// FinishReason says why an answer ended.
type FinishReason uint8

const (
	FinishStop         FinishReason = iota + 1 // the model finished its answer
	FinishToolCalls                            // the answer ends with tool calls for the client to run
	FinishLength                               // the answer was cut at the request's MaxOutputTokens
	FinishStopSequence                         // the text reached one of the request's StopSequences
)

// ToolCall is a call in a complete answer.
type ToolCall struct {
	ID, Name  string
	Arguments string // a JSON object
}

// MCPToolName is the name a server's tool is offered under.
func MCPToolName(label, tool string) string { return "mcp__" + label + "__" + tool }

// MCPServer is an MCP server a request names, reached over HTTP.
type MCPServer struct {
	// Label names the server in its tools' names (mcp__<label>__<tool>).
	Label   string
	URL     string
	Headers map[string]string
	// AllowedTools are the tool names to offer; nil: every tool.
	AllowedTools []string
	// Param is the request's field that names the server, for errors.
	Param string
}

// ToolRun is a call the gateway ran itself (an MCP tool) while
// answering, with its result.
type ToolRun struct {
	ID, Name  string
	Arguments string // a JSON object
	Output    string
	IsError   bool
}

// Label returns the server and tool of a run named by the gateway's MCP
// convention, mcp__<server>__<tool>; else "" and the name.
func (r ToolRun) Label() (server, tool string) {
	if rest, ok := strings.CutPrefix(r.Name, "mcp__"); ok {
		if server, tool, ok = strings.Cut(rest, "__"); ok && server != "" && tool != "" {
			return server, tool
		}
	}
	return "", r.Name
}

// Answer is a complete, non-streamed answer.
type Answer struct {
	Text string
	// Thinking is the reasoning to show, when it is shown.
	Thinking  string
	ToolCalls []ToolCall
	// ToolRuns are the calls the gateway ran before the answer, in order.
	ToolRuns []ToolRun
	Usage    Usage
	Finish   FinishReason
	// StopSequence is the stop sequence met, with FinishStopSequence.
	StopSequence string
}

// Turn is one text message of the conversation a back door sends upstream.
type Turn struct {
	Role Role // system, user or assistant
	Text string
}
