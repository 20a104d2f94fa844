package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// These tests put real proxies, configured by deploy/'s files, in front of
// the gateway: streams are not buffered, and the gateway's pings carry a
// long silence past the proxy's read timeout. Without the proxy installed
// they skip (.ci/run installs nginx-light and caddy).

// heldUpstream is a fake web chat that streams its first delta, then holds
// the stream until release is closed (the test client has read that delta
// through the proxy) or bound passes, then finishes. It reports which of
// the two ended the hold on released.
func heldUpstream(t *testing.T, release <-chan struct{}, bound time.Duration, released chan<- bool) *httptest.Server {
	frames := cursortest.Frames(nil, nil, []string{"first", " second"})
	split := 4 // start, start-step, text-start, the first delta
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames[:split] {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		w.(http.Flusher).Flush()
		select {
		case <-release:
			released <- true
		case <-time.After(bound):
			released <- false
		case <-r.Context().Done():
			released <- false
			return
		}
		for _, f := range frames[split:] {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// silentUpstream streams its first delta, stays silent for silence, then
// finishes.
func silentUpstream(t *testing.T, silence time.Duration) *httptest.Server {
	frames := cursortest.Frames(nil, nil, []string{"first", " second"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames[:4] {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		w.(http.Flusher).Flush()
		select {
		case <-time.After(silence):
		case <-r.Context().Done():
			return
		}
		for _, f := range frames[4:] {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proxyKind starts one kind of reverse proxy from its shipped config.
type proxyKind struct {
	name   string
	binary string
	// start runs the proxy on 127.0.0.1:port in front of gateway (host:port)
	// with the shipped config, its read timeout replaced by readTimeout and
	// buffering forced on when buffer is set, and stops it when the test ends.
	start func(t *testing.T, port int, gateway, readTimeout string, buffer bool)
}

var proxyKinds = []proxyKind{
	{name: "nginx", binary: "nginx", start: startNginx},
	{name: "caddy", binary: "caddy", start: startCaddy},
}

// rewrite replaces each old with its new in conf and fails the test when
// one is missing: the shipped file must keep the lines the test scales.
func rewrite(t *testing.T, conf string, pairs ...string) string {
	for i := 0; i < len(pairs); i += 2 {
		require.Contains(t, conf, pairs[i], "the shipped config changed shape: update the test")
		conf = strings.ReplaceAll(conf, pairs[i], pairs[i+1])
	}
	return conf
}

func startNginx(t *testing.T, port int, gateway, readTimeout string, buffer bool) {
	shipped, err := os.ReadFile("../deploy/nginx/cursor2api.conf")
	require.NoError(t, err)
	site := rewrite(t, string(shipped),
		"server 127.0.0.1:8002;", "server "+gateway+";",
		"listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", port),
		"proxy_read_timeout 3600s;", "proxy_read_timeout "+readTimeout+";")
	if buffer {
		// A proxy that buffers whatever the upstream says, and gzips
		// event streams into large blocks.
		site = rewrite(t, site, "proxy_buffering off;", "proxy_buffering on; proxy_ignore_headers X-Accel-Buffering;",
			"gzip off;", "gzip on; gzip_types text/event-stream; gzip_min_length 1;")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site), 0o644))
	main := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    include %[1]s/site.conf;
}
`, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644))
	runProxy(t, port, exec.Command("nginx", "-p", dir, "-e", "stderr", "-c", filepath.Join(dir, "nginx.conf")))
}

func startCaddy(t *testing.T, port int, gateway, readTimeout string, buffer bool) {
	if buffer {
		t.Skip("no Caddyfile setting makes Caddy buffer an event stream; the negative case runs with nginx")
	}
	shipped, err := os.ReadFile("../deploy/caddy/Caddyfile")
	require.NoError(t, err)
	site := rewrite(t, string(shipped),
		"reverse_proxy 127.0.0.1:8002", "reverse_proxy "+gateway,
		":80 {", fmt.Sprintf("http://127.0.0.1:%d {", port),
		"read_timeout 3600s", "read_timeout "+readTimeout)
	dir := t.TempDir()
	conf := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(conf, []byte(site), 0o644))
	cmd := exec.Command("caddy", "run", "--adapter", "caddyfile", "--config", conf)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	runProxy(t, port, cmd)
}

// runProxy starts cmd, waits (bounded) until port accepts connections, and
// stops the process when the test ends.
func runProxy(t *testing.T, port int, cmd *exec.Cmd) {
	var logs cursortest.LogBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(cmd.Path), logs.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", cmd.Path, logs.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "%s did not listen on %d within 10 s:\n%s", cmd.Path, port, logs.String())
		time.Sleep(50 * time.Millisecond)
	}
}

// postStream starts a streamed chat completion through the proxy and
// returns its body, read line by line.
func postStream(t *testing.T, ctx context.Context, url string) (*bufio.Reader, func()) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(streamBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
}

// readUntil reads lines until one contains want, returning false at EOF.
func readUntil(r *bufio.Reader, want string) bool {
	for {
		line, err := r.ReadString('\n')
		if strings.Contains(line, want) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// streamThroughProxy runs one held stream through a proxy and reports
// whether the client's receipt of the first delta released the upstream
// (true) or the upstream gave up waiting at bound (false).
func streamThroughProxy(t *testing.T, kind proxyKind, buffer bool, bound time.Duration) (releasedByClient bool, rest string) {
	release, released := make(chan struct{}), make(chan bool, 1)
	up := heldUpstream(t, release, bound, released)
	gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "X_IS_HUMAN_MODE": "static:x", "PING_INTERVAL": "60"})
	port := freePort(t)
	kind.start(t, port, strings.TrimPrefix(gw, "http://"), "60s", buffer)

	ctx, cancel := context.WithTimeout(context.Background(), bound+10*time.Second)
	defer cancel()
	body, closeBody := postStream(t, ctx, fmt.Sprintf("http://127.0.0.1:%d", port))
	defer closeBody()
	gotFirst := make(chan struct{})
	go func() {
		if readUntil(body, `"content":"first"`) {
			close(gotFirst)
		}
	}()
	select {
	case <-gotFirst:
		close(release)
	case <-ctx.Done():
	}
	releasedByClient = <-released
	select {
	case <-gotFirst: // once the upstream finished, everything arrives
	case <-ctx.Done():
		t.Fatalf("the first delta never arrived through %s", kind.name)
	}
	b, _ := io.ReadAll(body)
	return releasedByClient, string(b)
}

func TestProxyDoesNotBufferStreams(t *testing.T) {
	for _, kind := range proxyKinds {
		t.Run(kind.name, func(t *testing.T) {
			if _, err := exec.LookPath(kind.binary); err != nil {
				t.Skipf("%s is not installed (apt-get install %s); the shipped config is untested here", kind.binary, kind.binary)
			}
			released, rest := streamThroughProxy(t, kind, false, 20*time.Second)
			assert.True(t, released, "the first delta reached the client only after the upstream gave up holding: %s buffers streams", kind.name)
			assert.Contains(t, rest, `"content":" second"`)
			assert.Contains(t, rest, "data: [DONE]")
		})
	}
}

// TestBufferingProxyFailsTheStreamTest shows that the test above can
// fail: nginx told to buffer and compress the stream (a common
// misconfiguration) holds the first delta until the upstream gives up
// waiting for the client.
func TestBufferingProxyFailsTheStreamTest(t *testing.T) {
	if _, err := exec.LookPath("nginx"); err != nil {
		t.Skip("nginx is not installed (apt-get install nginx-light)")
	}
	released, rest := streamThroughProxy(t, proxyKinds[0], true, 2*time.Second)
	assert.False(t, released, "a buffering nginx let the first delta through")
	assert.Contains(t, rest, "data: [DONE]", "the buffered stream still arrives whole at the end")
}

func TestStreamSurvivesProxyReadTimeout(t *testing.T) {
	// The proxy gives up on an upstream silent for 2 s; the upstream is
	// silent for 5 s. Pings every second keep the stream alive; with
	// pings a minute apart the proxy cuts it.
	cases := []struct {
		ping      string
		survives  bool
		rationale string
	}{
		{ping: "1", survives: true, rationale: "pings keep the stream alive through the proxy's read timeout"},
		{ping: "60", survives: false, rationale: "without pings in time the proxy cuts the stream (so the case above proves the pings)"},
	}
	for _, kind := range proxyKinds {
		for _, c := range cases {
			t.Run(kind.name+"/ping="+c.ping, func(t *testing.T) {
				if _, err := exec.LookPath(kind.binary); err != nil {
					t.Skipf("%s is not installed (apt-get install %s)", kind.binary, kind.binary)
				}
				up := silentUpstream(t, 5*time.Second)
				gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "X_IS_HUMAN_MODE": "static:x",
					"PING_INTERVAL": c.ping, "TIMEOUT": "30"})
				port := freePort(t)
				kind.start(t, port, strings.TrimPrefix(gw, "http://"), "2s", false)

				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				body, closeBody := postStream(t, ctx, fmt.Sprintf("http://127.0.0.1:%d", port))
				defer closeBody()
				require.True(t, readUntil(body, `"content":"first"`))
				rest, _ := io.ReadAll(body)
				if c.survives {
					assert.Contains(t, string(rest), ": ping", "pings went through the proxy")
					assert.Contains(t, string(rest), `"content":" second"`, c.rationale)
					assert.Contains(t, string(rest), "data: [DONE]", c.rationale)
				} else {
					assert.NotContains(t, string(rest), "data: [DONE]", c.rationale)
				}
			})
		}
	}
}

// TestProxyPassesTheResponsesWebSocket opens the Responses WebSocket
// through each proxy with its shipped config, as Codex does with
// openai_base_url (offering permessage-deflate), and runs two turns on
// one connection with a silence longer than the proxy's read timeout
// between them: the upgrade passes, and the gateway's pings keep the
// quiet connection open.
func TestProxyPassesTheResponsesWebSocket(t *testing.T) {
	for _, kind := range proxyKinds {
		t.Run(kind.name, func(t *testing.T) {
			if _, err := exec.LookPath(kind.binary); err != nil {
				t.Skipf("%s is not installed (apt-get install %s)", kind.binary, kind.binary)
			}
			frames := cursortest.Frames(nil, nil, []string{"through the proxy"})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				for _, f := range frames {
					fmt.Fprintf(w, "data: %s\n\n", f)
				}
			}))
			t.Cleanup(up.Close)
			gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": up.URL, "TLS_FINGERPRINT": "off", "X_IS_HUMAN_MODE": "static:x",
				"PING_INTERVAL": "1", "API_KEY": "sk-proxy"})
			port := freePort(t)
			kind.start(t, port, strings.TrimPrefix(gw, "http://"), "2s", false)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, resp, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/v1/responses", port), &websocket.DialOptions{
				HTTPHeader:      http.Header{"Authorization": {"Bearer sk-proxy"}, "OpenAI-Beta": {"responses_websockets=2026-02-06"}},
				CompressionMode: websocket.CompressionContextTakeover,
			})
			require.NoError(t, err, "the upgrade through %s", kind.name)
			defer conn.CloseNow()
			assert.Contains(t, resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate", "compression is negotiated through the proxy")
			turn := func() string {
				msg := `{"type":"response.create","model":"claude-sonnet-4.6","store":false,"input":"hi"}`
				require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(msg)))
				for {
					_, ev, err := conn.Read(ctx)
					require.NoError(t, err)
					if typ := gjson.GetBytes(ev, "type").String(); typ == "response.completed" || typ == "error" || typ == "response.failed" {
						return string(ev)
					}
				}
			}
			first := turn()
			assert.Equal(t, "response.completed", gjson.Get(first, "type").String(), first)
			assert.Equal(t, "through the proxy", gjson.Get(first, "response.output.0.content.0.text").String(), first)
			// Quiet for twice the proxy's read timeout.
			time.Sleep(4 * time.Second)
			second := turn()
			assert.Equal(t, "response.completed", gjson.Get(second, "type").String(), "the connection outlived the read timeout: %s", second)
		})
	}
}
