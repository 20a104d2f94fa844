package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"cursor2api/services/native/agentv1"
)

// query is an InteractionQuery of the given kind, written as the server
// writes it (the gateway declares the message as a stub).
func query(id uint64, kind protowire.Number) *agentv1.InteractionQuery {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, id)
	var body []byte
	body = protowire.AppendTag(body, 1, protowire.BytesType)
	body = protowire.AppendString(body, "what the model wants")
	b = protowire.AppendTag(b, kind, protowire.BytesType)
	b = protowire.AppendBytes(b, body)
	q := &agentv1.InteractionQuery{}
	q.ProtoReflect().SetUnknown(b)
	return q
}

// fields reads a message's raw fields: number → bytes (varints as their value in id).
func fields(t *testing.T, b []byte) (id uint64, sub map[protowire.Number][]byte) {
	t.Helper()
	sub = map[protowire.Number][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.Positive(t, n)
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			require.Positive(t, m)
			id, b = v, b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			require.GreaterOrEqual(t, m, 0)
			sub[num], b = v, b[m:]
		default:
			t.Fatalf("unexpected wire type %v", typ)
		}
	}
	return id, sub
}

func TestQueryRefusal(t *testing.T) {
	resp, ok := queryRefusal(query(7, 3)) // ask_question
	require.True(t, ok)
	id, top := fields(t, resp.ProtoReflect().GetUnknown())
	assert.Equal(t, uint64(7), id, "the answer carries the query's id")
	_, result := fields(t, top[3])
	_, rejected := fields(t, result[1])
	_, reason := fields(t, rejected[3])
	assert.Equal(t, refusal, string(reason[1]), "ask_question → result.rejected{reason}")

	resp, ok = queryRefusal(query(9, 2)) // web search
	require.True(t, ok)
	_, top = fields(t, resp.ProtoReflect().GetUnknown())
	_, rej := fields(t, top[2])
	_, reason = fields(t, rej[2])
	assert.Equal(t, refusal, string(reason[1]))

	_, ok = queryRefusal(query(1, 99))
	assert.False(t, ok, "an unknown kind is not answered blindly")
}

func TestRejectionOfEveryBuiltInExec(t *testing.T) {
	// Every exec arm the gateway declares gets an answer: a refusing arm
	// in its result, or (for the few without one) a throw.
	od := (&agentv1.ExecServerMessage{}).ProtoReflect().Descriptor().Oneofs().ByName("message")
	answered := 0
	for i := range od.Fields().Len() {
		f := od.Fields().Get(i)
		if f.Name() == "mcp_args" || f.Name() == "request_context_args" {
			continue
		}
		m := &agentv1.ExecServerMessage{Id: 3}
		pm := m.ProtoReflect()
		pm.Set(f, pm.NewField(f))
		out, arm, ok := rejection(m)
		assert.Equal(t, string(f.Name()), arm)
		if ok {
			answered++
			assert.Equal(t, uint32(3), out.GetId())
		}
	}
	assert.Greater(t, answered, 10, "most built-in execs have a refusing arm")
}
