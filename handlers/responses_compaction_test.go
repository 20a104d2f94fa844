package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"google.golang.org/protobuf/encoding/prototext"

	"cursor2api/services/cursortest"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// The summary the fake model writes when asked to compact.
const compactSummary = "GOAL: make parser.go pass its tests. DONE: fixed the off-by-one in parser.go. NEXT: run go test ./parser."

// codexHistory is a Codex-shaped conversation: a task, a call and its
// output; compactionInput adds the compaction_trigger Codex ends it with.
const codexHistory = `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
 {"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the parser."}]},
 {"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"go test ./parser\"}","call_id":"call_1"},
 {"type":"function_call_output","call_id":"call_1","output":"FAIL: off by one"}`

func compactionBody(stream bool) string {
	return fmt.Sprintf(`{"model":"claude-sonnet-4.6","stream":%t,"store":false,"instructions":"You are Codex.",
 "tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}],
 "input":[%s,{"type":"compaction_trigger"}]}`, stream, codexHistory)
}

// summaryUpstream is a fake model that writes compactSummary when the
// gateway asks it to compact, and otherwise answers "went on".
func summaryUpstream(n int, req cursortest.Request) cursortest.Response {
	if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Text, "handoff summary") {
		return cursortest.Text(&defaultUsage, compactSummary)
	}
	return cursortest.Text(&defaultUsage, "went on")
}

// assertCompactionAsked checks an upstream request of a compaction: the
// conversation, then the compaction prompt, and no tool offered.
func assertCompactionAsked(t *testing.T, req cursortest.Request) {
	t.Helper()
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, all.String(), "Fix the parser.", "the conversation is summarised")
	assert.Contains(t, all.String(), "FAIL: off by one", "with its tool output")
	last := req.Messages[len(req.Messages)-1]
	assert.Equal(t, "user", last.Role)
	for _, want := range []string{"Goals", "Decisions", "Files and commands", "Failures", "next steps"} {
		assert.Contains(t, last.Text, want, "the prompt asks for what a coding agent needs")
	}
	assert.NotContains(t, all.String(), `<function name="exec_command">`, "no tool is offered for the summary")
}

// TestResponsesCompactionTrigger: a request whose last input item is a
// compaction_trigger is answered, streamed and whole, with exactly one
// compaction item whose encrypted_content hides the model's summary; the
// stream is the event sequence Codex reads (output_item.done with the
// item, then response.completed) and the usage is the answer's.
func TestResponsesCompactionTrigger(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			s := newStack(t, map[string]string{"API_KEY": "sk-alice"}, summaryUpstream)
			r := s.do(t, http.MethodPost, "/v1/responses", compactionBody(stream), "Authorization", "Bearer sk-alice")
			require.Equal(t, http.StatusOK, r.status, r.body)
			var resp gjson.Result
			if stream {
				evs := respEvents(t, r)
				assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
					"response.output_item.done", "response.completed"}, eventNames(evs))
				items := checkItems(t, evs)
				require.Len(t, items, 1)
				assert.Equal(t, "compaction", items[0].Get("type").String(), items[0].Raw)
				resp = evs[len(evs)-1].Data.Get("response")
			} else {
				resp = gjson.Parse(r.body)
			}
			require.True(t, resp.Exists(), r.body)
			assert.Equal(t, "completed", resp.Get("status").String())
			out := resp.Get("output").Array()
			require.Len(t, out, 1, "exactly one output item: %s", resp.Raw)
			item := out[0]
			assert.Equal(t, "compaction", item.Get("type").String())
			assert.True(t, strings.HasPrefix(item.Get("id").String(), "cmp_"), item.Raw)
			sealed := item.Get("encrypted_content").String()
			assert.NotEmpty(t, sealed)
			assert.NotContains(t, r.body, "off-by-one", "the summary is not readable by the client")
			assert.EqualValues(t, defaultUsage.Input, resp.Get("usage.input_tokens").Int(), "the compaction's usage is counted")
			assert.EqualValues(t, defaultUsage.Output, resp.Get("usage.output_tokens").Int())

			reqs := s.up.Requests()
			require.Len(t, reqs, 1)
			assertCompactionAsked(t, reqs[0])

			// Codex goes on with the compaction item in place of the history:
			// the model reads the summary there.
			next := fmt.Sprintf(`{"model":"claude-sonnet-4.6","instructions":"You are Codex.","input":[
 {"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the parser."}]},
 %s,
 {"type":"message","role":"user","content":[{"type":"input_text","text":"Carry on."}]}]}`, item.Raw)
			r = s.do(t, http.MethodPost, "/v1/responses", next, "Authorization", "Bearer sk-alice")
			require.Equal(t, http.StatusOK, r.status, r.body)
			assert.Equal(t, "went on", gjson.Get(r.body, "output.0.content.0.text").String())
			reqs = s.up.Requests()
			require.Len(t, reqs, 2)
			var seen strings.Builder
			for _, m := range reqs[1].Messages {
				seen.WriteString(m.Role + ": " + m.Text + "\n")
			}
			assert.Contains(t, seen.String(), "The earlier part of this conversation was compacted", seen.String())
			assert.Contains(t, seen.String(), compactSummary, "the summary reaches the model in the item's place")
			assert.Less(t, strings.Index(seen.String(), compactSummary), strings.Index(seen.String(), "Carry on."), "in its place")
		})
	}
}

// TestResponsesCompactionRefusesForeignItems: a compaction item that this
// gateway did not seal for this key (forged, changed, another key's, made
// by another deployment) is a 400 naming the input index, never a crash
// or a silent drop; nothing reaches the upstream.
func TestResponsesCompactionRefusesForeignItems(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-alice,sk-bob"}, summaryUpstream)
	r := s.do(t, http.MethodPost, "/v1/responses", compactionBody(false), "Authorization", "Bearer sk-alice")
	require.Equal(t, http.StatusOK, r.status, r.body)
	sealed := gjson.Get(r.body, "output.0.encrypted_content").String()
	require.NotEmpty(t, sealed)
	other := newStack(t, map[string]string{"API_KEY": "sk-alice", "COMPACTION_SECRET": strings.Repeat("x", 32)}, summaryUpstream)

	changed := []byte(sealed)
	changed[len(changed)/2] ^= 0x01
	for _, tc := range []struct {
		name, key, content string
		s                  *stack
	}{
		{"another key's", "sk-bob", sealed, s},
		{"changed", "sk-alice", string(changed), s},
		{"forged", "sk-alice", "c2a1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", s},
		{"OpenAI's", "sk-alice", "gAAAAABpZ-not-ours", s},
		{"empty", "sk-alice", "", s},
		{"another deployment's", "sk-alice", sealed, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.s.up.Requests())
			body := fmt.Sprintf(`{"model":"claude-sonnet-4.6","input":[
 {"role":"user","content":"Fix the parser."},
 {"type":"compaction","id":"cmp_1","encrypted_content":%q},
 {"role":"user","content":"Carry on."}]}`, tc.content)
			r := tc.s.do(t, http.MethodPost, "/v1/responses", body, "Authorization", "Bearer "+tc.key)
			assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", "input[1].encrypted_content", "invalid_encrypted_content", "input[1]", "COMPACTION_SECRET")
			assert.Len(t, tc.s.up.Requests(), before, "nothing reaches the upstream")
		})
	}
	r = s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":42}]}`, "Authorization", "Bearer sk-alice")
	assert.Equal(t, http.StatusBadRequest, r.status, r.body)
}

// TestResponsesCompactEndpoint drives POST /v1/responses/compact, which
// older Codex calls, through openai-go: the user messages of the
// conversation, then one compaction item; fed back as input, the item
// gives the model its summary.
func TestResponsesCompactEndpoint(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "sk-alice"}, summaryUpstream)
	client := s.sdk("sk-alice")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var params responses.ResponseCompactParams
	require.NoError(t, params.UnmarshalJSON([]byte(`{"model":"claude-sonnet-4.6","instructions":"You are Codex.","input":[`+codexHistory+`]}`)))
	compacted, err := client.Responses.Compact(ctx, params)
	require.NoError(t, err)
	assert.Equal(t, "response.compaction", string(compacted.Object))
	require.Len(t, compacted.Output, 2, compacted.RawJSON())
	assert.Equal(t, "message", compacted.Output[0].Type)
	assert.Equal(t, "Fix the parser.", gjson.Get(compacted.Output[0].RawJSON(), "content.0.text").String(), "the user's messages are kept")
	item := compacted.Output[1]
	assert.Equal(t, "compaction", item.Type)
	assert.NotEmpty(t, item.EncryptedContent)
	assert.EqualValues(t, defaultUsage.Input, compacted.Usage.InputTokens, "the compaction's usage is counted")
	require.Len(t, s.up.Requests(), 1)
	assertCompactionAsked(t, s.up.Requests()[0])

	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "claude-sonnet-4.6",
		Input: itemsInput(
			responses.ResponseInputItemParamOfCompaction(item.EncryptedContent),
			responses.ResponseInputItemParamOfMessage("Carry on.", responses.EasyInputMessageRoleUser),
		),
	}, option.WithRequestTimeout(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "went on", resp.OutputText())
	var seen strings.Builder
	for _, m := range s.up.Requests()[1].Messages {
		seen.WriteString(m.Role + ": " + m.Text + "\n")
	}
	assert.Contains(t, seen.String(), compactSummary, "the summary reaches the model in the item's place")

	// The endpoint's own errors are the door's.
	r := s.do(t, http.MethodPost, "/v1/responses/compact", `{"model":"claude-sonnet-4.6","input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":"c2a1.AAAA"}]}`, "Authorization", "Bearer sk-alice")
	assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", "input[1].encrypted_content", "invalid_encrypted_content")
	r = s.do(t, http.MethodPost, "/v1/responses/compact", `{"model":"claude-sonnet-4.6","input":[]}`, "Authorization", "Bearer sk-alice")
	assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", "input", "")
}

// TestResponsesCompactionNative: on the native back door (BACKEND=cursor)
// the compaction goes through the core the same way: the run is asked for
// the summary with no tool offered, and the item it makes opens again in
// the next request's conversation.
func TestResponsesCompactionNative(t *testing.T) {
	s, up := newNativeStack(t, func(req *agentv1.AgentRunRequest) nativetest.Script {
		if strings.Contains(prototext.Format(req), "handoff summary") {
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Text(compactSummary)}}
		}
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("went on")}}
	})
	r := s.do(t, http.MethodPost, "/v1/responses", compactionBody(true))
	evs := respEvents(t, r)
	items := checkItems(t, evs)
	require.Len(t, items, 1, r.body)
	require.Equal(t, "compaction", items[0].Get("type").String(), r.body)
	assert.NotContains(t, r.body, "off-by-one")
	runs := up.Runs()
	require.Len(t, runs, 1)
	assert.Contains(t, runs[0].UserText(), "handoff summary")
	assert.Empty(t, runs[0].Request.GetMcpTools().GetMcpTools(), "no tool is offered for the summary")

	next := fmt.Sprintf(`{"model":"claude-sonnet-4.6","input":[%s,{"role":"user","content":"Carry on."}]}`, items[0].Raw)
	r = s.do(t, http.MethodPost, "/v1/responses", next)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "went on", gjson.Get(r.body, "output.0.content.0.text").String())
	runs = up.Runs()
	require.Len(t, runs, 2)
	assert.Contains(t, prototext.Format(runs[1].Request), "fixed the off-by-one", "the summary reaches the model")
}
