// Package aiserverv1 holds the aiserver.v1 protobuf messages a native turn
// needs (BidiAppend, server config, ErrorDetails); its Connect clients live
// in aiserverv1connect. It is generated from proto/aiserver/v1/aiserver.proto
// by package agentv1's go:generate step.
package aiserverv1
