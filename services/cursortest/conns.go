package cursortest

import (
	"net"
	"net/http"
)

// countConn is the fake's http.Server ConnState hook: it counts every
// connection the fake accepted, so that a test can tell a reused upstream
// connection from a new dial.
func (s *Server) countConn(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.conns.Add(1)
	}
}

// Conns is how many connections the fake has accepted so far.
func (s *Server) Conns() int64 { return s.conns.Load() }
