package toolproto

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanArgs runs a scanner over the pieces of a body and returns the
// arguments pieced together from take, and what finish says.
func scanArgs(pieces []string, closed bool) (started bool, streamed, args, reason string) {
	var a argScanner
	a.reset(false)
	var b strings.Builder
	for _, p := range pieces {
		for p != "" {
			p = p[a.write(p):]
		}
		b.WriteString(a.take())
	}
	args, reason = a.finish(closed)
	if reason == "" {
		b.WriteString(a.take())
	}
	return a.started, b.String(), args, reason
}

func TestArgScanner(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		closed  bool
		started bool
		args    string // "" when reason is set or not started
		reason  string
	}{
		{"compact", `{"path":"a.go"}`, true, true, `{"path":"a.go"}`, ""},
		{"layout dropped", "\n  {\n  \"path\" : \"a b\",\n  \"n\" : [ 1 , 2 ]\n}\n", true, true, `{"path":"a b","n":[1,2]}`, ""},
		{"empty object", `{ }`, true, true, `{}`, ""},
		{"raw newline and tab in a string", "{\"c\":\"a\n\tb\"}", true, true, `{"c":"a\n\tb"}`, ""},
		{"other control characters", "{\"c\":\"\x01\x1f\"}", true, true, `{"c":"\u0001\u001f"}`, ""},
		{"escapes kept", `{"c":"q\"\\n\u00e9"}`, true, true, `{"c":"q\"\\n\u00e9"}`, ""},
		{"trailing commas", `{"a":[1,2,],"b":{"c":1,},}`, true, true, `{"a":[1,2],"b":{"c":1}}`, ""},
		{"closers added when the tag came", `{"a":[1,{"b":2`, true, true, `{"a":[1,{"b":2}]}`, ""},
		{"closers added after a comma", `{"a":1,`, true, true, `{"a":1}`, ""},
		{"complete without its tag", `{"a":1}`, false, true, `{"a":1}`, ""},
		{"unbalanced without its tag", `{"a":[1`, false, true, "", ReasonCutOff},
		{"string cut off", `{"a":"xy`, false, true, "", ReasonCutOff},
		{"string never closed", `{"a":"xy`, true, true, "", ReasonBadJSON},
		{"text after the object", `{"a":1} and more`, true, true, "", ReasonBadJSON},
		{"white space after the object", "{\"a\":1}\n\r\t ", true, true, `{"a":1}`, ""},
		{"other space after the object", "{\"a\":1}\u00a0", true, true, "", ReasonBadJSON},
		{"a second closer", `{"a":1}}`, true, true, "", ReasonBadJSON},
		{"mismatched closer", `{"a":[1}`, true, true, "", ReasonBadJSON},
		{"double comma", `{"a":1,,"b":2}`, true, true, "", ReasonBadJSON},
		{"literals split by a space", `{"a":tr ue}`, true, true, "", ReasonBadJSON},
		{"numbers split by a space", `{"a":1 2}`, true, true, "", ReasonBadJSON},
		{"missing value", `{"a":}`, true, true, "", ReasonBadJSON},
		{"fenced", "```json\n{\"a\": 1}\n```\n", true, true, `{"a":1}`, ""},
		{"fenced without an info string", "  ```\n{\"a\":1}```", true, true, `{"a":1}`, ""},
		{"fenced, closers missing", "```json\n{\"a\":[1,\n```", true, true, `{"a":[1]}`, ""},
		{"fence never closed", "```json\n{\"a\":1}", true, true, "", ReasonBadJSON},
		{"fence never closed, closers missing", "```json\n{\"a\":1", true, true, "", ReasonBadJSON},
		{"text after the closing fence", "```json\n{\"a\":1}\n``` and", true, true, "", ReasonBadJSON},
		{"two backticks are no fence", "``json\n{\"a\":1}\n``", true, false, "", ""},
		{"an info string with a brace is no fence", "```{\"a\":1}```", true, false, "", ""},
		{"parameter children are declined", `<parameter name="a">1</parameter>`, true, false, "", ""},
		{"an object not opening with a key is declined", `{a:1}`, true, false, "", ""},
		{"an array is declined", `[1]`, true, false, "", ""},
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, pieces := range splits(tc.body, rng) {
				started, streamed, args, reason := scanArgs(pieces, tc.closed)
				require.Equal(t, tc.started, started, "split #%d", i)
				if !started {
					assert.Empty(t, streamed, "a declined body passes nothing on")
					continue
				}
				require.Equal(t, tc.reason, reason, "split #%d: %q", i, pieces)
				require.Equal(t, tc.args, args, "split #%d", i)
				if reason == "" {
					require.Equal(t, args, streamed, "split #%d: the pieces make the arguments", i)
				} else {
					require.False(t, strings.HasSuffix(streamed, "}") && strings.Count(streamed, "{") == strings.Count(streamed, "}"),
						"split #%d: a refused body is never passed on whole: %q", i, streamed)
				}
			}
		})
	}
}

func TestArgScannerHoldsCutRunes(t *testing.T) {
	var a argScanner
	a.reset(false)
	body := `{"s":"é€😀"}`
	var got strings.Builder
	for i := range len(body) {
		require.Equal(t, 1, a.write(body[i:i+1]))
		piece := a.take()
		require.True(t, utf8.ValidString(piece), "piece %q after byte %d", piece, i)
		got.WriteString(piece)
	}
	args, reason := a.finish(true)
	require.Empty(t, reason)
	got.WriteString(a.take())
	assert.Equal(t, body, got.String())
	assert.Equal(t, body, args)
}

func TestArgScannerHoldsTheClosingBrace(t *testing.T) {
	var a argScanner
	a.reset(false)
	assert.Equal(t, len(`{"path":"a.go"}`), a.write(`{"path":"a.go"} trailing words`), "the write stops after the object")
	assert.Equal(t, `{"path":"a.go"`, a.take(), "the object's brace waits for finish")
	assert.Equal(t, len(" trailing words"), a.write(" trailing words"))
	assert.Empty(t, a.take())
	_, reason := a.finish(true)
	assert.Equal(t, ReasonBadJSON, reason)
	assert.Empty(t, a.take(), "nothing completes a refused body")
}

// FuzzArgScanner holds the scanner to RepairArguments: a body it streams
// becomes the same arguments, or is refused, whatever the pieces.
func FuzzArgScanner(f *testing.F) {
	for _, s := range []string{"```json\n{\"a\":[1,\n```", "```\n{}\n```", `{"a":1}`, "{\"c\":\"x\ny\"}", `{"a":[1,],}`, `{"a":{"b":[1,2`, `{"a":"`, `{ } x`, `{"a":tr ue}`, `{"a":1 ,"b" : null }`} {
		f.Add(s, true, uint64(1))
		f.Add(s, false, uint64(2))
	}
	f.Fuzz(func(t *testing.T, body string, closed bool, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed))
		var pieces []string
		for rest := body; rest != ""; {
			n := 1 + rng.IntN(len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		started, streamed, args, reason := scanArgs(pieces, closed)
		if !started {
			require.Empty(t, streamed)
			return
		}
		want, ok := RepairArguments(body, closed)
		require.Equal(t, ok, reason == "", "body %q closed %v: scanner %q/%q, RepairArguments %q", body, closed, args, reason, want)
		if ok {
			require.Equal(t, want, args, "body %q", body)
			require.Equal(t, args, streamed)
		} else if !closed {
			require.Equal(t, ReasonCutOff, reason)
		}
		if utf8.ValidString(body) {
			require.True(t, utf8.ValidString(streamed))
		}
	})
}
