package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// gatedConn holds the write that ends the request body until the test
// lets it go: the transport's check read after the body (see newProxy)
// then comes after the proxy has written the answer's header.
type gatedConn struct {
	net.Conn
	end  []byte
	gate <-chan struct{}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && bytes.HasSuffix(p, c.end) {
		select {
		case <-c.gate:
		case <-time.After(5 * time.Second):
		}
	}
	return n, err
}

// TestProxyLateBodyCheck makes the race newProxy's comment describes
// happen on every request: the stream must still arrive whole, and the
// second request must go over the first one's upstream connection.
func TestProxyLateBodyCheck(t *testing.T) {
	defer goleak.VerifyNone(t)
	const frames = 10
	var accepted atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range frames {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond)
		}
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}

	body := []byte(`{"prompt":"` + strings.Repeat("x", 2000) + `","end":true}`)
	gate := make(chan struct{}, 1)
	var d net.Dialer
	upTransport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, end: body[len(body)-10:], gate: gate}, nil
	}}
	defer upTransport.CloseIdleConnections()
	proxy := httptest.NewServer(newProxy(u, upTransport))
	defer proxy.Close()
	clientTransport := &http.Transport{}
	defer clientTransport.CloseIdleConnections()
	client := &http.Client{Transport: clientTransport, Timeout: 10 * time.Second}

	for i := range 2 {
		resp, err := client.Post(proxy.URL+"/api/chat", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		gate <- struct{}{} // the client has the header: let the body's write end
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: reading the stream after %d bytes: %v", i, len(got), err)
		}
		if n := bytes.Count(got, []byte("data: ")); resp.StatusCode != http.StatusOK || n != frames {
			t.Fatalf("request %d: status %d, %d frames of %d", i, resp.StatusCode, n, frames)
		}
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections for 2 sequential requests, want 1", n)
	}
}
