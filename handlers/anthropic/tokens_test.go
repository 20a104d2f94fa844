package anthropic

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documented are the examples of Anthropic's token-counting guide
// (docs.claude.com, "Token counting", for claude-opus-4-20250514) whose
// input is all text, with the count the guide shows Anthropic's own
// endpoint returning.
var documented = []struct {
	name  string
	body  string
	count int
}{
	{"basic message", `{"model":"claude-opus-4-20250514","system":"You are a scientist","messages":[{"role":"user","content":"Hello, Claude"}]}`, 14},
	{"tools", `{"model":"claude-opus-4-20250514","tools":[{"name":"get_weather","description":"Get the current weather in a given location",
	  "input_schema":{"type":"object","properties":{"location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"}},"required":["location"]}}],
	  "messages":[{"role":"user","content":"What's the weather like in San Francisco?"}]}`, 403},
	{"extended thinking", `{"model":"claude-opus-4-20250514","thinking":{"type":"enabled","budget_tokens":16000},"messages":[
	  {"role":"user","content":"Are there an infinite number of prime numbers such that n mod 4 == 3?"},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"This is a nice number theory question. Let's think about it step by step...","signature":"EuYBCkQYAiJAgCs1le6/Pol5Z4/JMomVOouGrWdhYNsH3ukzUECbB6iWrSQtsQuRHJID6lWV..."},
	    {"type":"text","text":"Yes, there are infinitely many prime numbers p such that p mod 4 = 3..."}]},
	  {"role":"user","content":"Can you write a formal proof?"}]}`, 88},
}

// TestCountDocumentedExamples measures the estimate against Anthropic's
// documented counts: never below them, and not far above.
func TestCountDocumentedExamples(t *testing.T) {
	var tc TokenCounter
	for _, ex := range documented {
		var req MessagesRequest
		require.NoError(t, json.Unmarshal([]byte(ex.body), &req), ex.name)
		got, err := tc.Count(context.Background(), &req)
		require.NoError(t, err)
		t.Logf("%s: estimate %d, Anthropic %d (%.2fx)", ex.name, got, ex.count, float64(got)/float64(ex.count))
		assert.GreaterOrEqual(t, got, ex.count, "%s: the estimate errs on the high side", ex.name)
		assert.LessOrEqual(t, float64(got), 1.2*float64(ex.count), "%s: but not by much", ex.name)
	}
}

func TestCountParts(t *testing.T) {
	var tc TokenCounter
	count := func(body string) int {
		t.Helper()
		var req MessagesRequest
		require.NoError(t, json.Unmarshal([]byte(body), &req))
		n, err := tc.Count(context.Background(), &req)
		require.NoError(t, err)
		return n
	}
	base := count(`{"messages":[{"role":"user","content":"hi"}]}`)
	long := count(`{"messages":[{"role":"user","content":"hi, and a much longer question about the weather in several cities of the world"}]}`)
	assert.Greater(t, long, base+10, "text counts")
	withSystem := count(`{"system":[{"type":"text","text":"You are a careful coding agent working in a large repository."}],"messages":[{"role":"user","content":"hi"}]}`)
	assert.Greater(t, withSystem, base+10, "system blocks count")
	image := count(`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"hi"}]}]}`)
	assert.Equal(t, base+imageTokens, image, "an image counts as a fixed estimate, not by its base64")
	call := count(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"src/main.go"}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"package main\n\nfunc main() {}\n"}]}]}]}`)
	assert.Greater(t, call, base+2*messageOverhead+10, "tool calls and results count")
	thinking := count(`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"a very long line of earlier reasoning that Anthropic does not count","signature":"s"}]}]}`)
	assert.Greater(t, thinking, base+messageOverhead+10, "earlier thinking counts, to err on the high side")
}

// benchCount measures counting body once the ranks are loaded.
func benchCount(b *testing.B, body []byte) {
	var req MessagesRequest
	require.NoError(b, json.Unmarshal(body, &req))
	var tc TokenCounter
	_, err := tc.BPETokens(context.Background(), "") // the ranks load once, outside the measure
	require.NoError(b, err)
	for b.Loop() {
		if _, err := tc.Count(context.Background(), &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCount counts the documented example with a tool.
func TestCountConcurrentAndCancelled(t *testing.T) {
	var tc TokenCounter
	var req MessagesRequest
	require.NoError(t, json.Unmarshal([]byte(documented[1].body), &req))
	want, err := tc.Count(context.Background(), &req)
	require.NoError(t, err)
	done := make(chan int)
	for range 4 {
		go func() {
			n, _ := tc.Count(context.Background(), &req)
			done <- n
		}()
	}
	for range 4 {
		assert.Equal(t, want, <-done, "one counter serves concurrent requests")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tc.Count(ctx, &req)
	assert.ErrorIs(t, err, context.Canceled)
}

func BenchmarkCount(b *testing.B) { benchCount(b, []byte(documented[1].body)) }

// BenchmarkCountClaudeCode counts a Claude Code-shaped request of about
// 12K tokens (handlers/testdata).
func BenchmarkCountClaudeCode(b *testing.B) {
	raw, err := os.ReadFile("../testdata/claude_code_tool_rounds.json")
	require.NoError(b, err)
	benchCount(b, raw)
}

// TestCL100KRanksAreThePublishedOnes rebuilds OpenAI's published
// cl100k_base.tiktoken text from the packed ranks and compares its SHA-256
// with the published file's, so a packing that lost, reordered or changed
// any token fails here.
func TestCL100KRanksAreThePublishedOnes(t *testing.T) {
	ranks, err := cl100kRanks()
	require.NoError(t, err)
	require.Len(t, ranks, 100256, "every token has its own rank")
	byRank := make([]string, len(ranks))
	for tok, r := range ranks {
		byRank[r] = tok
	}
	h := sha256.New()
	for r, tok := range byRank {
		fmt.Fprintf(h, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), r)
	}
	assert.Equal(t, "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", hex.EncodeToString(h.Sum(nil)))
}

// TestEncodesAsCL100K compares token ids with those tiktoken-go gives
// with the published cl100k_base file (through tiktoken-go-loader, which
// the gateway used before it packed the ranks itself).
func TestEncodesAsCL100K(t *testing.T) {
	var tc TokenCounter
	enc, err := tc.load()
	require.NoError(t, err)
	for _, tt := range []struct {
		text string
		want []int
	}{
		{"hello world", []int{15339, 1917}},
		{"tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
		{"  leading spaces\n\n\nx", []int{220, 6522, 12908, 1432, 87}},
		{"日本語のテキスト", []int{9080, 22656, 45918, 252, 16144, 57933, 62903, 71634}},
		{"func main() {\n\tfmt.Println(\"hi\")\n}", []int{2900, 1925, 368, 341, 11254, 12701, 446, 6151, 1158, 92}},
		{"I'll say: it's 12345 tokens!!", []int{40, 3358, 2019, 25, 433, 596, 220, 4513, 1774, 11460, 3001}},
	} {
		assert.Equal(t, tt.want, enc.EncodeOrdinary(tt.text), "%q", tt.text)
		n, err := tc.BPETokens(context.Background(), tt.text)
		require.NoError(t, err)
		assert.Equal(t, len(tt.want), n, "%q", tt.text)
	}
}

// longWord is n bytes of letters with no space: one piece of the
// pre-tokenizer, the worst case of a BPE whose merges cost the square of
// a piece's length.
func longWord(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return string(b)
}

// BenchmarkCountLongWord counts one word of 16 KB, 64 KB and 1 MB: the
// time per byte must stay about the same (BENCHMARKS.md).
func BenchmarkCountLongWord(b *testing.B) {
	for _, n := range []int{16 << 10, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKB", n>>10), func(b *testing.B) {
			body, err := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": longWord(n)}}})
			require.NoError(b, err)
			b.SetBytes(int64(n))
			benchCount(b, body)
		})
	}
}

// TestCountAsTiktoken: on ordinary text (a Claude Code request of some
// 12K tokens), the counter's own loop counts exactly what tiktoken-go's
// encoder does.
func TestCountAsTiktoken(t *testing.T) {
	raw, err := os.ReadFile("../testdata/claude_code_tool_rounds.json")
	require.NoError(t, err)
	var tc TokenCounter
	enc, err := tc.load()
	require.NoError(t, err)
	for _, text := range []string{string(raw), "a " + strings.Repeat("=", 100) + " b", strings.Repeat("x", maxPiece) + " " + strings.Repeat("é", maxPiece/2)} {
		n, err := tc.BPETokens(context.Background(), text)
		require.NoError(t, err)
		assert.Equal(t, len(enc.EncodeOrdinary(text)), n)
	}
}

// TestCountLongWord: one word of a megabyte is counted in linear time
// (it took hours: BenchmarkCountLongWord), close to what a BPE of it
// gives, and the count stops when the request ends.
func TestCountLongWord(t *testing.T) {
	var tc TokenCounter
	word := longWord(1 << 20)
	n, err := tc.BPETokens(context.Background(), word)
	require.NoError(t, err)
	sample, err := tc.BPETokens(context.Background(), word[:4096])
	require.NoError(t, err)
	perByte := float64(sample) / 4096
	assert.InDelta(t, perByte*float64(len(word)), float64(n), 0.1*float64(n), "about as many tokens a byte as a BPE of a part of it")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tc.BPETokens(ctx, word)
	assert.ErrorIs(t, err, context.Canceled)
	var req MessagesRequest
	require.NoError(t, json.Unmarshal([]byte(`{"messages":[{"role":"user","content":"`+word+`"}]}`), &req))
	_, err = tc.Count(ctx, &req)
	assert.ErrorIs(t, err, context.Canceled)
}
