package agentv1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/aiserverv1"
)

// TestFieldNumbers pins the field numbers a turn depends on, as the SDK
// declares them; a regenerated or hand-edited .proto that moved one would
// corrupt the wire silently.
func TestFieldNumbers(t *testing.T) {
	for _, tc := range []struct {
		msg    proto.Message
		fields map[string]protoreflect.FieldNumber
	}{
		{&agentv1.AgentClientMessage{}, map[string]protoreflect.FieldNumber{"run_request": 1, "exec_client_message": 2, "kv_client_message": 3, "conversation_action": 4, "exec_client_control_message": 5, "client_heartbeat": 7}},
		{&agentv1.AgentServerMessage{}, map[string]protoreflect.FieldNumber{"interaction_update": 1, "exec_server_message": 2, "conversation_checkpoint_update": 3, "kv_server_message": 4, "exec_server_control_message": 5}},
		{&agentv1.AgentRunRequest{}, map[string]protoreflect.FieldNumber{"conversation_state": 1, "action": 2, "model_details": 3, "mcp_tools": 4, "conversation_id": 5, "requested_model": 9, "run_id": 25}},
		{&agentv1.McpToolDefinition{}, map[string]protoreflect.FieldNumber{"name": 1, "description": 2, "input_schema": 3, "provider_identifier": 4, "tool_name": 5}},
		{&agentv1.McpArgs{}, map[string]protoreflect.FieldNumber{"name": 1, "args": 2, "tool_call_id": 3, "provider_identifier": 4, "tool_name": 5}},
		{&agentv1.ExecServerMessage{}, map[string]protoreflect.FieldNumber{"id": 1, "shell_args": 2, "write_args": 3, "delete_args": 4, "grep_args": 5, "read_args": 7, "ls_args": 8, "request_context_args": 10, "mcp_args": 11, "exec_id": 15}},
		{&agentv1.ExecClientMessage{}, map[string]protoreflect.FieldNumber{"id": 1, "shell_result": 2, "request_context_result": 10, "mcp_result": 11}},
		{&agentv1.InteractionUpdate{}, map[string]protoreflect.FieldNumber{"text_delta": 1, "tool_call_started": 2, "tool_call_completed": 3, "thinking_delta": 4, "thinking_completed": 5, "partial_tool_call": 7, "token_delta": 8, "heartbeat": 13, "turn_ended": 14}},
		{&agentv1.TurnEndedUpdate{}, map[string]protoreflect.FieldNumber{"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 3, "cache_write_tokens": 4, "reasoning_tokens": 5}},
		{&agentv1.ConversationStateStructure{}, map[string]protoreflect.FieldNumber{"turns": 8}},
		{&agentv1.ShellResult{}, map[string]protoreflect.FieldNumber{"rejected": 4, "permission_denied": 7}},
		{&aiserverv1.BidiAppendRequest{}, map[string]protoreflect.FieldNumber{"data": 1, "request_id": 2, "append_seqno": 3}},
		{&aiserverv1.ErrorDetails{}, map[string]protoreflect.FieldNumber{"error": 1, "details": 2, "is_expected": 3}},
	} {
		md := tc.msg.ProtoReflect().Descriptor()
		for name, num := range tc.fields {
			fd := md.Fields().ByName(protoreflect.Name(name))
			if assert.NotNil(t, fd, "%s.%s", md.FullName(), name) {
				assert.Equal(t, num, fd.Number(), "%s.%s", md.FullName(), name)
			}
		}
	}
}

// TestUnknownFieldsSurvive: a field the subset leaves out (here
// ConversationStateStructure's subagent_states, 16) comes back unchanged
// when a checkpoint is stored and sent again.
func TestUnknownFieldsSurvive(t *testing.T) {
	// Field 16, length-delimited, holding 2 bytes; then turns (8) = "ab".
	raw := []byte{0x82, 0x01, 0x02, 0x0a, 0x00, 0x42, 0x02, 'a', 'b'}
	var st agentv1.ConversationStateStructure
	require.NoError(t, proto.Unmarshal(raw, &st))
	assert.Equal(t, [][]byte{[]byte("ab")}, st.GetTurns())
	out, err := proto.Marshal(&st)
	require.NoError(t, err)
	var back agentv1.ConversationStateStructure
	require.NoError(t, proto.Unmarshal(out, &back))
	assert.Equal(t, []byte{0x82, 0x01, 0x02, 0x0a, 0x00}, []byte(back.ProtoReflect().GetUnknown()))
}
