package native

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/aiserverv1/aiserverv1connect"
)

// conn is one run's channel to the server, whatever the transport: client
// messages go out with Send, server messages come in with Receive (io.EOF
// at a clean end). Send may be called from several goroutines; Receive
// from one.
type conn interface {
	Send(*agentv1.AgentClientMessage) error
	Receive() (*agentv1.AgentServerMessage, error)
	// Close ends the run's calls; the run's context is cancelled first.
	Close()
}

// bidiConn is the bidi Run over HTTP/2: the request stream stays open for
// the whole turn.
type bidiConn struct {
	stream *connect.BidiStreamForClient[agentv1.AgentClientMessage, agentv1.AgentServerMessage]
	mu     sync.Mutex
}

func openBidi(ctx context.Context, client agentv1connect.AgentServiceClient, header func(http.Header)) *bidiConn {
	s := client.Run(ctx)
	header(s.RequestHeader())
	return &bidiConn{stream: s}
}

func (c *bidiConn) Send(m *agentv1.AgentClientMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stream.Send(m)
}

func (c *bidiConn) Receive() (*agentv1.AgentServerMessage, error) {
	m, err := c.stream.Receive()
	if err != nil && errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	return m, err
}

func (c *bidiConn) Close() {
	c.mu.Lock()
	_ = c.stream.CloseRequest()
	c.mu.Unlock()
	_ = c.stream.CloseResponse()
}

// sseConn is RunSSE plus BidiAppend over HTTP/1.1: the server's messages
// come on the RunSSE stream, and each client message is a unary
// BidiAppend carrying it hex-encoded with the next sequence number. The
// appends are sent one at a time, in order.
type sseConn struct {
	ctx       context.Context
	bidi      aiserverv1connect.BidiServiceClient
	header    func(http.Header)
	requestID string
	// stream and openErr are set when ready is closed.
	ready   chan struct{}
	stream  *connect.ServerStreamForClient[agentv1.AgentServerMessage]
	openErr error

	mu  sync.Mutex
	seq int64
}

// openSSE opens RunSSE in the background: the call returns only with the
// server's response headers, which may wait for the first append.
func openSSE(ctx context.Context, agent agentv1connect.AgentServiceClient, bidi aiserverv1connect.BidiServiceClient,
	header func(http.Header), requestID string) *sseConn {
	c := &sseConn{ctx: ctx, bidi: bidi, header: header, requestID: requestID, ready: make(chan struct{})}
	req := connect.NewRequest(&aiserverv1.BidiRequestId{RequestId: requestID})
	header(req.Header())
	go func() {
		defer close(c.ready)
		c.stream, c.openErr = agent.RunSSE(ctx, req)
	}()
	return c
}

func (c *sseConn) Send(m *agentv1.AgentClientMessage) error {
	data, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	req := connect.NewRequest(&aiserverv1.BidiAppendRequest{
		Data:        hex.EncodeToString(data),
		RequestId:   &aiserverv1.BidiRequestId{RequestId: c.requestID},
		AppendSeqno: c.seq,
	})
	c.header(req.Header())
	if _, err := c.bidi.BidiAppend(c.ctx, req); err != nil {
		return err
	}
	c.seq++
	return nil
}

func (c *sseConn) Receive() (*agentv1.AgentServerMessage, error) {
	<-c.ready // bounded: the call ends with the run's context
	if c.openErr != nil {
		return nil, c.openErr
	}
	if c.stream.Receive() {
		return c.stream.Msg(), nil
	}
	if err := c.stream.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (c *sseConn) Close() {
	<-c.ready
	if c.stream != nil {
		_ = c.stream.Close()
	}
}
