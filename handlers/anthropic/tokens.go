package anthropic

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
)

// Claude's tokenizer is not published, so counts use cl100k_base (embedded,
// packed by scripts/mkcl100k), scaled, plus Anthropic's framing. The
// constants err high: a client that thinks its context smaller compacts too
// late. README.md "Token counting" has the measurements.
const (
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// tokenScale turns cl100k tokens into Claude tokens, rounded up.
	tokenScale = 1.3
	// requestOverhead is the framing of every request.
	requestOverhead = 2
	// messageOverhead is the framing of each message and of the system prompt.
	messageOverhead = 2
	// toolsOverhead is the tool-use system prompt Anthropic adds when a
	// request has tools (346 tokens for Claude 4 models, by its tool-use
	// documentation), rounded up.
	toolsOverhead = 350
	// mediaTokens stands for an image or a document, whose real cost
	// depends on its size and pages: an image of about a megapixel is
	// some 1,600 tokens, the most Anthropic charges for one without
	// resizing; a document gets twice that.
	imageTokens    = 1600
	documentTokens = 3200
)

// TokenCounter estimates the input tokens of a Messages request. Its BPE
// ranks are loaded on first use (a fraction of a second), once.
type TokenCounter struct {
	once  sync.Once
	enc   *tiktoken.Tiktoken // tiktoken-go's encoder, which the tests compare with
	ranks map[string]int
	split *regexp2.Regexp // the pre-tokenizer, cl100kPattern
	err   error
}

// maxPiece bounds the bytes one BPE merge works on: the merge is worse than
// quadratic (a 64 KB word took 53 s), so longer pieces, which ordinary text
// never has, are counted in chunks, off by a token or so per chunk.
const maxPiece = 128

// checkEvery is how many pieces are counted between looks at the context.
const checkEvery = 256

// cl100kPacked is cl100k_base's tokens in rank order, each a length byte
// and its bytes, gzipped: a quarter of the published file, without the 5 MB
// of other encodings tiktoken-go-loader would embed.
//
//go:embed cl100k_base.bin.gz
var cl100kPacked []byte

// cl100kRanks unpacks the embedded ranks: token bytes to rank.
func cl100kRanks() (map[string]int, error) {
	zr, err := gzip.NewReader(bytes.NewReader(cl100kPacked))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int, 100256)
	for len(raw) > 0 {
		n := int(raw[0])
		if n == 0 || len(raw) < 1+n {
			return nil, fmt.Errorf("token %d is cut short", len(ranks))
		}
		ranks[string(raw[1:1+n])] = len(ranks)
		raw = raw[1+n:]
	}
	return ranks, nil
}

func (tc *TokenCounter) load() (*tiktoken.Tiktoken, error) {
	tc.once.Do(func() {
		ranks, err := cl100kRanks()
		if err != nil {
			tc.err = fmt.Errorf("loading the embedded cl100k_base ranks: %w", err)
			return
		}
		bpe, err := tiktoken.NewCoreBPE(ranks, map[string]int{}, cl100kPattern)
		if err != nil {
			tc.err = fmt.Errorf("building the cl100k_base tokenizer: %w", err)
			return
		}
		tc.enc = tiktoken.NewTiktoken(bpe, &tiktoken.Encoding{Name: "cl100k_base", PatStr: cl100kPattern, MergeableRanks: ranks}, map[string]any{})
		tc.ranks = ranks
		tc.split = regexp2.MustCompile(cl100kPattern, regexp2.None)
	})
	return tc.enc, tc.err
}

// BPETokens is the cl100k_base token count of text; it stops with ctx's
// error when ctx ends.
func (tc *TokenCounter) BPETokens(ctx context.Context, text string) (int, error) {
	if _, err := tc.load(); err != nil {
		return 0, err
	}
	return tc.count(ctx, text)
}

// count is tiktoken's EncodeOrdinary, counting instead of encoding, with
// the long pieces chunked (maxPiece) and ctx looked at as it goes.
func (tc *TokenCounter) count(ctx context.Context, text string) (int, error) {
	if text == "" {
		return 0, ctx.Err()
	}
	m, err := tc.split.FindStringMatch(text)
	n := 0
	for i := 0; m != nil && err == nil; i++ {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		piece := m.String()
		for len(piece) > maxPiece {
			cut := maxPiece
			for cut > 1 && !utf8.RuneStart(piece[cut]) {
				cut--
			}
			n += tc.pieceTokens(piece[:cut])
			piece = piece[cut:]
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
		}
		n += tc.pieceTokens(piece)
		m, err = tc.split.FindNextMatch(m)
	}
	if err != nil {
		return 0, fmt.Errorf("splitting text into pieces: %w", err)
	}
	return n, ctx.Err()
}

// pieceTokens is the number of tokens of one piece: tiktoken's byte pair
// merge (lowest rank first, leftmost on a tie), counted.
func (tc *TokenCounter) pieceTokens(piece string) int {
	if _, ok := tc.ranks[piece]; ok || len(piece) < 2 {
		return min(len(piece), 1)
	}
	// starts[i] is where part i begins; rank[i] the rank of part i merged
	// with part i+1 (-1: no such token).
	var startBuf, rankBuf [maxPiece + 1]int
	starts, rank := startBuf[:len(piece)+1], rankBuf[:len(piece)+1]
	for i := range starts {
		starts[i] = i
	}
	pair := func(i int) int {
		if i+2 >= len(starts) {
			return -1
		}
		if r, ok := tc.ranks[piece[starts[i]:starts[i+2]]]; ok {
			return r
		}
		return -1
	}
	for i := range rank {
		rank[i] = pair(i)
	}
	for len(starts) > 2 {
		best := -1
		for i := 0; i < len(starts)-2; i++ {
			if rank[i] >= 0 && (best < 0 || rank[i] < rank[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		starts = append(starts[:best+1], starts[best+2:]...)
		rank = append(rank[:best+1], rank[best+2:]...)
		rank[best] = pair(best)
		if best > 0 {
			rank[best-1] = pair(best - 1)
		}
	}
	return len(starts) - 1
}

// Count estimates the input tokens of req as Anthropic would count them.
// Earlier thinking counts too: Anthropic says it does not, but its own
// example counts more than the rest explains, and high is the safe side.
// Count stops when ctx ends (12K tokens take some 8 ms).
func (tc *TokenCounter) Count(ctx context.Context, req *MessagesRequest) (int, error) {
	if _, err := tc.load(); err != nil {
		return 0, err
	}
	bpe := func(s string) int {
		if s == "" || ctx.Err() != nil {
			return 0
		}
		n, _ := tc.count(ctx, s) // ctx's error, returned below
		return n
	}
	text, fixed := 0, requestOverhead
	var content func(c Content)
	content = func(c Content) {
		for _, b := range c {
			switch b.Type {
			case "image":
				fixed += imageTokens
			case "document":
				fixed += documentTokens
			case "thinking":
				text += bpe(b.Thinking)
			case "redacted_thinking":
			case "tool_use":
				text += bpe(b.Name) + bpe(string(b.Input))
			case "tool_result":
				text += bpe(b.ToolUseID)
				content(b.Content)
			case "tool_reference":
				text += bpe(b.ToolName) // the tool it loads is in req.Tools
			default:
				text += bpe(b.Text)
			}
		}
	}
	if len(req.System) > 0 {
		fixed += messageOverhead
		content(req.System)
	}
	for _, m := range req.Messages {
		fixed += messageOverhead
		content(m.Content)
	}
	if len(req.Tools) > 0 {
		fixed += toolsOverhead
		for _, t := range req.Tools {
			schema, _ := json.Marshal(t.InputSchema)
			text += bpe(t.Name) + bpe(t.Description) + bpe(string(schema))
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return fixed + int(math.Ceil(float64(text)*tokenScale)), nil
}
