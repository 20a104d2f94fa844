// Package openai is the OpenAI chat-completions door: its wire types, the
// conversion of a request into a models.Request (ToRequest), and the
// answer and errors in OpenAI's shape, streamed (StreamWriter) or whole.
//
// Requests decode leniently: content may be a string, parts or null, and
// fields the gateway does not use are not declared, so extras never fail.
package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/utils"
)

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model             string          `json:"model"`
	Messages          []Message       `json:"messages"`
	Stream            bool            `json:"stream"`
	StreamOptions     *StreamOptions  `json:"stream_options,omitempty"`
	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// MaxCompletionTokens, or the older MaxTokens, bounds the answer.
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int `json:"max_tokens,omitempty"`
	// Stop is a string or an array of up to four strings: the answer's
	// text ends before the first of them.
	Stop json.RawMessage `json:"stop,omitempty"`
	// PromptCacheKey is the client's key of the conversation, kept raw so
	// that a value of another type is ignored rather than refused.
	PromptCacheKey json.RawMessage `json:"prompt_cache_key,omitempty"`
	// ResponseFormat is {"type":"text"}, {"type":"json_object"} or
	// {"type":"json_schema","json_schema":{"name":...,"schema":{...}}},
	// kept raw so that its errors name the field.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

// StreamOptions is the stream_options request field.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of the conversation history.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Content is a message's content: a plain string, an array of typed parts,
// or null. It is kept as the flattened text, the image parts' URLs, and
// the types of the other parts that carried no text (files, audio), which
// the prompt replaces with a marker.
type Content struct {
	Text string
	// Images are the image parts (chat's image_url, Responses'
	// input_image), in order; an input_image given by file_id is among
	// NonText.
	Images []ImagePart
	// NonText lists the type of every other part that was not text, in
	// order.
	NonText []string
}

// ImagePart is an image part: its index among the parts, its type, its
// URL (a data: URL carries the image itself), and At, where it falls in
// Text: after the text parts before it, which is how a door keeps the
// client's order of text and images.
type ImagePart struct {
	Part      int
	Type, URL string
	At        int
}

// joinedLen is the length of texts joined with "\n".
func joinedLen(n, sum int) int { return sum + max(n-1, 0) }

// imagePart reports whether a part of type typ is an image part.
func imagePart(typ string) bool { return typ == "image_url" || typ == "input_image" }

// imageURL reads an image part's image_url: a string (Responses, and some
// chat clients) or chat's {"url": ..., "detail": ...}; ok is false when
// there is none.
func imageURL(raw json.RawMessage) (url string, ok bool) {
	if json.Unmarshal(raw, &url) == nil {
		return url, url != ""
	}
	var obj struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.URL != "" {
		return obj.URL, true
	}
	return "", false
}

// UnmarshalJSON accepts a string, null, or an array of parts. Parts are
// objects with a "type"; text parts contribute their "text", others are
// recorded by type. A bare string inside the array is taken as text.
func (c *Content) UnmarshalJSON(data []byte) error {
	*c = Content{}
	return utils.DecodeTextOrArray(data, errContent,
		func(s string) error { c.Text = s; return nil },
		func(array []byte) error {
			if c.partsOfPlainShape(array) {
				return nil
			}
			return c.parts(array)
		})
}

var errContent = errors.New("content must be a string, an array of parts, or null")

// parts is the general reading of an array of parts.
func (c *Content) parts(data []byte) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return err
	}
	var texts []string
	sum := 0 // bytes of texts
	for i, raw := range parts {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			texts = append(texts, s)
			sum += len(s)
			continue
		}
		var p struct {
			Type     string          `json:"type"`
			Text     json.RawMessage `json:"text"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("content part must be an object or a string")
		}
		var text string
		if len(p.Text) > 0 && json.Unmarshal(p.Text, &text) == nil && (p.Type == "" || strings.Contains(p.Type, "text")) {
			texts = append(texts, text)
			sum += len(text)
			continue
		}
		if imagePart(p.Type) {
			if url, ok := imageURL(p.ImageURL); ok {
				c.Images = append(c.Images, ImagePart{Part: i, Type: p.Type, URL: url, At: joinedLen(len(texts), sum)})
				continue
			}
		}
		t := p.Type
		if t == "" {
			t = "unknown"
		}
		c.NonText = append(c.NonText, t)
	}
	c.Text = strings.Join(texts, "\n")
	return nil
}

// partsOfPlainShape reads an array of parts in one pass when every part has
// the plain shape agents send (strings, or objects with unescaped, unique
// lower-case keys); otherwise it reports false and leaves c to the general
// reading. Its result is the general reading's (a test holds it to that),
// but an image URL of megabytes is copied once, not four times.
func (c *Content) partsOfPlainShape(data []byte) bool {
	var texts, nonText []string
	var images []ImagePart
	ok := true
	i, sum := 0, 0
	gjson.ParseBytes(data).ForEach(func(_, part gjson.Result) bool {
		i++ // part i-1
		switch {
		case part.Type == gjson.String:
			text, good := utils.StringOf(part)
			if !good {
				ok = false
				return false
			}
			texts = append(texts, text)
			sum += len(text)
			return true
		case part.IsObject():
			typ, text, hasText, image, good := plainPart(part)
			if !good {
				ok = false
				return false
			}
			switch {
			case hasText && (typ == "" || strings.Contains(typ, "text")):
				texts = append(texts, text)
				sum += len(text)
				return true
			case imagePart(typ):
				url, good := plainImageURL(image)
				if !good {
					ok = false
					return false
				}
				if url != "" {
					images = append(images, ImagePart{Part: i - 1, Type: typ, URL: url, At: joinedLen(len(texts), sum)})
					return true
				}
			}
			if typ == "" {
				typ = "unknown"
			}
			nonText = append(nonText, typ)
			return true
		}
		ok = false // null, a number, a boolean, an array
		return false
	})
	if ok {
		*c = Content{Text: strings.Join(texts, "\n"), Images: images, NonText: nonText}
	}
	return ok
}

// plainPart reads a part object's "type" and "text" when they have the
// plain shape (see partsOfPlainShape), and finds its "image_url"; good is
// false otherwise.
func plainPart(part gjson.Result) (typ, text string, hasText bool, image gjson.Result, good bool) {
	good = true
	var seen uint64
	part.ForEach(func(key, value gjson.Result) bool {
		field, ok := utils.PlainField(key, partFields, &seen)
		if !ok {
			good = false
			return false
		}
		if field < 0 {
			return true // a field the general reading skips too
		}
		if field == 2 {
			image = value // read for an image part only, as the general reading reads it
			return true
		}
		s, ok := utils.StringOf(value)
		switch {
		case !ok:
			good = false // not a string
			return false
		case field == 0:
			typ = s
		default:
			text, hasText = s, true
		}
		return true
	})
	return typ, text, hasText, image, good
}

// plainImageURL reads an image part's image_url (v, gjson's zero Result
// when absent) as imageURL does, when it has the plain shape: a string,
// or an object whose "url", if there, is one; good is false otherwise.
func plainImageURL(v gjson.Result) (url string, good bool) {
	switch {
	case !v.Exists():
		return "", true
	case v.Type == gjson.String:
		return utils.StringOf(v)
	case !v.IsObject():
		return "", false
	}
	good = true
	var seen uint64
	v.ForEach(func(key, value gjson.Result) bool {
		field, ok := utils.PlainField(key, imageURLFields, &seen)
		switch {
		case !ok:
			good = false
		case field == 0:
			url, good = utils.StringOf(value)
		}
		return good
	})
	return url, good
}

// partFields and imageURLFields are a part's and an image_url object's
// fields as the general reading declares them.
var (
	partFields     = []string{"type", "text", "image_url"}
	imageURLFields = []string{"url"}
)

// MarshalJSON writes the text as a plain string.
func (c Content) MarshalJSON() ([]byte, error) { return json.Marshal(c.Text) }

// Tool is one entry of the request's tools array.
type Tool struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec describes a callable function.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is a function call made by the assistant, in history or in a
// response.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its JSON-encoded arguments.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// UnmarshalJSON accepts arguments as a JSON string (the OpenAI form) or as
// a raw JSON object, which some clients send back in history.
func (f *FunctionCall) UnmarshalJSON(data []byte) error {
	var raw struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	f.Name = raw.Name
	args := bytes.TrimSpace(raw.Arguments)
	switch {
	case len(args) == 0 || bytes.Equal(args, []byte("null")):
		f.Arguments = ""
	case args[0] == '"':
		return json.Unmarshal(args, &f.Arguments)
	default:
		f.Arguments = string(args)
	}
	return nil
}

// Usage is the token accounting of a completion. Zero details (a text back
// door reports none) are left out; OpenAI's SDKs declare them optional.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails is part of Usage: the part of the prompt read from
// the upstream's cache.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionTokensDetails is part of Usage: the part of the completion
// spent reasoning.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ChatCompletion is the non-streaming response.
type ChatCompletion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
}

// Choice is the single choice of a non-streaming response.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant message of a non-streaming response.
// Content is null when the turn holds only tool calls.
type ResponseMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent carries the thinking of -thinking models when
	// EXPOSE_THINKING is on (the field DeepSeek-style clients display).
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunk is one streamed event.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is the choice of a streamed chunk. FinishReason is null on
// every chunk but the last.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is the incremental part of a streamed chunk.
type Delta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ModelList is the response of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// Model is one entry of the model list.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelListOf lists the public model names.
func ModelListOf(names []string, created int64) ModelList {
	list := ModelList{Object: "list", Data: []Model{}}
	for _, name := range names {
		list.Data = append(list.Data, Model{ID: name, Object: "model", Created: created, OwnedBy: "cursor2api"})
	}
	return list
}
