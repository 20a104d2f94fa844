package server

import (
	"fmt"
	"net"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cursortest"
)

func TestHealthcheck(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off"})
	u, err := url.Parse(gw)
	require.NoError(t, err)
	assert.NoError(t, Healthcheck("0.0.0.0", u.Port()), "a wildcard host is checked on loopback")
	assert.NoError(t, Healthcheck("127.0.0.1", u.Port()))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	assert.ErrorContains(t, Healthcheck("127.0.0.1", port), "/health", "nothing listens there")
}
