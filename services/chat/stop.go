package chat

import (
	"strings"

	"cursor2api/models"
)

// StopSequenceSink is a Sink that names the stop sequence that ended an
// answer (Anthropic's stop_sequence): StopSequence is called once, just
// before Finish(models.FinishStopSequence, ...).
type StopSequenceSink interface {
	Sink
	StopSequence(seq string)
}

// cutAtStop cuts text before the first occurrence of any of the stop
// sequences (the earliest position wins, then the first listed). It
// returns the text to keep and the sequence found ("" when none).
func cutAtStop(text string, stops []string) (kept, found string) {
	at := -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
			at, found = i, s
		}
	}
	if at < 0 {
		return text, ""
	}
	return text[:at], found
}

// stopScanner applies stop sequences to text that arrives in pieces. It
// holds back the end of the text that could still begin a stop sequence,
// so that a sequence split across pieces is found too.
type stopScanner struct {
	stops   []string
	pending string
	found   string // the stop sequence met; nothing passes after it
	longest int
}

func newStopScanner(stops []string) *stopScanner {
	s := &stopScanner{}
	for _, st := range stops {
		if st != "" {
			s.stops = append(s.stops, st)
			s.longest = max(s.longest, len(st))
		}
	}
	return s
}

// feed takes the next piece and returns the text that may be sent now.
func (s *stopScanner) feed(text string) string {
	if s.found != "" {
		return ""
	}
	if len(s.stops) == 0 {
		return text
	}
	buf := s.pending + text
	kept, found := cutAtStop(buf, s.stops)
	if found != "" {
		s.found, s.pending = found, ""
		return kept
	}
	hold := s.partialSuffix(buf)
	s.pending = buf[len(buf)-hold:]
	return buf[:len(buf)-hold]
}

// flush returns the held-back text: nothing more continues it.
func (s *stopScanner) flush() string {
	out := s.pending
	s.pending = ""
	return out
}

// partialSuffix is the length of the longest end of buf that is a proper
// prefix of a stop sequence.
func (s *stopScanner) partialSuffix(buf string) int {
	for n := min(len(buf), s.longest-1); n > 0; n-- {
		tail := buf[len(buf)-n:]
		for _, st := range s.stops {
			if strings.HasPrefix(st, tail) {
				return n
			}
		}
	}
	return 0
}

// stopSink cuts the answer before the first stop sequence; nothing after it
// passes. Text that may begin a sequence is held until the next piece
// decides. The upstream is still read to its end, so the usage reported
// counts what the model wrote past the sequence.
type stopSink struct {
	next   Sink
	report Sink // the door's own sink, which may be a StopSequenceSink
	scan   *stopScanner
	inCall bool // a call after the stop is being dropped
}

func newStopSink(next, report Sink, stops []string) *stopSink {
	return &stopSink{next: next, report: report, scan: newStopScanner(stops)}
}

func (s *stopSink) stopped() bool { return s.scan.found != "" }

// flushText sends the text held for a possible sequence: something else
// follows, so nothing continues it.
func (s *stopSink) flushText() error {
	if t := s.scan.flush(); t != "" {
		return s.next.Text(t)
	}
	return nil
}

func (s *stopSink) Text(text string) error {
	if s.stopped() {
		return nil
	}
	if kept := s.scan.feed(text); kept != "" {
		return s.next.Text(kept)
	}
	return nil
}

func (s *stopSink) Reasoning(text string) error {
	if s.stopped() {
		return nil
	}
	if err := s.flushText(); err != nil {
		return err
	}
	return s.next.Reasoning(text)
}

func (s *stopSink) ToolCallStart(id, name string) error {
	if s.stopped() {
		s.inCall = true
		return nil
	}
	if err := s.flushText(); err != nil {
		return err
	}
	return s.next.ToolCallStart(id, name)
}

func (s *stopSink) ToolCallArguments(fragment string) error {
	if s.inCall {
		return nil
	}
	return s.next.ToolCallArguments(fragment)
}

func (s *stopSink) ToolCallEnd(complete bool) error {
	if s.inCall {
		s.inCall = false
		return nil
	}
	return s.next.ToolCallEnd(complete)
}

// Finish sends the text still held, and reports a sequence met.
func (s *stopSink) Finish(reason models.FinishReason, usage models.Usage) error {
	if err := s.end(); err != nil {
		return err
	}
	if s.stopped() {
		reason = models.FinishStopSequence
		if r, ok := s.report.(StopSequenceSink); ok {
			r.StopSequence(s.scan.found)
		}
	}
	return s.next.Finish(reason, usage)
}

// end sends the text still held when no sequence was met.
func (s *stopSink) end() error {
	if s.stopped() {
		return nil
	}
	return s.flushText()
}
