package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

// End-to-end tests of the Responses door: openai-go's Responses client
// drives the running gateway in front of the fake upstream.

var (
	respWeather = responses.ToolParamOfFunction("get_weather", map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"c", "f"}}},
		"required":   []string{"city"},
	}, false)
	respReadFile = responses.ToolParamOfFunction("read_file", map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	}, false)
	respTools = []responses.ToolUnionParam{respWeather, respReadFile}
)

func userInput(text string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}
}

func itemsInput(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
}

// streamedResponse is a stream read to its end.
type streamedResponse struct {
	Events   []responses.ResponseStreamEventUnion
	Snapshot responses.ResponseAccumulatorSnapshot
	// Final is the response the accumulator rebuilt from the terminal event.
	Final *responses.Response
}

// Types lists the event types in order.
func (r streamedResponse) Types() []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Type)
	}
	return out
}

// readStream reads a Responses stream through the library, checking that
// sequence numbers go 0, 1, 2… and feeding every event to the library's
// response accumulator.
func readStream(t *testing.T, stream *ssestream.Stream[responses.ResponseStreamEventUnion]) (streamedResponse, error) {
	t.Helper()
	var out streamedResponse
	var acc responses.ResponseAccumulator
	for stream.Next() {
		ev := stream.Current()
		require.Equal(t, int64(len(out.Events)), ev.SequenceNumber, "sequence numbers go 0, 1, 2…: %s", ev.RawJSON())
		out.Events = append(out.Events, ev)
		var server responses.ResponsesServerEventUnion
		require.NoError(t, json.Unmarshal([]byte(ev.RawJSON()), &server), ev.RawJSON())
		if err := acc.AddEvent(server); err != nil && ev.Type != "error" {
			t.Errorf("the accumulator refuses %s: %v", ev.RawJSON(), err)
		}
	}
	out.Snapshot = acc.Snapshot()
	if final, err := acc.ReconstructedResponse(); err == nil {
		out.Final = final
	}
	return out, stream.Err()
}

func TestResponsesText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Hello", ", world", "!"}))
	res, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
		Model:           "claude-sonnet-4.6",
		Instructions:    openai.String("You greet people."),
		Input:           userInput("Say hello"),
		MaxOutputTokens: openai.Int(100),
		Reasoning:       shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
		Metadata:        shared.Metadata{"run": "42"},
	})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(res.ID, "resp_"), res.ID)
	assert.Equal(t, "response", string(res.Object))
	assert.Equal(t, responses.ResponseStatusCompleted, res.Status)
	assert.Equal(t, "claude-sonnet-4.6", res.Model)
	assert.Equal(t, "Hello, world!", res.OutputText())
	require.Len(t, res.Output, 1)
	msg := res.Output[0]
	assert.Equal(t, "message", msg.Type)
	assert.True(t, strings.HasPrefix(msg.ID, "msg_"), msg.ID)
	assert.Equal(t, "assistant", string(msg.Role))
	assert.Equal(t, "completed", string(msg.Status))
	assert.EqualValues(t, 321, res.Usage.InputTokens)
	assert.EqualValues(t, 45, res.Usage.OutputTokens)
	assert.EqualValues(t, 366, res.Usage.TotalTokens)
	assert.Equal(t, "You greet people.", res.Instructions.OfString)
	assert.Equal(t, "42", res.Metadata["run"])

	reqs := s.up.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []cursortest.Message{{Role: "system", Text: "You greet people."}, {Role: "user", Text: "Say hello"}}, reqs[0].Messages)
}

func TestResponsesStreamedText(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"Str", "eam", "ed <b>text</b>", " & more\n", "ünïcode ✓"}))
	out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model:        "gemini-3-flash",
		Instructions: openai.String("Be brief."),
		Input:        userInput("Stream please"),
	}))
	require.NoError(t, err)
	want := "Streamed <b>text</b> & more\nünïcode ✓"
	assert.Equal(t, want, out.Snapshot.OutputText())
	assert.Equal(t, "response.completed", out.Snapshot.TerminalEvent)
	require.NotNil(t, out.Final)
	assert.Equal(t, want, out.Final.OutputText())
	assert.EqualValues(t, 366, out.Final.Usage.TotalTokens)
	assert.Equal(t, "gemini-3-flash", out.Final.Model)

	types := out.Types()
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, types[:4])
	assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}, types[len(types)-4:])
	for _, typ := range types[4 : len(types)-4] {
		assert.Equal(t, "response.output_text.delta", typ)
	}
	assert.Equal(t, out.Events[0].Response.ID, out.Final.ID, "one id from created to completed")
	assert.Equal(t, []cursortest.Message{{Role: "system", Text: "Be brief."}, {Role: "user", Text: "Stream please"}}, s.up.Requests()[0].Messages)
}

// functionCalls returns the function_call items of an output.
func functionCalls(output []responses.ResponseOutputItemUnion) []responses.ResponseOutputItemUnion {
	var out []responses.ResponseOutputItemUnion
	for _, it := range output {
		if it.Type == "function_call" {
			out = append(out, it)
		}
	}
	return out
}

func TestResponsesFunctionCall(t *testing.T) {
	turn := []string{"Let me check.\n", "TRIGGER\n", `<invoke name="get_weather">{"city": "Pa`, `ris", "unit"`, `: "c"}`, `</invoke>`}
	params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("Weather in Paris?"), Tools: respTools}
	check := func(t *testing.T, output []responses.ResponseOutputItemUnion) {
		t.Helper()
		calls := functionCalls(output)
		require.Len(t, calls, 1)
		c := calls[0]
		assert.True(t, strings.HasPrefix(c.ID, "fc_"), c.ID)
		assert.True(t, strings.HasPrefix(c.CallID, "call_"), c.CallID)
		assert.Equal(t, "get_weather", c.Name)
		assert.Equal(t, "completed", string(c.Status))
		assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, c.Arguments.OfString)
		assert.Equal(t, "message", output[0].Type, "the text comes first")
	}
	t.Run("non-streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		res, err := s.sdk("sk-any").Responses.New(context.Background(), params)
		require.NoError(t, err)
		check(t, res.Output)
		assert.Equal(t, "Let me check.", res.OutputText())
	})
	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, map[string]string{"STREAM_ARGS_AFTER": "0"}, script(t, turn)) // stream at once, as large calls do
		out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), params))
		require.NoError(t, err)
		require.NotNil(t, out.Final)
		check(t, out.Final.Output)
		var fragments []string
		var done string
		for _, e := range out.Events {
			switch e.Type {
			case "response.function_call_arguments.delta":
				fragments = append(fragments, e.Delta)
			case "response.function_call_arguments.done":
				done = e.Arguments
			}
		}
		assert.Greater(t, len(fragments), 1, "the arguments stream in pieces")
		assert.Equal(t, strings.Join(fragments, ""), done)
		snap := out.Snapshot.Output
		require.Len(t, snap, 2)
		assert.Equal(t, "get_weather", snap[1].Name)
		assert.JSONEq(t, `{"city":"Paris","unit":"c"}`, snap[1].Arguments)
	})
}

func TestResponsesParallelCalls(t *testing.T) {
	turn := []string{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n", `<invoke name="read_file">{"path":"notes.md"}</invoke>`}
	params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("Weather, and my notes"), Tools: respTools, ParallelToolCalls: openai.Bool(true)}
	check := func(t *testing.T, output []responses.ResponseOutputItemUnion) {
		t.Helper()
		require.Len(t, output, 2, "no empty message before the calls")
		calls := functionCalls(output)
		require.Len(t, calls, 2)
		assert.Equal(t, "get_weather", calls[0].Name)
		assert.JSONEq(t, `{"city":"Paris"}`, calls[0].Arguments.OfString)
		assert.Equal(t, "read_file", calls[1].Name)
		assert.JSONEq(t, `{"path":"notes.md"}`, calls[1].Arguments.OfString)
		assert.NotEqual(t, calls[0].CallID, calls[1].CallID)
		assert.NotEqual(t, calls[0].ID, calls[1].ID)
	}
	t.Run("non-streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		res, err := s.sdk("sk-any").Responses.New(context.Background(), params)
		require.NoError(t, err)
		check(t, res.Output)
	})
	t.Run("streaming", func(t *testing.T) {
		s := newStack(t, nil, script(t, turn))
		out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), params))
		require.NoError(t, err)
		require.NotNil(t, out.Final)
		check(t, out.Final.Output)
		var indexes []int64
		for _, e := range out.Events {
			if e.Type == "response.output_item.added" {
				indexes = append(indexes, e.OutputIndex)
			}
		}
		assert.Equal(t, []int64{0, 1}, indexes)
	})
}

func TestResponsesMultiTurn(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "non-streaming", true: "streaming"}[streaming], func(t *testing.T) {
			s := newStack(t, nil, script(t,
				[]string{"I'll look.\n", "TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>\n<invoke name=\"read_file\">{\"path\":\"notes.md\"}</invoke>"},
				[]string{"It is 21°C in Paris; your notes say: buy bread."},
			))
			client := s.sdk("sk-any")
			ctx := context.Background()
			input := []responses.ResponseInputItemUnionParam{
				responses.ResponseInputItemParamOfMessage("You are a helpful agent.", responses.EasyInputMessageRoleDeveloper),
				responses.ResponseInputItemParamOfMessage("Weather in Paris, and my notes?", responses.EasyInputMessageRoleUser),
			}
			params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: itemsInput(input...), Tools: respTools, Store: openai.Bool(false)}
			var output []responses.ResponseOutputItemUnion
			if streaming {
				out, err := readStream(t, client.Responses.NewStreaming(ctx, params))
				require.NoError(t, err)
				require.NotNil(t, out.Final)
				output = out.Final.Output
			} else {
				res, err := client.Responses.New(ctx, params)
				require.NoError(t, err)
				output = res.Output
			}
			calls := functionCalls(output)
			require.Len(t, calls, 2)

			// The agent sends the whole history back, as Codex does.
			for _, it := range output {
				switch it.Type {
				case "message":
					m := it.AsMessage().ToParam()
					input = append(input, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
				case "function_call":
					input = append(input, responses.ResponseInputItemParamOfFunctionCall(it.Arguments.OfString, it.CallID, it.Name))
				}
			}
			results := map[string]string{"get_weather": `{"temp_c":21}`, "read_file": "buy bread"}
			for _, c := range calls {
				out := responses.ResponseInputItemParamOfFunctionCallOutput(results[c.Name])
				out.OfFunctionCallOutput.CallID = param.NewOpt(c.CallID)
				input = append(input, out)
			}
			params.Input = itemsInput(input...)
			second, err := client.Responses.New(ctx, params)
			require.NoError(t, err)
			assert.Equal(t, "It is 21°C in Paris; your notes say: buy bread.", second.OutputText())
			assert.Empty(t, functionCalls(second.Output))

			reqs := s.up.Requests()
			require.Len(t, reqs, 2)
			replay := reqs[1].Messages
			trigger := sentTrigger(reqs[1])
			require.NotEmpty(t, trigger)
			assert.Equal(t, "system", replay[0].Role)
			assert.Contains(t, replay[0].Text, "You are a helpful agent.")
			var assistant, toolResults []string
			for _, m := range replay[1:] {
				if m.Role == "assistant" {
					assistant = append(assistant, m.Text)
				}
				if m.Role == "user" && strings.Contains(m.Text, "<tool_result") {
					toolResults = append(toolResults, m.Text)
				}
			}
			require.Len(t, assistant, 1, "the message and both calls are one assistant turn: %+v", replay)
			assert.Contains(t, assistant[0], "I'll look.")
			assert.Contains(t, assistant[0], trigger+"\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>")
			assert.Contains(t, assistant[0], `<invoke name="read_file">{"path":"notes.md"}</invoke>`)
			require.Len(t, toolResults, 1, "%+v", replay)
			assert.Contains(t, toolResults[0], `<tool_result id="`+calls[0].CallID+`" name="get_weather">`)
			assert.Contains(t, toolResults[0], `{"temp_c":21}`)
			assert.Contains(t, toolResults[0], `<tool_result id="`+calls[1].CallID+`" name="read_file">`)
			assert.Equal(t, "user", replay[len(replay)-1].Role)
		})
	}
}

func TestResponsesNamespaceAndBuiltInTools(t *testing.T) {
	crm := responses.ToolParamOfNamespace("Customer records", "crm", []responses.NamespaceToolToolUnionParam{{
		OfFunction: &responses.NamespaceToolToolFunctionParam{
			Name:        "find_customer",
			Description: openai.String("Finds a customer by email"),
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{"email": map[string]any{"type": "string"}}, "required": []string{"email"}},
		},
	}})
	tools := []responses.ToolUnionParam{respWeather, crm, responses.ToolParamOfWebSearch(responses.WebSearchToolTypeWebSearch)}
	turn := []string{"TRIGGER\n<invoke name=\"crm__find_customer\">{\"email\":\"ada@example.com\"}</invoke>"}
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "non-streaming", true: "streaming"}[streaming], func(t *testing.T) {
			s := newStack(t, nil, script(t, turn, []string{"Ada is a customer since 2019."}))
			client := s.sdk("sk-any")
			params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("Who is ada@example.com?"), Tools: tools}
			var output []responses.ResponseOutputItemUnion
			if streaming {
				out, err := readStream(t, client.Responses.NewStreaming(context.Background(), params))
				require.NoError(t, err)
				require.NotNil(t, out.Final)
				output = out.Final.Output
				for _, e := range out.Events {
					if e.Type == "response.output_item.added" {
						assert.Equal(t, "find_customer", e.Item.Name, "named in its namespace from the start")
						assert.Equal(t, "crm", e.Item.Namespace)
					}
				}
			} else {
				res, err := client.Responses.New(context.Background(), params)
				require.NoError(t, err)
				output = res.Output
			}
			calls := functionCalls(output)
			require.Len(t, calls, 1)
			assert.Equal(t, "find_customer", calls[0].Name, "the function's own name")
			assert.Equal(t, "crm", calls[0].Namespace)
			assert.JSONEq(t, `{"email":"ada@example.com"}`, calls[0].Arguments.OfString)

			system := s.up.Requests()[0].Messages[0]
			require.Equal(t, "system", system.Role)
			assert.Contains(t, system.Text, "crm__find_customer")
			assert.Contains(t, system.Text, "(crm: Customer records)", "the namespace's description goes with its functions")
			assert.Contains(t, system.Text, "get_weather")
			assert.NotContains(t, system.Text, "web_search", "built-in tools are not offered to the model")
			assert.Contains(t, s.logs.String(), "tools[2] (web_search)", "the dropped tool is logged at debug")

			// The call comes back in history with its namespace.
			call := responses.ResponseInputItemParamOfFunctionCall(calls[0].Arguments.OfString, calls[0].CallID, "find_customer")
			call.OfFunctionCall.Namespace = param.NewOpt("crm")
			result := responses.ResponseInputItemParamOfFunctionCallOutput("Ada Lovelace, since 2019")
			result.OfFunctionCallOutput.CallID = param.NewOpt(calls[0].CallID)
			params.Input = itemsInput(responses.ResponseInputItemParamOfMessage("Who is ada@example.com?", responses.EasyInputMessageRoleUser), call, result)
			second, err := client.Responses.New(context.Background(), params)
			require.NoError(t, err)
			assert.Equal(t, "Ada is a customer since 2019.", second.OutputText())
			replay := s.up.Requests()[1].Messages
			var all string
			for _, m := range replay {
				all += m.Role + ": " + m.Text + "\n"
			}
			assert.Contains(t, all, `<invoke name="crm__find_customer">{"email":"ada@example.com"}</invoke>`)
			assert.Contains(t, all, `<tool_result id="`+calls[0].CallID+`" name="crm__find_customer">`)
		})
	}
}

func TestResponsesPreviousResponseID(t *testing.T) {
	s := newStack(t, map[string]string{"RESPONSES_STORE_TTL": "60"}, script(t, []string{"Paris is the capital of France."}, []string{"About 2.1 million people."}))
	client := s.sdk("sk-any")
	ctx := context.Background()
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4.6", Instructions: openai.String("Answer briefly."), Input: userInput("What is the capital of France?")})
	require.NoError(t, err)

	got, err := client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, first.ID, got.ID)
	assert.Equal(t, "Paris is the capital of France.", got.OutputText())

	out, err := readStream(t, client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "claude-sonnet-4.6", PreviousResponseID: openai.String(first.ID), Input: userInput("How many live there?"),
	}))
	require.NoError(t, err)
	require.NotNil(t, out.Final)
	assert.Equal(t, "About 2.1 million people.", out.Final.OutputText())
	assert.Equal(t, first.ID, out.Final.PreviousResponseID)

	reqs := s.up.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []cursortest.Message{
		{Role: "user", Text: "What is the capital of France?"},
		{Role: "assistant", Text: "Paris is the capital of France."},
		{Role: "user", Text: "How many live there?"},
	}, reqs[1].Messages, "the earlier turn is continued; its instructions are not carried over, as in OpenAI's API")

	// The streamed response is kept too, and continues in turn.
	_, err = client.Responses.Get(ctx, out.Final.ID, responses.ResponseGetParams{})
	require.NoError(t, err)

	// Deleted: gone.
	require.NoError(t, client.Responses.Delete(ctx, first.ID))
	_, err = client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)

	// Expired: a clear 400 naming previous_response_id.
	s.store.SetClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "claude-sonnet-4.6", PreviousResponseID: openai.String(out.Final.ID), Input: userInput("And Lyon?"),
	})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "previous_response_id", apiErr.Param)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.Contains(t, apiErr.Message, "unknown or has expired")
	assert.Len(t, s.up.Requests(), 2, "nothing was asked upstream")
}

func TestResponsesStoreFalseKeepsNothing(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"ok"}))
	client := s.sdk("sk-any")
	res, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("hi"), Store: openai.Bool(false)})
	require.NoError(t, err)
	assert.Contains(t, res.RawJSON(), `"store":false`)
	_, err = client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("again"), PreviousResponseID: openai.String(res.ID)})
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, "previous_response_id", apiErr.Param)
	assert.Zero(t, s.store.Len())
}

func TestResponsesStrictRetry(t *testing.T) {
	turns := [][]string{
		{"I think it is sunny in Paris."},
		{"TRIGGER\n<invoke name=\"get_weather\">{\"city\":\"Paris\"}</invoke>"},
	}
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "non-streaming", true: "streaming"}[streaming], func(t *testing.T) {
			s := newStack(t, nil, script(t, turns...))
			params := responses.ResponseNewParams{
				Model: "claude-sonnet-4.6", Input: userInput("Weather in Paris?"), Tools: respTools,
				ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
			}
			var output []responses.ResponseOutputItemUnion
			if streaming {
				out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), params))
				require.NoError(t, err)
				require.NotNil(t, out.Final)
				output = out.Final.Output
			} else {
				res, err := s.sdk("sk-any").Responses.New(context.Background(), params)
				require.NoError(t, err)
				output = res.Output
			}
			require.Len(t, output, 1, "the first turn without a call never reaches the client")
			assert.Equal(t, "get_weather", output[0].Name)
			assert.JSONEq(t, `{"city":"Paris"}`, output[0].Arguments.OfString)
			assert.Len(t, s.up.Requests(), 2, "held and asked again once")
		})
	}
}

func TestResponsesErrors(t *testing.T) {
	asAPIError := func(t *testing.T, err error) *openai.Error {
		t.Helper()
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "an *openai.Error: %v", err)
		return apiErr
	}
	t.Run("unknown model", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{Model: "llama-4o", Input: userInput("hi")})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusNotFound, e.StatusCode)
		assert.Equal(t, "model_not_found", e.Code)
		assert.Equal(t, "model", e.Param)
	})
	t.Run("wrong key", func(t *testing.T) {
		s := newStack(t, map[string]string{"API_KEY": "right"}, script(t, []string{"unused"}))
		_, err := s.sdk("wrong").Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("hi")})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusUnauthorized, e.StatusCode)
		assert.Equal(t, "authentication_error", e.Type)
	})
	t.Run("tool_choice names no tool", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"unused"}))
		_, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "claude-sonnet-4.6", Input: userInput("hi"), Tools: respTools,
			ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "nope"}},
		})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusBadRequest, e.StatusCode)
		assert.Equal(t, "tool_choice.name", e.Param)
		assert.Contains(t, e.Message, `"nope"`)
	})
	t.Run("rate limited", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Status: 429, Header: map[string]string{"Retry-After": "7"}, Body: "<html><title>Vercel Security Checkpoint</title></html>"}))
		_, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("hi")})
		e := asAPIError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, e.StatusCode)
		assert.Equal(t, "rate_limit_error", e.Type)
		assert.Equal(t, "7", e.Response.Header.Get("Retry-After"))
	})
	t.Run("error after streamed text", func(t *testing.T) {
		s := newStack(t, nil, cursortest.Always(cursortest.Response{Events: []string{
			`{"type":"start"}`, `{"type":"text-start","id":"t0"}`, `{"type":"text-delta","id":"t0","delta":"Partial answer"}`,
			`{"type":"error","errorText":"model overloaded"}`,
		}}))
		out, err := readStream(t, s.sdk("sk-any").Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("hi")}))
		require.NoError(t, err, "the failure is told by events, not by breaking the stream")
		types := out.Types()
		require.GreaterOrEqual(t, len(types), 2)
		assert.Equal(t, []string{"error", "response.failed"}, types[len(types)-2:])
		errEv := out.Events[len(types)-2]
		assert.Contains(t, errEv.Message, "model overloaded")
		failed := out.Events[len(types)-1].Response
		assert.Equal(t, responses.ResponseStatusFailed, failed.Status)
		assert.Contains(t, failed.Error.Message, "model overloaded")
		assert.NotEmpty(t, failed.Error.Code)
		assert.Equal(t, "Partial answer", out.Snapshot.OutputText())
		assert.Equal(t, "response.failed", out.Snapshot.TerminalEvent)
		assert.Zero(t, s.store.Len(), "a failed response is not kept")
	})
}

func TestResponsesJSONSchemaFormat(t *testing.T) {
	s := newStack(t, nil, script(t, []string{`{"city":"Paris","temp_c":21}`}))
	res, err := s.sdk("sk-any").Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "claude-sonnet-4.6", Input: userInput("Weather in Paris as JSON"),
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
			Name:   "weather",
			Schema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "number"}}, "required": []string{"city", "temp_c"}},
			Strict: openai.Bool(true),
		}}},
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{"city":"Paris","temp_c":21}`, res.OutputText())
	assert.Equal(t, "json_schema", res.Text.Format.Type, "the format is echoed")
	system := s.up.Requests()[0].Messages[0]
	require.Equal(t, "system", system.Role)
	assert.Contains(t, system.Text, "It must match this JSON Schema (weather)")
	assert.Contains(t, system.Text, `"required":["city","temp_c"]`)
}
