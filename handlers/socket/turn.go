package socket

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
)

// Turn is the gin context of one turn of the connection: a copy of the
// upgrade's up (its door, client key, and request id with the turn's
// number after a dot), whose request body is the message and whose
// context ends with the connection. What the door answers through gin
// (an error before its first event) is kept in the returned Answer, for
// the door to send as an event.
func (c *Conn) Turn(up *gin.Context, n int, body []byte) (*gin.Context, *Answer) {
	tc := up.Copy()
	req := up.Request.WithContext(c.ctx)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	tc.Request = req
	a := &Answer{header: http.Header{}, status: http.StatusOK}
	tc.Writer = a
	tc.Set(door.KeyRequestID, door.RequestID(up)+"."+strconv.Itoa(n))
	tc.Set(door.KeyTurn, n)
	return tc, a
}

// maxAnswerBytes bounds what Answer keeps: error bodies are small.
const maxAnswerBytes = 64 << 10

// Answer is a turn's gin.ResponseWriter: it keeps the status and body of
// what a door writes through gin (its error answers) instead of sending
// them, since the connection's messages carry the answer.
type Answer struct {
	header  http.Header
	status  int
	written bool
	body    bytes.Buffer
}

var _ gin.ResponseWriter = (*Answer)(nil)

// Body is what was written, when it was.
func (a *Answer) Body() []byte { return a.body.Bytes() }

func (a *Answer) Header() http.Header { return a.header }

func (a *Answer) Write(b []byte) (int, error) {
	a.written = true
	if a.body.Len()+len(b) > maxAnswerBytes {
		return 0, errors.New("a turn's answer through gin is over its bound")
	}
	return a.body.Write(b)
}

func (a *Answer) WriteString(s string) (int, error) { return a.Write([]byte(s)) }

func (a *Answer) WriteHeader(code int) {
	if !a.written && code > 0 {
		a.status = code
	}
}

func (a *Answer) WriteHeaderNow()     { a.written = true }
func (a *Answer) Status() int         { return a.status }
func (a *Answer) Size() int           { return a.body.Len() }
func (a *Answer) Written() bool       { return a.written }
func (a *Answer) Flush()              {}
func (a *Answer) Pusher() http.Pusher { return nil }

// CloseNotify never fires: the turn's request context ends instead.
func (a *Answer) CloseNotify() <-chan bool { return nil }

func (a *Answer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("a WebSocket turn cannot be hijacked")
}
