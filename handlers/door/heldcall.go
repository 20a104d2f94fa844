package door

import "errors"

// HeldCall holds a tool call until it ends, for a door that sends a call
// only once the core knows it is complete (Anthropic, Gemini).
type HeldCall struct {
	ID, Name  string
	Fragments []string // the arguments, as they arrived
	open      bool
}

// Start begins a call.
func (h *HeldCall) Start(id, name string) error {
	if h.open {
		return errors.New("a tool call started before the previous one ended")
	}
	*h = HeldCall{ID: id, Name: name, open: true}
	return nil
}

// Add takes the next piece of the call's arguments.
func (h *HeldCall) Add(fragment string) error {
	if fragment == "" {
		return nil
	}
	if !h.open {
		return errors.New("tool-call arguments outside a tool call")
	}
	h.Fragments = append(h.Fragments, fragment)
	return nil
}

// End ends the call and returns it; ok is false when there was none or
// it ended incomplete, and the door drops it.
func (h *HeldCall) End(complete bool) (call HeldCall, ok bool) {
	call, *h = *h, HeldCall{}
	return call, call.open && complete
}
