package anthropic

import "strings"

// CutAtStop cuts text before the first occurrence of any of the stop
// sequences (the earliest position wins, then the first listed). It
// returns the text to keep and the sequence found ("" when none).
func CutAtStop(text string, stops []string) (kept, found string) {
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
	kept, found := CutAtStop(buf, s.stops)
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
