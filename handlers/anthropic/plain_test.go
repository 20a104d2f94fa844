package anthropic

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refContent and refBlock are the reading of content by encoding/json
// alone: the reference Content.UnmarshalJSON is held to.
type refContent []refBlock

func (c *refContent) UnmarshalJSON(data []byte) error {
	*c = nil
	switch {
	case string(data) == "null":
		return nil
	case data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = refContent{{Type: "text", Text: s}}
		return nil
	case data[0] == '[':
		var blocks []refBlock
		if err := json.Unmarshal(data, &blocks); err != nil {
			return err
		}
		*c = blocks
		return nil
	case data[0] == '{':
		var b refBlock
		if err := json.Unmarshal(data, &b); err != nil {
			return err
		}
		*c = refContent{b}
		return nil
	}
	return json.Unmarshal(data, new(string)) // an error, as Content's
}

type refBlock struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`
	Content    refContent      `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Thinking   string          `json:"thinking,omitempty"`
	Signature  string          `json:"signature,omitempty"`
	Data       string          `json:"data,omitempty"`
	ServerName string          `json:"server_name,omitempty"`
	Source     *refSource      `json:"source,omitempty"`
}

type refSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

func (c refContent) content() Content {
	if c == nil {
		return nil
	}
	out := Content{}
	for _, b := range c {
		var src *Source
		if b.Source != nil {
			src = &Source{Type: b.Source.Type, MediaType: b.Source.MediaType, Data: b.Source.Data, URL: b.Source.URL, FileID: b.Source.FileID}
		}
		out = append(out, Block{Source: src, Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input, ToolUseID: b.ToolUseID,
			Content: b.Content.content(), IsError: b.IsError, Thinking: b.Thinking, Signature: b.Signature, Data: b.Data, ServerName: b.ServerName})
	}
	return out
}

// TestContentReadsAsEncodingJSON proves, on random arrays of odd blocks
// (wrong types, key case, escapes, repeats, unknown fields, nested content),
// that Content takes and reads the same arrays as encoding/json.
func TestContentReadsAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	strs := []string{`""`, `"plain"`, `"a\nb \"q\" \u00e9 \ud83d\ude00"`, "\"bad \xff\"", `"\ud800"`}
	others := []string{`null`, `1`, `true`, `false`, `{}`, `[]`, `{"a":[1,"x"]}`}
	blockFields := []string{"type", "text", "id", "name", "input", "tool_use_id", "content", "is_error", "thinking", "signature", "data", "server_name", "source"}
	keys := append(blockFields, "Text", "TYPE", "cache_control", "citations", "t\\u0065xt", "Is_Error")
	var block func(depth int) string
	block = func(depth int) string {
		if r.IntN(12) == 0 {
			return append(strs, others...)[r.IntN(len(strs)+len(others))] // not a block
		}
		var fields []string
		for range r.IntN(5) {
			k := keys[r.IntN(len(keys))]
			var v string
			switch {
			case r.IntN(8) == 0:
				v = append(strs, others...)[r.IntN(len(strs)+len(others))]
			case strings.EqualFold(k, "is_error"):
				v = []string{"true", "false"}[r.IntN(2)]
			case k == "source":
				v = []string{`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`, `{"type":"url","url":"https://x/a.png"}`, `{"type":"file","file_id":"file_1"}`,
					`{"type":"base64","Media_Type":"image/gif","data":"R0lG","data":"R0lGOD"}`, `{"type":"base64","media_type":"image/png","data":"a\/b"}`, `{}`}[r.IntN(6)]
			case k == "input":
				v = []string{`{"path":"a.go"}`, `{}`, `"s"`, `[1, 2]`}[r.IntN(4)]
			case k == "content" && depth < 2:
				switch r.IntN(3) {
				case 0:
					v = strs[r.IntN(len(strs))]
				case 1:
					var inner []string
					for range r.IntN(3) {
						inner = append(inner, block(depth+1))
					}
					v = "[" + strings.Join(inner, ",") + "]"
				default:
					v = block(depth + 1)
				}
			default:
				v = strs[r.IntN(len(strs))]
			}
			fields = append(fields, `"`+k+`":`+v)
		}
		return "{" + strings.Join(fields, ",") + "}"
	}
	took := 0
	for range 20000 {
		bs := make([]string, r.IntN(4))
		for i := range bs {
			bs[i] = block(0)
		}
		data := "[" + strings.Join(bs, ",") + "]"
		if !json.Valid([]byte(data)) {
			continue
		}
		var fast Content
		fastErr := json.Unmarshal([]byte(data), &fast)
		var ref refContent
		refErr := json.Unmarshal([]byte(data), &ref)
		require.Equal(t, refErr == nil, fastErr == nil, "%s: Content says %v, encoding/json %v", data, fastErr, refErr)
		if fastErr != nil {
			continue
		}
		took++
		require.Equal(t, ref.content(), fast, "%s", data)
	}
	assert.Greater(t, took, 3000, "arrays both readings take are exercised")
}
