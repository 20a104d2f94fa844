package webchat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
	"cursor2api/services/upstream"
)

// isGREASE reports a GREASE value (RFC 8701), which Chrome puts in its
// ClientHello and Go's TLS stack never does.
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func TestTransportFingerprint(t *testing.T) {
	var mu sync.Mutex
	var hello *tls.ClientHelloInfo
	var proto string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proto = r.Proto
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range cursortest.Frames(nil, nil, []string{"streamed ", "over ", "TLS"}) {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		hello = h
		mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	for _, tc := range []struct {
		fingerprint string
		grease      bool
		proto       string
	}{
		{FingerprintChrome, true, "HTTP/2.0"},
		{FingerprintOff, false, "HTTP/2.0"},
	} {
		t.Run(tc.fingerprint, func(t *testing.T) {
			rt, err := NewTransport(tc.fingerprint, nil, &tls.Config{RootCAs: roots})
			require.NoError(t, err)
			c := &Client{HTTP: &http.Client{Transport: rt}, URL: srv.URL, UserAgent: "Mozilla/5.0 Chrome/142.0.0.0",
				IdleTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
			var text string
			_, err = c.Stream(context.Background(), hiRequest, func(d upstream.Delta) error {
				text += d.Text
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, "streamed over TLS", text)
			mu.Lock()
			defer mu.Unlock()
			require.NotNil(t, hello)
			grease := false
			for _, cs := range hello.CipherSuites {
				grease = grease || isGREASE(cs)
			}
			assert.Equal(t, tc.grease, grease, "GREASE in the ClientHello")
			assert.Equal(t, tc.proto, proto)
			hello = nil
		})
	}
	_, err := NewTransport("firefox", nil, nil)
	assert.Error(t, err)
}

func TestChromeTransportHonoursCancellation(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"text-delta\",\"delta\":\"hi\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	rt, err := NewTransport(FingerprintChrome, nil, &tls.Config{RootCAs: roots})
	require.NoError(t, err)
	c := &Client{HTTP: &http.Client{Transport: rt}, URL: srv.URL, IdleTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = c.Stream(ctx, upstream.Request{Model: "m/x"}, func(upstream.Delta) error { cancel(); return nil })
	require.ErrorIs(t, err, context.Canceled)
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request end")
	}
}
