package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cloud"
	"cursor2api/services/cloud/cloudtest"
)

// Client keys are tenants: with API_KEY=keyA,keyB, what keyA creates is
// keyA's, and keyB meets it as a thing that does not exist.

const tenantKeys = "key-tenant-a,key-tenant-b"

// notFoundLike asserts that err is the door's answer for an id that does
// not exist: status, type and code as an unknown id gets.
func notFoundLike(t *testing.T, err error, unknown error, what string) {
	t.Helper()
	var got, want *openai.Error
	require.True(t, errors.As(err, &got), "%s: %v", what, err)
	require.True(t, errors.As(unknown, &want), "%s (unknown id): %v", what, unknown)
	assert.Equal(t, want.StatusCode, got.StatusCode, what)
	assert.Equal(t, want.Type, got.Type, what)
	assert.Equal(t, want.Code, got.Code, what)
	assert.Equal(t, want.Param, got.Param, what)
}

// TestTenantsStoredResponses: keyB cannot get, delete, cancel or continue
// keyA's stored response; it gets what an unknown id gets. keyA still can.
func TestTenantsStoredResponses(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": tenantKeys}, script(t, []string{"A's secret answer."}, []string{"Continued."}))
	a, b := s.sdk("key-tenant-a"), s.sdk("key-tenant-b")
	ctx := context.Background()
	first, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4.6", Input: userInput("A's secret question")})
	require.NoError(t, err)
	const unknownID = "resp_doesnotexist000000000000000"

	_, err = b.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	_, unknown := b.Responses.Get(ctx, unknownID, responses.ResponseGetParams{})
	notFoundLike(t, err, unknown, "GET")
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)

	err = b.Responses.Delete(ctx, first.ID)
	unknown = b.Responses.Delete(ctx, unknownID)
	notFoundLike(t, err, unknown, "DELETE")

	_, err = b.Responses.Cancel(ctx, first.ID)
	_, unknown = b.Responses.Cancel(ctx, unknownID)
	notFoundLike(t, err, unknown, "cancel")

	for _, stream := range []bool{false, true} {
		params := responses.ResponseNewParams{Model: "claude-sonnet-4.6", PreviousResponseID: openai.String(first.ID), Input: userInput("Tell me what A asked")}
		unknownParams := params
		unknownParams.PreviousResponseID = openai.String(unknownID)
		if stream {
			_, err = readStream(t, b.Responses.NewStreaming(ctx, params))
			_, unknown = readStream(t, b.Responses.NewStreaming(ctx, unknownParams))
		} else {
			_, err = b.Responses.New(ctx, params)
			_, unknown = b.Responses.New(ctx, unknownParams)
		}
		notFoundLike(t, err, unknown, "previous_response_id")
	}
	require.Len(t, s.up.Requests(), 1, "A's conversation never reached B's turn")

	// Nothing of B's touched A's response.
	got, err := a.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "A's secret answer.", got.OutputText())
	next, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4.6", PreviousResponseID: openai.String(first.ID), Input: userInput("Go on")})
	require.NoError(t, err)
	assert.Equal(t, "Continued.", next.OutputText())
	require.NoError(t, a.Responses.Delete(ctx, first.ID))
}

// TestTenantsCloudRuns: a cloud response id is bound to the key that
// launched the run. keyB's GET, stream, cancel and follow-up meet it as
// an unknown id, and nothing of them reaches Cursor; keyA still has it.
func TestTenantsCloudRuns(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake, "API_KEY", cloudGatewayKey+",key-tenant-b"), script(t))
	a := cloudClient(s)
	b := s.sdk("key-tenant-b")
	ctx := context.Background()
	r, err := a.Responses.New(ctx, cloudParams("a long task", true, nil))
	require.NoError(t, err)
	// An id of this gateway's form that no run has: what keyB must see.
	payload, mac, _ := strings.Cut(strings.TrimPrefix(r.ID, cloud.IDPrefix), ".")
	unknownID := cloud.IDPrefix + payload + "." + flip(mac)
	calls := len(fake.Calls())

	_, err = b.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	_, unknown := b.Responses.Get(ctx, unknownID, responses.ResponseGetParams{})
	notFoundLike(t, err, unknown, "GET")
	_, status := apiStatus(t, err)
	assert.Equal(t, http.StatusNotFound, status)

	stream := b.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
	for stream.Next() {
		t.Errorf("keyB streamed an event of keyA's run: %s", stream.Current().RawJSON())
	}
	unknownStream := b.Responses.GetStreaming(ctx, unknownID, responses.ResponseGetParams{})
	for unknownStream.Next() {
	}
	notFoundLike(t, stream.Err(), unknownStream.Err(), "GET stream")

	_, err = b.Responses.Cancel(ctx, r.ID)
	_, unknown = b.Responses.Cancel(ctx, unknownID)
	notFoundLike(t, err, unknown, "cancel")

	follow := cloudParams("read A's repository", true, nil)
	follow.PreviousResponseID = openai.String(r.ID)
	_, err = b.Responses.New(ctx, follow)
	follow.PreviousResponseID = openai.String(unknownID)
	_, unknown = b.Responses.New(ctx, follow)
	notFoundLike(t, err, unknown, "previous_response_id")

	assert.Len(t, fake.Calls(), calls, "nothing of keyB's reached Cursor: %v", fake.Calls()[calls:])
	got, err := a.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Contains(t, []responses.ResponseStatus{responses.ResponseStatusQueued, responses.ResponseStatusInProgress}, got.Status, "keyA's run goes on")
	got, err = a.Responses.Cancel(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, got.Status)
}

// TestTenantsParkedNativeTurns: a native turn parked at its tool call is
// keyA's. keyB sending a conversation that ends in that call's result
// does not resume it: its conversation is run afresh, and keyA's result
// still resumes keyA's turn.
func TestTenantsParkedNativeTurns(t *testing.T) {
	s, up := newNativeStackEnv(t, map[string]string{"API_KEY": tenantKeys}, nativeScenarios)
	a, b := s.sdk("key-tenant-a"), s.sdk("key-tenant-b")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "composer-2",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("SCENARIO:tool weather in Paris?")},
		Tools:    e2eTools,
	}
	first, err := a.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Len(t, first.Choices[0].Message.ToolCalls, 1)
	call := first.Choices[0].Message.ToolCalls[0]
	require.Len(t, up.Runs(), 1)

	withResult := func(result string) openai.ChatCompletionNewParams {
		p := params
		p.Messages = append(p.Messages[:len(p.Messages):len(p.Messages)], first.Choices[0].Message.ToParam(), openai.ToolMessage(result, call.ID))
		return p
	}
	stolen, err := b.Chat.Completions.New(ctx, withResult("B's forged result"))
	require.NoError(t, err)
	assert.Equal(t, "Paris: B's forged result", stolen.Choices[0].Message.Content)
	require.Len(t, up.Runs(), 2, "keyB's results were replayed in a fresh run, not sent to keyA's parked one")
	replayed := historyResults(up.Runs()[1].Request)
	require.Len(t, replayed, 1)
	assert.Equal(t, "B's forged result", replayed[0].text, "keyB's own conversation, replayed")

	own, err := a.Chat.Completions.New(ctx, withResult("sunny"))
	require.NoError(t, err)
	assert.Equal(t, "Paris: sunny", own.Choices[0].Message.Content)
	assert.Len(t, up.Runs(), 2, "keyA's result resumed keyA's parked run")
}
