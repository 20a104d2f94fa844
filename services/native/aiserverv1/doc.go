// Package aiserverv1 holds the protobuf messages of the aiserver.v1 package
// of Cursor's native agent API that a turn needs: BidiRequestId and
// BidiAppend (the HTTP/1.1 half of a run), GetServerConfig,
// GetUserPrivacyMode, and ErrorDetails (carried in Connect error details).
// Its Connect clients and handlers live in aiserverv1connect.
//
// The code is generated from services/native/proto/aiserver/v1/aiserver.proto
// by the go:generate step of package agentv1, which writes both packages.
package aiserverv1
