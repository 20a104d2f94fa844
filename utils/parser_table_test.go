package utils

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const trig = "<<CALL_ab12CD34>>"

// ev builders for expectations.
func txt(s string) Event            { return Event{Kind: EventText, Text: s} }
func think(s string) Event          { return Event{Kind: EventThinking, Text: s} }
func tcall(name, args string) Event { return Event{Kind: EventToolCall, Name: name, Arguments: args} }
func bad(name, body, reason string) Event {
	return Event{Kind: EventBadCall, Name: name, Text: body, Reason: reason}
}

// merged concatenates adjacent text and adjacent thinking events, so that
// results do not depend on how the input was split.
func merged(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if n := len(out); n > 0 && (e.Kind == EventText || e.Kind == EventThinking) && out[n-1].Kind == e.Kind {
			out[n-1].Text += e.Text
			continue
		}
		if (e.Kind == EventText || e.Kind == EventThinking) && e.Text == "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// feed runs the parser over chunks and returns every event, copied.
func feed(opts ParserOptions, chunks []string) []Event {
	p := NewParser(opts)
	var all []Event
	for _, c := range chunks {
		all = append(all, p.Feed(c)...)
	}
	return append(all, p.Close()...)
}

type parserCase struct {
	name string
	opts ParserOptions
	in   string
	want []Event
	// clean marks a well-formed protocol reply: no markup may reach the
	// output.
	clean bool
}

var tools = ParserOptions{Trigger: trig, ToolNames: []string{"read_file", "write_file", "list_dir"}}
var endTurn = ParserOptions{Trigger: trig, ToolNames: []string{"read_file", "list_dir"}, EndTurnAtCall: true}
var thinking = ParserOptions{Trigger: trig, Thinking: true, ToolNames: []string{"read_file"}}

var parserCases = []parserCase{
	{name: "plain text", opts: tools, in: "Hello, world!", want: []Event{txt("Hello, world!")}, clean: true},
	{name: "angle brackets in code", opts: tools, in: "if a < b && c<<2 > 1 { x := <-ch }", want: []Event{txt("if a < b && c<<2 > 1 { x := <-ch }")}, clean: true},
	{name: "near misses stay text", opts: tools, in: "<invoked> <think> <<CALL_zz> <<CALL_ab12CD3 done", want: []Event{txt("<invoked> <think> <<CALL_zz> <<CALL_ab12CD3 done")}},
	{name: "other trigger id is text", opts: tools, in: "<<CALL_ZZZZZZZZ>>\n<invoke name=\"read_file\">{}</invoke>", want: []Event{txt("<<CALL_ZZZZZZZZ>>\n<invoke name=\"read_file\">{}</invoke>")}},
	{name: "one call", opts: tools, in: trig + "\n<invoke name=\"read_file\">{\"path\": \"a.go\"}</invoke>", want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "text then call", opts: tools, in: "Let me read it.\n\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a.go\"}</invoke>", want: []Event{txt("Let me read it.\n\n"), tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "two invokes back to back", opts: tools, in: trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"b\"}</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`), tcall("read_file", `{"path":"b"}`)}, clean: true},
	{name: "three invokes with blank lines", opts: tools, in: trig + "\n\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n\n \t<invoke name=\"list_dir\">{}</invoke>\r\n<invoke name=\"write_file\">{\"path\":\"c\",\"content\":\"x\"}</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`), tcall("list_dir", `{}`), tcall("write_file", `{"path":"c","content":"x"}`)}, clean: true},
	{name: "two trigger blocks", opts: tools, in: "A " + trig + "<invoke name=\"list_dir\">{}</invoke> B " + trig + "<invoke name=\"read_file\">{\"path\":\"x\"}</invoke>", want: []Event{txt("A "), tcall("list_dir", "{}"), txt("B "), tcall("read_file", `{"path":"x"}`)}, clean: true},
	{name: "repeated trigger inside a block", opts: tools, in: trig + "\n<invoke name=\"list_dir\">{}</invoke>\n" + trig + "\n<invoke name=\"list_dir\">{\"d\":1}</invoke>", want: []Event{tcall("list_dir", "{}"), tcall("list_dir", `{"d":1}`)}, clean: true},
	{name: "text after the call", opts: tools, in: trig + "<invoke name=\"list_dir\">{}</invoke>\n\nDone.", want: []Event{tcall("list_dir", "{}"), txt("Done.")}, clean: true},
	{name: "trigger then prose", opts: tools, in: "I would use " + trig + " but no. More text follows.", want: []Event{txt("I would use but no. More text follows.")}, clean: true},
	{name: "trigger at the very end", opts: tools, in: "The end. " + trig, want: []Event{txt("The end. ")}, clean: true},
	{name: "partial trigger at the end is text", opts: tools, in: "The end <<CALL_ab", want: []Event{txt("The end <<CALL_ab")}},
	{name: "unfinished invoke with complete JSON", opts: tools, in: trig + "\n<invoke name=\"read_file\">{\"path\":\"a.go\"}", want: []Event{tcall("read_file", `{"path":"a.go"}`)}, clean: true},
	{name: "unfinished invoke with cut JSON", opts: tools, in: trig + "\n<invoke name=\"write_file\">{\"path\":\"a.go\",\"content\":\"packa", want: []Event{bad("write_file", `{"path":"a.go","content":"packa`, ReasonCutOff)}, clean: true},
	{name: "unfinished opening tag", opts: tools, in: trig + "\n<invoke name=\"read_fi", want: []Event{txt("<invoke name=\"read_fi")}},
	{name: "raw newlines in strings repaired", opts: tools, in: trig + "<invoke name=\"write_file\">{\"path\":\"m.go\",\"content\":\"package m\n\nfunc f() {\n\treturn\n}\n\"}</invoke>", want: []Event{tcall("write_file", `{"path":"m.go","content":"package m\n\nfunc f() {\n\treturn\n}\n"}`)}, clean: true},
	{name: "trailing comma repaired", opts: tools, in: trig + "<invoke name=\"read_file\">{\"path\":\"a\",}</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "missing final brace repaired", opts: tools, in: trig + "<invoke name=\"read_file\">{\"path\":\"a\"</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "fenced JSON", opts: tools, in: trig + "<invoke name=\"read_file\">\n```json\n{\"path\":\"a\"}\n```\n</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "unrepairable JSON becomes text", opts: tools, in: trig + "<invoke name=\"read_file\">{path: 'a'}</invoke>", want: []Event{bad("read_file", "{path: 'a'}", ReasonBadJSON)}, clean: true},
	{name: "array arguments become text", opts: tools, in: trig + "<invoke name=\"read_file\">[1,2]</invoke>", want: []Event{bad("read_file", "[1,2]", ReasonBadJSON)}, clean: true},
	{name: "empty body", opts: tools, in: trig + "<invoke name=\"list_dir\"></invoke>", want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "whitespace body", opts: tools, in: trig + "<invoke name=\"list_dir\">\n  \n</invoke>", want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "self-closing invoke", opts: tools, in: trig + "<invoke name=\"list_dir\"/>", want: []Event{tcall("list_dir", "{}")}, clean: true},
	{name: "single-quoted name", opts: tools, in: trig + "<invoke name='read_file'>{\"path\":\"a\"}</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "bare name and spaces", opts: tools, in: trig + "<invoke  name = read_file >{\"path\":\"a\"}</invoke>", want: []Event{tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "newline inside the opening tag", opts: tools, in: trig + "<invoke\nname=\"read_file\">{}</invoke>", want: []Event{tcall("read_file", `{}`)}, clean: true},
	{name: "name case and dash corrected", opts: tools, in: trig + "<invoke name=\"Read-File\">{}</invoke>", want: []Event{tcall("read_file", "{}")}, clean: true},
	{name: "unknown tool name is text", opts: tools, in: trig + "<invoke name=\"delete_all\">{}</invoke>", want: []Event{bad("delete_all", "{}", ReasonUnknownTool)}, clean: true},
	{name: "any name when no list", opts: ParserOptions{Trigger: trig}, in: trig + "<invoke name=\"anything\">{}</invoke>", want: []Event{tcall("anything", "{}")}, clean: true},
	{name: "oversized body becomes text", opts: ParserOptions{Trigger: trig, MaxBuffered: 1024}, in: trig + "<invoke name=\"w\">{\"c\":\"" + strings.Repeat("x", 3000) + "\"}</invoke> after", want: []Event{txt("{\"c\":\"" + strings.Repeat("x", 3000) + "\"} after")}, clean: true},
	{name: "thinking consumed", opts: thinking, in: "<thinking>\nStep 1.\nStep 2.\n</thinking>\n\nThe answer is 4.", want: []Event{think("Step 1.\nStep 2.\n"), txt("The answer is 4.")}, clean: true},
	{name: "thinking then call", opts: thinking, in: "<thinking>I should read it.</thinking>\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>", want: []Event{think("I should read it."), tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "thinking mentions the trigger", opts: thinking, in: "<thinking>I will write " + trig + " and <invoke name=\"read_file\">{}</invoke></thinking>Hi", want: []Event{think("I will write " + trig + " and <invoke name=\"read_file\">{}</invoke>"), txt("Hi")}},
	{name: "thinking tags stripped for base models", opts: tools, in: "<thinking>hmm</thinking>Answer", want: []Event{txt("hmmAnswer")}, clean: true},
	{name: "stray closing tag dropped", opts: thinking, in: "reasoning</thinking>Answer", want: []Event{txt("reasoningAnswer")}, clean: true},
	{name: "unterminated thinking recovered as text", opts: thinking, in: "<thinking>\nThe whole answer is here.", want: []Event{think("The whole answer is here."), txt("The whole answer is here.")}, clean: true},
	{name: "no trigger configured: markup is text", opts: ParserOptions{}, in: trig + "<invoke name=\"x\">{}</invoke>", want: []Event{txt(trig + "<invoke name=\"x\">{}</invoke>")}},
	{name: "unicode text", opts: tools, in: "你好,世界 🌍 <ünïcode>", want: []Event{txt("你好,世界 🌍 <ünïcode>")}, clean: true},
	{name: "end of turn: made-up result dropped", opts: endTurn, in: "Reading.\n" + trig + "\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>\n<tool_result id=\"x\">package a</tool_result>\nThe file declares package a.", want: []Event{txt("Reading.\n"), tcall("read_file", `{"path":"a"}`)}, clean: true},
	{name: "end of turn: all calls of the block kept", opts: endTurn, in: trig + "<invoke name=\"list_dir\">{}</invoke>\n\n<invoke name=\"read_file\">{}</invoke> and then " + trig + "<invoke name=\"list_dir\">{}</invoke>", want: []Event{tcall("list_dir", "{}"), tcall("read_file", "{}")}, clean: true},
	{name: "end of turn: a bad call does not end it", opts: endTurn, in: trig + "<invoke name=\"nope\">{}</invoke> Sorry, " + trig + "<invoke name=\"list_dir\">{}</invoke> tail", want: []Event{bad("nope", "{}", ReasonUnknownTool), txt("Sorry, "), tcall("list_dir", "{}")}, clean: true},
	{name: "parameter children", opts: tools, in: trig + "<invoke name=\"write_file\">\n<parameter name=\"path\">src/a.go</parameter>\n<parameter name=\"content\">\npackage a\n</parameter>\n<parameter name=\"mode\">420</parameter>\n</invoke>", want: []Event{tcall("write_file", `{"path":"src/a.go","content":"package a","mode":420}`)}, clean: true},
	{name: "parameter children with JSON values", opts: tools, in: trig + "<invoke name='read_file'><parameter name='opts'>{\"lines\": [1, 2]}</parameter><parameter name=flag>true</parameter></invoke>", want: []Event{tcall("read_file", `{"opts":{"lines":[1,2]},"flag":true}`)}, clean: true},
	{name: "parameter children with stray text", opts: tools, in: trig + "<invoke name=\"read_file\"><parameter name=\"path\">a</parameter> oops</invoke>", want: []Event{bad("read_file", `<parameter name="path">a</parameter> oops`, ReasonBadJSON)}},
	{name: "close tag inside a string ends the body", opts: tools, in: trig + "<invoke name=\"write_file\">{\"content\":\"a\"}</invoke>", want: []Event{tcall("write_file", `{"content":"a"}`)}, clean: true},
}

// splits returns the ways each case is fed: whole, byte by byte, and at
// random points.
func splits(in string, rng *rand.Rand) [][]string {
	out := [][]string{{in}}
	bytes := make([]string, len(in))
	for i := 0; i < len(in); i++ {
		bytes[i] = in[i : i+1]
	}
	out = append(out, bytes)
	for range 50 {
		var chunks []string
		rest := in
		for len(rest) > 0 {
			n := 1 + rng.IntN(min(len(rest), 24))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		out = append(out, chunks)
	}
	return out
}

func TestParserTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range parserCases {
		t.Run(tc.name, func(t *testing.T) {
			for i, chunks := range splits(tc.in, rng) {
				got := merged(feed(tc.opts, chunks))
				require.Equal(t, tc.want, got, "split #%d: %q", i, chunks)
				if tc.clean {
					for _, e := range got {
						for _, mark := range []string{"<<CALL_", "<invoke", "</invoke>", "<thinking>", "</thinking>"} {
							assert.NotContains(t, e.Text, mark, "split #%d leaks markup", i)
						}
					}
				}
			}
		})
	}
}

func TestParserLosesNoPlainText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", " ", "\n", "<", ">", "<<", "CALL_", "<in", "voke", "<th", "ink", "</", "/", "\"", "{", "}", "é"}
	for range 300 {
		var b strings.Builder
		for range rng.IntN(80) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		in := b.String()
		if strings.Contains(in, "<thinking>") || strings.Contains(in, "</thinking>") {
			continue
		}
		for _, chunks := range splits(in, rng)[:3] {
			var out strings.Builder
			for _, e := range feed(tools, chunks) {
				out.WriteString(e.Text)
			}
			require.Equal(t, in, out.String(), "chunks %q", chunks)
		}
	}
}

func TestParserStreamsPromptly(t *testing.T) {
	p := NewParser(tools)
	assert.Equal(t, []Event{txt("Hello wor")}, p.Feed("Hello wor"))
	assert.Equal(t, []Event{txt("ld abc ")}, p.Feed("ld abc <<CA"), "only the possible trigger start is held")
	assert.Equal(t, "<<CA", p.in)
	assert.Equal(t, []Event{txt("<<CAT")}, p.Feed("T"))
	assert.Empty(t, p.Close())
}

func TestParserBuffersBoundedly(t *testing.T) {
	longest := len(trig)
	p := NewParser(tools)
	chunk := strings.Repeat("lorem ipsum < dolor > sit <<", 4096/28)
	total := 0
	for total < 10<<20 {
		for _, e := range p.Feed(chunk) {
			total += len(e.Text)
		}
		require.Less(t, len(p.in), longest, "text state holds back less than a marker")
	}

	p = NewParser(ParserOptions{Trigger: trig, MaxBuffered: 64 << 10})
	p.Feed(trig + "<invoke name=\"w\">{\"c\":\"")
	piece := strings.Repeat("y", 4096)
	var text int
	for range 512 { // 2 MiB
		for _, e := range p.Feed(piece) {
			text += len(e.Text)
		}
		require.LessOrEqual(t, p.body.Len(), 64<<10+len(piece))
	}
	for _, e := range p.Close() {
		text += len(e.Text)
	}
	assert.Equal(t, len(`{"c":"`)+512*len(piece), text, "an oversized body comes out as text, whole")
}

func FuzzParserSplit(f *testing.F) {
	for _, tc := range parserCases {
		f.Add(tc.in, uint16(len(tc.in)/2), tc.opts.Thinking)
	}
	f.Fuzz(func(t *testing.T, in string, at uint16, thinkingOn bool) {
		opts := ParserOptions{Trigger: trig, Thinking: thinkingOn, ToolNames: []string{"read_file"}}
		i := int(at) % (len(in) + 1)
		whole := merged(feed(opts, []string{in}))
		split := merged(feed(opts, []string{in[:i], in[i:]}))
		if len(whole) == 0 && len(split) == 0 {
			return
		}
		require.Equal(t, whole, split)
	})
}
