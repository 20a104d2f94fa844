package native

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"cursor2api/services/native/agentv1"
)

// refusal is what the model reads when it asks for a built-in tool.
const refusal = "This client runs no built-in tools (shell, files, search, fetch); use only the tools it declares."

// rejection answers a built-in exec (shell, read, write, grep, ls,
// fetch, …) without running anything: the gateway never acts on its own
// machine for the model. It fills the result arm matching the exec's
// arguments (shell_args → shell_result, shell_stream_args → shell_stream,
// git_diff_request → git_diff_response) with its "rejected" arm, else
// "permission_denied", else "error", with the refusal as reason. ok is
// false when the exec has no such result (the caller then throws).
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
