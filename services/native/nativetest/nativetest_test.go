package nativetest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/aiserverv1/aiserverv1connect"
	"cursor2api/services/native/nativetest"
)

// login exchanges the default API key for an access token.
func login(t *testing.T, srv *nativetest.Server) string {
	t.Helper()
	status, body := post(t, srv.URL+"/auth/exchange_user_api_key", nativetest.DefaultAPIKey)
	require.Equal(t, http.StatusOK, status, body)
	var tok struct{ AccessToken, RefreshToken, AuthID string }
	require.NoError(t, json.Unmarshal([]byte(body), &tok))
	require.NotEmpty(t, tok.AccessToken)
	return tok.AccessToken
}

func post(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// h2c is an HTTP client that speaks HTTP/2 without TLS, as the SDK does
// for an http:// backend when the server config asks for HTTP/2.
func h2c() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// bearer adds the access token and the SDK's client headers to every call.
func bearer(token, version string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			req.Header().Set("x-cursor-client-version", version)
			return next(ctx, req)
		}
	}), streamHeaders{token, version})
}

type streamHeaders struct{ token, version string }

func (h streamHeaders) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }
func (h streamHeaders) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+h.token)
		conn.RequestHeader().Set("x-cursor-client-version", h.version)
		return conn
	}
}
func (h streamHeaders) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// session is one run seen from the client side, over either transport.
type session struct {
	send func(*agentv1.AgentClientMessage) error
	recv func() (*agentv1.AgentServerMessage, error)
	// hangUp ends the client side of the run.
	hangUp func()
}

// open starts a run and sends its run_request. Over SSE the run_request
// is appended before RunSSE is called, as the SDK may do.
func open(ctx context.Context, t *testing.T, srv *nativetest.Server, tr nativetest.Transport, req *agentv1.AgentRunRequest) *session {
	t.Helper()
	token := login(t, srv)
	opts := bearer(token, "sdk-1.0.32")
	first := &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_RunRequest{RunRequest: req}}
	if tr == nativetest.Bidi {
		stream := agentv1connect.NewAgentServiceClient(h2c(), srv.URL, opts).Run(ctx)
		require.NoError(t, stream.Send(first))
		// Cancelling ctx alone does not reset an HTTP/2 stream whose request
		// body is still open: the client must close its response side.
		return &session{send: stream.Send, recv: stream.Receive, hangUp: func() { _ = stream.CloseResponse() }}
	}
	id := fmt.Sprintf("req-%d", time.Now().UnixNano())
	bidi := aiserverv1connect.NewBidiServiceClient(http.DefaultClient, srv.URL, opts)
	var mu sync.Mutex
	seq := int64(0)
	send := func(m *agentv1.AgentClientMessage) error {
		b, err := proto.Marshal(m)
		if err != nil {
			return err
		}
		mu.Lock()
		n := seq
		seq++
		mu.Unlock()
		_, err = bidi.BidiAppend(ctx, connect.NewRequest(&aiserverv1.BidiAppendRequest{
			Data: hex.EncodeToString(b), RequestId: &aiserverv1.BidiRequestId{RequestId: id}, AppendSeqno: n,
		}))
		return err
	}
	require.NoError(t, send(first))
	stream, err := agentv1connect.NewAgentServiceClient(http.DefaultClient, srv.URL, opts).RunSSE(ctx, connect.NewRequest(&aiserverv1.BidiRequestId{RequestId: id}))
	require.NoError(t, err)
	return &session{send: send, hangUp: func() { _ = stream.Close() }, recv: func() (*agentv1.AgentServerMessage, error) {
		if stream.Receive() {
			return stream.Msg(), nil
		}
		if err := stream.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}}
}

func runRequest(text string, tools ...string) *agentv1.AgentRunRequest {
	req := &agentv1.AgentRunRequest{
		ConversationState: &agentv1.ConversationStateStructure{},
		Action: &agentv1.ConversationAction{Action: &agentv1.ConversationAction_UserMessageAction{UserMessageAction: &agentv1.UserMessageAction{
			UserMessage: &agentv1.UserMessage{Text: text, MessageId: "m1"},
		}}},
		RequestedModel: &agentv1.RequestedModel{ModelId: "composer-2"},
		McpTools:       &agentv1.McpTools{},
		ConversationId: proto.String("conv-1"),
	}
	for _, tool := range tools {
		req.McpTools.McpTools = append(req.McpTools.McpTools, &agentv1.McpToolDefinition{
			Name: "custom-user-tools-" + tool, ProviderIdentifier: "custom-user-tools", ToolName: tool,
		})
	}
	return req
}

// seen is what the client side of a turn saw.
type seen struct {
	text, thinking string
	events         []string // the arms of updates and execs, in order
	ended          *agentv1.TurnEndedUpdate
	checkpoint     *agentv1.ConversationStateStructure
	err            error
}

func execMsg(m *agentv1.ExecClientMessage) *agentv1.AgentClientMessage {
	return &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientMessage{ExecClientMessage: m}}
}

func closeMsg(id uint32) *agentv1.AgentClientMessage {
	return &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
		Message: &agentv1.ExecClientControlMessage_StreamClose{StreamClose: &agentv1.ExecClientStreamClose{Id: id}},
	}}}
}

// refuse answers an exec the way a gateway does: request_context with an
// empty context, an MCP tool with a result naming its arguments, and a
// built-in exec with its rejected (shell, write) or permission_denied
// (read) arm. Each answer is followed by its stream_close.
func refuse(e *agentv1.ExecServerMessage) []*agentv1.AgentClientMessage {
	m := &agentv1.ExecClientMessage{Id: e.GetId(), ExecId: e.GetExecId()}
	switch {
	case e.GetRequestContextArgs() != nil:
		m.Message = &agentv1.ExecClientMessage_RequestContextResult{RequestContextResult: &agentv1.RequestContextResult{
			Result: &agentv1.RequestContextResult_Success{Success: &agentv1.RequestContextSuccess{RequestContext: &agentv1.RequestContext{}}}}}
	case e.GetMcpArgs() != nil:
		args, _ := json.Marshal(e.GetMcpArgs().GetArgs()["city"].AsInterface())
		m.Message = &agentv1.ExecClientMessage_McpResult{McpResult: &agentv1.McpResult{Result: &agentv1.McpResult_Success{Success: &agentv1.McpSuccess{
			Content: []*agentv1.McpToolResultContentItem{{Content: &agentv1.McpToolResultContentItem_Text{Text: &agentv1.McpTextContent{Text: e.GetMcpArgs().GetToolName() + "(" + string(args) + ")"}}}},
		}}}}
	case e.GetShellArgs() != nil:
		m.Message = &agentv1.ExecClientMessage_ShellResult{ShellResult: &agentv1.ShellResult{Result: &agentv1.ShellResult_Rejected{Rejected: &agentv1.ShellRejected{
			Command: e.GetShellArgs().GetCommand(), Reason: "the gateway runs no local tools"}}}}
	case e.GetReadArgs() != nil:
		m.Message = &agentv1.ExecClientMessage_ReadResult{ReadResult: &agentv1.ReadResult{Result: &agentv1.ReadResult_PermissionDenied{PermissionDenied: &agentv1.ReadPermissionDenied{
			Path: e.GetReadArgs().GetPath()}}}}
	case e.GetWriteArgs() != nil:
		m.Message = &agentv1.ExecClientMessage_WriteResult{WriteResult: &agentv1.WriteResult{Result: &agentv1.WriteResult_Rejected{Rejected: &agentv1.WriteRejected{
			Path: e.GetWriteArgs().GetPath(), Reason: "no local tools"}}}}
	default:
		return []*agentv1.AgentClientMessage{{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
			Message: &agentv1.ExecClientControlMessage_Throw{Throw: &agentv1.ExecClientThrow{Id: e.GetId(), Error: "unsupported"}}}}}}
	}
	return []*agentv1.AgentClientMessage{execMsg(m), closeMsg(e.GetId())}
}

// play reads a turn to its end, answering execs with answer and KV
// messages from blobs.
func play(s *session, blobs map[string][]byte, answer func(*agentv1.ExecServerMessage) []*agentv1.AgentClientMessage) seen {
	var out seen
	for {
		m, err := s.recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				out.err = err
			}
			return out
		}
		var replies []*agentv1.AgentClientMessage
		switch {
		case m.GetInteractionUpdate() != nil:
			u := m.GetInteractionUpdate()
			arm := string(u.ProtoReflect().WhichOneof(u.ProtoReflect().Descriptor().Oneofs().ByName("message")).Name())
			out.events = append(out.events, arm)
			out.text += u.GetTextDelta().GetText()
			out.thinking += u.GetThinkingDelta().GetText()
			if u.GetTurnEnded() != nil {
				out.ended = u.GetTurnEnded()
			}
		case m.GetExecServerMessage() != nil:
			e := m.GetExecServerMessage()
			out.events = append(out.events, "exec:"+string(e.ProtoReflect().WhichOneof(e.ProtoReflect().Descriptor().Oneofs().ByName("message")).Name()))
			replies = answer(e)
		case m.GetKvServerMessage() != nil:
			kv := m.GetKvServerMessage()
			ans := &agentv1.KvClientMessage{Id: kv.GetId()}
			if set := kv.GetSetBlobArgs(); set != nil {
				blobs[hex.EncodeToString(set.GetBlobId())] = set.GetBlobData()
				ans.Message = &agentv1.KvClientMessage_SetBlobResult{SetBlobResult: &agentv1.SetBlobResult{}}
			} else {
				res := &agentv1.GetBlobResult{}
				if b, ok := blobs[hex.EncodeToString(kv.GetGetBlobArgs().GetBlobId())]; ok {
					res.BlobData = b
				}
				ans.Message = &agentv1.KvClientMessage_GetBlobResult{GetBlobResult: res}
			}
			replies = []*agentv1.AgentClientMessage{{Message: &agentv1.AgentClientMessage_KvClientMessage{KvClientMessage: ans}}}
		case m.GetConversationCheckpointUpdate() != nil:
			out.checkpoint = m.GetConversationCheckpointUpdate()
		}
		for _, r := range replies {
			if err := s.send(r); err != nil {
				out.err = err
				return out
			}
		}
	}
}

var transports = []nativetest.Transport{nativetest.SSE, nativetest.Bidi}

func TestTurns(t *testing.T) {
	lookup := func(city string) nativetest.Call {
		return nativetest.Call{Tool: "lookup", Args: map[string]any{"city": city}}
	}
	for _, tc := range []struct {
		name   string
		script nativetest.Script
		check  func(t *testing.T, got seen, run nativetest.Run)
	}{{
		name:   "text",
		script: nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hel", "lo")}, Usage: nativetest.Usage{Input: 11, Output: 2, CacheRead: 5, CacheWrite: 6, Reasoning: 1}},
		check: func(t *testing.T, got seen, run nativetest.Run) {
			assert.Equal(t, "Hello", got.text)
			require.NotNil(t, got.ended)
			assert.Equal(t, []int64{11, 2, 5, 6, 1}, []int64{got.ended.GetInputTokens(), got.ended.GetOutputTokens(), got.ended.GetCacheReadTokens(), got.ended.GetCacheWriteTokens(), got.ended.GetReasoningTokens()})
			assert.Equal(t, []string{"exec:request_context_args", "text_delta", "text_delta", "turn_ended"}, got.events)
			require.NotNil(t, got.checkpoint, "the checkpoint follows turn_ended")
			assert.Len(t, got.checkpoint.GetTurns(), 1)
			assert.Equal(t, got.checkpoint.GetTurns(), run.Checkpoint.GetTurns())
		},
	}, {
		name:   "thinking then text",
		script: nativetest.Script{Steps: []nativetest.Step{nativetest.Thinking("hm", "m"), nativetest.Tokens(3), nativetest.Text("yes")}},
		check: func(t *testing.T, got seen, _ nativetest.Run) {
			assert.Equal(t, "hmm", got.thinking)
			assert.Equal(t, "yes", got.text)
			assert.Equal(t, []string{"exec:request_context_args", "thinking_delta", "thinking_delta", "thinking_completed", "token_delta", "text_delta", "turn_ended"}, got.events)
		},
	}, {
		name: "tool call waits for its result",
		script: nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(lookup("Paris")),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return "got " + rs[len(rs)-1].Text }),
		}},
		check: func(t *testing.T, got seen, run nativetest.Run) {
			assert.Equal(t, `got lookup("Paris")`, got.text)
			assert.Equal(t, []string{"exec:request_context_args", "tool_call_started", "exec:mcp_args", "tool_call_completed", "text_delta", "turn_ended"}, got.events)
			require.Len(t, run.Execs, 2)
			e := run.Execs[1]
			assert.Equal(t, "mcp_args", e.Kind)
			assert.Equal(t, "custom-user-tools-lookup", e.Name)
			assert.Equal(t, "call_1", e.CallID)
			assert.Equal(t, "mcp_result.success", e.Outcome)
			assert.True(t, e.Closed)
		},
	}, {
		name: "parallel calls announced before either is asked",
		script: nativetest.Script{Steps: []nativetest.Step{
			nativetest.ToolCalls(lookup("Oslo"), lookup("Rome")),
			nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return rs[1].Text + "+" + rs[2].Text }),
		}},
		check: func(t *testing.T, got seen, run nativetest.Run) {
			assert.Equal(t, `lookup("Oslo")+lookup("Rome")`, got.text)
			assert.Equal(t, []string{"exec:request_context_args", "tool_call_started", "tool_call_started", "exec:mcp_args", "exec:mcp_args", "tool_call_completed", "tool_call_completed", "text_delta", "turn_ended"}, got.events)
			assert.Equal(t, []string{"call_1", "call_2"}, []string{run.Execs[1].CallID, run.Execs[2].CallID})
		},
	}, {
		name: "built-in execs refused",
		script: nativetest.Script{Steps: []nativetest.Step{
			nativetest.Exec(nativetest.ShellExec("rm -rf /")),
			nativetest.Exec(nativetest.ReadExec("/etc/passwd")),
			nativetest.Exec(nativetest.WriteExec("/tmp/x", "y")),
			nativetest.Exec(nativetest.LsExec("/")),
			nativetest.Text("done"),
		}},
		check: func(t *testing.T, got seen, run nativetest.Run) {
			assert.Equal(t, "done", got.text)
			var outcomes []string
			for _, e := range run.Execs[1:] {
				outcomes = append(outcomes, e.Kind+" -> "+e.Outcome)
			}
			assert.Equal(t, []string{
				"shell_args -> shell_result.rejected", "read_args -> read_result.permission_denied",
				"write_args -> write_result.rejected", "ls_args -> throw",
			}, outcomes)
			assert.Equal(t, "call_shell", run.Execs[1].CallID)
		},
	}, {
		name:   "heartbeats",
		script: nativetest.Script{Steps: []nativetest.Step{nativetest.Heartbeats(3), nativetest.Text("x")}},
		check: func(t *testing.T, got seen, _ nativetest.Run) {
			assert.Equal(t, []string{"exec:request_context_args", "heartbeat", "heartbeat", "heartbeat", "text_delta", "turn_ended"}, got.events)
		},
	}, {
		name:   "cut stream",
		script: nativetest.Script{Steps: []nativetest.Step{nativetest.Text("part"), nativetest.Cut()}},
		check: func(t *testing.T, got seen, run nativetest.Run) {
			assert.NoError(t, got.err, "a cut stream ends cleanly")
			assert.Nil(t, got.ended, "without turn_ended")
			assert.Nil(t, got.checkpoint)
			assert.Equal(t, "part", got.text)
			assert.NoError(t, run.Err)
		},
	}, {
		name:   "quota error",
		script: nativetest.Script{Steps: []nativetest.Step{nativetest.Text("a"), nativetest.Fail(nativetest.ErrQuota())}},
		check: func(t *testing.T, got seen, _ nativetest.Run) {
			assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(got.err))
			ed, ok := nativetest.ErrorDetailsOf(got.err)
			require.True(t, ok, "the error carries aiserver.v1.ErrorDetails: %v", got.err)
			assert.Equal(t, aiserverv1.ErrorDetails_ERROR_PRO_USER_USAGE_LIMIT, ed.GetError())
			assert.Equal(t, "Usage limit reached", ed.GetDetails().GetTitle())
			assert.Equal(t, "a", got.text, "the updates before the error arrive")
		},
	}} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+string(tr), func(t *testing.T) {
				srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script { return tc.script }})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				got := play(open(ctx, t, srv, tr, runRequest("hi", "lookup")), map[string][]byte{}, refuse)
				if tc.name != "quota error" {
					require.NoError(t, got.err)
				}
				runs := srv.Runs()
				require.Len(t, runs, 1)
				run := runs[0]
				assert.Equal(t, tr, run.Transport)
				assert.Equal(t, "hi", run.UserText())
				assert.Equal(t, "composer-2", run.Model())
				assert.Equal(t, "sdk-1.0.32", run.Header.Get("x-cursor-client-version"))
				require.NotEmpty(t, run.Execs)
				assert.Equal(t, "request_context_result.success", run.Execs[0].Outcome)
				tc.check(t, got, run)
				require.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
			})
		}
	}
}

// TestConversationBlobs plays two turns: the second's conversation_state is
// the first checkpoint, and the fake fetches the first turn's blob; a
// client that lost it gets "Blob not found".
func TestConversationBlobs(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			blobs := map[string][]byte{}
			first := play(open(ctx, t, srv, tr, runRequest("one")), blobs, refuse)
			require.NoError(t, first.err)
			require.Len(t, blobs, 1, "the client kept the turn's blob")

			req := runRequest("two")
			req.ConversationState = first.checkpoint
			second := play(open(ctx, t, srv, tr, req), blobs, refuse)
			require.NoError(t, second.err)
			assert.Len(t, second.checkpoint.GetTurns(), 2)
			runs := srv.Runs()
			require.Len(t, runs, 2)
			require.Len(t, runs[1].KV, 2)
			assert.Equal(t, "get_blob_args", runs[1].KV[0].Kind)
			assert.Equal(t, first.checkpoint.GetTurns()[0], runs[1].KV[0].BlobID)

			lost := play(open(ctx, t, srv, tr, req), map[string][]byte{}, refuse)
			assert.Equal(t, connect.CodeNotFound, connect.CodeOf(lost.err))
			assert.Contains(t, lost.err.Error(), "Blob not found")
		})
	}
}

// TestExecNeedsStreamClose: a result without its stream_close leaves the
// fake waiting, as the live server does, until its bound.
func TestExecNeedsStreamClose(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{Wait: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := play(open(ctx, t, srv, nativetest.SSE, runRequest("hi")), map[string][]byte{}, func(e *agentv1.ExecServerMessage) []*agentv1.AgentClientMessage {
		return refuse(e)[:1] // the result, no close
	})
	assert.Equal(t, connect.CodeDeadlineExceeded, connect.CodeOf(got.err))
	assert.Contains(t, got.err.Error(), "stream_close")
	run := srv.Runs()[0]
	assert.False(t, run.Execs[0].Closed)
	assert.Equal(t, "request_context_result.success", run.Execs[0].Outcome)
}

// TestBidiAppendOrder: appends are played in append_seqno order whatever
// order they arrive in, the first ones before RunSSE.
func TestBidiAppendOrder(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{})
	token := login(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bidi := aiserverv1connect.NewBidiServiceClient(http.DefaultClient, srv.URL, bearer(token, "sdk-1.0.32"))
	appendMsg := func(seq int64, m *agentv1.AgentClientMessage) {
		b, err := proto.Marshal(m)
		require.NoError(t, err)
		_, err = bidi.BidiAppend(ctx, connect.NewRequest(&aiserverv1.BidiAppendRequest{Data: hex.EncodeToString(b), RequestId: &aiserverv1.BidiRequestId{RequestId: "r1"}, AppendSeqno: seq}))
		require.NoError(t, err)
	}
	heartbeat := &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ClientHeartbeat{ClientHeartbeat: &agentv1.ClientHeartbeat{}}}
	appendMsg(1, heartbeat)
	appendMsg(0, &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_RunRequest{RunRequest: runRequest("hi")}})
	stream, err := agentv1connect.NewAgentServiceClient(http.DefaultClient, srv.URL, bearer(token, "sdk-1.0.32")).RunSSE(ctx, connect.NewRequest(&aiserverv1.BidiRequestId{RequestId: "r1"}))
	require.NoError(t, err)
	require.True(t, stream.Receive(), "%v", stream.Err())
	e := stream.Msg().GetExecServerMessage()
	require.NotNil(t, e.GetRequestContextArgs())
	for i, m := range refuse(e) {
		appendMsg(int64(2+i), m)
	}
	var text string
	for stream.Receive() {
		text += stream.Msg().GetInteractionUpdate().GetTextDelta().GetText()
		if kv := stream.Msg().GetKvServerMessage(); kv != nil {
			appendMsg(4, &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_KvClientMessage{KvClientMessage: &agentv1.KvClientMessage{
				Id: kv.GetId(), Message: &agentv1.KvClientMessage_SetBlobResult{SetBlobResult: &agentv1.SetBlobResult{}}}}})
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, "ok", text)
	run := srv.Runs()[0]
	assert.Equal(t, "r1", run.RequestID)
	assert.Equal(t, 1, run.Heartbeats)
	require.NotEmpty(t, run.Messages)
	assert.NotNil(t, run.Messages[0].GetClientHeartbeat(), "seqno 1 comes right after the run_request")

	// An append to a finished run is refused.
	b, _ := proto.Marshal(heartbeat)
	_, err = bidi.BidiAppend(ctx, connect.NewRequest(&aiserverv1.BidiAppendRequest{Data: hex.EncodeToString(b), RequestId: &aiserverv1.BidiRequestId{RequestId: "r1"}, AppendSeqno: 5}))
	assert.Equal(t, connect.CodeNotFound, connect.CodeOf(err))
}

// TestCancel: a client that goes away ends the run on the fake.
func TestCancel(t *testing.T) {
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
				return nativetest.Script{Steps: []nativetest.Step{nativetest.Hang(20 * time.Millisecond)}}
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s := open(ctx, t, srv, tr, runRequest("hang"))
			for {
				m, err := s.recv()
				require.NoError(t, err)
				if e := m.GetExecServerMessage(); e != nil {
					for _, r := range refuse(e) {
						require.NoError(t, s.send(r))
					}
				}
				if m.GetInteractionUpdate().GetHeartbeat() != nil {
					break
				}
			}
			assert.Equal(t, 1, srv.InFlight())
			cancel()
			s.hangUp()
			require.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
			run := srv.Runs()[0]
			assert.True(t, run.Ended)
			assert.Equal(t, connect.CodeCanceled, connect.CodeOf(run.Err))
		})
	}
}

func TestGate(t *testing.T) {
	// The token must outlive the dozen calls below that need it valid
	// (a few ms each, tens under -race on a loaded machine), and then
	// expire: the test sleeps until it has.
	const ttl = time.Second
	srv := nativetest.NewServer(t, nativetest.Options{MinClientVersion: "sdk-1.0.30", TokenTTL: ttl})

	status, _ := post(t, srv.URL+"/auth/exchange_user_api_key", "wrong-key")
	assert.Equal(t, http.StatusUnauthorized, status, "an unknown key")
	token := login(t, srv)
	expired := time.Now().Add(ttl) // the server stamped the token before login returned
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "the access token is a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims struct{ Exp int64 }
	require.NoError(t, json.Unmarshal(payload, &claims))
	assert.InDelta(t, time.Now().Add(ttl).Unix(), claims.Exp, 2)

	for _, key := range []string{nativetest.DefaultAPIKey, token, "wrong-key"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		status, body := do(t, req)
		if key == nativetest.DefaultAPIKey {
			assert.Equal(t, http.StatusOK, status)
			assert.Contains(t, body, "apiKeyName")
		} else {
			assert.Equal(t, http.StatusUnauthorized, status, "REST calls take the raw API key, not the access token")
		}
	}
	for _, tc := range []struct{ key string }{{nativetest.DefaultAPIKey}, {"wrong-key"}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+tc.key)
		status, body := do(t, req)
		if tc.key == nativetest.DefaultAPIKey {
			assert.Equal(t, http.StatusOK, status)
			assert.JSONEq(t, `{"items":[{"id":"composer-2","displayName":"Composer 2","description":"Cursor's agent model"},{"id":"claude-4.5-sonnet","displayName":"Sonnet 4.5","description":"Anthropic"}]}`, body)
		} else {
			assert.Equal(t, http.StatusUnauthorized, status)
		}
	}

	ctx := context.Background()
	privacy := func(token, version string) error {
		c := aiserverv1connect.NewDashboardServiceClient(http.DefaultClient, srv.URL, bearer(token, version))
		_, err := c.GetUserPrivacyMode(ctx, connect.NewRequest(&aiserverv1.GetUserPrivacyModeRequest{}))
		return err
	}
	for _, tc := range []struct {
		name, token, version string
		code                 connect.Code
		title                string
	}{
		{"ok", token, "sdk-1.0.32", 0, ""},
		{"newer major", token, "sdk-2.0", 0, ""},
		{"old client", token, "sdk-1.0.29", connect.CodeResourceExhausted, "Update Required"},
		{"no version", token, "", connect.CodeResourceExhausted, "Update Required"},
		{"bad token", "nope", "sdk-1.0.32", connect.CodeUnauthenticated, "Not logged in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := privacy(tc.token, tc.version)
			if tc.code == 0 {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tc.code, connect.CodeOf(err))
			ed, ok := nativetest.ErrorDetailsOf(err)
			require.True(t, ok)
			assert.Equal(t, tc.title, ed.GetDetails().GetTitle())
		})
	}
	time.Sleep(time.Until(expired) + 10*time.Millisecond)
	assert.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(privacy(token, "sdk-1.0.32")), "an expired token")
	calls := srv.CallsTo("/aiserver.v1.DashboardService/GetUserPrivacyMode")
	require.NotEmpty(t, calls)
	assert.Equal(t, "Bearer "+token, calls[0].Header.Get("Authorization"))
}

func TestBadModelAndConfig(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{HTTP2: aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_BIDI_ENABLED})
	token := login(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cfg, err := aiserverv1connect.NewServerConfigServiceClient(http.DefaultClient, srv.URL, bearer(token, "sdk-1.0.32")).
		GetServerConfig(ctx, connect.NewRequest(&aiserverv1.GetServerConfigRequest{}))
	require.NoError(t, err)
	assert.Equal(t, aiserverv1.Http2Config_HTTP2_CONFIG_FORCE_BIDI_ENABLED, cfg.Msg.GetHttp2Config())

	models, err := agentv1connect.NewAgentServiceClient(http.DefaultClient, srv.URL, bearer(token, "sdk-1.0.32"), connect.WithProtoJSON()).
		GetUsableModels(ctx, connect.NewRequest(&agentv1.GetUsableModelsRequest{}))
	require.NoError(t, err)
	require.Len(t, models.Msg.GetModels(), 2)
	assert.Equal(t, "composer-2", models.Msg.GetModels()[0].GetModelId())

	req := runRequest("hi")
	req.RequestedModel.ModelId = "gpt-nope"
	got := play(open(ctx, t, srv, nativetest.Bidi, req), map[string][]byte{}, refuse)
	assert.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(got.err))
	ed, ok := nativetest.ErrorDetailsOf(got.err)
	require.True(t, ok)
	assert.Equal(t, aiserverv1.ErrorDetails_ERROR_BAD_MODEL_NAME, ed.GetError())
	assert.Empty(t, got.events, "nothing is played for a bad model")
}

// TestStreamErrorFraming checks the raw wire of a stream error: HTTP 200,
// then an end-of-stream envelope (flag 0x02) whose JSON carries the error
// and its ErrorDetails, as NATIVE.md describes.
func TestStreamErrorFraming(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{NoRequestContext: true, Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(nativetest.ErrQuota())}}
	}})
	token := login(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := proto.Marshal(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_RunRequest{RunRequest: runRequest("hi")}})
	require.NoError(t, err)
	bidi := aiserverv1connect.NewBidiServiceClient(http.DefaultClient, srv.URL, bearer(token, "sdk-1.0.32"))
	_, err = bidi.BidiAppend(ctx, connect.NewRequest(&aiserverv1.BidiAppendRequest{Data: hex.EncodeToString(first), RequestId: &aiserverv1.BidiRequestId{RequestId: "raw"}}))
	require.NoError(t, err)

	body, _ := proto.Marshal(&aiserverv1.BidiRequestId{RequestId: "raw"})
	env := append([]byte{0, 0, 0, 0, byte(len(body))}, body...)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/agent.v1.AgentService/RunSSE", bytes.NewReader(env))
	req.Header.Set("Content-Type", "application/connect+proto")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-cursor-client-version", "sdk-1.0.32")
	status, raw := do(t, req)
	assert.Equal(t, http.StatusOK, status)
	require.GreaterOrEqual(t, len(raw), 5)
	assert.Equal(t, byte(0x02), raw[0], "end-of-stream flag")
	var end struct {
		Error struct {
			Code    string
			Message string
			Details []struct{ Type, Value string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw[5:]), &end))
	assert.Equal(t, "resource_exhausted", end.Error.Code)
	require.Len(t, end.Error.Details, 1)
	assert.Equal(t, "aiserver.v1.ErrorDetails", end.Error.Details[0].Type)
}

// TestConns counts accepted connections over both protocols the fake
// serves: a kept-alive client costs one, one without keep-alive one per
// call, and an h2c client one for calls in parallel.
func TestConns(t *testing.T) {
	const calls = 5
	for _, tc := range []struct {
		name     string
		client   func() *http.Client
		parallel bool
		want     int64
	}{
		{"http1 keep-alive", func() *http.Client { return &http.Client{Transport: &http.Transport{}} }, false, 1},
		{"http1 no keep-alive", func() *http.Client { return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} }, false, calls},
		{"h2c", h2c, false, 1},
		{"h2c parallel", h2c, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := nativetest.NewServer(t, nativetest.Options{})
			hc := tc.client()
			defer hc.CloseIdleConnections()
			wantProto := 1
			if hc.Transport.(*http.Transport).Protocols != nil {
				wantProto = 2
			}
			call := func() error {
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
				if err != nil {
					return err
				}
				req.Header.Set("Authorization", "Bearer "+nativetest.DefaultAPIKey)
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK || resp.ProtoMajor != wantProto {
					return fmt.Errorf("status %d over %s", resp.StatusCode, resp.Proto)
				}
				return nil
			}
			require.NoError(t, call()) // the first call's connection is up before the parallel ones
			var wg sync.WaitGroup
			errs := make(chan error, calls)
			for range calls - 1 {
				if tc.parallel {
					wg.Go(func() { errs <- call() })
				} else {
					errs <- call()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, srv.Conns())
		})
	}
}
