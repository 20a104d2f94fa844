package native

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// withUnknown is m with an unknown field num carrying data, as a newer
// server's message of a kind the generated schema lacks arrives.
func withUnknown[M proto.Message](m M, num protowire.Number, data string) M {
	raw := protowire.AppendTag(nil, num, protowire.BytesType)
	raw = protowire.AppendString(raw, data)
	m.ProtoReflect().SetUnknown(append(m.ProtoReflect().GetUnknown(), raw...))
	return m
}

// A run stream with messages of kinds the schema does not know (a server
// message, an interaction update, an exec and a KV message of new kinds)
// and known ones with fields it does not know: the turn is read from what
// it knows, the new exec refused, and each unknown kind noted once,
// never its content.
func TestRunToleratesUnknownMessages(t *testing.T) {
	unknown := func(ctx context.Context, turn *nativetest.Turn) error {
		for range 2 {
			msgs := []*agentv1.AgentServerMessage{
				withUnknown(&agentv1.AgentServerMessage{}, 99, "secret payload"),
				{Message: &agentv1.AgentServerMessage_InteractionUpdate{InteractionUpdate: withUnknown(&agentv1.InteractionUpdate{}, 97, "x")}},
				{Message: &agentv1.AgentServerMessage_KvServerMessage{KvServerMessage: withUnknown(&agentv1.KvServerMessage{Id: 77}, 30, "x")}},
				{Message: &agentv1.AgentServerMessage_InteractionUpdate{InteractionUpdate: &agentv1.InteractionUpdate{
					Message: &agentv1.InteractionUpdate_TextDelta{TextDelta: withUnknown(&agentv1.TextDeltaUpdate{Text: "Hel"}, 50, "x")}}}},
			}
			for _, m := range msgs {
				if err := turn.Send(m); err != nil {
					return err
				}
			}
		}
		return nil
	}
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{unknown, nativetest.Exec(withUnknown(&agentv1.ExecServerMessage{}, 60, "x")), nativetest.Text("lo")}}
	}})
	var logs bytes.Buffer
	drift := utils.NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	c := newClient(t, srv, TransportSSE, func(o *Options) { o.Drift = drift })
	got, usage, err := stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
	require.NoError(t, err)
	assert.Equal(t, "HelHello", got.text)
	require.NotNil(t, usage)
	assert.Equal(t, []utils.DriftNotice{
		{Component: "native", Kind: "exec of an unknown kind, refused (field 60)", Count: 1},
		{Component: "native", Kind: "interaction update of an unknown kind (field 97)", Count: 2},
		{Component: "native", Kind: "kv message of an unknown kind, left unanswered (field 30)", Count: 2},
		{Component: "native", Kind: "server message of an unknown kind (field 99)", Count: 2},
	}, drift.Notices())
	assert.Equal(t, 4, strings.Count(logs.String(), "upstream format drift"), logs.String())
	assert.NotContains(t, logs.String(), "secret payload")
	runs := srv.Runs()
	require.Len(t, runs, 1)
	var refused bool
	for _, e := range runs[0].Execs {
		refused = refused || strings.Contains(e.Outcome, "throw")
	}
	assert.True(t, refused, "the exec of an unknown kind is refused, not left waiting: %+v", runs[0].Execs)
}

// A refusal whose error carries a detail of a type the gateway does not
// read beside Cursor's own (itself with a field the schema lacks) is
// read from Cursor's detail as before; the other type is noted once.
func TestErrorWithUnknownDetails(t *testing.T) {
	quota := nativetest.ErrQuota()
	other, err := connect.NewErrorDetail(withUnknown(&agentv1.TextDeltaUpdate{Text: "not an error detail"}, 40, "x"))
	require.NoError(t, err)
	withExtra := connect.NewError(quota.Code(), errors.New(quota.Message()))
	withExtra.AddDetail(other)
	for _, d := range quota.Details() {
		withExtra.AddDetail(d)
	}
	srv := nativetest.NewServer(t, nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Fail(withExtra)}}
	}})
	var logs bytes.Buffer
	drift := utils.NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	c := newClient(t, srv, TransportHTTP2, func(o *Options) { o.Drift = drift })
	_, _, err = stream(t, t.Context(), c, upstream.Request{Model: "composer-2", Conversation: []models.Message{user("hi")}})
	var me *models.Error
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "cursor_quota", me.Code)
	assert.Contains(t, me.Message, "Usage limit reached")
	assert.Equal(t, []utils.DriftNotice{{Component: "native", Kind: `error detail type "agent.v1.TextDeltaUpdate"`, Count: 1}}, drift.Notices())
	assert.NotContains(t, logs.String(), "not an error detail")
}
