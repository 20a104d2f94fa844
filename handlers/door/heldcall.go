package door

import "errors"

// HeldCall holds a tool call until it ends, for a door that sends a call
// only once the core knows it is complete (Anthropic, Gemini). Embedded in
// a door's encoder, it is the encoder's ToolCallStart and
// ToolCallArguments; the encoder's ToolCallEnd calls EndCall.
type HeldCall struct {
	call Call
	open bool
}

// Call is a tool call a HeldCall held.
type Call struct {
	ID, Name  string
	Fragments []string // the arguments, as they arrived
}

// ToolCallStart begins a call.
func (h *HeldCall) ToolCallStart(id, name string) error {
	if h.open {
		return errors.New("a tool call started before the previous one ended")
	}
	h.call, h.open = Call{ID: id, Name: name}, true
	return nil
}

// ToolCallArguments takes the next piece of the call's arguments.
func (h *HeldCall) ToolCallArguments(fragment string) error {
	if fragment == "" {
		return nil
	}
	if !h.open {
		return errors.New("tool-call arguments outside a tool call")
	}
	h.call.Fragments = append(h.call.Fragments, fragment)
	return nil
}

// EndCall ends the call and returns it; ok is false when there was none
// or it ended incomplete, and the door drops it.
func (h *HeldCall) EndCall(complete bool) (call Call, ok bool) {
	call, ok = h.call, h.open && complete
	*h = HeldCall{}
	return call, ok
}
