package native

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"cursor2api/services/native/agentv1"
)

// refusal is what the model reads when it asks for a built-in tool.
const refusal = "This client runs no built-in tools (shell, files, search, fetch); use only the tools it declares."

// rejection answers a built-in exec without running it, in the result arm
// matching its arguments (shell_args → shell_result, …): "rejected", else
// "permission_denied", else "error". ok is false when there is no such arm.
func rejection(m *agentv1.ExecServerMessage) (*agentv1.ExecClientMessage, string, bool) {
	sm := m.ProtoReflect()
	od := sm.Descriptor().Oneofs().ByName("message")
	if od == nil {
		return nil, "", false
	}
	arm := sm.WhichOneof(od)
	if arm == nil {
		return nil, "", false
	}
	name := string(arm.Name())
	out := &agentv1.ExecClientMessage{Id: m.GetId(), ExecId: m.GetExecId()}
	cm := out.ProtoReflect()
	fields := cm.Descriptor().Fields()
	var rf protoreflect.FieldDescriptor
	for _, cand := range resultNames(name) {
		if f := fields.ByName(protoreflect.Name(cand)); f != nil && f.Message() != nil {
			rf = f
			break
		}
	}
	if rf == nil {
		return nil, name, false
	}
	result := cm.NewField(rf).Message()
	if !refuseInto(result) {
		return nil, name, false
	}
	cm.Set(rf, protoreflect.ValueOfMessage(result))
	return out, name, true
}

// resultNames are the names the result of an exec arm may have.
func resultNames(arm string) []string {
	if base, ok := strings.CutSuffix(arm, "_args"); ok {
		return []string{base + "_result", base}
	}
	if base, ok := strings.CutSuffix(arm, "_request"); ok {
		return []string{base + "_response", base + "_result"}
	}
	return []string{arm + "_result"}
}

// refuseInto sets the refusing arm of a result message.
func refuseInto(result protoreflect.Message) bool {
	fields := result.Descriptor().Fields()
	for _, arm := range []protoreflect.Name{"rejected", "permission_denied", "error"} {
		f := fields.ByName(arm)
		if f == nil || f.Message() == nil {
			continue
		}
		m := result.NewField(f).Message()
		rf := m.Descriptor().Fields()
		for _, text := range []protoreflect.Name{"reason", "error", "message"} {
			if tf := rf.ByName(text); tf != nil && tf.Kind() == protoreflect.StringKind && tf.Cardinality() != protoreflect.Repeated {
				m.Set(tf, protoreflect.ValueOfString(refusal))
				break
			}
		}
		if rd := rf.ByName("is_readonly"); rd != nil && rd.Kind() == protoreflect.BoolKind {
			m.Set(rd, protoreflect.ValueOfBool(true))
		}
		result.Set(f, protoreflect.ValueOfMessage(m))
		return true
	}
	return false
}

// queryPaths says, for each kind of interaction query (its field number
// in InteractionQuery), where the refusing arm sits in the response of the
// same field number in InteractionResponse: the field numbers to follow,
// and whether the innermost message takes the refusal as its field 1
// (reason or error). A question for a human is refused: there is none.
var queryPaths = map[protowire.Number]struct {
	path   []protowire.Number
	reason bool
}{
	2:  {[]protowire.Number{2}, true},    // web search: rejected{reason}
	3:  {[]protowire.Number{1, 3}, true}, // ask question: result.rejected{reason}
	4:  {[]protowire.Number{2}, true},    // switch mode: rejected{reason}
	7:  {[]protowire.Number{1, 2}, true}, // create plan: result.error{error}
	9:  {[]protowire.Number{2}, true},    // web fetch: rejected{reason}
	10: {[]protowire.Number{3}, false},   // PR management: rejected
	11: {[]protowire.Number{2}, false},   // MCP auth: rejected
	12: {[]protowire.Number{2}, false},   // generate image: rejected
	13: {[]protowire.Number{2}, false},   // replace env: failure
	14: {[]protowire.Number{2}, false},   // connect SCM: rejected
}

// queryRefusal answers an interaction query (declared as a stub: its id
// and kind are read from its raw fields) with the refusing arm of its
// response. ok is false for a query the gateway cannot read or answer.
func queryRefusal(q *agentv1.InteractionQuery) (*agentv1.InteractionResponse, bool) {
	raw := q.ProtoReflect().GetUnknown()
	var id uint64
	var kind protowire.Number
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return nil, false
		}
		raw = raw[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(raw)
			if m < 0 {
				return nil, false
			}
			id, raw = v, raw[m:]
			continue
		}
		if typ == protowire.BytesType {
			if _, ok := queryPaths[num]; ok && kind == 0 {
				kind = num
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			return nil, false
		}
		raw = raw[m:]
	}
	p, ok := queryPaths[kind]
	if !ok {
		return nil, false
	}
	var inner []byte
	if p.reason {
		inner = protowire.AppendTag(inner, 1, protowire.BytesType)
		inner = protowire.AppendString(inner, refusal)
	}
	for i := len(p.path) - 1; i >= 0; i-- {
		var outer []byte
		outer = protowire.AppendTag(outer, p.path[i], protowire.BytesType)
		inner = protowire.AppendBytes(outer, inner)
	}
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.VarintType)
	out = protowire.AppendVarint(out, id)
	out = protowire.AppendTag(out, kind, protowire.BytesType)
	out = protowire.AppendBytes(out, inner)
	resp := &agentv1.InteractionResponse{}
	resp.ProtoReflect().SetUnknown(out)
	return resp, true
}
