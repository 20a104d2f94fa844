package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// claudeEvent is one event of a Messages stream.
type claudeEvent struct {
	Name string
	Data gjson.Result
}

// claudeEvents checks the byte framing of a Messages stream, every event
// exactly "event: <name>\ndata: <one line of JSON>\n\n" with the name
// repeated as the data's type, and returns the events, pings left out.
func claudeEvents(t *testing.T, r reply) []claudeEvent {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "text/event-stream", strings.TrimSpace(strings.Split(r.header.Get("Content-Type"), ";")[0]))
	var out []claudeEvent
	rest := r.body
	for rest != "" {
		end := strings.Index(rest, "\n\n")
		require.GreaterOrEqual(t, end, 0, "an event ends with a blank line: %q", rest)
		lines := strings.Split(rest[:end], "\n")
		rest = rest[end+2:]
		require.Len(t, lines, 2, "an event is two lines: %q", lines)
		name, ok := strings.CutPrefix(lines[0], "event: ")
		require.True(t, ok, "a named event: %q", lines[0])
		data, ok := strings.CutPrefix(lines[1], "data: ")
		require.True(t, ok, "then its data: %q", lines[1])
		require.True(t, json.Valid([]byte(data)), data)
		d := gjson.Parse(data)
		require.Equal(t, name, d.Get("type").String(), "the data's type repeats the event name")
		if name == "ping" {
			continue
		}
		out = append(out, claudeEvent{Name: name, Data: d})
	}
	return out
}

// trace renders events compactly, checking the exact fields of each:
// "start" for message_start, "+text@0" for a block start, "text@0" for a
// delta, "-@0" for a block stop, "delta tool_use" for message_delta,
// "stop" for message_stop and "error" for an error event.
func trace(t *testing.T, events []claudeEvent, model string) []string {
	t.Helper()
	var out []string
	var id string
	for _, ev := range events {
		d := ev.Data
		switch ev.Name {
		case "message_start":
			assert.Equal(t, []string{"message", "type"}, keys(t, d))
			m := d.Get("message")
			assert.Equal(t, []string{"content", "id", "model", "role", "stop_reason", "stop_sequence", "type", "usage"}, keys(t, m))
			id = m.Get("id").String()
			assert.Regexp(t, `^msg_[A-Za-z0-9]+$`, id)
			assert.Equal(t, "message", m.Get("type").String())
			assert.Equal(t, "assistant", m.Get("role").String())
			assert.Equal(t, model, m.Get("model").String())
			assert.Equal(t, "[]", m.Get("content").Raw)
			assert.Equal(t, "null", m.Get("stop_reason").Raw)
			assert.Equal(t, "null", m.Get("stop_sequence").Raw)
			assert.Equal(t, []string{"cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens", "output_tokens"}, keys(t, m.Get("usage")))
			assert.Positive(t, m.Get("usage.input_tokens").Int(), "an estimate of the input")
			out = append(out, "start")
		case "content_block_start":
			assert.Equal(t, []string{"content_block", "index", "type"}, keys(t, d))
			b := d.Get("content_block")
			typ := b.Get("type").String()
			switch typ {
			case "text":
				assert.Equal(t, `{"text":"","type":"text"}`, b.Raw)
			case "thinking":
				assert.Equal(t, `{"signature":"","thinking":"","type":"thinking"}`, b.Raw)
			case "tool_use":
				assert.Equal(t, []string{"id", "input", "name", "type"}, keys(t, b))
				assert.Regexp(t, `^toolu_[A-Za-z0-9]+$`, b.Get("id").String())
				assert.Equal(t, "{}", b.Get("input").Raw, "the input starts empty")
				typ += ":" + b.Get("name").String()
			default:
				t.Errorf("block type %q", typ)
			}
			out = append(out, fmt.Sprintf("+%s@%d", typ, d.Get("index").Int()))
		case "content_block_delta":
			assert.Equal(t, []string{"delta", "index", "type"}, keys(t, d))
			dl := d.Get("delta")
			typ := dl.Get("type").String()
			field := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature", "input_json_delta": "partial_json"}[typ]
			require.NotEmpty(t, field, "delta type %q", typ)
			assert.Equal(t, []string{field, "type"}, keys(t, dl))
			out = append(out, fmt.Sprintf("%s@%d:%s", strings.TrimSuffix(typ, "_delta"), d.Get("index").Int(), dl.Get(field).String()))
		case "content_block_stop":
			assert.Equal(t, []string{"index", "type"}, keys(t, d))
			out = append(out, fmt.Sprintf("-@%d", d.Get("index").Int()))
		case "message_delta":
			assert.Equal(t, []string{"delta", "type", "usage"}, keys(t, d))
			assert.Equal(t, []string{"stop_reason", "stop_sequence"}, keys(t, d.Get("delta")))
			assertKeys(t, d.Get("usage"), []string{"input_tokens", "output_tokens"},
				"cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens_details") // the details when the upstream counts them
			s := "delta " + d.Get("delta.stop_reason").String()
			if seq := d.Get("delta.stop_sequence"); seq.Type != gjson.Null {
				s += " " + seq.String()
			}
			out = append(out, s)
		case "message_stop":
			assert.Equal(t, `{"type":"message_stop"}`, d.Raw)
			out = append(out, "stop")
		case "error":
			assert.Equal(t, []string{"error", "type"}, keys(t, d))
			assert.Equal(t, []string{"message", "type"}, keys(t, d.Get("error")))
			out = append(out, "error "+d.Get("error.type").String()+": "+d.Get("error.message").String())
		default:
			t.Errorf("unexpected event %q", ev.Name)
		}
	}
	return out
}

func TestClaudeWireStreams(t *testing.T) {
	tools := `"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
	  {"name":"read_file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]`
	cases := []struct {
		name  string
		extra string
		turn  []string
		want  []string
		retry []string // a second upstream turn, when the first is asked again
	}{
		{"text", ``, []string{"Hel", "lo"},
			[]string{"start", "+text@0", "text@0:Hel", "text@0:lo", "-@0", "delta end_turn", "stop"}, nil},
		{"tool call", `,` + tools, []string{"Checking.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\": \"Par", "is\"}</invoke>"},
			[]string{"start", "+text@0", "text@0:Checking.\n", "-@0", "+tool_use:get_weather@1", "tool_use@1:{\"city\":\"Par", "tool_use@1:is\"}", "-@1", "delta tool_use", "stop"}, nil},
		{"parallel tool calls", `,` + tools, []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Oslo\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"a\"}</invoke>"},
			[]string{"start", "+tool_use:get_weather@0", "input_json@0:{\"city\":\"Oslo\"}", "-@0", "+tool_use:read_file@1", "input_json@1:{\"path\":\"a\"}", "-@1", "delta tool_use", "stop"}, nil},
		{"thinking", `,"thinking":{"type":"enabled","budget_tokens":1024}`, []string{"<thinking>Two and two.</thinking>", "Four."},
			[]string{"start", "+thinking@0", "thinking@0:Two and two.", "signature@0:SIG", "-@0", "+text@1", "text@1:Four.", "-@1", "delta end_turn", "stop"}, nil},
		{"stop sequence", `,"stop_sequences":["\n\nHuman:"]`, []string{"Sure.\n", "\nHum", "an: more"},
			// "\n" is held back as a possible start of the sequence, and is.
			[]string{"start", "+text@0", "text@0:Sure.", "-@0", "delta stop_sequence \n\nHuman:", "stop"}, nil},
		{"tool_choice any with a retry", `,"tool_choice":{"type":"any"},` + tools, []string{"It is sunny, I guess."},
			// The call-less first turn never reaches the client.
			[]string{"start", "+tool_use:get_weather@0", "input_json@0:{\"city\":\"Rome\"}", "-@0", "delta tool_use", "stop"},
			[]string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Rome\"}</invoke>"}},
		{"multi-turn with tool results", `,` + tools + `,"messages":[{"role":"user","content":"weather?"},
		  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Rome"}}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]`, []string{"Sunny in Rome."},
			[]string{"start", "+text@0", "text@0:Sunny in Rome.", "-@0", "delta end_turn", "stop"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			turns := [][]string{tc.turn}
			if tc.retry != nil {
				turns = append(turns, tc.retry)
			}
			s := newStack(t, nil, script(t, turns...))
			body := `{"model":"claude-sonnet-4.6","max_tokens":1024,"stream":true` + tc.extra + `}`
			if !strings.Contains(tc.extra, `"messages"`) {
				body = `{"model":"claude-sonnet-4.6","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"go"}]` + tc.extra + `}`
			}
			r := s.do(t, http.MethodPost, "/v1/messages?beta=true", body, "x-api-key", "k", "anthropic-version", "2023-06-01")
			events := claudeEvents(t, r)
			got := trace(t, events, "claude-sonnet-4.6")
			usage := events[len(events)-2].Data.Get("usage")
			n := int64(len(turns))
			assert.Equal(t, [2]int64{321 * n, 45 * n}, [2]int64{usage.Get("input_tokens").Int(), usage.Get("output_tokens").Int()}, "the upstream's usage of every turn")
			for i, g := range got {
				if strings.HasPrefix(g, "signature@") {
					assert.Regexp(t, `^signature@\d+:\S{20,}$`, g)
					got[i] = g[:strings.Index(g, ":")+1] + "SIG"
				}
				// The core streams arguments in pieces of its own choosing;
				// a tool_use delta here names the pieces that were written.
				// joinArgs joins consecutive pieces of one block.
				got[i] = strings.Replace(got[i], "input_json@", "tool_use@", 1)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.Replace(w, "input_json@", "tool_use@", 1)
			}
			got, want = joinArgs(got), joinArgs(want)
			assert.Equal(t, want, got)
			assert.Len(t, s.up.Requests(), len(turns), "upstream requests")
		})
	}
	t.Run("error after the first byte", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
			`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"Partial"}`,
			`{"type":"error","errorText":"model overloaded"}`,
		}}))
		r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`)
		got := trace(t, claudeEvents(t, r), "claude-sonnet-4.6")
		require.Len(t, got, 4, "%q", got)
		assert.Equal(t, []string{"start", "+text@0", "text@0:Partial"}, got[:3])
		assert.Regexp(t, `^error api_error: .*model overloaded`, got[3], "an error event ends the stream, nothing after it")
	})
}

// joinArgs merges the consecutive deltas of each text or tool_use block
// into one, so that a trace compares the whole text and input, not how
// the core and the upstream reader cut them.
func joinArgs(trace []string) []string {
	var out []string
	for _, e := range trace {
		// Deltas that reach the gateway together go out as one event, so
		// the pieces of a text or of arguments are not part of the wire
		// contract; their order and content are.
		if n := len(out); n > 0 && (strings.HasPrefix(e, "tool_use@") || strings.HasPrefix(e, "text@")) && e[:3] == out[n-1][:3] {
			prefix := e[:strings.Index(e, ":")+1]
			if strings.HasPrefix(out[n-1], prefix) {
				out[n-1] += e[len(prefix):]
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// TestClaudeStalledStreamPingsThenError: a silent upstream gets
// Anthropic's own ping events, which commit the 200, and its timeout then
// ends the stream with an error event.
func TestClaudeStalledStreamPingsThenError(t *testing.T) {
	s := newStack(t, map[string]string{"PING_INTERVAL": "1", "TIMEOUT": "2.5"}, cursortest.Always(cursortest.Response{Hang: true}))
	r := s.do(t, http.MethodPost, "/v1/messages", `{"model":"claude-sonnet-4.6","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01")
	assert.GreaterOrEqual(t, strings.Count(r.body, "event: ping\ndata: {\"type\": \"ping\"}\n\n"), 2, r.body)
	got := trace(t, claudeEvents(t, r), "claude-sonnet-4.6") // no SSE comment: every event is named
	require.Len(t, got, 1, "%q", got)
	assert.Regexp(t, `^error api_error: .*TIMEOUT`, got[0])
}
