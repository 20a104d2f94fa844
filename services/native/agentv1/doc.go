// Package agentv1 holds the protobuf messages of the agent.v1 package of
// Cursor's native agent API (AgentService: Run, RunSSE, GetUsableModels, and
// the client and server messages of a turn), generated from
// services/native/proto/agent/v1/agent.proto. Its Connect client and handler
// live in agentv1connect.
//
// The .proto sources are written by scripts/nativeproto from the schema
// listing of the official @cursor/sdk and services/native/proto/subset.txt.
// The Go code is generated from them and committed, so a build needs no
// protoc. To regenerate it, install protoc (Debian: protobuf-compiler),
// protoc-gen-go v1.36.10 and protoc-gen-connect-go v1.19.1, and run
// `go generate ./services/native/agentv1`.
package agentv1

//go:generate protoc -I ../proto --go_out=../../.. --go_opt=module=cursor2api --connect-go_out=../../.. --connect-go_opt=module=cursor2api agent/v1/agent.proto aiserver/v1/aiserver.proto
