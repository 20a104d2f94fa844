package webchat

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// The web chat caps an answer near 4096 tokens (finishReason "length"). Such
// an answer is continued here, so the core sees one answer: the text so far
// is resent as an assistant turn with an instruction to go on, up to
// MaxContinuations times, and then ends with upstream.DeltaLength rather than
// being silently cut. The client's max_tokens is the core's to enforce.

// finishLength is the finish reason of an answer cut at the upstream's cap.
const finishLength = "length"

// continueInstruction is the user turn that asks for the rest of a cut
// answer.
const continueInstruction = "Your previous reply was cut off by the output limit. Continue it exactly where it stopped, " +
	"from the very next character: do not repeat any of it, and add no preface or comment."

// overlapWindow bounds how much of the answer's end a continuation is
// compared with, and so how much of a continuation is held back while
// that is decided.
const overlapWindow = 2048

// streamContinued streams req, continuing an answer cut at the upstream's
// cap. The usage of every request adds up.
func (c *Client) streamContinued(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	var total *models.Usage
	// The answer's text so far, as delivered, in the pieces it came in:
	// put together only for a continuation, which few answers need.
	var text []string
	size := 0
	record := func(d upstream.Delta) error {
		if d.Kind == upstream.DeltaText && c.MaxContinuations > 0 {
			text = append(text, d.Text)
			size += len(d.Text)
		}
		return fn(d)
	}
	seg := req
	var st *stitcher
	for n := 0; ; n++ {
		usage, finish, err := c.segment(ctx, seg, st, record)
		if usage != nil {
			sum := *usage
			if total != nil {
				sum = total.Add(sum)
			}
			total = &sum
		}
		if err != nil || finish != finishLength {
			return total, err
		}
		if n >= c.MaxContinuations || size == 0 {
			c.log(ctx, req, slog.LevelInfo, "upstream cut the answer at its output cap",
				"continuations", n, "max_continuations", c.MaxContinuations, "answer_bytes", size)
			return total, fn(upstream.Delta{Kind: upstream.DeltaLength})
		}
		c.log(ctx, req, slog.LevelInfo, "upstream cut the answer at its output cap, continuing",
			"continuation", n+1, "answer_bytes", size)
		answer := strings.Join(text, "")
		text = append(text[:0], answer)
		seg = continued(req, answer)
		st = newStitcher(answer)
	}
}

// continued is req asking for the rest of answer.
func continued(req upstream.Request, answer string) upstream.Request {
	msgs := make([]models.Turn, 0, len(req.Messages)+2)
	msgs = append(msgs, req.Messages...)
	msgs = append(msgs,
		models.Turn{Role: models.RoleAssistant, Text: answer},
		models.Turn{Role: models.RoleUser, Text: continueInstruction})
	req.Messages = msgs
	return req
}

// stitcher joins a continuation onto the answer, dropping what the model
// repeats of the answer's end (the cut word, the last line). It works on raw
// text, so tool protocol markup may be split anywhere.
type stitcher struct {
	tail    []byte // the answer's end before the continuation
	held    []byte
	decided bool
	out     func(upstream.Delta) error
}

func newStitcher(answer string) *stitcher {
	if len(answer) > overlapWindow {
		answer = answer[len(answer)-overlapWindow:]
	}
	return &stitcher{tail: []byte(answer)}
}

// reset starts an attempt at the continuation, delivering to out.
func (s *stitcher) reset(out func(upstream.Delta) error) {
	s.held, s.decided, s.out = s.held[:0], false, out
}

// delta takes the continuation's deltas.
func (s *stitcher) delta(d upstream.Delta) error {
	switch {
	case s.decided:
		return s.out(d)
	case d.Kind == upstream.DeltaReasoning:
		return s.out(d) // not part of the answer's text
	case d.Kind != upstream.DeltaText:
		if err := s.end(); err != nil { // a tool call or the end: the text before it goes first
			return err
		}
		return s.out(d)
	}
	s.held = append(s.held, d.Text...)
	drop, ok := overlap(s.tail, s.held, false)
	if !ok {
		return nil
	}
	return s.release(drop)
}

// end releases what is held when the continuation ends.
func (s *stitcher) end() error {
	if s.decided {
		return nil
	}
	drop, _ := overlap(s.tail, s.held, true)
	return s.release(drop)
}

func (s *stitcher) release(drop int) error {
	s.decided = true
	rest := string(s.held[drop:])
	s.held = s.held[:0]
	if rest == "" {
		return nil
	}
	return s.out(upstream.Delta{Kind: upstream.DeltaText, Text: rest})
}

// overlap returns how many bytes at the start of next repeat the end of tail
// (only plausible repeats count: see plausibleRepeat). decided is false while
// more of next could still make a longer repeat, unless final.
func overlap(tail, next []byte, final bool) (n int, decided bool) {
	if len(tail) == 0 || len(next) == 0 {
		return 0, final || len(tail) == 0
	}
	if !final && len(next) < len(tail) && bytes.Contains(tail[:len(tail)-1], next) {
		return 0, false
	}
	for k := min(len(tail), len(next)); k > 0; k-- {
		if bytes.Equal(tail[len(tail)-k:], next[:k]) && plausibleRepeat(tail, k) {
			return k, true
		}
	}
	return 0, true
}

// minBlindOverlap is the shortest repeat dropped wherever it starts.
const minBlindOverlap = 16

// minMarkupOverlap is the shortest repeat dropped when it starts at
// punctuation (markup, JSON) rather than at a word.
const minMarkupOverlap = 4

// plausibleRepeat reports whether the last k bytes of tail, seen again at
// the start of a continuation, are a repeat: long ones always, white
// space alone never; a word or markup restarted after white space,
// whatever its length (a model told not to repeat rarely doubles what it
// stopped at); a few bytes that start or follow punctuation (markup, JSON).
func plausibleRepeat(tail []byte, k int) bool {
	start := len(tail) - k
	rep := tail[start:]
	switch {
	case k >= minBlindOverlap:
		return true
	case len(bytes.TrimSpace(rep)) == 0:
		return false
	case k >= minMarkupOverlap:
		return start == 0 || !isWordByte(tail[start-1]) || !isWordByte(rep[0])
	}
	return start == 0 || isSpace(tail[start-1])
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\n' || b == '\t' || b == '\r'
}

// isWordByte reports whether b belongs to a word: a letter, a digit, an
// underscore, or a byte of a non-ASCII character.
func isWordByte(b byte) bool {
	return b == '_' || b >= 0x80 || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
