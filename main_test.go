package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/handlers/server"
	"cursor2api/services/cursortest"
)

// startGateway serves the gateway as run does, on a loopback port, until
// the returned cancel is called; done yields Serve's result. Unless env
// says otherwise, x-is-human is a static value: the default would fetch
// the challenge script from cursor.com, and tests never leave the
// loopback. (The server package tests the serving itself.)
func startGateway(t *testing.T, env map[string]string) (url string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	// MODELS is explicit: with the default (auto) the gateway would ask
	// the fake for its models in the background.
	vars := map[string]string{"X_IS_HUMAN_MODE": "static:test-x-is-human", "MODELS": "claude-sonnet-4.6", "STATE_DIR": t.TempDir()}
	maps.Copy(vars, env)
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	srv, err := server.New(cfg, slog.New(slog.DiscardHandler), server.Options{Version: version})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, ln) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, errc
}

const streamBody = `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestHealthcheckSubcommand(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off"})
	u, err := url.Parse(gw)
	require.NoError(t, err)
	assert.NoError(t, healthcheck("0.0.0.0", u.Port()), "a wildcard host is checked on loopback")
	assert.NoError(t, healthcheck("127.0.0.1", u.Port()))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	assert.ErrorContains(t, healthcheck("127.0.0.1", port), "/health", "nothing listens there")
}

func TestOperationsSettingsAreValidated(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,nginx"}, `TRUSTED_PROXIES: "nginx" is neither an IP address nor a CIDR`},
		{map[string]string{"LOG_FORMAT": "xml"}, `LOG_FORMAT="xml": use text or json`},
		{map[string]string{"PROXY_URL": "http://127.0.0.1:3128,ftp://user:pw@127.0.0.1:21"}, `PROXY_URL: "ftp://user:xxxxx@127.0.0.1:21"`},
		{map[string]string{"METRICS_ADDR": "9090"}, `METRICS_ADDR="9090": use host:port`},
		{map[string]string{"PROXY_COOLDOWN": "0"}, `PROXY_COOLDOWN=0s: must be a positive number of seconds`},
	}
	for _, c := range cases {
		_, err := config.FromMap(c.env)
		assert.ErrorContains(t, err, c.want)
	}
	cfg, err := config.FromMap(map[string]string{"TRUSTED_PROXIES": " 10.0.0.0/8 , 127.0.0.1 ", "PROXY_URL": "http://a:1, socks5://b:2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/8", "127.0.0.1"}, cfg.TrustedProxies)
	assert.Equal(t, []string{"http://a:1", "socks5://b:2"}, cfg.ProxyURLs())
}

func TestXihReportsTheHeaderOrTheMissingGlobals(t *testing.T) {
	t.Setenv("X_IS_HUMAN_MODE", "random") // the check runs whatever the mode
	var out, errs strings.Builder
	code := xih([]string{"-file", "services/human/testdata/challenge.js", "-profile", "chrome-macos", "-budget", "3m"}, &out, &errs)
	require.Equal(t, 0, code, out.String()+errs.String())
	assert.Contains(t, out.String(), "profile: chrome-macos")
	assert.Regexp(t, `header:  \{"b":"fixture-b".*"vr":"fixture-vr"\}`, out.String())
	assert.Contains(t, out.String(), "missing: none")
	assert.Regexp(t, `time:    \d+`, out.String())

	out.Reset()
	code = xih([]string{"-file", "services/human/testdata/challenge_missing.js", "-budget", "3m"}, &out, &errs)
	assert.Equal(t, 1, code)
	assert.Contains(t, out.String(), "error:   window.V_C[0]() rejected: ReferenceError: BroadcastChannel is not defined")
	assert.Contains(t, out.String(), "missing: 1 globals/properties the script read are not defined here:\n  BroadcastChannel\n")

	assert.Equal(t, 2, xih([]string{"-profile", "netscape-4"}, &out, &errs), "an unknown profile is a usage error")
	assert.Contains(t, errs.String(), "unknown browser profile \"netscape-4\": use one of chrome-macos, chrome-windows, chrome-windows-intel")
}
