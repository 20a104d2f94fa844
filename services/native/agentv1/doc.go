// Package agentv1 holds the agent.v1 protobuf messages of Cursor's native
// agent API (AgentService); its Connect client lives in agentv1connect.
//
// scripts/nativeproto writes the .proto from the @cursor/sdk schema and
// proto/subset.txt; the Go code is committed so a build needs no protoc. To
// regenerate: protoc, protoc-gen-go v1.36.10, protoc-gen-connect-go v1.19.1,
// then `go generate ./services/native/agentv1`.
package agentv1

//go:generate protoc -I ../proto --go_out=../../.. --go_opt=module=cursor2api --connect-go_out=../../.. --connect-go_opt=module=cursor2api agent/v1/agent.proto aiserver/v1/aiserver.proto
