package jsondec_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cursor2api/handlers/anthropic"
	"cursor2api/handlers/gemini"
	"cursor2api/handlers/openai"
	"cursor2api/handlers/responses"
	"cursor2api/utils/jsondec"
)

// The types below hold every kind the package reads itself or leaves to
// encoding/json, beside the doors' wire types it is for.
type (
	inner struct {
		A string   `json:"a"`
		B *int     `json:"b,omitempty"`
		C []string `json:"c"`
	}
	embedded     struct{ E string }
	withEmbedded struct {
		embedded
		F string `json:"f"`
	}
	asString struct {
		N int    `json:"n,string"`
		S string `json:"s,string"`
	}
	skipOnly struct {
		Skipped string `json:"-"`
		Other   string
	}
	named  string
	folded struct {
		ID string `json:"id"`
		Id string `json:"Id"` // a name that folds together with ID's, on purpose
	}
	valueUnmarshaler struct{ got string }
	kitchen          struct {
		Name      string            `json:"name"`
		Named     named             `json:"named"`
		NoTag     string            // matched by its Go name
		Skipped   string            `json:"-"`
		Dash      string            `json:"-,"`
		unexp     string            // unexported: encoding/json ignores it
		Flag      bool              `json:"flag"`
		Count     *int              `json:"count"`
		Ratio     float64           `json:"ratio"`
		Inner     inner             `json:"inner"`
		InnerPtr  *inner            `json:"inner_ptr"`
		Inners    []inner           `json:"inners"`
		InnerPtrs []*inner          `json:"inner_ptrs"`
		Strings   []string          `json:"strings"`
		Nested    [][]string        `json:"nested"`
		Map       map[string]string `json:"map"`
		Any       any               `json:"any"`
		Raw       json.RawMessage   `json:"raw"`
		Number    json.Number       `json:"number"`
		Bytes     []byte            `json:"bytes"`
		Time      time.Time         `json:"time"`
		Embedded  withEmbedded      `json:"embedded"`
		AsString  asString          `json:"as_string"`
		Folded    folded            `json:"folded"`
		ValueU    valueUnmarshaler  `json:"value_u"`
		Content   openai.Content    `json:"content"`
	}
)

func (valueUnmarshaler) UnmarshalJSON([]byte) error { return nil }

// decodeBoth decodes b into a new T with jsondec and with encoding/json
// and fails unless both give the same value and the same error.
func decodeBoth[T any](t *testing.T, b []byte) {
	t.Helper()
	var fast, slow T
	errFast := jsondec.Unmarshal(b, &fast)
	errSlow := json.Unmarshal(b, &slow)
	if fmt.Sprint(errFast) != fmt.Sprint(errSlow) {
		t.Fatalf("%T from %.300q:\njsondec:       %v\nencoding/json: %v", fast, b, errFast, errSlow)
	}
	if !reflect.DeepEqual(fast, slow) {
		require.Equal(t, slow, fast, "%T from %.300q", fast, b)
	}
}

func TestUnmarshalCases(t *testing.T) {
	cases := []string{
		`{"name":"a","named":"b","NoTag":"c","flag":true,"count":3,"ratio":1.5}`,
		`{"name":"a\u00e9\ud83d\ude00\n\"","named":"\ud800 lone","flag":false}`,
		"{\"name\":\"invalid \xff utf-8\"}",
		`{"Name":"case"}`, `{"name":"a","name":"twice"}`, `{"na\u006de":"escaped key"}`, `{"notag":"folded go name"}`,
		`{"name":null}`, `{"name":1}`, `{"flag":"yes"}`, `{"count":1.5}`, `{"count":null}`,
		`{"inner":{"a":"x","b":2,"c":["p","q"]},"inner_ptr":{"a":"y"},"inners":[{"a":"1"},{"c":[]}],"inner_ptrs":[{"a":"z"},null]}`,
		`{"inners":[]}`, `{"inners":null}`, `{"inners":{}}`, `{"strings":["a",1]}`, `{"nested":[["a"],[],["b","c"]]}`,
		`{"map":{"k":"v","k2":"v2"}}`, `{"any":{"x":[1,"2",null,true]}}`, `{"raw": {"keep" : [1, 2]} }`,
		`{"number":"12"}`, `{"number":12.5}`, `{"number":"x"}`, `{"bytes":"aGk="}`, `{"time":"2026-01-02T03:04:05Z"}`,
		`{"embedded":{"E":"e","f":"f"}}`, `{"as_string":{"n":"5"}}`, `{"as_string":{"s":"\"quoted\""}}`,
		`{"folded":{"id":"1","Id":"2"}}`, `{"folded":{"Id":"2"}}`, `{"value_u":"x"}`,
		`{"-":"dash","Skipped":"no","unexp":"no"}`,
		`{"content":"hello"}`, `{"content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}`, `{"content":null}`, `{"content":5}`,
		` { "name" : "spaced" , "inner" : { "a" : "x" } } `, `{}`, `[]`, `null`, `"str"`, `{"name":"a"} x`, `{"name":"a",}`,
		`{"unknown":{"deep":[1,{"x":"}"}]},"name":"after"}`,
	}
	for _, c := range cases {
		decodeBoth[kitchen](t, []byte(c))
	}
	decodeBoth[skipOnly](t, []byte(`{"Skipped":"x","other":"y"}`))
	decodeBoth[skipOnly](t, []byte(`{"-":"x"}`))
}

func TestUnmarshalIntoNonZeroValueMerges(t *testing.T) {
	// The second body is one jsondec gives way on half-way (a field met
	// twice): what was there must be there still, as encoding/json leaves it.
	for _, body := range []string{`{"ratio":2}`, `{"ratio":2,"named":"a","named":"b"}`} {
		k := kitchen{Name: "kept", Flag: true}
		require.NoError(t, jsondec.Unmarshal([]byte(body), &k))
		require.Equal(t, "kept", k.Name, "encoding/json merges into what is there")
		require.True(t, k.Flag)
		require.Equal(t, 2.0, k.Ratio)
	}
}

// TestUnmarshalMatchesEncodingJSON decodes random bodies, built from each
// type's own fields and then disturbed in every way encoding/json's rules
// care about, into the doors' request types and the kitchen type, and
// compares with encoding/json.
func TestUnmarshalMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 4000
	if testing.Short() {
		n = 500
	}
	for range n {
		decodeBoth[kitchen](t, gen(r, reflect.TypeFor[kitchen](), 0))
		decodeBoth[openai.ChatRequest](t, gen(r, reflect.TypeFor[openai.ChatRequest](), 0))
		decodeBoth[anthropic.MessagesRequest](t, gen(r, reflect.TypeFor[anthropic.MessagesRequest](), 0))
		decodeBoth[responses.Request](t, gen(r, reflect.TypeFor[responses.Request](), 0))
		decodeBoth[gemini.GenerateContentRequest](t, gen(r, reflect.TypeFor[gemini.GenerateContentRequest](), 0))
		decodeBoth[gemini.CountTokensRequest](t, gen(r, reflect.TypeFor[gemini.CountTokensRequest](), 0))
		// What the doors decode on their own: Responses' input items
		// and tools, Messages' blocks.
		decodeBoth[responses.InputItem](t, gen(r, reflect.TypeFor[responses.InputItem](), 0))
		decodeBoth[responses.Tool](t, gen(r, reflect.TypeFor[responses.Tool](), 0))
		decodeBoth[[]anthropic.Block](t, gen(r, reflect.TypeFor[[]anthropic.Block](), 0))
	}
}

// TestUnmarshalRecordedRequests decodes what real clients sent (the
// recorded agent turns, the fuzz corpus) and key-level variants of it.
func TestUnmarshalRecordedRequests(t *testing.T) {
	files, err := filepath.Glob("../../handlers/testdata/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	r := rand.New(rand.NewPCG(5, 6))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, v := range append([][]byte{b}, variants(r, b, 30)...) {
			decodeBoth[openai.ChatRequest](t, v)
			decodeBoth[anthropic.MessagesRequest](t, v)
			decodeBoth[responses.Request](t, v)
			decodeBoth[gemini.GenerateContentRequest](t, v)
		}
	}
}

// variants rewrites n random keys or values of b: another case, an
// escape, a null, a number.
func variants(r *rand.Rand, b []byte, n int) [][]byte {
	var out [][]byte
	s := string(b)
	keys := []string{`"role"`, `"content"`, `"type"`, `"text"`, `"model"`, `"messages"`, `"input"`, `"tools"`, `"system"`, `"name"`, `"stream"`}
	for range n {
		k := keys[r.IntN(len(keys))]
		var repl string
		switch r.IntN(4) {
		case 0:
			repl = strings.ToUpper(k)
		case 1:
			repl = `"\u00` + fmt.Sprintf("%x", k[1]) + k[2:]
		case 2:
			repl = k + `:null,` + k
		case 3:
			repl = k + `:1,` + k
		}
		i := strings.Index(s[r.IntN(len(s)):], k)
		if i < 0 {
			continue
		}
		at := strings.Index(s, s[i:]) // the first occurrence from the random start
		out = append(out, []byte(s[:at]+repl+s[at+len(k):]))
	}
	return out
}

// gen writes a random JSON text for a value of type t: mostly what t
// takes, sometimes another kind, with keys in other cases, escaped,
// repeated or unknown, and random white space.
func gen(r *rand.Rand, t reflect.Type, depth int) []byte {
	var b strings.Builder
	genValue(r, &b, t, depth)
	return []byte(b.String())
}

func ws(r *rand.Rand, b *strings.Builder) {
	if r.IntN(8) == 0 {
		b.WriteString([]string{" ", "\n", "\t ", "\r\n  "}[r.IntN(4)])
	}
}

var strs = []string{`""`, `"plain"`, `"with \"quotes\" and \\ and \n"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800 lone"`, "\"raw \xff\xfe\"", `"\/slash"`, `"text"`, `"user"`, `"tool_use"`, `"input_text"`}

func genAny(r *rand.Rand, b *strings.Builder, depth int) {
	switch k := r.IntN(7); {
	case k == 0 || depth > 3:
		b.WriteString([]string{`null`, `true`, `false`, `0`, `-1.5e3`, `12`}[r.IntN(6)])
	case k == 1:
		b.WriteString(strs[r.IntN(len(strs))])
	case k == 2:
		b.WriteString("[")
		for i := range r.IntN(3) {
			if i > 0 {
				b.WriteString(",")
			}
			genAny(r, b, depth+1)
		}
		b.WriteString("]")
	default:
		b.WriteString("{")
		for i := range r.IntN(3) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString([]string{`"type"`, `"text"`, `"x"`, `"content"`}[r.IntN(4)] + ":")
			genAny(r, b, depth+1)
		}
		b.WriteString("}")
	}
}

func genValue(r *rand.Rand, b *strings.Builder, t reflect.Type, depth int) {
	ws(r, b)
	defer ws(r, b)
	if r.IntN(25) == 0 || depth > 6 {
		genAny(r, b, depth) // another kind, or null
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[json.RawMessage](), reflect.TypeFor[any]():
		genAny(r, b, depth)
		return
	case reflect.TypeFor[json.Number]():
		b.WriteString([]string{`1`, `"2"`, `-3.5`, `"x"`}[r.IntN(4)])
		return
	}
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) && r.IntN(2) == 0 {
		genAny(r, b, depth) // a type of its own reading: strings, arrays of parts
		return
	}
	switch t.Kind() {
	case reflect.String:
		b.WriteString(strs[r.IntN(len(strs))])
	case reflect.Bool:
		b.WriteString([]string{`true`, `false`}[r.IntN(2)])
	case reflect.Int, reflect.Int64, reflect.Int32:
		b.WriteString([]string{`0`, `7`, `-2`, `1.5`, `1e2`}[r.IntN(5)])
	case reflect.Float64, reflect.Float32:
		b.WriteString([]string{`0`, `0.5`, `-2e-3`, `3`}[r.IntN(4)])
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			b.WriteString([]string{`"aGk="`, `"!"`}[r.IntN(2)])
			return
		}
		b.WriteString("[")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(",")
			}
			genValue(r, b, t.Elem(), depth+1)
		}
		b.WriteString("]")
	case reflect.Map:
		b.WriteString("{")
		for i := range r.IntN(3) {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(b, `"k%d":`, r.IntN(3))
			genValue(r, b, t.Elem(), depth+1)
		}
		b.WriteString("}")
	case reflect.Struct:
		b.WriteString("{")
		n := 0
		member := func(key string, elem reflect.Type) {
			if n > 0 {
				b.WriteString(",")
			}
			n++
			ws(r, b)
			b.WriteString(key)
			ws(r, b)
			b.WriteString(":")
			genValue(r, b, elem, depth+1)
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if name == "-" || r.IntN(3) == 0 {
				continue
			}
			key := `"` + name + `"`
			switch r.IntN(30) {
			case 0:
				key = `"` + strings.ToUpper(name) + `"`
			case 1:
				key = fmt.Sprintf(`"\u%04x%s"`, name[0], name[1:])
			case 2:
				member(key, f.Type) // twice
			case 3:
				member(`"unknown_`+name+`"`, f.Type)
			}
			member(key, f.Type)
		}
		b.WriteString("}")
	default:
		genAny(r, b, depth)
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	body, err := os.ReadFile("../../handlers/testdata/claude_code_tool_rounds.json")
	require.NoError(b, err)
	b.Run("jsondec", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var r anthropic.MessagesRequest
			if err := jsondec.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var r anthropic.MessagesRequest
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type tree struct {
	Name string `json:"name"`
	Kids []tree `json:"kids"`
	Next *tree  `json:"next"`
}

func TestUnmarshalRecursiveType(t *testing.T) {
	for _, b := range []string{
		`{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]},{"name":"d","next":{"name":"e"}}]}`,
		`{"name":"a","next":{"name":"b","next":{"name":"c","kids":[]}}}`,
		`{"name":"a","kids":[{"Name":"b","name":"twice"}]}`,
	} {
		decodeBoth[tree](t, []byte(b))
	}
}

// firstUse is decoded nowhere else: its plan is worked out by the
// goroutines of TestUnmarshalFirstUseConcurrently, all at once.
type firstUse struct {
	A string     `json:"a"`
	B []firstUse `json:"b"`
	C *inner     `json:"c"`
}

// TestUnmarshalFirstUseConcurrently: the first decodes of a type, at
// once, each see its plan whole (under -race, a plan read while another
// goroutine fills it is a race).
func TestUnmarshalFirstUseConcurrently(t *testing.T) {
	body := []byte(`{"a":"x","b":[{"a":"y"}],"c":{"a":"z","c":["w"]}}`)
	var want firstUse
	require.NoError(t, json.Unmarshal(body, &want))
	start := make(chan struct{})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			<-start
			var got firstUse
			err := jsondec.Unmarshal(body, &got)
			if err == nil && !reflect.DeepEqual(got, want) {
				err = fmt.Errorf("got %#v, want %#v", got, want)
			}
			errs <- err
		}()
	}
	close(start)
	for range 8 {
		require.NoError(t, <-errs)
	}
}
