package toolproto

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"cursor2api/utils"
)

// EventKind says what an Event carries.
type EventKind uint8

const (
	// EventText is visible answer text.
	EventText EventKind = iota + 1
	// EventThinking is hidden reasoning.
	EventThinking
	// EventToolCall is one complete tool call.
	EventToolCall
	// EventBadCall is an invoke that cannot be passed on as a call: an
	// unknown tool, arguments that are not a JSON object, or a body cut
	// off by the end of the stream. Name is the name the model wrote, Text
	// the body, Reason why it was refused. The caller decides whether to
	// show the body as text or ask the model again.
	EventBadCall
	// EventToolCallStart opens a call whose arguments stream (StreamArgs);
	// EventToolCallDelta pieces follow. EventToolCall ends it with the whole
	// Arguments, whose missing closers the caller sends only if it accepts
	// the call; after EventBadCall the pieces stay incomplete.
	EventToolCallStart
	// EventToolCallDelta is the next piece of the open call's Arguments.
	EventToolCallDelta
)

// Event is one output of the Parser.
type Event struct {
	Kind EventKind
	// Text holds the text of EventText and EventThinking.
	Text string
	// Name and Arguments (a compact JSON object) describe an EventToolCall.
	Name      string
	Arguments string
	// ID is the call's own id when the upstream gave it one (a call made
	// natively rather than in the text); empty for calls parsed here.
	ID string
	// Reason explains an EventBadCall.
	Reason string
}

// Reasons of EventBadCall.
const (
	ReasonUnknownTool = "unknown tool"
	ReasonBadJSON     = "arguments are not a JSON object"
	ReasonCutOff      = "the stream ended inside the call"
	ReasonTooLong     = "the arguments are longer than the gateway's limit (MAX_TOOL_CALL_BYTES)"
	// ReasonOpenString is given for a body the stream ended in after a
	// </invoke> that stood inside a string: either the string was never
	// closed or the tag was not escaped.
	ReasonOpenString = `a string in the arguments is never closed (inside a string, write </invoke> as <\/invoke>)`
)

// Protocol markup. The trigger is per request; the rest is fixed.
const (
	invokeOpen = "<invoke"
	// Claude-family models sometimes write their native format, a
	// <function_calls> block of <invoke> elements, without the trigger.
	functionCallsOpen  = "<function_calls>"
	functionCallsClose = "</function_calls>"
	invokeClose        = "</invoke>"
	thinkingOpen       = "<thinking>"
	thinkingClose      = "</thinking>"

	// maxInvokeTag bounds the opening tag <invoke name="...">; a longer one
	// is not markup.
	maxInvokeTag = 256
	// DefaultMaxBuffered is the default bound of an invoke body and of the
	// copy of an unterminated thinking block.
	DefaultMaxBuffered = 1 << 20
)

// ParserOptions configures a Parser for one response.
type ParserOptions struct {
	// Trigger is the request's trigger signal (<<CALL_xxxxxxxx>>). Empty
	// means the request has no tools and no tool call is recognised.
	Trigger string
	// Thinking makes <thinking> blocks EventThinking. Otherwise the tags
	// are removed and their content is ordinary text.
	Thinking bool
	// ToolNames, when not empty, are the only names a call may have. A name
	// that matches one of them up to case and '-'/'_' is corrected; any
	// other makes the invoke plain text.
	ToolNames []string
	// EndTurnAtCall ends the turn once a block of calls is complete:
	// whatever the model writes after it (a made-up result, a guessed
	// answer) is dropped and Done reports true, so the caller can stop
	// reading the upstream and let the client run the tool.
	EndTurnAtCall bool
	// MaxBuffered bounds an invoke body; a longer one becomes text, or a
	// bad call when its arguments have started streaming. It also bounds
	// the copy of a thinking block kept to recover an unterminated one as
	// text. Zero means DefaultMaxBuffered.
	MaxBuffered int
	// RawBody maps a tool's name to the string parameter that takes a
	// body written as bare text (models.Tool.RawInput): such a body, when
	// it is neither JSON nor <parameter> children and </invoke> closes it,
	// is a call with that one argument rather than a bad call.
	RawBody map[string]string
	// StreamArgs passes the arguments of a declared tool's call on as they
	// arrive (EventToolCallStart, EventToolCallDelta) when its body opens
	// like a JSON object. Other bodies, fenced or written as <parameter>
	// children, are still read whole.
	StreamArgs bool
}

// state is where the Parser stands in the protocol grammar:
//
//	text     := (plain | thinking | call)*
//	thinking := "<thinking>" plain "</thinking>"
//	call     := TRIGGER ws* (invoke ws*)* | TRIGGER ws* (not an invoke: back to text)
//	invoke   := "<invoke" ws+ "name=" NAME ws* ">" BODY "</invoke>"
type state uint8

const (
	stText        state = iota // plain text; looking for the trigger and <thinking>
	stThinking                 // inside <thinking>; looking for </thinking>
	stCallStart                // after a trigger; expecting <invoke
	stInvokeTag                // inside the opening tag, up to '>'
	stInvokeBody               // inside the body, up to </invoke>
	stCallBetween              // after </invoke>; another invoke, another trigger, or text
	stSkipInvoke               // an oversized body became text; drop its </invoke>
	stDropInvoke               // an oversized streamed call was refused; drop the rest of it
	stDone                     // the turn ended at its calls; input is dropped
	stNativeStart              // after a top-level <function_calls>; expecting <invoke of a declared tool
)

// Parser is an incremental parser of the text protocol: Feed it deltas,
// then Close it. It holds back only what could still be markup (up to
// MaxBuffered), emits what turns out not to be as text, and never
// backtracks over unbounded input. It is not safe for concurrent use.
type Parser struct {
	opts    ParserOptions
	markers []string // markers looked for in stText
	st      state
	in      string // input not yet consumed

	out []Event // events produced by the current Feed or Close

	name        string          // the current invoke's tool name
	badName     bool            // name is not a declared tool
	calls       int             // tool calls emitted
	body        strings.Builder // the current invoke's body
	args        argScanner      // reads the current invoke's body as JSON
	argsOn      bool            // EventToolCallStart was emitted for the current invoke
	tagInString bool            // a </invoke> inside a string of the body was taken as content
	afterObject bool            // the body\'s JSON object is whole; reading what follows it

	thinkCopy      strings.Builder // copy of the open thinking block
	thinkTruncated bool            // thinkCopy passed MaxBuffered
	thinkLead      bool            // nothing but white space seen in the open thinking block

	code          codeTracker // where the text emitted so far stands: fenced code, line starts
	nativeRaw     string      // the <function_calls> block read so far, while it may still be text
	nativePending bool        // its first <invoke> is not yet known to name a declared tool
	trimLeading   bool        // drop white space opening the text after </thinking>
}

// NewParser returns a Parser in the text state.
func NewParser(opts ParserOptions) *Parser {
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = DefaultMaxBuffered
	}
	p := &Parser{opts: opts, markers: []string{thinkingOpen, thinkingClose}}
	if opts.Trigger != "" {
		p.markers = append(p.markers, opts.Trigger)
		if len(opts.ToolNames) > 0 {
			p.markers = append(p.markers, functionCallsOpen)
		}
	}
	return p
}

// Feed consumes the next piece of upstream text and returns the events it
// completes. The returned slice is valid until the next call.
func (p *Parser) Feed(chunk string) []Event {
	p.out = p.out[:0]
	p.in += chunk
	p.run(false)
	return p.out
}

// Close ends the stream: whatever is still held back is resolved. An
// unterminated thinking block is also given as text; an invoke that lacks
// only its closing tag is a call when its body is already complete JSON,
// else a bad call carrying the body.
func (p *Parser) Close() []Event {
	p.out = p.out[:0]
	p.run(true)
	switch p.st {
	case stThinking:
		// An unterminated thinking block may hold the whole answer, calls
		// included: read it again as the answer rather than lose it.
		if !p.thinkTruncated && strings.TrimSpace(p.thinkCopy.String()) != "" {
			again := p.opts
			again.Thinking = false
			sub := NewParser(again)
			p.out = append(p.out, sub.Feed(strings.TrimSpace(p.thinkCopy.String()))...)
			p.out = append(p.out, sub.Close()...)
		}
	case stInvokeBody:
		p.finishInvoke(false)
		p.afterObject = false
	}
	if p.st != stDone {
		p.st = stText
	}
	p.in = ""
	p.body.Reset()
	p.thinkCopy.Reset()
	return p.out
}

// run steps the state machine until the current state needs more input.
func (p *Parser) run(final bool) {
	for {
		var progressed bool
		switch p.st {
		case stText:
			progressed = p.stepText(final)
		case stThinking:
			progressed = p.stepThinking(final)
		case stNativeStart:
			progressed = p.stepNativeStart(final)
		case stCallStart, stCallBetween:
			progressed = p.stepCall(final)
		case stInvokeTag:
			progressed = p.stepInvokeTag(final)
		case stInvokeBody:
			progressed = p.stepInvokeBody(final)
		case stSkipInvoke:
			progressed = p.skipInvoke(final, true)
		case stDropInvoke:
			progressed = p.skipInvoke(final, false)
		case stDone:
			p.in = ""
		}
		if !progressed {
			return
		}
	}
}

// emit appends text, thinking or a piece of arguments, merging it into the
// previous event of the same kind so that one Feed yields at most one
// event per run of them.
func (p *Parser) emit(kind EventKind, s string) {
	if s == "" {
		return
	}
	n := len(p.out)
	if n == 0 || p.out[n-1].Kind != kind {
		p.out = append(p.out, Event{Kind: kind})
		n++
	}
	if kind == EventToolCallDelta {
		p.out[n-1].Arguments += s
	} else {
		p.out[n-1].Text += s
	}
}

// notMarkup goes back to text when what looked like an invoke is not
// one. The tag itself is still in the input and is read again as text;
// so is an opening <function_calls> and the space after it.
func (p *Parser) notMarkup() {
	if p.nativePending || p.nativeRaw != "" {
		raw := p.nativeRaw
		p.nativePending, p.nativeRaw = false, ""
		p.emitText(raw)
	}
	p.st = stText
}

// stepNativeStart reads what follows a <function_calls> at the top level:
// white space, then the <invoke> that decides whether the block is a call.
func (p *Parser) stepNativeStart(final bool) bool {
	rest := strings.TrimLeftFunc(p.in, unicode.IsSpace)
	if !final && rest != "" && !utf8.FullRuneInString(rest) {
		rest = p.in // a rune cut by the chunk boundary may be white space
	}
	p.nativeRaw += p.in[:len(p.in)-len(rest)]
	p.in = rest
	switch {
	case hasTagPrefix(p.in, invokeOpen):
		p.nativePending = true
		p.st = stInvokeTag
		return true
	case !final && strings.HasPrefix(invokeOpen+" ", p.in):
		return false // could still become one
	}
	p.notMarkup()
	return true
}

func (p *Parser) emitText(s string) {
	if p.trimLeading {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return
		}
		p.trimLeading = false
	}
	p.code.write(s)
	p.emit(EventText, s)
}

// stepText emits text up to the first marker, or all of the input but a
// tail that could be the start of one.
func (p *Parser) stepText(final bool) bool {
	if p.in == "" {
		return false
	}
	idx, marker := firstMarker(p.in, p.markers)
	if idx < 0 {
		var ready string
		ready, p.in = p.ready(final, p.markers)
		if s := strings.TrimLeftFunc(ready, unicode.IsSpace); p.trimLeading && !final && s != "" && !utf8.FullRuneInString(s) {
			// A rune cut by the chunk boundary may be white space to trim.
			ready, p.in = ready[:len(ready)-len(s)], s+p.in
		}
		p.emitText(ready)
		return false
	}
	p.emitText(p.in[:idx])
	p.in = p.in[idx+len(marker):]
	switch marker {
	case thinkingOpen:
		if !p.opts.Thinking {
			break // only a tag to drop: its content is text, calls included
		}
		p.st = stThinking
		p.thinkCopy.Reset()
		p.thinkTruncated = false
		p.thinkLead = true
	case thinkingClose:
		// A stray closing tag: drop it.
	case functionCallsOpen:
		if !p.code.lineStartOutsideFence() {
			p.emitText(marker) // an example in code, or mid-sentence: text
			break
		}
		p.st = stNativeStart
		p.nativeRaw = marker
	default: // the trigger
		p.st = stCallStart
	}
	return true
}

// stepThinking passes the block's content on as thinking up to
// </thinking>. It is entered only when Thinking is on.
func (p *Parser) stepThinking(final bool) bool {
	if p.in == "" {
		return false
	}
	idx := strings.Index(p.in, thinkingClose)
	var content, rest string
	if idx >= 0 {
		content, rest = p.in[:idx], p.in[idx+len(thinkingClose):]
	} else {
		content, rest = p.ready(final, closeThinking)
	}
	if p.thinkLead {
		content = strings.TrimLeftFunc(content, unicode.IsSpace)
		if idx < 0 && !final && content != "" && !utf8.FullRuneInString(content) {
			// A rune cut by the chunk boundary may be white space.
			content, rest = "", content+rest
		}
		p.thinkLead = content == ""
	}
	p.emit(EventThinking, content)
	if !p.thinkTruncated {
		if p.thinkCopy.Len()+len(content) > p.opts.MaxBuffered {
			p.thinkTruncated = true
			p.thinkCopy.Reset()
		} else {
			p.thinkCopy.WriteString(content)
		}
	}
	p.in = rest
	if idx < 0 {
		return false
	}
	p.st = stText
	p.trimLeading = true
	return true
}

// stepCall handles what follows a trigger or a finished invoke: white space
// is skipped, "<invoke" opens a call, a repeated trigger is dropped, and
// anything else ends the call block and is text again.
func (p *Parser) stepCall(final bool) bool {
	p.in = strings.TrimLeftFunc(p.in, unicode.IsSpace)
	if p.in == "" || !final && !utf8.FullRuneInString(p.in) {
		return false // a rune cut by the chunk boundary may be white space
	}
	switch {
	case hasTagPrefix(p.in, invokeOpen):
		p.st = stInvokeTag
		return true
	case p.opts.Trigger != "" && strings.HasPrefix(p.in, p.opts.Trigger):
		p.in = p.in[len(p.opts.Trigger):]
		p.st = stCallStart
		return true
	case strings.HasPrefix(p.in, functionCallsOpen):
		p.in = p.in[len(functionCallsOpen):] // the native wrapper around calls after a trigger
		return true
	case strings.HasPrefix(p.in, functionCallsClose):
		p.in = p.in[len(functionCallsClose):]
		return true
	case !final && (strings.HasPrefix(invokeOpen+" ", p.in) || strings.HasPrefix(p.opts.Trigger, p.in) ||
		strings.HasPrefix(functionCallsOpen, p.in) || strings.HasPrefix(functionCallsClose, p.in)):
		return false // could still become one of them
	}
	if p.st == stCallBetween && p.opts.EndTurnAtCall && p.calls > 0 {
		p.st, p.in = stDone, ""
		return false
	}
	p.st = stText
	return true
}

// Done reports whether the turn has ended at its calls (EndTurnAtCall):
// nothing more will be emitted.
func (p *Parser) Done() bool { return p.st == stDone }

// invokeTagRE matches a whole opening tag. Single quotes, a bare name,
// white space around '=' and further attributes after the name are
// tolerated; a self-closing tag has no body.
var invokeTagRE = regexp.MustCompile(`^<invoke\s+name\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>/]+))(?:\s+[\w:.-]+\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>/]+))*\s*(/?)>$`)

// stepInvokeTag reads the opening tag up to '>' and takes the tool name
// from it. A tag that is too long or malformed is not markup: it stays in
// the input and is read again as text.
func (p *Parser) stepInvokeTag(final bool) bool {
	end := strings.IndexByte(p.in, '>')
	if end < 0 || end >= maxInvokeTag {
		if end < 0 && len(p.in) < maxInvokeTag && !final {
			return false
		}
		p.notMarkup()
		return true
	}
	m := invokeTagRE.FindStringSubmatch(p.in[:end+1])
	written := ""
	if m != nil {
		written = strings.TrimSpace(m[1] + m[2] + m[3])
	}
	if written == "" {
		p.notMarkup()
		return true
	}
	if p.nativePending {
		if len(p.opts.ToolNames) == 0 || p.resolveName(written) == "" {
			p.notMarkup() // a native block naming no declared tool is text
			return true
		}
		p.nativePending, p.nativeRaw = false, ""
	}
	p.in = p.in[end+1:]
	p.name = p.resolveName(written)
	p.badName = p.name == ""
	if p.badName {
		p.name = written
	}
	p.body.Reset()
	p.args.reset(p.badName)
	p.argsOn, p.tagInString, p.afterObject = false, false, false
	if m[4] == "/" {
		p.finishInvoke(true)
		p.st = stCallBetween
		return true
	}
	p.st = stInvokeBody
	return true
}

// finishInvoke emits the current invoke as a call, or as a bad call when
// it cannot be one. closed says whether its closing tag was seen.
func (p *Parser) finishInvoke(closed bool) {
	if p.args.started {
		// The scanner has read the body as JSON already, with the same
		// repairs and verdict as RepairArguments.
		p.finishScanned(closed)
		return
	}
	body := p.body.String()
	p.body.Reset()
	if p.badName {
		p.out = append(p.out, Event{Kind: EventBadCall, Name: p.name, Text: body, Reason: ReasonUnknownTool})
		return
	}
	args, ok := RepairArguments(body, closed)
	if !ok && !closed {
		// The stream may have ended inside the closing tag.
		if k := partialMarkerSuffix(body, closeInvoke); k > 0 {
			args, ok = RepairArguments(body[:len(body)-k], false)
		}
	}
	if !ok && closed {
		args, ok = ParametersToJSON(body)
	}
	if param, raw := p.opts.RawBody[p.name]; !ok && closed && raw && !meantAsJSON(body) {
		args, ok = rawArguments(param, body), true
	}
	if ok {
		p.calls++
		p.out = append(p.out, Event{Kind: EventToolCall, Name: p.name, Arguments: args})
		return
	}
	reason := ReasonBadJSON
	if !closed {
		reason = p.cutOffReason()
	}
	p.out = append(p.out, Event{Kind: EventBadCall, Name: p.name, Text: body, Reason: reason})
}

// meantAsJSON reports whether a body opens as a JSON object or a fence
// would: broken, it is a bad call to ask again, not free text. With
// StreamArgs such a body may have streamed already.
func meantAsJSON(body string) bool {
	body = strings.TrimLeft(body, " \t\r\n")
	return strings.HasPrefix(body, "{") || strings.HasPrefix(body, "`")
}

// cutOffReason says why a body the stream ended in is not a call.
func (p *Parser) cutOffReason() string {
	if p.tagInString {
		return ReasonOpenString
	}
	return ReasonCutOff
}

// stepInvokeBody collects the body up to </invoke> and emits the call,
// streaming its arguments on the way when they can be. A </invoke> inside
// a string of a JSON body does not end it. A body that grows past
// MaxBuffered becomes text, or a bad call if it was streaming.
func (p *Parser) stepInvokeBody(final bool) bool {
	if p.afterObject {
		return p.stepAfterObject(final)
	}
	at := p.body.Len()
	idx := strings.Index(p.in, invokeClose)
	piece, scan := p.in, p.in
	switch {
	case idx >= 0:
		piece, scan = p.in[:idx], p.in[:idx]
	case !final:
		piece = p.in[:len(p.in)-partialMarkerSuffix(p.in, closeInvoke)]
		scan = piece
	default:
		// The stream may have ended inside the closing tag.
		scan = p.in[:len(p.in)-partialMarkerSuffix(p.in, closeInvoke)]
	}
	if n, complete := p.streamArgs(scan, at); complete {
		// The JSON object is whole: what follows it tells whether the
		// call is (a fenced one reads its closing fence first).
		p.body.WriteString(p.in[:n])
		p.in = p.in[n:]
		p.afterObject = !p.args.fenced
		return true
	}
	p.body.WriteString(piece)
	if idx < 0 {
		p.in = p.in[len(piece):]
		if p.body.Len() > p.opts.MaxBuffered {
			p.refuseOversized(stSkipInvoke)
			return true
		}
		return false
	}
	p.in = p.in[idx+len(invokeClose):]
	if p.body.Len() > p.opts.MaxBuffered {
		// Over the bound whether it arrived in one chunk or many.
		p.refuseOversized(stText)
		return true
	}
	if p.args.inString() {
		// Inside a JSON string the tag is content: the model is writing a
		// file about this very protocol. Should the string never close,
		// the stream ends in the body and the reason says why.
		p.tagInString = true
		p.body.WriteString(invokeClose)
		p.streamArgs(invokeClose, at+len(piece))
		if p.body.Len() > p.opts.MaxBuffered {
			p.refuseOversized(stSkipInvoke)
		}
		return true
	}
	p.finishInvoke(true)
	p.st = stCallBetween
	return true
}

// stepAfterObject reads what follows a whole JSON body: white space, then
// its closing tag, or the next <invoke> or trigger when the model left the
// closing tag out. Anything else is read on as part of the body, which
// makes it a bad call.
func (p *Parser) stepAfterObject(final bool) bool {
	if rest := strings.TrimLeft(p.in, utils.JSONSpace); len(rest) < len(p.in) {
		// Kept with the body, for a bad call to show whole.
		space := p.in[:len(p.in)-len(rest)]
		p.streamArgs(space, p.body.Len())
		p.body.WriteString(space)
		p.in = rest
		if p.body.Len() > p.opts.MaxBuffered {
			p.afterObject = false
			p.refuseOversized(stSkipInvoke)
			return true
		}
	}
	trigger := p.opts.Trigger
	switch {
	case strings.HasPrefix(p.in, invokeClose):
		p.in = p.in[len(invokeClose):]
	case hasTagPrefix(p.in, invokeOpen), trigger != "" && strings.HasPrefix(p.in, trigger):
		// The next call: this one was complete.
	case !final && (p.in == "" || strings.HasPrefix(invokeClose, p.in) ||
		strings.HasPrefix(invokeOpen+" ", p.in) || strings.HasPrefix(trigger, p.in)):
		return false // could still be one of them
	default:
		p.afterObject = false
		return true
	}
	p.afterObject = false
	p.finishInvoke(true)
	p.st = stCallBetween
	return true
}

// refuseOversized gives up on a body past MaxBuffered: it is text, unless
// its arguments have started streaming, which makes it a bad call whose
// rest is dropped. next is the state that reads the rest.
func (p *Parser) refuseOversized(next state) {
	if p.argsOn {
		p.argsOn = false
		// The part of the body within the bound, whatever chunks it came in.
		body := utils.CutRunes(p.body.String(), p.opts.MaxBuffered)
		p.out = append(p.out, Event{Kind: EventBadCall, Name: p.name, Text: body, Reason: ReasonTooLong})
		if next == stSkipInvoke {
			next = stDropInvoke
		}
	} else {
		p.emitText(p.body.String())
	}
	p.body.Reset()
	p.st = next
}

// streamArgs runs the body's piece at offset at through the argument
// scanner, emitting its output with StreamArgs, and returns the length up
// to the closing brace and true if the object closes in it. Only the first
// MaxBuffered bytes are scanned, so streaming does not depend on chunking.
func (p *Parser) streamArgs(piece string, at int) (int, bool) {
	if room := p.opts.MaxBuffered - at; len(piece) > room {
		piece = piece[:max(room, 0)]
	}
	open := p.args.step != argEnd
	n := p.args.write(piece)
	complete := open && p.args.step == argEnd
	if p.args.started && p.opts.StreamArgs {
		if !p.argsOn {
			p.argsOn = true
			p.out = append(p.out, Event{Kind: EventToolCallStart, Name: p.name})
		}
		p.emit(EventToolCallDelta, p.args.take())
	}
	return n, complete
}

// finishScanned ends a call whose body the argument scanner read: the
// call, whose Arguments complete the pieces streamed, if any, or a bad
// call when the whole is not valid.
func (p *Parser) finishScanned(closed bool) {
	body := p.body.String()
	p.body.Reset()
	p.argsOn = false
	args, reason := p.args.finish(closed)
	if reason == ReasonCutOff {
		reason = p.cutOffReason()
	}
	if reason != "" {
		p.out = append(p.out, Event{Kind: EventBadCall, Name: p.name, Text: body, Reason: reason})
		return
	}
	p.calls++
	p.out = append(p.out, Event{Kind: EventToolCall, Name: p.name, Arguments: args})
}

// skipInvoke reads the rest of an oversized body up to its closing tag,
// which is dropped: as text (emit) or, for a refused streamed call, not
// at all.
func (p *Parser) skipInvoke(final, emit bool) bool {
	if p.in == "" {
		return false
	}
	idx := strings.Index(p.in, invokeClose)
	if idx < 0 {
		var ready string
		ready, p.in = p.ready(final, closeInvoke)
		if emit {
			p.emitText(ready)
		}
		return false
	}
	if emit {
		p.emitText(p.in[:idx])
	}
	p.in = p.in[idx+len(invokeClose):]
	p.st = stText
	return true
}

// resolveName returns the declared tool name that name refers to, or "".
func (p *Parser) resolveName(name string) string {
	name = strings.TrimSpace(name)
	if name == "" || len(p.opts.ToolNames) == 0 {
		return name
	}
	for _, t := range p.opts.ToolNames {
		if t == name {
			return t
		}
	}
	folded := foldToolName(name)
	for _, t := range p.opts.ToolNames {
		if foldToolName(t) == folded {
			return t
		}
	}
	return ""
}

func foldToolName(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "-", "_"))
}

// hasTagPrefix reports whether s starts with tag followed by white space,
// '>' or '/', so that "<invoked" is not taken for "<invoke".
func hasTagPrefix(s, tag string) bool {
	if !strings.HasPrefix(s, tag) || len(s) == len(tag) {
		return false
	}
	c := s[len(tag)]
	return utils.IsJSONSpace(c) || c == '>' || c == '/' // XML's white space is JSON's four
}

// firstMarker returns the position and value of the earliest marker in s,
// or -1. Every marker starts with '<', so only those positions are tried.
func firstMarker(s string, markers []string) (int, string) {
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1, ""
		}
		i += j
		for _, m := range markers {
			if strings.HasPrefix(s[i:], m) {
				return i, m
			}
		}
		i++
	}
	return -1, ""
}

// Marker sets of the states that look for a single closing tag.
var (
	closeThinking = []string{thinkingClose}
	closeInvoke   = []string{invokeClose}
)

// ready splits the pending input into what can be passed on now and the
// tail held back because it could still begin one of markers. At the end
// of the stream (final) nothing is held.
func (p *Parser) ready(final bool, markers []string) (now, held string) {
	if final {
		return p.in, ""
	}
	keep := partialMarkerSuffix(p.in, markers)
	return p.in[:len(p.in)-keep], p.in[len(p.in)-keep:]
}

// partialMarkerSuffix returns the length of the longest tail of s that is a
// proper prefix of one of the markers: the part that must be held back
// until the next chunk tells whether it is markup.
func partialMarkerSuffix(s string, markers []string) int {
	longest := 0
	for _, m := range markers {
		longest = max(longest, len(m)-1)
	}
	start := max(0, len(s)-longest)
	for i := start; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		tail := s[i:]
		for _, m := range markers {
			if len(tail) < len(m) && strings.HasPrefix(m, tail) {
				return len(s) - i
			}
		}
	}
	return 0
}

// codeTracker follows the text given to the client, byte by byte, to tell
// whether a position is at the start of a line and outside a ``` fence:
// the only place a native <function_calls> block counts as a call.
type codeTracker struct {
	fence   bool // inside a fenced code block
	atStart bool // nothing but indentation and backticks yet on this line
	ticks   int  // backticks opening this line
	started bool // something has been written
}

func (c *codeTracker) write(s string) {
	for i := 0; i < len(s); i++ {
		if !c.started {
			c.started, c.atStart = true, true
		}
		switch b := s[i]; {
		case b == '\n':
			c.atStart, c.ticks = true, 0
		case !c.atStart:
		case b == '`':
			if c.ticks++; c.ticks == 3 {
				c.fence = !c.fence
			}
		case (b == ' ' || b == '\t') && c.ticks == 0:
		default:
			c.atStart = false
		}
	}
}

// lineStartOutsideFence reports whether the next byte opens a line of
// prose, outside fenced code.
func (c *codeTracker) lineStartOutsideFence() bool {
	return !c.fence && (!c.started || c.atStart && c.ticks == 0)
}
