package openai

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestContentDecoding(t *testing.T) {
	cases := []struct {
		name, in string
		text     string
		nonText  []string
		images   []ImagePart
	}{
		{"string", `"hello"`, "hello", nil, nil},
		{"null", `null`, "", nil, nil},
		{"empty string", `""`, "", nil, nil},
		{"escapes", `"a\"b\\c\n\u00e9\ud83d\ude00"`, "a\"b\\c\né😀", nil, nil},
		{"unicode without escapes", `"héllo 😀"`, "héllo 😀", nil, nil},
		{"invalid UTF-8 is replaced", "\"a\xffb\"", "a\ufffdb", nil, nil},
		{"parts", `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]`, "a\nb", nil, []ImagePart{{1, "image_url", "x", 1}}},
		{"image_url as a string, and input_image", `[{"type":"image_url","image_url":"data:a"},{"type":"input_image","image_url":"data:b","detail":"low"}]`, "", nil, []ImagePart{{0, "image_url", "data:a", 0}, {1, "input_image", "data:b", 0}}},
		{"image parts without a URL", `[{"type":"input_image","file_id":"file-1"},{"type":"image_url","image_url":{"detail":"low"}}]`, "", []string{"input_image", "image_url"}, nil},
		{"bare strings in the array", `["a", "b"]`, "a\nb", nil, nil},
		{"single part object", `{"type":"text","text":"solo"}`, "solo", nil, nil},
		{"input_text part", `[{"type":"input_text","text":"x"}]`, "x", nil, nil},
		{"file part", `[{"type":"file","file":{"file_id":"f"}}]`, "", []string{"file"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c Content
			require.NoError(t, json.Unmarshal([]byte(tc.in), &c))
			assert.Equal(t, tc.text, c.Text)
			assert.Equal(t, tc.nonText, c.NonText)
			assert.Equal(t, tc.images, c.Images)
		})
	}
	for _, bad := range []string{`42`, `true`, `[42]`} {
		var c Content
		assert.Error(t, json.Unmarshal([]byte(bad), &c), bad)
	}
}

func TestFunctionCallArguments(t *testing.T) {
	var tc ToolCall
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`), &tc))
	assert.Equal(t, `{"a":1}`, tc.Function.Arguments)
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","function":{"name":"f","arguments":{"a":1}}}`), &tc))
	assert.Equal(t, `{"a":1}`, tc.Function.Arguments, "an object is taken as the JSON text")
	require.NoError(t, json.Unmarshal([]byte(`{"id":"c","function":{"name":"f","arguments":null}}`), &tc))
	assert.Equal(t, "", tc.Function.Arguments)
}

func TestErrorBody(t *testing.T) {
	b, err := json.Marshal(ErrorBodyOf(models.InvalidRequest("tools[0].type", "bad %s", "type")))
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"bad type","type":"invalid_request_error","param":"tools[0].type","code":null}}`, string(b))
}

// TestContentPartsReadAsTheGeneralReading proves, on random arrays of odd
// parts (key case, escapes, duplicates, extra fields), that the one-pass
// reading gives the general reading's result or leaves content untouched.
func TestContentPartsReadAsTheGeneralReading(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	texts := []string{`""`, `"plain"`, `"a\nb \"q\" \u00e9 \ud83d\ude00"`, "\"bad \xff\"", `"\ud800"`}
	values := append([]string{`null`, `1`, `true`, `{}`, `[]`, `{"x":"text"}`}, texts...)
	types := []string{`"text"`, `"input_text"`, `"output_text"`, `"image_url"`, `"input_image"`, `""`, `"TEXT"`}
	keys := []string{`"type"`, `"text"`, `"Type"`, `"TEXT"`, `"t\u0065xt"`, `"image_url"`, `"Image_URL"`, `"cache_control"`}
	urls := []string{`"data:image/png;base64,iVBORw0KGgo="`, `"data:image\/gif;base64,R0lG"`, `"https://example.com/a.png"`, `""`, "\"bad \xff\""}
	imageURL := func() string {
		switch r.IntN(5) {
		case 0, 1:
			return urls[r.IntN(len(urls))]
		case 2:
			return values[r.IntN(len(values))]
		}
		var fields []string
		for range r.IntN(3) {
			k := []string{`"url"`, `"url"`, `"URL"`, `"detail"`, `"u\u0072l"`}[r.IntN(5)]
			v := urls[r.IntN(len(urls))]
			if r.IntN(5) == 0 {
				v = values[r.IntN(len(values))]
			}
			fields = append(fields, k+":"+v)
		}
		return "{" + strings.Join(fields, ",") + "}"
	}
	part := func() string {
		switch r.IntN(7) {
		case 0:
			return texts[r.IntN(len(texts))]
		case 1:
			return values[r.IntN(len(values))]
		case 2: // an image part as clients send it, its image_url of any shape
			return `{"type":` + []string{`"image_url"`, `"input_image"`}[r.IntN(2)] + `,"image_url":` + imageURL() + `,"detail":"auto"}`
		default:
			var fields []string
			for range r.IntN(4) {
				k := keys[r.IntN(len(keys))]
				var v string
				switch {
				case r.IntN(6) == 0:
					v = values[r.IntN(len(values))]
				case k == `"type"` || k == `"Type"`:
					v = types[r.IntN(len(types))]
				case k == `"image_url"` || k == `"Image_URL"`:
					v = imageURL()
				default:
					v = texts[r.IntN(len(texts))]
				}
				fields = append(fields, k+":"+v)
			}
			return "{" + strings.Join(fields, ",") + "}"
		}
	}
	took, images := 0, 0
	for range 20000 {
		ps := make([]string, r.IntN(5))
		for i := range ps {
			ps[i] = part()
		}
		data := []byte("[" + strings.Join(ps, ",") + "]")
		if !json.Valid(data) {
			continue
		}
		var general Content
		generalErr := general.parts(data)
		fast := Content{Text: "left as it was"}
		if !fast.partsOfPlainShape(data) {
			assert.Equal(t, Content{Text: "left as it was"}, fast, "%s", data)
			continue
		}
		took++
		require.NoError(t, generalErr, "the one-pass reading took what the general one refuses: %s", data)
		require.Equal(t, general, fast, "%s", data)
		images += len(fast.Images)
	}
	assert.Greater(t, took, 5000, "the one-pass reading is exercised")
	assert.Greater(t, images, 100, "the one-pass reading of images is exercised")
}
