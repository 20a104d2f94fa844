package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Codex CLI offers apply_patch as a custom (freeform) tool with a Lark
// grammar: the model writes the patch as raw text, and the call comes
// back as a custom_tool_call whose input is that text.

const (
	codexPatchGrammar = `start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?`
	codexPatch = "*** Begin Patch\n*** Update File: main.go\n@@\n-\tfmt.Println(\"hi\")\n+\tfmt.Println(\"<hi> & \\\"bye\\\"\")\n*** End Patch"
)

func TestResponsesCustomTool(t *testing.T) {
	applyPatch := responses.ToolUnionParam{OfCustom: &responses.CustomToolParam{
		Name:        "apply_patch",
		Description: openai.String("Use the `apply_patch` tool to edit files."),
		Format: shared.CustomToolInputFormatUnionParam{OfGrammar: &shared.CustomToolInputFormatGrammarParam{
			Syntax: "lark", Definition: codexPatchGrammar,
		}},
	}}
	tools := []responses.ToolUnionParam{respReadFile, applyPatch}
	var enc strings.Builder
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false) // as a model writes it
	require.NoError(t, e.Encode(map[string]string{"input": codexPatch}))
	args := strings.TrimSpace(enc.String())
	// The model may write the input as the JSON it is asked for, or bare,
	// as Codex's own description of apply_patch tells it to.
	turns := map[string][]string{
		"json": {"Editing main.go.\nTRIGGER\n", `<invoke name="apply_patch">`, args[:20], args[20:], `</invoke>`},
		"bare": {"Editing main.go.\nTRIGGER\n", "<invoke name=\"apply_patch\">\n" + codexPatch[:30], codexPatch[30:] + "\n</invoke>"},
	}
	params := responses.ResponseNewParams{
		Model: "claude-sonnet-4.6", Input: userInput("Make main.go say bye."), Tools: tools,
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfCustomTool: &responses.ToolChoiceCustomParam{Name: "apply_patch"}},
	}
	check := func(t *testing.T, output []responses.ResponseOutputItemUnion) responses.ResponseCustomToolCall {
		t.Helper()
		require.Len(t, output, 2, "the text, then the call")
		assert.Equal(t, "message", output[0].Type)
		require.Equal(t, "custom_tool_call", output[1].Type)
		call := output[1].AsCustomToolCall()
		assert.Equal(t, "apply_patch", call.Name)
		assert.Equal(t, codexPatch, call.Input, "the patch as the model wrote it, not JSON")
		assert.True(t, strings.HasPrefix(call.ID, "ctc_"), call.ID)
		assert.True(t, strings.HasPrefix(call.CallID, "call_"), call.CallID)
		return call
	}
	for _, tc := range []struct {
		body      string
		streaming bool
	}{{"json", false}, {"json", true}, {"bare", false}, {"bare", true}} {
		t.Run(tc.body+map[bool]string{false: " non-streaming", true: " streaming"}[tc.streaming], func(t *testing.T) {
			streaming := tc.streaming
			// STREAM_ARGS_AFTER=0 streams every call's arguments as they
			// come, which a custom call must still not show.
			s := newStack(t, map[string]string{"STREAM_ARGS_AFTER": "0"}, script(t, turns[tc.body], []string{"Patched."}))
			client := s.sdk("sk-any")
			var call responses.ResponseCustomToolCall
			if streaming {
				out, err := readStream(t, client.Responses.NewStreaming(context.Background(), params))
				require.NoError(t, err)
				require.NotNil(t, out.Final)
				call = check(t, out.Final.Output)
				var deltas []string
				var done string
				for _, e := range out.Events {
					switch e.Type {
					case "response.custom_tool_call_input.delta":
						deltas = append(deltas, e.Delta)
					case "response.custom_tool_call_input.done":
						done = e.Input
					case "response.function_call_arguments.delta", "response.function_call_arguments.done":
						t.Errorf("a custom call streams its input, not arguments: %s", e.RawJSON())
					}
				}
				assert.Equal(t, []string{codexPatch}, deltas)
				assert.Equal(t, codexPatch, done)
				require.Len(t, out.Snapshot.Output, 2)
				assert.Equal(t, codexPatch, out.Snapshot.Output[1].Input, "the library's accumulator rebuilds the input")
			} else {
				res, err := client.Responses.New(context.Background(), params)
				require.NoError(t, err)
				call = check(t, res.Output)
				assert.Equal(t, "Editing main.go.", res.OutputText())
			}

			system := s.up.Requests()[0].Messages[0]
			require.Equal(t, "system", system.Role)
			assert.Contains(t, system.Text, "apply_patch")
			assert.Contains(t, system.Text, "lark grammar", "the model learns the input's grammar")
			assert.Contains(t, system.Text, `*** Begin Patch`)
			assert.Contains(t, system.Text, "read_file")

			// Codex sends the call and its output back as history.
			params := params
			params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
			params.Input = itemsInput(
				responses.ResponseInputItemParamOfMessage("Make main.go say bye.", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfCustomToolCall(call.CallID, call.Input, call.Name),
				responses.ResponseInputItemParamOfCustomToolCallOutput(call.CallID, "Success. Updated the following files:\nM main.go"),
			)
			second, err := client.Responses.New(context.Background(), params)
			require.NoError(t, err)
			assert.Equal(t, "Patched.", second.OutputText())
			var replay strings.Builder
			for _, m := range s.up.Requests()[1].Messages {
				replay.WriteString(m.Role + ": " + m.Text + "\n")
			}
			assert.Contains(t, replay.String(), `<invoke name="apply_patch">`+args+`</invoke>`, "the call replays as the model wrote it")
			assert.Contains(t, replay.String(), "Updated the following files")
			assert.NotContains(t, s.logs.String(), "(custom)", "the custom tool is not dropped")
		})
	}
}
