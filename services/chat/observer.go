package chat

import "cursor2api/utils/toolproto"

// Observer is told of the core's decisions as they happen, for metrics.
// Its methods must be quick and safe for concurrent use. A nil
// Settings.Observer ignores them.
type Observer interface {
	// ToolCalls counts the complete tool calls of an answer sent to the
	// client (n may be 0).
	ToolCalls(n int)
	// HeldTurn is a turn held back from the client until its outcome
	// was known (strict mode, or a whole answer).
	HeldTurn()
	// Retry is the one second turn asked, with its reason: one of
	// RetryBadCall, RetryMissingCall, RetryRefusal, RetryEmpty.
	Retry(reason string)
	// BadCall is a call that could not be sent, with a reason of a fixed
	// small set (see BadCallReason).
	BadCall(reason string)
}

// Reasons of a retry, as given to Observer.Retry.
const (
	RetryBadCall     = "bad_call"
	RetryMissingCall = "missing_call"
	RetryRefusal     = "refusal"
	// RetryEmpty is a turn that said nothing and called nothing.
	RetryEmpty = "empty"
)

// BadCallReason names the reason of a bad call by a label fit for a
// metric: the parser's fixed reasons by name, anything else (a schema
// check's message) as "schema".
func BadCallReason(reason string) string {
	switch reason {
	case toolproto.ReasonUnknownTool:
		return "unknown_tool"
	case toolproto.ReasonBadJSON:
		return "bad_json"
	case toolproto.ReasonCutOff, toolproto.ReasonOpenString:
		return "cut_off"
	case toolproto.ReasonTooLong:
		return "too_long"
	}
	return "schema"
}

// noObserver is the Observer of a nil Settings.Observer.
type noObserver struct{}

func (noObserver) ToolCalls(int)  {}
func (noObserver) HeldTurn()      {}
func (noObserver) Retry(string)   {}
func (noObserver) BadCall(string) {}

func (s *Service) observer() Observer {
	if s.settings.Observer == nil {
		return noObserver{}
	}
	return s.settings.Observer
}

// observeBadCalls reports the bad calls of a finished turn.
func (s *Service) observeBadCalls(t *turnSink) {
	for _, b := range t.bad {
		s.observer().BadCall(BadCallReason(b.Reason))
	}
}
