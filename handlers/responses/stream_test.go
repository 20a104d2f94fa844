package responses

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// wireEvent is one parsed server-sent event.
type wireEvent struct {
	Name string
	Data gjson.Result
}

// parseEvents checks the framing of every event, "event: <type>\ndata:
// <one line of JSON>\n\n", that the data's type is the event's name, and
// that sequence numbers go 0, 1, 2…
func parseEvents(t *testing.T, body string) []wireEvent {
	t.Helper()
	var out []wireEvent
	for rest := body; rest != ""; {
		end := strings.Index(rest, "\n\n")
		require.GreaterOrEqual(t, end, 0, "an event ends with a blank line: %q", rest)
		lines := strings.Split(rest[:end], "\n")
		rest = rest[end+2:]
		require.Len(t, lines, 2, "event and data lines")
		require.True(t, strings.HasPrefix(lines[0], "event: "), lines[0])
		require.True(t, strings.HasPrefix(lines[1], "data: "), lines[1])
		name := strings.TrimPrefix(lines[0], "event: ")
		data := strings.TrimPrefix(lines[1], "data: ")
		require.True(t, gjson.Valid(data), data)
		d := gjson.Parse(data)
		assert.Equal(t, name, d.Get("type").String(), "the data carries the event's type")
		assert.Equal(t, gjson.Number, d.Get("sequence_number").Type, data)
		assert.EqualValues(t, len(out), d.Get("sequence_number").Int(), "sequence numbers go 0, 1, 2…")
		out = append(out, wireEvent{name, d})
	}
	return out
}

func keysOf(v gjson.Result) []string {
	var out []string
	v.ForEach(func(k, _ gjson.Result) bool {
		out = append(out, k.String())
		return true
	})
	return out
}

// eventNames are the names of evs, in order.
func eventNames(evs []wireEvent) []string {
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Name
	}
	return names
}

func newTestWriter(names Names) (*StreamWriter, *bytes.Buffer) {
	var buf bytes.Buffer
	base := NewResponse("resp_test", 1700000000, &Request{Model: "m", Instructions: "be kind"})
	return NewStreamWriter(sse.NewWriter(&buf, nil, nil, nil), base, names), &buf
}

func TestStreamWriterSequence(t *testing.T) {
	w, buf := newTestWriter(Names{"crm__find": {Namespace: "crm", Name: "find"}})
	require.NoError(t, w.Reasoning("Think"))
	require.NoError(t, w.Reasoning("ing."))
	require.NoError(t, w.Text("Hello"))
	require.NoError(t, w.Text(""))
	require.NoError(t, w.Text(" there"))
	require.NoError(t, w.ToolCallStart("call_1", "crm__find"))
	require.NoError(t, w.ToolCallArguments(`{"q":`))
	require.NoError(t, w.ToolCallArguments(`1}`))
	require.NoError(t, w.ToolCallEnd(true))
	require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}))

	evs := parseEvents(t, buf.String())
	types := eventNames(evs)
	assert.Equal(t, []string{
		"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed",
	}, types)

	created := evs[0].Data.Get("response")
	assert.Equal(t, "resp_test", created.Get("id").String())
	assert.Equal(t, "in_progress", created.Get("status").String())
	assert.Equal(t, "[]", created.Get("output").Raw)
	assert.Equal(t, "null", created.Get("usage").Raw)
	assert.Equal(t, "be kind", created.Get("instructions").String())

	// The reasoning item, index 0.
	rs := evs[2].Data
	assert.Equal(t, []string{"type", "sequence_number", "output_index", "item"}, keysOf(rs))
	assert.EqualValues(t, 0, rs.Get("output_index").Int())
	assert.Equal(t, "reasoning", rs.Get("item.type").String())
	assert.Equal(t, "[]", rs.Get("item.summary").Raw)
	rsID := rs.Get("item.id").String()
	assert.True(t, strings.HasPrefix(rsID, "rs_"), rsID)
	assert.Equal(t, `{"type":"summary_text","text":""}`, evs[3].Data.Get("part").Raw)
	assert.EqualValues(t, 0, evs[3].Data.Get("summary_index").Int())
	assert.Equal(t, "Think", evs[4].Data.Get("delta").String())
	assert.Equal(t, rsID, evs[4].Data.Get("item_id").String())
	assert.Equal(t, "Thinking.", evs[6].Data.Get("text").String())
	assert.Equal(t, `[{"type":"summary_text","text":"Thinking."}]`, evs[8].Data.Get("item.summary").Raw)

	// The message, index 1.
	msg := evs[9].Data
	assert.EqualValues(t, 1, msg.Get("output_index").Int())
	assert.JSONEq(t, `{"id":"`+msg.Get("item.id").String()+`","type":"message","status":"in_progress","role":"assistant","content":[]}`, msg.Get("item").Raw)
	msgID := msg.Get("item.id").String()
	assert.True(t, strings.HasPrefix(msgID, "msg_"), msgID)
	part := evs[10].Data
	assert.Equal(t, []string{"type", "sequence_number", "output_index", "item_id", "content_index", "part"}, keysOf(part))
	assert.JSONEq(t, `{"type":"output_text","text":"","annotations":[],"logprobs":[]}`, part.Get("part").Raw)
	delta := evs[11].Data
	assert.Equal(t, []string{"type", "sequence_number", "output_index", "item_id", "content_index", "delta", "logprobs"}, keysOf(delta))
	assert.Equal(t, "Hello", delta.Get("delta").String())
	assert.Equal(t, msgID, delta.Get("item_id").String())
	assert.Equal(t, "Hello there", evs[13].Data.Get("text").String())
	assert.Equal(t, "Hello there", evs[14].Data.Get("part.text").String())
	assert.Equal(t, "completed", evs[15].Data.Get("item.status").String())
	assert.Equal(t, "Hello there", evs[15].Data.Get("item.content.0.text").String())

	// The call, index 2, named in its namespace.
	fc := evs[16].Data.Get("item")
	assert.EqualValues(t, 2, evs[16].Data.Get("output_index").Int())
	assert.Equal(t, []string{"id", "type", "status", "call_id", "name", "namespace", "arguments"}, keysOf(fc))
	assert.Equal(t, "call_1", fc.Get("call_id").String())
	assert.Equal(t, "find", fc.Get("name").String())
	assert.Equal(t, "crm", fc.Get("namespace").String())
	assert.Equal(t, "", fc.Get("arguments").String())
	assert.Equal(t, "in_progress", fc.Get("status").String())
	assert.Equal(t, []string{"type", "sequence_number", "output_index", "item_id", "delta"}, keysOf(evs[17].Data))
	assert.Equal(t, fc.Get("id").String(), evs[17].Data.Get("item_id").String())
	assert.Equal(t, `{"q":1}`, evs[19].Data.Get("arguments").String())
	assert.Equal(t, "completed", evs[20].Data.Get("item.status").String())
	assert.Equal(t, `{"q":1}`, evs[20].Data.Get("item.arguments").String())

	done := evs[21].Data.Get("response")
	assert.Equal(t, "completed", done.Get("status").String())
	assert.Equal(t, "resp_test", done.Get("id").String())
	assert.Len(t, done.Get("output").Array(), 3)
	assert.JSONEq(t, `{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7}`, done.Get("usage").Raw)
	assert.True(t, w.Closed(), "no ping after the end")
	assert.Equal(t, StatusCompleted, w.Response().Status)
}

func TestStreamWriterWritesNothingUntilTheFirstEvent(t *testing.T) {
	w, buf := newTestWriter(nil)
	assert.False(t, w.Started())
	assert.Zero(t, buf.Len())
	require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
	types := eventNames(parseEvents(t, buf.String()))
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.completed"}, types, "an empty answer is still a whole response")
}

func TestStreamWriterIncompleteCall(t *testing.T) {
	w, buf := newTestWriter(nil)
	require.NoError(t, w.ToolCallStart("call_1", "f"))
	require.NoError(t, w.ToolCallArguments(`{"a":`))
	require.NoError(t, w.ToolCallEnd(false))
	require.NoError(t, w.Text("The call of f above is incomplete."))
	require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
	evs := parseEvents(t, buf.String())
	var item gjson.Result
	for _, e := range evs {
		if e.Name == "response.output_item.done" && e.Data.Get("item.type").String() == "function_call" {
			item = e.Data.Get("item")
		}
	}
	assert.Equal(t, "incomplete", item.Get("status").String(), "a client must not run it")
	assert.Equal(t, `{"a":`, item.Get("arguments").String())
	assert.Error(t, w.ToolCallArguments("x"), "no call is open")
}

func TestStreamWriterError(t *testing.T) {
	w, buf := newTestWriter(nil)
	require.NoError(t, w.Text("Partial"))
	require.NoError(t, w.Error(&models.Error{Status: 502, Kind: models.KindAPI, Code: "upstream_error", Message: "the upstream failed"}))
	require.NoError(t, w.Error(&models.Error{Status: 502, Kind: models.KindAPI, Message: "again"}), "a second error writes nothing")
	evs := parseEvents(t, buf.String())
	require.GreaterOrEqual(t, len(evs), 2)
	errEv, failed := evs[len(evs)-2], evs[len(evs)-1]
	assert.Equal(t, "error", errEv.Name)
	assert.Equal(t, []string{"type", "sequence_number", "code", "message", "param"}, keysOf(errEv.Data))
	assert.Equal(t, "null", errEv.Data.Get("param").Raw)
	assert.Equal(t, "upstream_error", errEv.Data.Get("code").String())
	assert.Equal(t, "the upstream failed", errEv.Data.Get("message").String())
	assert.Equal(t, "response.failed", failed.Name)
	assert.Equal(t, "failed", failed.Data.Get("response.status").String())
	assert.JSONEq(t, `{"code":"upstream_error","message":"the upstream failed"}`, failed.Data.Get("response.error").Raw)
	assert.Equal(t, "incomplete", failed.Data.Get("response.output.0.status").String())
	assert.Equal(t, "Partial", failed.Data.Get("response.output.0.content.0.text").String())
	assert.True(t, w.Closed())
}

func TestFailureCode(t *testing.T) {
	assert.Equal(t, "rate_limit_exceeded", failureCode(&models.Error{Status: 429, Kind: models.KindRateLimit}))
	assert.Equal(t, "upstream_timeout", failureCode(&models.Error{Status: 504, Kind: models.KindAPI, Code: "upstream_timeout"}))
	assert.Equal(t, "server_error", failureCode(&models.Error{Status: 500, Kind: models.KindAPI}))
}

func TestFromAnswer(t *testing.T) {
	base := NewResponse("resp_x", 1700000000, &Request{Model: "m"})
	names := Names{"crm__find": {Namespace: "crm", Name: "find"}}
	r := FromAnswer(base, &models.Answer{
		Text: "  \n", Thinking: "because",
		ToolCalls: []models.ToolCall{{ID: "call_1", Name: "crm__find", Arguments: `{"q":1}`}, {ID: "call_2", Name: "read", Arguments: `{}`}},
		Usage:     models.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}, Finish: models.FinishToolCalls,
	}, names)
	assert.Equal(t, StatusCompleted, r.Status)
	require.Len(t, r.Output, 3, "reasoning and two calls; no blank message")
	assert.Equal(t, ItemReasoning, r.Output[0].Type)
	assert.Equal(t, OutputItem{ID: r.Output[1].ID, Type: ItemFunctionCall, Status: StatusCompleted, CallID: "call_1", Name: "find", Namespace: "crm", Arguments: `{"q":1}`}, r.Output[1])
	assert.Equal(t, "read", r.Output[2].Name)
	assert.Empty(t, r.Output[2].Namespace)
	assert.Equal(t, &Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}, r.Usage)

	items, err := OutputItems(r)
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.JSONEq(t, `{"id":"`+r.Output[0].ID+`","type":"reasoning","summary":[{"type":"summary_text","text":"because"}]}`, string(items[0]))
	assert.JSONEq(t, `{"id":"`+r.Output[2].ID+`","type":"function_call","status":"completed","call_id":"call_2","name":"read","arguments":"{}"}`, string(items[2]))

	text := FromAnswer(base, &models.Answer{Text: "hi", Finish: models.FinishStop}, nil)
	require.Len(t, text.Output, 1)
	assert.Equal(t, ItemMessage, text.Output[0].Type)
	assert.Equal(t, "hi", text.Output[0].Text)
}

// itemsOf returns the items of the output_item.done events.
func itemsOf(evs []wireEvent) []gjson.Result {
	var out []gjson.Result
	for _, e := range evs {
		if e.Name == "response.output_item.done" {
			out = append(out, e.Data.Get("item"))
		}
	}
	return out
}

func TestStreamWriterWhiteSpace(t *testing.T) {
	t.Run("before a call: no blank message", func(t *testing.T) {
		w, buf := newTestWriter(nil)
		require.NoError(t, w.Text("\n"))
		require.NoError(t, w.Text(" "))
		require.NoError(t, w.ToolCallStart("call_1", "f"))
		require.NoError(t, w.ToolCallArguments("{}"))
		require.NoError(t, w.ToolCallEnd(true))
		require.NoError(t, w.Finish(models.FinishToolCalls, models.Usage{}))
		items := itemsOf(parseEvents(t, buf.String()))
		require.Len(t, items, 1)
		assert.Equal(t, "function_call", items[0].Get("type").String())
	})
	t.Run("before text: kept", func(t *testing.T) {
		w, buf := newTestWriter(nil)
		require.NoError(t, w.Text("\n"))
		require.NoError(t, w.Text("  Hi"))
		require.NoError(t, w.Text("\n"))
		require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
		items := itemsOf(parseEvents(t, buf.String()))
		require.Len(t, items, 1)
		assert.Equal(t, "\n  Hi\n", items[0].Get("content.0.text").String())
	})
	t.Run("alone: still an answer", func(t *testing.T) {
		w, buf := newTestWriter(nil)
		require.NoError(t, w.Text(" "))
		require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
		items := itemsOf(parseEvents(t, buf.String()))
		require.Len(t, items, 1)
		assert.Equal(t, " ", items[0].Get("content.0.text").String())
		assert.Len(t, w.Response().Output, 1)
	})
	t.Run("a byte at a time: kept without copying it each time", func(t *testing.T) {
		// Concatenating would allocate n²/2 bytes: 200 MB for these 20,000.
		const n = 20000
		w, buf := newTestWriter(nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			require.NoError(t, w.Text(" "))
		}
		runtime.ReadMemStats(&after)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20))
		require.NoError(t, w.Text("Hi"))
		require.NoError(t, w.Finish(models.FinishStop, models.Usage{}))
		items := itemsOf(parseEvents(t, buf.String()))
		require.Len(t, items, 1)
		assert.Equal(t, strings.Repeat(" ", n)+"Hi", items[0].Get("content.0.text").String())
	})
}
