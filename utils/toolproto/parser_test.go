package toolproto

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trig is the trigger of the test requests.
const trig = "<<CALL_ab12CD34>>"

// Event builders for expectations.
func txt(s string) Event            { return Event{Kind: EventText, Text: s} }
func think(s string) Event          { return Event{Kind: EventThinking, Text: s} }
func tcall(name, args string) Event { return Event{Kind: EventToolCall, Name: name, Arguments: args} }
func bad(name, body, reason string) Event {
	return Event{Kind: EventBadCall, Name: name, Text: body, Reason: reason}
}

// parts is the input of a case as the upstream delivered it.
func parts(chunks ...string) []string { return chunks }

// merged concatenates adjacent text and adjacent thinking events and drops
// empty ones, so that results do not depend on how the input was split.
// Tool calls and bad calls are kept as they are.
func merged(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		isText := e.Kind == EventText || e.Kind == EventThinking
		if isText && e.Text == "" {
			continue
		}
		if n := len(out); n > 0 && isText && out[n-1].Kind == e.Kind {
			out[n-1].Text += e.Text
			continue
		}
		out = append(out, e)
	}
	return out
}

// feed runs a new parser over chunks, closes it and returns every event.
func feed(opts ParserOptions, chunks []string) []Event {
	p := NewParser(opts)
	var all []Event
	for _, c := range chunks {
		all = append(all, p.Feed(c)...)
	}
	return append(all, p.Close()...)
}

// unstreamed checks the streamed calls in evs (StreamArgs) and folds them
// away: each EventToolCallStart is followed by pieces of arguments that
// never make a complete JSON value, and ended by an EventBadCall or by an
// EventToolCall whose Arguments are the pieces and the closing brackets.
// What is left reads like the events without StreamArgs.
func unstreamed(t testing.TB, evs []Event) []Event {
	t.Helper()
	var out []Event
	var open *Event
	var pieces strings.Builder
	for i, e := range evs {
		switch e.Kind {
		case EventToolCallStart:
			require.Nil(t, open, "a call starts inside another: %+v", evs)
			open = &evs[i]
			pieces.Reset()
			continue
		case EventToolCallDelta:
			require.NotNil(t, open, "arguments outside a call: %+v", evs)
			require.NotEmpty(t, e.Arguments)
			pieces.WriteString(e.Arguments)
			continue
		}
		if open != nil {
			require.Contains(t, []EventKind{EventToolCall, EventBadCall}, e.Kind, "the open call is not ended by %+v", e)
			require.Equal(t, open.Name, e.Name)
			sent := pieces.String()
			require.False(t, json.Valid([]byte(sent)), "the pieces alone are complete: %q", sent)
			if e.Kind == EventToolCall {
				rest, ok := strings.CutPrefix(e.Arguments, sent)
				require.True(t, ok, "the pieces %q are not a prefix of the arguments %q", sent, e.Arguments)
				require.NotEmpty(t, rest)
				require.Empty(t, strings.Trim(rest, "}]"), "what the pieces leave is more than closers: %q", rest)
			}
			open = nil
		}
		out = append(out, e)
	}
	require.Nil(t, open, "a call is left open")
	return merged(out)
}

// feedChecked is feed that also checks what every single Feed and Close
// returns: no empty text or thinking event, and at most one event per run
// of text or of arguments (the parser merges what it emits within one
// call).
func feedChecked(t testing.TB, opts ParserOptions, chunks []string) []Event {
	t.Helper()
	p := NewParser(opts)
	var all []Event
	check := func(evs []Event, call string) {
		t.Helper()
		for i, e := range evs {
			if e.Kind == EventText || e.Kind == EventThinking {
				require.NotEmpty(t, e.Text, "%s returned an empty event: %+v", call, evs)
				if i > 0 {
					require.NotEqual(t, evs[i-1].Kind, e.Kind, "%s returned unmerged events: %+v", call, evs)
				}
			}
			if e.Kind == EventToolCallDelta && i > 0 {
				require.NotEqual(t, EventToolCallDelta, evs[i-1].Kind, "%s returned two pieces in a row: %+v", call, evs)
			}
		}
		all = append(all, evs...)
	}
	for _, c := range chunks {
		check(p.Feed(c), "Feed")
	}
	check(p.Close(), "Close")
	return all
}

// splits returns the ways an input is fed: as the case gives its chunks,
// whole, one byte at a time, and 50 random splittings from rng (half of
// them stream-like runs of 1 to 24 bytes, half a few cuts anywhere).
func splits(in string, rng *rand.Rand, given ...[]string) [][]string {
	out := append(slices.Clone(given), []string{in})
	perByte := make([]string, len(in))
	for i := range len(in) {
		perByte[i] = in[i : i+1]
	}
	out = append(out, perByte)
	for k := range 50 {
		var chunks []string
		if k%2 == 0 {
			for rest := in; len(rest) > 0; {
				n := 1 + rng.IntN(min(len(rest), 24))
				chunks, rest = append(chunks, rest[:n]), rest[n:]
			}
		} else {
			cuts := []int{0, len(in)}
			for range 1 + rng.IntN(8) {
				cuts = append(cuts, rng.IntN(len(in)+1))
			}
			slices.Sort(cuts)
			for i := 1; i < len(cuts); i++ {
				chunks = append(chunks, in[cuts[i-1]:cuts[i]])
			}
		}
		out = append(out, chunks)
	}
	return out
}

type parserCase struct {
	name string
	opts ParserOptions
	in   []string
	want []Event
	// clean marks a well-formed protocol reply: no protocol markup at all
	// may reach text or thinking.
	clean bool
	// literalTrigger marks a case whose output legitimately holds the
	// trigger (tools off, the trigger mentioned in thinking). In every other
	// case the trigger never reaches text or thinking.
	literalTrigger bool
	// streamed, when set, is what the case gives with StreamArgs on, once
	// the streams are folded away; otherwise it is want.
	streamed []Event
}

var (
	tools    = ParserOptions{Trigger: trig, ToolNames: []string{"read_file", "write_file", "list_dir"}}
	endTurn  = ParserOptions{Trigger: trig, ToolNames: []string{"read_file", "list_dir"}, EndTurnAtCall: true}
	thinking = ParserOptions{Trigger: trig, Thinking: true, ToolNames: []string{"read_file"}}
	noTools  = ParserOptions{}
	small    = ParserOptions{Trigger: trig, ToolNames: []string{"write_file", "list_dir"}, MaxBuffered: 64}
	rawPatch = ParserOptions{Trigger: trig, ToolNames: []string{"apply_patch", "read_file"}, RawBody: map[string]string{"apply_patch": "input"}}
)

var (
	bigBody = `{"c":"` + strings.Repeat("x", 3000) + `"}`
	midBody = `{"path":"a.txt","content":"` + strings.Repeat("0123456789", 20) + `"}`
	longTag = `<invoke name="` + strings.Repeat("n", 300) + `">{}</invoke>`
)

var parserCases = []parserCase{
	// Plain text and near misses.
	{name: "plain text", opts: tools, in: parts("Hello, world!"), want: []Event{txt("Hello, world!")}, clean: true},
	{name: "empty input", opts: tools, in: parts(""), want: nil, clean: true},
	{name: "angle brackets in code", opts: tools, in: parts("if a < b && c<<2 > 1 { x := <-ch }"), want: []Event{txt("if a < b && c<<2 > 1 { x := <-ch }")}, clean: true},
	{name: "html-like text", opts: thinking, in: parts("<p>Use <b>bold</b> and <br/> and <</p>"), want: []Event{txt("<p>Use <b>bold</b> and <br/> and <</p>")}, clean: true},
	{name: "near misses stay text", opts: tools, in: parts("<invoked> <think> <<CALL_zz> <<CALL_ab12CD3 done"), want: []Event{txt("<invoked> <think> <<CALL_zz> <<CALL_ab12CD3 done")}},
	{name: "invoked after a trigger", opts: tools, in: parts(trig + `<invoked name="read_file">{}</invoked>`), want: []Event{txt(`<invoked name="read_file">{}</invoked>`)}},
	{name: "think is not thinking", opts: thinking, in: parts("<think>hmm</think> <thinkin> ok"), want: []Event{txt("<think>hmm</think> <thinkin> ok")}, clean: true},
	{name: "other trigger id is text", opts: tools, in: parts("<<CALL_ZZZZZZZZ>>\n<invoke name=\"read_file\">{}</invoke>"), want: []Event{txt("<<CALL_ZZZZZZZZ>>\n<invoke name=\"read_file\">{}</invoke>")}},
	{name: "trigger one char short", opts: tools, in: parts("x <<CALL_ab12CD3>> y <<CALL_ab12CD34> z"), want: []Event{txt("x <<CALL_ab12CD3>> y <<CALL_ab12CD34> z")}},
	{name: "trigger one char longer", opts: tools, in: parts("x <<CALL_ab12CD3X4>> y"), want: []Event{txt("x <<CALL_ab12CD3X4>> y")}},
	{name: "bare invoke without trigger is text", opts: tools, in: parts(`<invoke name="read_file">{}</invoke>`), want: []Event{txt(`<invoke name="read_file">{}</invoke>`)}},
	{name: "unicode text", opts: tools, in: parts("你好,世界 🌍 <ünïcode>"), want: []Event{txt("你好,世界 🌍 <ünïcode>")}, clean: true},
	{name: "partial trigger at the end is text", opts: tools, in: parts("The end <<CALL_ab"), want: []Event{txt("The end <<CALL_ab")}},
	{name: "partial thinking tag at the end is text", opts: thinking, in: parts("The end </thinki"), want: []Event{txt("The end </thinki")}, clean: true},

	// Calls.
	{name: "one call", opts: tools, in: parts(trig + "\n<invoke name=\"read_file\">{\"path\": \"a.go\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "one call in tiny chunks", opts: tools, in: parts("<<CALL_ab", "12CD34>", ">\n<inv", "oke name=\"read_", "file\">{\"path\"", ": \"a.go\"}</inv", "oke>"), want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "text then call", opts: tools, in: parts("Let me read it.\n\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a.go\"}</invoke>"), want: []Event{txt("Let me read it.\n\n"), tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "angle bracket right before the trigger", opts: tools, in: parts("a<" + trig + `<invoke name="list_dir">{}</invoke>`), want: []Event{txt("a<"), tcall("list_dir", "{}")}, clean: true},
	{name: "two invokes back to back", opts: tools, in: parts(trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"b\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("read_file", `{"path":"b"}`)}, clean: true},
	{name: "two invokes without white space", opts: tools, in: parts(trig + `<invoke name="read_file">{"path":"a"}</invoke><invoke name="list_dir">{}</invoke>`), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", "{}")}, clean: true},
	{name: "three invokes with blank lines", opts: tools, in: parts(trig + "\n\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n\n \t<invoke name=\"list_dir\">{}</invoke>\r\n<invoke name=\"write_file\">{\"path\":\"c\",\"content\":\"x\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", `{}`), tcall("write_file", `{"path":"c","content":"x"}`)}, clean: true},
	{name: "two trigger blocks", opts: tools, in: parts("A " + trig + "<invoke name=\"list_dir\">{}</invoke> B " + trig + "<invoke name=\"read_file\">{\"path\":\"x\"}</invoke>"), want: []Event{txt("A "), tcall("list_dir", "{}"), txt("B "), tcall("read_file", `{"path":"x"}`)}, clean: true},
	{name: "repeated trigger inside a block", opts: tools, in: parts(trig + "\n<invoke name=\"list_dir\">{}</invoke>\n" + trig + "\n<invoke name=\"list_dir\">{\"d\":1}</invoke>"), want: []Event{tcall("list_dir", "{}"), tcall("list_dir", `{"d":1}`)}, clean: true},
	{name: "text after the call", opts: tools, in: parts(trig + "<invoke name=\"list_dir\">{}</invoke>\n\nDone."), want: []Event{tcall("list_dir", "{}"), txt("Done.")}, clean: true},
	{name: "trigger then prose", opts: tools, in: parts("I would use "+trig+" but no.", " More text follows."), want: []Event{txt("I would use but no. More text follows.")}, clean: true},
	{name: "trigger then prose then a real call", opts: tools, in: parts("I would use " + trig + " here. Later: " + trig + "<invoke name=\"list_dir\">{}</invoke>"), want: []Event{txt("I would use here. Later: "), tcall("list_dir", "{}")}, clean: true},
	{name: "trigger then thinking", opts: thinking, in: parts(trig + "<thinking>hm</thinking>ok"), want: []Event{think("hm"), txt("ok")}, clean: true},
	{name: "trigger at the very end", opts: tools, in: parts("The end. " + trig), want: []Event{txt("The end. ")}, clean: true},
	{name: "trigger and white space at the end", opts: tools, in: parts("The end. " + trig + "\n\n  "), want: []Event{txt("The end. ")}, clean: true},
	{name: "unicode white space after the trigger", opts: tools, in: parts("A " + trig + "\u3000\u00a0B"), want: []Event{txt("A B")}, clean: true},

	// Invokes cut off by the end of the stream.
	{name: "unfinished invoke with complete JSON", opts: tools, in: parts(trig + "\n<invoke name=\"read_file\">{\"path\":\"a.go\"}"), want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "stream cut inside the closing tag", opts: tools, in: parts(trig + "\n<invoke name=\"read_file\">{\"path\":\"a.go\"}\n</invo"), want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "unfinished invoke with cut JSON", opts: tools, in: parts(trig + "\n<invoke name=\"write_file\">{\"path\":\"a.go\",\"content\":\"packa"), want: []Event{bad("write_file", `{"path":"a.go","content":"packa`, ReasonCutOff)}, clean: true},
	{name: "unfinished invoke missing its brace", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a.go\""), want: []Event{bad("read_file", `{"path":"a.go"`, ReasonCutOff)}, clean: true},
	{name: "unfinished opening tag", opts: tools, in: parts(trig + "\n<invoke name=\"read_fi"), want: []Event{txt("<invoke name=\"read_fi")}},
	{name: "opening tag too long is text", opts: tools, in: parts(trig + longTag), want: []Event{txt(longTag)}},

	// Argument repair.
	{name: "raw newlines in strings repaired", opts: tools, in: parts(trig + "<invoke name=\"write_file\">{\"path\":\"m.go\",\"content\":\"package m\n\nfunc f() {\n\treturn\n}\n\"}</invoke>"), want: []Event{tcall("write_file", `{"path":"m.go","content":"package m\n\nfunc f() {\n\treturn\n}\n"}`)}, clean: true},
	{name: "trailing comma repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\",}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "missing closing tag before the next invoke", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\"}\n<invoke name=\"list_dir\">{}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", "{}")}, clean: true},
	{name: "missing closing tag before a repeated trigger", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\"}\n" + trig + "\n<invoke name=\"list_dir\">{}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", "{}")}, clean: true},
	{name: "missing closing tag at the end of the stream", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\"}\n \n"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "text after a whole object is no closing tag", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\"}\n and more</invoke>"), want: []Event{bad("read_file", "{\"path\":\"a\"}\n and more", ReasonBadJSON)}, clean: true},
	{name: "missing final brace repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a\"</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "missing brackets repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"lines\":[1,2,\n</invoke>"), want: []Event{tcall("read_file", `{"lines":[1,2]}`)}, clean: true},
	{name: "fenced JSON", opts: tools, in: parts(trig + "<invoke name=\"read_file\">\n```json\n{\"path\":\"a\"}\n```\n</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "fence without a language", opts: tools, in: parts(trig + "<invoke name=\"read_file\">```\n{\"path\": \"a\",}\n```</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "single quotes are not repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{path: 'a'}</invoke>"), want: []Event{bad("read_file", "{path: 'a'}", ReasonBadJSON)}, clean: true},
	{name: "unclosed string is not repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a}</invoke>"), want: []Event{bad("read_file", `{"path":"a}</invoke>`, ReasonOpenString)}, clean: true},
	{name: "unclosed string swallows what follows", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"path\":\"a}</invoke>\nDone."), want: []Event{bad("read_file", "{\"path\":\"a}</invoke>\nDone.", ReasonOpenString)}, clean: true},
	{name: "closing tag inside a JSON string is content", opts: tools, in: parts(trig + "<invoke name=\"write_file\">{\"path\":\"p.md\",\"content\":\"end with </invoke> then\"}</invoke>\nWritten."), want: []Event{tcall("write_file", `{"path":"p.md","content":"end with </invoke> then"}`), txt("Written.")}, clean: true},
	{name: "escaped closing tag in a string", opts: tools, in: parts(trig + "<invoke name=\"write_file\">{\"content\":\"a <\\/invoke> b\"}</invoke>"), want: []Event{tcall("write_file", `{"content":"a <\/invoke> b"}`)}, clean: true},
	{name: "closing tag inside a string of a fenced body is content", opts: tools, in: parts(trig + "<invoke name=\"write_file\">```json\n{\"content\":\"a</invoke>b\"}\n```</invoke>"), want: []Event{tcall("write_file", `{"content":"a</invoke>b"}`)}, clean: true},
	{name: "closing tag in a body that is not JSON ends it", opts: tools, in: parts(trig + "<invoke name=\"write_file\">{content: \"a</invoke>b\"}</invoke>"), want: []Event{bad("write_file", `{content: "a`, ReasonBadJSON), txt("b\"}</invoke>")}},
	{name: "mismatched brackets are not repaired", opts: tools, in: parts(trig + "<invoke name=\"read_file\">{\"lines\":[1}</invoke>"), want: []Event{bad("read_file", `{"lines":[1}`, ReasonBadJSON)}, clean: true},
	{name: "array arguments are refused", opts: tools, in: parts(trig + "<invoke name=\"read_file\">[1,2]</invoke>"), want: []Event{bad("read_file", "[1,2]", ReasonBadJSON)}, clean: true},
	{name: "prose arguments are refused", opts: tools, in: parts(trig + "<invoke name=\"read_file\">please read a.go</invoke> ok"), want: []Event{bad("read_file", "please read a.go", ReasonBadJSON), txt("ok")}, clean: true},
	{name: "empty body", opts: tools, in: parts(trig + "<invoke name=\"list_dir\"></invoke>"), want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "white space body", opts: tools, in: parts(trig + "<invoke name=\"list_dir\">\n  \n</invoke>"), want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "parameter children", opts: tools, in: parts(trig + "<invoke name=\"write_file\">\n<parameter name=\"path\">src/a.go</parameter>\n<parameter name=\"content\">\npackage a\n</parameter>\n<parameter name=\"mode\">420</parameter>\n</invoke>"), want: []Event{tcall("write_file", `{"path":"src/a.go","content":"package a","mode":420}`)}, clean: true},
	{name: "parameter children with JSON values", opts: tools, in: parts(trig + "<invoke name='read_file'><parameter name='opts'>{\"lines\": [1, 2]}</parameter><parameter name=flag>true</parameter></invoke>"), want: []Event{tcall("read_file", `{"opts":{"lines":[1,2]},"flag":true}`)}, clean: true},
	{name: "parameter children with stray text", opts: tools, in: parts(trig + "<invoke name=\"read_file\"><parameter name=\"path\">a</parameter> oops</invoke>"), want: []Event{bad("read_file", `<parameter name="path">a</parameter> oops`, ReasonBadJSON)}},

	// The opening tag and the tool name.
	{name: "self-closing invoke", opts: tools, in: parts(trig + "<invoke name=\"list_dir\"/>"), want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "self-closing invoke with spaces", opts: tools, in: parts(trig + "<invoke name='list_dir' />\n<invoke name=list_dir/>"), want: []Event{tcall("list_dir", "{}"), tcall("list_dir", "{}")}, clean: true},
	{name: "single-quoted name", opts: tools, in: parts(trig + "<invoke name='read_file'>{\"path\":\"a\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "bare name and spaces", opts: tools, in: parts(trig + "<invoke  name = read_file >{\"path\":\"a\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "newline inside the opening tag", opts: tools, in: parts(trig + "<invoke\nname=\"read_file\">{}</invoke>"), want: []Event{tcall("read_file", `{}`)}, clean: true},
	{name: "name case and dash corrected", opts: tools, in: parts(trig + "<invoke name=\"Read-File\">{}</invoke>"), want: []Event{tcall("read_file", "{}")}, clean: true},
	{name: "name underscore corrected to dash", opts: ParserOptions{Trigger: trig, ToolNames: []string{"read-file", "list-dir"}}, in: parts(trig + "<invoke name=\"LIST_DIR\">{}</invoke>"), want: []Event{tcall("list-dir", "{}")}, clean: true},
	{name: "unknown tool name is refused", opts: tools, in: parts(trig + "<invoke name=\"delete_all\">{}</invoke>"), want: []Event{bad("delete_all", "{}", ReasonUnknownTool)}, clean: true},
	{name: "unknown self-closing tool is refused", opts: tools, in: parts(trig + "<invoke name=\"nope\"/> then"), want: []Event{bad("nope", "", ReasonUnknownTool), txt("then")}, clean: true},
	{name: "any name when no list", opts: ParserOptions{Trigger: trig}, in: parts(trig + "<invoke name=\"anything\">{}</invoke>"), want: []Event{tcall("anything", "{}")}, clean: true},
	{name: "empty name is not markup", opts: tools, in: parts(trig + `<invoke name="">{}</invoke>`), want: []Event{txt(`<invoke name="">{}</invoke>`)}},

	// Bounded buffering of bodies.
	{name: "oversized body becomes text", opts: ParserOptions{Trigger: trig, MaxBuffered: 1024}, in: parts(trig + "<invoke name=\"w\">" + bigBody + "</invoke> after"), want: []Event{txt(bigBody + " after")}, clean: true,
		streamed: []Event{bad("w", bigBody[:1024], ReasonTooLong), txt(" after")}},
	{name: "oversized body then a call", opts: small, in: parts("Go: " + trig + "<invoke name=\"write_file\">" + midBody + "</invoke> then " + trig + "<invoke name=\"list_dir\">{}</invoke>"), want: []Event{txt("Go: " + midBody + " then "), tcall("list_dir", "{}")}, clean: true,
		streamed: []Event{txt("Go: "), bad("write_file", midBody[:64], ReasonTooLong), txt(" then "), tcall("list_dir", "{}")}},
	{name: "oversized body cut off", opts: small, in: parts(trig + "<invoke name=\"write_file\">" + midBody), want: []Event{txt(midBody)}, clean: true,
		streamed: []Event{bad("write_file", midBody[:64], ReasonTooLong)}},
	{name: "oversized fenced body", opts: small, in: parts(trig + "<invoke name=\"write_file\">```json\n" + midBody + "\n```</invoke>"), want: []Event{txt("```json\n" + midBody + "\n```")}, clean: true,
		streamed: []Event{bad("write_file", ("```json\n" + midBody)[:64], ReasonTooLong)}},
	{name: "oversized parameter body stays text when streaming", opts: small, in: parts(trig + "<invoke name=\"write_file\"><parameter name=\"content\">" + midBody + "</parameter></invoke>"), want: []Event{txt("<parameter name=\"content\">" + midBody + "</parameter>")}},
	{name: "body at the bound is a call", opts: small, in: parts(trig + "<invoke name=\"list_dir\">" + `{"p":"` + strings.Repeat("z", 64-8) + `"}` + "</invoke>"), want: []Event{tcall("list_dir", `{"p":"`+strings.Repeat("z", 64-8)+`"}`)}, clean: true},

	// Thinking.
	{name: "thinking consumed", opts: thinking, in: parts("<thinking>\nStep 1.\nStep 2.\n</thinking>\n\nThe answer is 4."), want: []Event{think("Step 1.\nStep 2.\n"), txt("The answer is 4.")}, clean: true},
	{name: "white space around thinking trimmed", opts: thinking, in: parts("<thinking>", " \n\t", " \u3000Hmm.", "</thinking>", "\n", " \u00a0\n", "Answer"), want: []Event{think("Hmm."), txt("Answer")}, clean: true},
	{name: "text before thinking", opts: thinking, in: parts("Sure. <thinking>why</thinking> Because."), want: []Event{txt("Sure. "), think("why"), txt("Because.")}, clean: true},
	{name: "two thinking blocks", opts: thinking, in: parts("<thinking>a</thinking>\n<thinking>b</thinking>\n\nDone"), want: []Event{think("ab"), txt("Done")}, clean: true},
	{name: "thinking then call", opts: thinking, in: parts("<thinking>I should read it.</thinking>\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"), want: []Event{think("I should read it."), tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "thinking mentions the trigger", opts: thinking, in: parts("<thinking>I will write " + trig + " and <invoke name=\"read_file\">{}</invoke></thinking>Hi"), want: []Event{think("I will write " + trig + " and <invoke name=\"read_file\">{}</invoke>"), txt("Hi")}, literalTrigger: true},
	{name: "thinking tags stripped without thinking", opts: tools, in: parts("<thinking>hmm</thinking>\n\nAnswer"), want: []Event{txt("hmm\n\nAnswer")}, clean: true},
	{name: "angle brackets inside thinking", opts: thinking, in: parts("<thinking>a < b, </think, </thinkingX</thinking>ok"), want: []Event{think("a < b, </think, </thinkingX"), txt("ok")}, clean: true},
	{name: "stray closing tag dropped", opts: thinking, in: parts("reasoning</thinking>Answer"), want: []Event{txt("reasoningAnswer")}, clean: true},
	{name: "stray closing tag dropped without thinking", opts: tools, in: parts("a</thinking> b"), want: []Event{txt("a b")}, clean: true},
	{name: "unterminated thinking recovered as text", opts: thinking, in: parts("<thinking>\nThe whole answer is here.\n"), want: []Event{think("The whole answer is here.\n"), txt("The whole answer is here.")}, clean: true},
	{name: "unterminated thinking past the bound is not recovered", opts: ParserOptions{Trigger: trig, Thinking: true, MaxBuffered: 16}, in: parts("<thinking>" + strings.Repeat("long ", 10)), want: []Event{think(strings.Repeat("long ", 10))}, clean: true},
	{name: "a call inside thinking tags without thinking", opts: tools, in: parts("<thinking>Let me read. " + trig + "<invoke name=\"read_file\">{}</invoke></thinking>"), want: []Event{txt("Let me read. "), tcall("read_file", "{}")}, clean: true},
	{name: "a call inside an unterminated thinking block is recovered", opts: thinking, in: parts("<thinking>I'll read it. " + trig + "<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"), want: []Event{think("I'll read it. " + trig + "<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"), txt("I'll read it. "), tcall("read_file", `{"path":"a"}`)}, literalTrigger: true},
	{name: "extra attributes in the opening tag", opts: tools, in: parts(trig + "<invoke name=\"read_file\" id=\"1\" data-x='y'>{\"path\":\"a\"}</invoke>"), want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "unterminated thinking without thinking is text", opts: tools, in: parts("<thinking>just text"), want: []Event{txt("just text")}, clean: true},

	// No tools.
	{name: "no trigger configured: markup is text", opts: noTools, in: parts(trig + "<invoke name=\"x\">{}</invoke>"), want: []Event{txt(trig + "<invoke name=\"x\">{}</invoke>")}, literalTrigger: true},
	{name: "no trigger configured: thinking tags still stripped", opts: noTools, in: parts("<thinking>a</thinking>" + trig), want: []Event{txt("a" + trig)}, literalTrigger: true},

	// The turn ends at the calls.
	{name: "end of turn: made-up result dropped", opts: endTurn, in: parts("Reading.\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n<tool_result id=\"x\">package a</tool_result>\nThe file declares package a."), want: []Event{txt("Reading.\n"), tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "end of turn: all calls of the block kept", opts: endTurn, in: parts(trig + "<invoke name=\"list_dir\">{}</invoke>\n\n<invoke name=\"read_file\">{}</invoke> and then " + trig + "<invoke name=\"list_dir\">{}</invoke>"), want: []Event{tcall("list_dir", "{}"), tcall("read_file", "{}")}, clean: true},
	{name: "end of turn: a bad call does not end it", opts: endTurn, in: parts(trig + "<invoke name=\"nope\">{}</invoke> Sorry, " + trig + "<invoke name=\"list_dir\">{}</invoke> tail"), want: []Event{bad("nope", "{}", ReasonUnknownTool), txt("Sorry, "), tcall("list_dir", "{}")}, clean: true},

	// Claude's native format, without the trigger.
	{name: "native block", opts: endTurn, in: parts("I'll read it.\n\n<function_calls>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a.go</parameter>\n</invoke>\n</function_calls>\n"), want: []Event{txt("I'll read it.\n\n"), tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "native block, two calls, made-up result dropped", opts: endTurn, in: parts("<function_calls><invoke name=\"read_file\"><parameter name=\"path\">a</parameter></invoke><invoke name=\"list_dir\">{\"dir\":\".\"}</invoke></function_calls>\n<function_results>fake</function_results>"), want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", `{"dir":"."}`)}, clean: true},
	{name: "native block naming an undeclared tool stays text", opts: endTurn, in: parts("Run:\n<function_calls>\n <invoke name=\"rm_rf\"><parameter name=\"p\">/</parameter></invoke>\n</function_calls>"), want: []Event{txt("Run:\n<function_calls>\n <invoke name=\"rm_rf\"><parameter name=\"p\">/</parameter></invoke>\n</function_calls>")}},
	{name: "native block in a fence stays text", opts: endTurn, in: parts("Example:\n```xml\n<function_calls>\n<invoke name=\"read_file\">{}</invoke>\n</function_calls>\n```\nDone."), want: []Event{txt("Example:\n```xml\n<function_calls>\n<invoke name=\"read_file\">{}</invoke>\n</function_calls>\n```\nDone.")}},
	{name: "native block after a closed fence is a call", opts: endTurn, in: parts("```\ncode\n```\n<function_calls><invoke name=\"list_dir\">{}</invoke></function_calls>"), want: []Event{txt("```\ncode\n```\n"), tcall("list_dir", "{}")}, clean: true},
	{name: "native tag inline in prose stays text", opts: endTurn, in: parts("Claude writes `<function_calls>` or <function_calls> mid-line."), want: []Event{txt("Claude writes `<function_calls>` or <function_calls> mid-line.")}},
	{name: "native tag not followed by an invoke stays text", opts: endTurn, in: parts("<function_calls>\nnothing here"), want: []Event{txt("<function_calls>\nnothing here")}},
	{name: "native tag at the very end stays text", opts: endTurn, in: parts("done\n<function_calls> "), want: []Event{txt("done\n<function_calls> ")}},
	{name: "native format without tools is text", opts: noTools, in: parts("<function_calls><invoke name=\"read_file\">{}</invoke></function_calls>"), want: []Event{txt("<function_calls><invoke name=\"read_file\">{}</invoke></function_calls>")}},
	{name: "trigger followed by the native wrapper", opts: endTurn, in: parts(trig + "\n<function_calls>\n<invoke name=\"read_file\">{\"path\":\"b\"}</invoke>\n</function_calls>"), want: []Event{tcall("read_file", `{"path":"b"}`)}, clean: true},

	// A tool whose input is free text (RawBody) takes a bare body too.
	{name: "bare body of a free-text tool", opts: rawPatch, in: parts(trig + "\n<invoke name=\"apply_patch\">\n*** Begin Patch\n+fmt.Println(\"<b> & \\n\")\n*** End Patch\n</invoke>"), want: []Event{tcall("apply_patch", `{"input":"*** Begin Patch\n+fmt.Println(\"<b> & \\n\")\n*** End Patch"}`)}, clean: true},
	{name: "bare body with an odd quote", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\">say \"hi</invoke>\nDone."), want: []Event{tcall("apply_patch", `{"input":"say \"hi"}`), txt("Done.")}, clean: true},
	{name: "JSON body of a free-text tool", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\">{\"input\": \"x\"}</invoke>"), want: []Event{tcall("apply_patch", `{"input":"x"}`)}, clean: true},
	{name: "parameter children of a free-text tool", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\"><parameter name=\"input\">x</parameter></invoke>"), want: []Event{tcall("apply_patch", `{"input":"x"}`)}, clean: true},
	{name: "bare body of another tool is a bad call", opts: rawPatch, in: parts(trig + "<invoke name=\"read_file\">a.go</invoke>"), want: []Event{bad("read_file", "a.go", ReasonBadJSON)}, clean: true},
	{name: "bare body cut off is no call", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\">*** Begin Patch\n"), want: []Event{bad("apply_patch", "*** Begin Patch\n", ReasonCutOff)}, clean: true},
	{name: "broken JSON body of a free-text tool stays bad", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\">{input: x}</invoke>"), want: []Event{bad("apply_patch", "{input: x}", ReasonBadJSON)}, clean: true},
	{name: "broken fenced body of a free-text tool stays bad", opts: rawPatch, in: parts(trig + "<invoke name=\"apply_patch\">\n```json\n{input: x}\n```\n</invoke>"), want: []Event{bad("apply_patch", "\n```json\n{input: x}\n```\n", ReasonBadJSON)}, clean: true},
}

// markupFree reports whether in holds nothing the parser configured by
// opts treats as markup.
func markupFree(opts ParserOptions, in string) bool {
	for _, m := range NewParser(opts).markers {
		if strings.Contains(in, m) {
			return false
		}
	}
	return true
}

// checkInvariants checks what must hold for a case however it is split.
func checkInvariants(t *testing.T, tc parserCase, in string, got []Event, split int) {
	t.Helper()
	for _, e := range got {
		if e.Kind != EventText && e.Kind != EventThinking {
			continue
		}
		if tc.opts.Trigger != "" && !tc.literalTrigger {
			require.NotContains(t, e.Text, tc.opts.Trigger, "split #%d: the trigger leaks", split)
		}
		if tc.clean {
			for _, mark := range []string{"<<CALL_", "<invoke", "</invoke>", "<thinking>", "</thinking>", "<function_calls>", "</function_calls>"} {
				require.NotContains(t, e.Text, mark, "split #%d leaks markup", split)
			}
		}
	}
	if markupFree(tc.opts, in) {
		var all strings.Builder
		for _, e := range got {
			require.Equal(t, EventText, e.Kind, "split #%d: markup-free input gives only text", split)
			all.WriteString(e.Text)
		}
		require.Equal(t, in, all.String(), "split #%d: markup-free input comes out unchanged", split)
	}
}

func TestParserTable(t *testing.T) {
	require.GreaterOrEqual(t, len(parserCases), 40)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join(tc.in, "")
			streaming := tc.opts
			streaming.StreamArgs = true
			want := tc.want
			if tc.streamed != nil {
				want = tc.streamed
			}
			for i, chunks := range splits(in, rng, tc.in) {
				got := merged(feedChecked(t, tc.opts, chunks))
				require.Equal(t, tc.want, got, "split #%d: %q", i, chunks)
				checkInvariants(t, tc, in, got, i)
				got = unstreamed(t, feedChecked(t, streaming, chunks))
				require.Equal(t, want, got, "StreamArgs, split #%d: %q", i, chunks)
			}
		})
	}
}

func TestParserLosesNoPlainText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", " ", "\n", "<", ">", "<<", "CALL_", "ab12CD3", "<in", "voke", "<th", "ink", "</", "/", "\"", "{", "}", "é", "\u3000"}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(80) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		in := b.String()
		if !markupFree(tools, in) {
			continue
		}
		for _, chunks := range splits(in, rng)[:4] {
			var out strings.Builder
			for _, e := range feed(tools, chunks) {
				require.Equal(t, EventText, e.Kind)
				out.WriteString(e.Text)
			}
			require.Equal(t, in, out.String(), "chunks %q", chunks)
		}
	}
}

func TestParserStreamsPromptly(t *testing.T) {
	p := NewParser(tools)
	assert.Equal(t, []Event{txt("Hello wor")}, p.Feed("Hello wor"), "text without '<' is never held back")
	assert.Empty(t, p.in)
	assert.Equal(t, []Event{txt("ld abc ")}, p.Feed("ld abc <<CA"), "only the possible trigger start is held")
	assert.Equal(t, "<<CA", p.in)
	assert.Equal(t, []Event{txt("<<CAT")}, p.Feed("T"), "released once it cannot be the trigger")
	assert.Empty(t, p.Close())

	p = NewParser(tools)
	assert.Equal(t, []Event{txt("abc ")}, p.Feed("abc <<CA"))
	assert.Equal(t, "<<CA", p.in)
	assert.Empty(t, p.Feed("LL_ab12CD34>>\n"), "the trigger is consumed, not emitted")
	assert.Empty(t, p.Feed(`<invoke name="read_file">{"path":`))
	assert.Equal(t, []Event{tcall("read_file", `{"path":"a"}`)}, p.Feed(`"a"}</invoke>`))
	assert.Equal(t, []Event{txt("Done")}, p.Feed("\nDone"))
	assert.Empty(t, p.Close())

	p = NewParser(thinking)
	assert.Empty(t, p.Feed("<thinking>\n"))
	assert.Equal(t, []Event{think("Let me see")}, p.Feed("Let me see"), "thinking streams too")
	assert.Equal(t, []Event{think(" ")}, p.Feed(" </think"))
	assert.Equal(t, "</think", p.in)
	assert.Equal(t, []Event{txt("ok")}, p.Feed("ing>\nok"))
	assert.Empty(t, p.Close())
}

// longestMarker is the length of the longest marker p looks for in text.
func (p *Parser) longestMarker() int {
	n := 0
	for _, m := range p.markers {
		n = max(n, len(m))
	}
	return n
}

func TestParserBuffersBoundedly(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		p := NewParser(thinking)
		longest := p.longestMarker()
		require.Equal(t, len(trig), longest)
		// Every chunk ends in a different possible marker start.
		tails := []string{"<<CALL_ab12CD3", "</thinking", "<thinking", "<", "<<", "</", "x"}
		var sent, got int
		for i := 0; sent < 10<<20; i++ {
			tail := tails[i%len(tails)]
			chunk := strings.Repeat("lorem ipsum < dolor > sit << amet ", 4096/34+1) + tail
			chunk = chunk[len(chunk)-4096:]
			sent += len(chunk)
			for _, e := range p.Feed(chunk) {
				require.Equal(t, EventText, e.Kind)
				got += len(e.Text)
			}
			require.Less(t, len(p.in), longest, "text state holds back less than a whole marker")
		}
		for _, e := range p.Close() {
			got += len(e.Text)
		}
		assert.Equal(t, sent, got, "nothing lost")
	})

	t.Run("invoke body", func(t *testing.T) {
		const maxBuf = 64 << 10
		p := NewParser(ParserOptions{Trigger: trig, MaxBuffered: maxBuf})
		require.Empty(t, p.Feed(trig+"<invoke name=\"w\">{\"c\":\""))
		piece := strings.Repeat("y", 4095) + "<"
		var text strings.Builder
		for range 512 { // 2 MiB
			for _, e := range p.Feed(piece) {
				require.Equal(t, EventText, e.Kind)
				text.WriteString(e.Text)
			}
			require.LessOrEqual(t, p.body.Len(), maxBuf+len(piece))
			require.Less(t, len(p.in), len(invokeClose))
		}
		for _, e := range p.Feed("\"}</invoke> after") {
			require.Equal(t, EventText, e.Kind)
			text.WriteString(e.Text)
		}
		for _, e := range p.Close() {
			require.Equal(t, EventText, e.Kind)
			text.WriteString(e.Text)
		}
		assert.Equal(t, `{"c":"`+strings.Repeat(piece, 512)+`"} after`, text.String(),
			"an oversized body comes out as text, whole, without its closing tag")
	})

	t.Run("thinking", func(t *testing.T) {
		const maxBuf = 64 << 10
		p := NewParser(ParserOptions{Trigger: trig, Thinking: true, MaxBuffered: maxBuf})
		p.Feed("<thinking>")
		piece := strings.Repeat("z", 4090) + "</thin"
		for range 512 {
			p.Feed(piece)
			require.LessOrEqual(t, p.thinkCopy.Len(), maxBuf)
			require.Less(t, len(p.in), len(thinkingClose))
		}
		assert.True(t, p.thinkTruncated)
	})
}

func TestParserStreamsArguments(t *testing.T) {
	opts := tools
	opts.StreamArgs = true
	start := Event{Kind: EventToolCallStart, Name: "write_file"}
	piece := func(s string) Event { return Event{Kind: EventToolCallDelta, Arguments: s} }

	p := NewParser(opts)
	assert.Equal(t, []Event{txt("Writing. ")}, p.Feed("Writing. "+trig+"\n<invoke name=\"Write-File\">\n{"))
	assert.Empty(t, p.Feed("\n  "), "not yet known to be a JSON object")
	assert.Equal(t, []Event{start, piece(`{"path":"a.go","content":"package a`)}, p.Feed(`"path": "a.go", "content": "package a`))
	assert.Equal(t, []Event{piece(`\n\nfunc A() {}\n`)}, p.Feed("\n\nfunc A() {}\n"), "raw newlines are escaped as they pass")
	assert.Equal(t, []Event{piece(`"`)}, p.Feed("\"}\n</inv"), "the object's closing brace waits for the closing tag")
	assert.Equal(t, []Event{tcall("write_file", `{"path":"a.go","content":"package a\n\nfunc A() {}\n"}`)}, p.Feed("oke>"),
		"the call's Arguments hold the closing brace the pieces lack")
	assert.Equal(t, []Event{txt("Done.")}, p.Feed(" Done."))
	assert.Empty(t, p.Close())

	p = NewParser(opts)
	p.Feed(trig + `<invoke name="write_file">{"path":"a.go","content":"package a`)
	assert.Equal(t, []Event{bad("write_file", `{"path":"a.go","content":"package a`, ReasonCutOff)}, p.Close(),
		"a call cut off by the end of the stream is refused, its JSON left incomplete")

	p = NewParser(opts)
	assert.Equal(t, []Event{start, piece(`{"path":"a"`)}, p.Feed(trig+"<invoke name=\"write_file\">```json\n{\"path\":\"a\"}\n```"), "a fenced body streams too")
	assert.Equal(t, []Event{tcall("write_file", `{"path":"a"}`)}, p.Feed("</invoke>"))

	p = NewParser(opts)
	assert.Empty(t, p.Feed(trig+`<invoke name="write_file"><parameter name="path">a</parameter>`), "a <parameter> body is read whole")
	assert.Equal(t, []Event{tcall("write_file", `{"path":"a"}`)}, p.Feed("</invoke>"))

	p = NewParser(opts)
	assert.Empty(t, p.Feed(trig+`<invoke name="nope">{"path":"a"`), "an unknown tool's call is not streamed")
	assert.Equal(t, []Event{bad("nope", `{"path":"a"}`, ReasonUnknownTool)}, p.Feed("}</invoke>"))
}

func TestParserEndTurnAtCall(t *testing.T) {
	p := NewParser(endTurn)
	p.Feed("Reading. " + trig + `<invoke name="read_file">{}</invoke>`)
	assert.False(t, p.Done(), "another invoke may follow")
	assert.Empty(t, p.Feed("\n\n"))
	assert.False(t, p.Done())
	assert.Empty(t, p.Feed("The file says"))
	assert.True(t, p.Done())
	assert.Empty(t, p.Feed(trig+`<invoke name="read_file">{}</invoke>`), "nothing after the end of the turn")
	assert.Empty(t, p.Close())
	assert.True(t, p.Done())

	p = NewParser(tools)
	p.Feed(trig + `<invoke name="read_file">{}</invoke> more`)
	assert.False(t, p.Done(), "without EndTurnAtCall the turn goes on")
}

func TestPartialMarkerSuffix(t *testing.T) {
	markers := []string{thinkingOpen, thinkingClose, trig}
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"abc<", 1},
		{"abc<<", 2},
		{"abc <<CALL_ab12CD34>", 16},
		{"abc <<<CA", 4},
		{"abc <thinking", 9},
		{"abc </thinking", 10},
		{"abc </thinking>", 0}, // whole markers are found, not held
		{"abc <x", 0},
		{"<< <", 1},
	} {
		assert.Equal(t, tc.want, partialMarkerSuffix(tc.in, markers), "%q", tc.in)
	}
}

// fuzzOptions picks the parser options of a fuzz run.
func fuzzOptions(mode uint8) ParserOptions {
	opts := ParserOptions{Trigger: trig, ToolNames: []string{"read_file", "write_file", "list_dir"}}
	if mode&1 != 0 {
		opts.Thinking = true
	}
	if mode&2 != 0 {
		opts.Trigger = ""
	}
	if mode&4 != 0 {
		opts.EndTurnAtCall = true
	}
	if mode&8 != 0 {
		opts.MaxBuffered = 32
	}
	if mode&16 != 0 {
		opts.ToolNames = nil
	}
	if mode&32 != 0 {
		opts.StreamArgs = true
	}
	return opts
}

func FuzzParser(f *testing.F) {
	for _, tc := range parserCases {
		in := strings.Join(tc.in, "")
		var mode uint8
		if tc.opts.Thinking {
			mode |= 1
		}
		if tc.opts.Trigger == "" {
			mode |= 2
		}
		if tc.opts.EndTurnAtCall {
			mode |= 4
		}
		f.Add(in, uint16(len(in)/2), mode)
	}
	// A closing tag inside a JSON string is content.
	f.Add(trig+`<invoke name="write_file">{"content":"a</invoke>b"}</invoke>`, uint16(40), uint8(0))
	f.Add(trig+"\u3000<invoke name=\"read_file\">{}</invoke>", uint16(len(trig)+1), uint8(8))
	f.Add(trig+`<invoke name="write_file">{"c":"`+strings.Repeat("é", 20)+`"}</invoke>`, uint16(50), uint8(32|8))
	f.Add(trig+"<invoke name=\"read_file\">{\"a\":[1,],\n\"b\":\"x\ny\"</invoke> ok", uint16(45), uint8(32|4))
	f.Fuzz(func(t *testing.T, in string, at uint16, mode uint8) {
		opts := fuzzOptions(mode)
		i := int(at) % (len(in) + 1)
		whole := unstreamed(t, feed(opts, []string{in}))
		split := unstreamed(t, feed(opts, []string{in[:i], in[i:]}))
		require.Equal(t, whole, split, "split at %d", i)
		if opts.MaxBuffered == 0 {
			// Below the bound, streaming changes only how calls arrive.
			other := opts
			other.StreamArgs = !opts.StreamArgs
			require.Equal(t, whole, unstreamed(t, feed(other, []string{in[:i], in[i:]})), "StreamArgs %v", other.StreamArgs)
		}
	})
}

// genReply builds a random well-formed protocol reply from text, thinking
// and call blocks, and the merged events it must give.
func genReply(rng *rand.Rand, thinkingOn bool) (string, []Event) {
	// No token can start a marker, alone or next to another.
	tokens := []string{"Hello", " ", "\n", "a < b", "x<<2", "<invoked>", "<b>", "</p>", "é", "\u3000", "{", "}", "\"", "<<CALL_zz>>", "<<CALL_ab12CD3 "}
	words := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		return b.String()
	}
	spaces := []string{"", "\n", "\n\n", " \t", "\r\n"}
	names := map[string]string{"read_file": "read_file", "Read-File": "read_file", "write_file": "write_file", "list_dir": "list_dir", "LIST_DIR": "list_dir"}
	nameList := slices.Sorted(maps.Keys(names))

	var in strings.Builder
	var want []Event
	add := func(e Event) { want = merged(append(want, e)) }
	callTrim, thinkTrim, lastText := false, false, false
	for range 1 + rng.IntN(8) {
		kind := rng.IntN(3)
		if kind == 0 && lastText {
			kind = 1 + rng.IntN(2)
		}
		lastText = kind == 0
		switch kind {
		case 0: // text
			s := words(1 + rng.IntN(12))
			in.WriteString(s)
			if callTrim {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if thinkTrim {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
				thinkTrim = s == ""
			}
			add(txt(s))
			callTrim = false
		case 1: // thinking
			s := words(rng.IntN(12))
			in.WriteString(thinkingOpen + s + thinkingClose)
			if thinkingOn {
				add(think(strings.TrimLeftFunc(s, unicode.IsSpace)))
				thinkTrim = true
			} else {
				add(txt(s))
			}
			callTrim = false
		case 2: // a block of calls
			in.WriteString(trig + spaces[rng.IntN(len(spaces))])
			for range 1 + rng.IntN(3) {
				written := nameList[rng.IntN(len(nameList))]
				args := map[string]any{}
				for _, k := range []string{"path", "content", "n"}[:rng.IntN(4)] {
					if k == "n" {
						args[k] = rng.IntN(1000)
					} else {
						args[k] = words(rng.IntN(6))
					}
				}
				var body bytes.Buffer
				enc := json.NewEncoder(&body)
				enc.SetEscapeHTML(rng.IntN(2) == 0)
				if rng.IntN(2) == 0 {
					enc.SetIndent("", "  ")
				}
				if err := enc.Encode(args); err != nil {
					panic(err)
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, body.Bytes()); err != nil {
					panic(err)
				}
				tag := []string{`<invoke name="` + written + `"`, `<invoke name='` + written + `'`, `<invoke name=` + written + ` `}[rng.IntN(3)]
				switch {
				case len(args) == 0 && rng.IntN(2) == 0:
					in.WriteString(tag + "/>")
				case rng.IntN(4) == 0:
					in.WriteString(tag + ">\n```json\n" + body.String() + "```\n" + invokeClose)
				default:
					in.WriteString(tag + ">" + body.String() + invokeClose)
				}
				in.WriteString(spaces[rng.IntN(len(spaces))])
				add(tcall(names[written], compact.String()))
			}
			callTrim = true
		}
	}
	return in.String(), want
}

func TestParserGeneratedReplies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := map[EventKind]int{}
	defer func() {
		assert.Greater(t, kinds[EventToolCall], 600, "the generator writes calls")
		assert.Greater(t, kinds[EventThinking], 100, "the generator writes thinking")
		assert.Greater(t, kinds[EventText], 600, "the generator writes text")
	}()
	for i := range 600 {
		thinkingOn := i%2 == 0
		opts := tools
		opts.Thinking = thinkingOn
		in, want := genReply(rng, thinkingOn)
		for _, e := range want {
			kinds[e.Kind]++
		}
		// The text holds near misses like <invoked> and <<CALL_zz>>, so
		// only the real markup is checked for.
		tc := parserCase{opts: opts, want: want}
		for j, chunks := range splits(in, rng)[:6] {
			got := merged(feedChecked(t, opts, chunks))
			require.Equal(t, want, got, "reply %d split #%d: %q", i, j, chunks)
			streaming := opts
			streaming.StreamArgs = true
			require.Equal(t, want, unstreamed(t, feedChecked(t, streaming, chunks)), "StreamArgs, reply %d split #%d", i, j)
			checkInvariants(t, tc, in, got, j)
			for _, e := range got {
				for _, mark := range []string{"<invoke ", "<invoke\n", "</invoke>", "<thinking>", "</thinking>"} {
					require.NotContains(t, e.Text, mark, "reply %d split #%d leaks markup", i, j)
				}
			}
		}
	}
}
