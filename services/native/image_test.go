package native

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
)

func imageBlock(data []byte, enc *base64.Encoding) models.Block {
	return models.Block{Kind: models.BlockImage, MediaType: "image/png", Data: enc.EncodeToString(data)}
}

// The images of a conversation reach Cursor where the API holds them: the
// user message's selected images (bytes, as the official SDK sends them),
// and base64 content in the history of user turns and tool results.
func TestImagesReachTheRun(t *testing.T) {
	first, second, shot := nativetest.PNG(1, 1), nativetest.PNG(2, 2), nativetest.PNG(4, 3)
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportSSE)
	conv := []models.Message{
		{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockText, Text: "look"}, imageBlock(first, base64.StdEncoding)}},
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: "call_1", Name: "screenshot", Arguments: `{}`}}},
		{Role: models.RoleTool, ToolCallID: "call_1", Blocks: []models.Block{imageBlock(shot, base64.StdEncoding)}},
		// The last message: unpadded base64, and no text.
		{Role: models.RoleUser, Blocks: []models.Block{imageBlock(second, base64.RawStdEncoding)}},
	}
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv,
		Tools: []models.Tool{{Name: "screenshot", Parameters: []byte(`{"type":"object"}`)}}})
	require.NoError(t, err)
	assert.Equal(t, "ok", got.text)

	runs := srv.Runs()
	require.Len(t, runs, 1)
	r := runs[0]
	assert.Equal(t, imagesOnlyText, r.UserText(), "a user message of images alone has text")
	sel := r.Images()
	require.Len(t, sel, 1)
	assert.Equal(t, second, sel[0].GetData())
	assert.Equal(t, "image/png", sel[0].GetMimeType())
	assert.NotEmpty(t, sel[0].GetUuid())

	hist := r.Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages()
	require.Len(t, hist, 3)
	u := hist[0].GetUser().GetContent()
	require.Len(t, u, 2)
	assert.Equal(t, "look", u[0].GetText().GetText())
	assert.Equal(t, base64.StdEncoding.EncodeToString(first), u[1].GetImage().GetData())
	assert.Equal(t, "image/png", u[1].GetImage().GetMimeType())
	tool := hist[2].GetTool().GetContent()
	require.Len(t, tool, 2)
	assert.Equal(t, "(the result is the images that follow)", tool[0].GetText().GetText())
	assert.Equal(t, base64.StdEncoding.EncodeToString(shot), tool[1].GetImage().GetData())
}

// The history keeps the client's order of text and images, in user
// turns and tool results alike.
func TestHistoryImagesInOrder(t *testing.T) {
	one, two, shot := nativetest.PNG(1, 1), nativetest.PNG(2, 2), nativetest.PNG(4, 3)
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportSSE)
	text := func(s string) models.Block { return models.Block{Kind: models.BlockText, Text: s} }
	conv := []models.Message{
		{Role: models.RoleUser, Blocks: []models.Block{imageBlock(one, base64.StdEncoding), text("this one,"), imageBlock(two, base64.StdEncoding), text("and that one")}},
		{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: "call_1", Name: "screenshot", Arguments: `{}`}}},
		{Role: models.RoleTool, ToolCallID: "call_1", Blocks: []models.Block{imageBlock(shot, base64.StdEncoding), text("the screen, above")}},
		user("compare"),
	}
	_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv,
		Tools: []models.Tool{{Name: "screenshot", Parameters: []byte(`{"type":"object"}`)}}})
	require.NoError(t, err)
	runs := srv.Runs()
	require.Len(t, runs, 1)
	hist := runs[0].Request.GetAction().GetUserMessageAction().GetConversationHistory().GetMessages()
	require.Len(t, hist, 3)
	u := hist[0].GetUser().GetContent()
	require.Len(t, u, 4)
	assert.Equal(t, base64.StdEncoding.EncodeToString(one), u[0].GetImage().GetData())
	assert.Equal(t, "this one,", u[1].GetText().GetText())
	assert.Equal(t, base64.StdEncoding.EncodeToString(two), u[2].GetImage().GetData())
	assert.Equal(t, "and that one", u[3].GetText().GetText())
	tool := hist[2].GetTool().GetContent()
	require.Len(t, tool, 2)
	assert.Equal(t, base64.StdEncoding.EncodeToString(shot), tool[0].GetImage().GetData())
	assert.Equal(t, "the screen, above", tool[1].GetText().GetText())
}

// A tool result's images go back to the parked run as MCP image content.
func TestImagesOfAToolResultResumeTheRun(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(nativetest.Call{Tool: "screenshot", Args: map[string]any{}}),
			nativetest.Text("Seen."),
		}}
	}})
	c := newClient(t, srv, TransportHTTP2)
	tools := []models.Tool{{Name: "screenshot", Parameters: []byte(`{"type":"object"}`)}}
	conv := []models.Message{user("take a screenshot")}
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	require.NoError(t, err)
	require.Len(t, got.calls, 1)
	shot := nativetest.PNG(5, 5)
	conv = append(conv,
		models.Message{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: got.calls[0].ID, Name: "screenshot", Arguments: "{}"}}},
		models.Message{Role: models.RoleTool, ToolCallID: got.calls[0].ID, Blocks: []models.Block{{Kind: models.BlockText, Text: "the screen:"}, imageBlock(shot, base64.StdEncoding)}})
	got, _, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	require.NoError(t, err)
	assert.Equal(t, "Seen.", got.text)

	runs := srv.Runs()
	require.Len(t, runs, 1, "the parked run went on")
	content := runs[0].LastResult()
	require.Len(t, content, 2)
	assert.Equal(t, "the screen:", content[0].GetText().GetText())
	assert.Equal(t, shot, content[1].GetImage().GetData())
	assert.Equal(t, "image/png", content[1].GetImage().GetMimeType())
}

// Data that is not base64 is the client's error, told before any run.
func TestImageNotBase64(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	c := newClient(t, srv, TransportSSE)
	for _, data := range []string{"not base64!", ""} {
		_, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{
			user("hi"),
			{Role: models.RoleUser, Blocks: []models.Block{{Kind: models.BlockImage, MediaType: "image/png", Data: data}}},
		}})
		var me *models.Error
		require.ErrorAs(t, err, &me, "%q", data)
		assert.Equal(t, http.StatusBadRequest, me.Status)
		assert.Contains(t, me.Message, "a message of role user has an image whose data is not base64")
	}
	assert.Empty(t, srv.Runs())
}

// A bad image in the result of a parked call is the same 400: the run it
// would have resumed is given up, and nothing is sent to it.
func TestImageNotBase64InAResult(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.ToolCalls(nativetest.Call{Tool: "screenshot", Args: map[string]any{}}), nativetest.Text("Seen.")}}
	}})
	c := newClient(t, srv, TransportSSE)
	tools := []models.Tool{{Name: "screenshot", Parameters: []byte(`{"type":"object"}`)}}
	conv := []models.Message{user("take a screenshot")}
	got, _, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	require.NoError(t, err)
	require.Len(t, got.calls, 1)
	conv = append(conv,
		models.Message{Role: models.RoleAssistant, Blocks: []models.Block{{Kind: models.BlockToolCall, ID: got.calls[0].ID, Name: "screenshot", Arguments: "{}"}}},
		models.Message{Role: models.RoleTool, ToolCallID: got.calls[0].ID, Blocks: []models.Block{{Kind: models.BlockImage, MediaType: "image/png", Data: "%%%"}}})
	_, _, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: conv, Tools: tools})
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, http.StatusBadRequest, me.Status)
	assert.Contains(t, me.Message, "the result of tool call")
	assert.Zero(t, c.Parked())
	runs := srv.Runs()
	require.Len(t, runs, 1, "no fresh run for a bad request")
	for _, e := range runs[0].Execs {
		if e.Kind == "mcp_args" {
			assert.Nil(t, e.Answer, "no result was sent to the parked call")
		}
	}
}
