// Package upstream is the contract between the core and its back doors,
// which stream a reply as deltas and know nothing of any client protocol.
//
// A text back door (web chat, Agent CLI) reads Messages as plain text turns;
// the core teaches it tools through package toolproto. A native back door
// (Cursor's agent API) implements Native: it reads Conversation, Tools and
// Choice as the client sent them and returns whole DeltaToolCalls.
package upstream

import (
	"context"

	"cursor2api/models"
)

// Request is one conversation sent to a back door, in the form the back
// door asked for: the core's dialect, chosen once by Native, fills either
// Messages or Conversation, Tools and Choice, and the back door reads what
// it asked for. The core itself reads no field by kind.
type Request struct {
	// Model is the back door's own model id.
	Model string
	// Messages is the conversation as text turns, the tool protocol
	// included: the form of a back door that is not Native.
	Messages []models.Turn
	// Conversation is the client's conversation, system messages, tool
	// calls and tool results included, and Tools the tools the model may
	// call natively, Choice how (empty when none may be called): the form
	// of a Native back door.
	Conversation []models.Message
	Tools        []models.Tool
	Choice       models.ToolChoice
	// Thinking asks for the model's reasoning.
	Thinking bool
	// Session identifies the client's conversation across requests (its
	// session id, or a hash of its first messages), so that a back door
	// with several accounts keeps a conversation on one. May be empty.
	Session string
	// Tenant is the fingerprint of the client key the conversation came
	// with ("" with auth off). What a back door keeps for a later request
	// (a turn parked at its tool calls) is kept for that tenant only.
	Tenant string
	// RequestID is the gateway's request id, for logs.
	RequestID string
}

// Bytes is the size of the conversation req sends: its text turns, or
// its messages' content and tools. The core estimates the usage from it
// when the upstream reports none.
func (req Request) Bytes() int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Text)
	}
	for _, m := range req.Conversation {
		for _, b := range m.Blocks {
			n += len(b.Text) + len(b.Name) + len(b.Arguments)
			if b.Kind == models.BlockImage {
				n += imageBytes
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// imageBytes is what an image counts for in Bytes: the bytes of about
// 1,600 tokens, what a large image costs on Claude (width × height / 750,
// capped near there), not the size of its data.
const imageBytes = 1600 * 4

// DeltaKind says what a Delta carries.
type DeltaKind uint8

const (
	DeltaText      DeltaKind = iota + 1 // the model's text, protocol markup included
	DeltaReasoning                      // native reasoning, when the model has it
	// DeltaToolCall is one whole tool call the model made natively: Call
	// holds it. A native back door sends every call of a turn before it
	// returns; a text back door sends one when its upstream calls a tool
	// natively, and the core decides whether it is a call of the client's.
	DeltaToolCall
	// DeltaLength says the upstream cut the answer at its own output cap
	// and nothing more will come: the answer's finish is "length".
	DeltaLength
)

// Delta is one piece of the streamed reply.
type Delta struct {
	Kind DeltaKind
	Text string
	// Call is the call of a DeltaToolCall. A back door that must recognise
	// its calls' results gives IDs of the core's form, "call_" and
	// alphanumerics, which survive the doors' re-prefixing (toolu_); the
	// core replaces an id of any other form with its own.
	Call models.ToolCall
}

// Upstream streams a reply: Stream calls fn for each delta in order and
// returns the reported usage (or nil). Errors are *models.Error or ctx's; an
// error from fn cancels the request and is returned. Stream returns only once
// nothing of the request runs, save what it parks for the next (a native turn).
type Upstream interface {
	Stream(ctx context.Context, req Request, fn func(Delta) error) (*models.Usage, error)
}

// Native is implemented by a back door that takes the conversation and
// its tools natively (Request.Conversation, Tools and Choice) and returns
// the model's tool calls as DeltaToolCall. Every other back door is
// taught tools through the text protocol.
type Native interface {
	Upstream
	// NativeTools reports that the back door takes tools natively.
	NativeTools() bool
}

// StreamFunc is an Upstream's Stream as a function.
type StreamFunc func(ctx context.Context, req Request, fn func(Delta) error) (*models.Usage, error)

// Wrap returns up with each turn run by around, which calls next for up's
// own turn and may watch or change what it returns. The wrapper keeps
// IsNative's answer: metrics and health tracking are not back doors.
func Wrap(up Upstream, around func(ctx context.Context, req Request, fn func(Delta) error, next StreamFunc) (*models.Usage, error)) Upstream {
	return wrapped{up, around}
}

type wrapped struct {
	up     Upstream
	around func(context.Context, Request, func(Delta) error, StreamFunc) (*models.Usage, error)
}

func (w wrapped) Stream(ctx context.Context, req Request, fn func(Delta) error) (*models.Usage, error) {
	return w.around(ctx, req, fn, w.up.Stream)
}

func (w wrapped) Unwrap() Upstream { return w.up }

// IsNative reports whether up takes tools natively. Wrappers that add
// metrics or health tracking keep the answer of the back door they wrap
// by implementing Unwrap.
func IsNative(up Upstream) bool {
	for up != nil {
		if n, ok := up.(Native); ok && n.NativeTools() {
			return true
		}
		w, ok := up.(interface{ Unwrap() Upstream })
		if !ok {
			return false
		}
		up = w.Unwrap()
	}
	return false
}
