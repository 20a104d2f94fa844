package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/handlers/server"
	"cursor2api/services/cursortest"
	"cursor2api/services/state/redistest"
)

// TestGatewayProcess is the gateway the state tests run as a process of
// its own: the test binary, run again with CURSOR2API_GATEWAY_PROCESS
// set, runs server.Run, as the binary does, with the environment it was
// given.
func TestGatewayProcess(t *testing.T) {
	if os.Getenv("CURSOR2API_GATEWAY_PROCESS") == "" {
		t.Skip("the gateway process of the state tests")
	}
	if err := server.Run(version); err != nil {
		fmt.Fprintln(os.Stderr, "cursor2api:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// gatewayProc is a gateway running as a process.
type gatewayProc struct {
	t    *testing.T
	url  string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startProc runs a gateway process with env on a free loopback port and
// waits for /health; it is killed when the test ends.
func startProc(t *testing.T, env map[string]string) *gatewayProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(os.Args[0], "-test.run=^TestGatewayProcess$", "-test.count=1")
	cmd.Dir = t.TempDir() // no .env of the checkout
	cmd.Env = append(os.Environ(), "CURSOR2API_GATEWAY_PROCESS=1", "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port),
		"X_IS_HUMAN_MODE=static:test-x-is-human", "MODELS=claude-sonnet-4.6", "TLS_FINGERPRINT=off", "LOG_LEVEL=info")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &gatewayProc{t: t, url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	cmd.Stdout = lockedWriter{p.mu, p.logs}
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("gateway %s log:\n%s", p.url, p.log())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the gateway ended at start:\n%s", p.log())
		default:
		}
		require.True(t, time.Now().Before(deadline), "the gateway did not answer /health within 20s:\n%s", p.log())
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *gatewayProc) log() string { p.mu.Lock(); defer p.mu.Unlock(); return p.logs.String() }

// stop ends the gateway with SIGTERM, as an orchestrator does, and waits.
func (p *gatewayProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("the gateway did not end within 20s of SIGTERM")
		p.kill()
	}
}

func (p *gatewayProc) kill() {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// call sends a request with a bearer key and returns the status and body.
func (p *gatewayProc) call(method, path, key, body string) (int, gjson.Result) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	require.NoError(p.t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return resp.StatusCode, gjson.ParseBytes(b)
}

// respond creates a response, continuing prev when set.
func (p *gatewayProc) respond(key, prev, input string) gjson.Result {
	p.t.Helper()
	body := map[string]any{"model": "claude-sonnet-4.6", "input": input}
	if prev != "" {
		body["previous_response_id"] = prev
	}
	b, _ := json.Marshal(body)
	status, res := p.call(http.MethodPost, "/v1/responses", key, string(b))
	require.Equal(p.t, http.StatusOK, status, "%s", res.Raw)
	return res
}

// usageTotals reads the usage endpoint over the last day, grouped by key.
func (p *gatewayProc) usageTotals() map[string][3]int64 {
	p.t.Helper()
	status, res := p.call(http.MethodGet, fmt.Sprintf("/v1/organization/usage/completions?start_time=%d&bucket_width=1d&group_by=api_key_id", time.Now().Add(-time.Hour).Unix()), "admin-secret", "")
	require.Equal(p.t, http.StatusOK, status, "%s", res.Raw)
	out := map[string][3]int64{}
	res.Get("data.#.results").ForEach(func(_, results gjson.Result) bool {
		results.ForEach(func(_, r gjson.Result) bool {
			k := r.Get("api_key_id").String()
			v := out[k]
			out[k] = [3]int64{v[0] + r.Get("num_model_requests").Int(), v[1] + r.Get("input_tokens").Int(), v[2] + r.Get("output_tokens").Int()}
			return true
		})
		return true
	})
	return out
}

func usageOf(res gjson.Result) [3]int64 {
	return [3]int64{1, res.Get("usage.input_tokens").Int(), res.Get("usage.output_tokens").Int()}
}

func sum(us ...[3]int64) [3]int64 {
	var s [3]int64
	for _, u := range us {
		for i := range s {
			s[i] += u[i]
		}
	}
	return s
}

// upstreamSaw reports whether the fake's last request held text.
func upstreamSaw(up *cursortest.Server, text string) bool {
	reqs := up.Requests()
	return len(reqs) > 0 && strings.Contains(string(reqs[len(reqs)-1].Body), text)
}

// TestStateSharedByTwoGateways runs two gateway processes on one Redis:
// a chain started on one continues on the other, both read and delete
// its responses, and the usage endpoint of either shows both's sum.
func TestStateSharedByTwoGateways(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway processes")
	}
	redis := redistest.Start(t)
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(&cursortest.Usage{Input: 120, Output: 7}, "Paris.")))
	env := map[string]string{"CURSOR_API_URL": up.URL, "STATE_URL": redis.URL(), "API_KEY": "sk-alice,sk-bob", "ADMIN_KEY": "admin-secret"}
	a, b := startProc(t, env), startProc(t, env)

	first := a.respond("sk-alice", "", "What is the capital of France?")
	second := b.respond("sk-alice", first.Get("id").String(), "And of Italy?")
	assert.True(t, upstreamSaw(up, "What is the capital of France?"), "the second gateway continued the first's conversation")
	third := a.respond("sk-bob", "", "And of Spain?")

	// Each response is its key's on every replica; the other key finds
	// none.
	for _, g := range []*gatewayProc{a, b} {
		for _, r := range []struct {
			res        gjson.Result
			owner, not string
		}{{first, "sk-alice", "sk-bob"}, {second, "sk-alice", "sk-bob"}, {third, "sk-bob", "sk-alice"}} {
			status, got := g.call(http.MethodGet, "/v1/responses/"+r.res.Get("id").String(), r.owner, "")
			require.Equal(t, http.StatusOK, status, "%s", got.Raw)
			assert.Equal(t, r.res.Get("id").String(), got.Get("id").String())
			assert.Equal(t, r.res.Get("output.0.content.0.text").String(), got.Get("output.0.content.0.text").String())
			status, got = g.call(http.MethodGet, "/v1/responses/"+r.res.Get("id").String(), r.not, "")
			assert.Equal(t, http.StatusNotFound, status, "another key's response: %s", got.Raw)
		}
	}
	status, _ := b.call(http.MethodDelete, "/v1/responses/"+third.Get("id").String(), "sk-bob", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = a.call(http.MethodGet, "/v1/responses/"+third.Get("id").String(), "sk-bob", "")
	assert.Equal(t, http.StatusNotFound, status, "deleted on one, gone on the other")

	alice, bob := sum(usageOf(first), usageOf(second)), usageOf(third)
	require.Positive(t, alice[1])
	var ids []string
	for _, g := range []*gatewayProc{a, b} {
		require.Eventually(t, func() bool {
			u := g.usageTotals()
			ids = ids[:0]
			var all [3]int64
			for id, v := range u {
				ids = append(ids, id)
				all = sum(all, v)
			}
			return all == sum(alice, bob) && len(u) == 2
		}, 10*time.Second, 100*time.Millisecond, "the usage endpoint of %s shows both gateways' requests: %v", g.url, g.usageTotals())
	}
	for _, id := range ids {
		assert.Regexp(t, `^key_[0-9a-f]{8}$`, id, "keys are kept as a short hash")
	}
	status, _ = a.call(http.MethodGet, "/v1/organization/usage/completions?start_time=0", "sk-alice", "")
	assert.Equal(t, http.StatusUnauthorized, status, "the usage endpoint takes ADMIN_KEY only")
	assert.NotContains(t, a.log()+b.log(), "sk-alice")
}

// TestStateSurvivesARestart runs a gateway on the embedded file, stops
// it, starts it again on the same STATE_DIR, and continues the chain
// and reads the usage from before the restart.
func TestStateSurvivesARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway processes")
	}
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(&cursortest.Usage{Input: 50, Output: 5}, "Paris.")))
	env := map[string]string{"CURSOR_API_URL": up.URL, "STATE_DIR": t.TempDir(), "API_KEY": "sk-alice", "ADMIN_KEY": "admin-secret"}
	g := startProc(t, env)
	first := g.respond("sk-alice", "", "What is the capital of France?")
	g.stop()

	g = startProc(t, env)
	status, got := g.call(http.MethodGet, "/v1/responses/"+first.Get("id").String(), "sk-alice", "")
	require.Equal(t, http.StatusOK, status, "%s", got.Raw)
	second := g.respond("sk-alice", first.Get("id").String(), "And of Italy?")
	assert.True(t, upstreamSaw(up, "What is the capital of France?"), "the restarted gateway continued the conversation")
	want := sum(usageOf(first), usageOf(second))
	require.Eventually(t, func() bool {
		u := g.usageTotals()
		return len(u) == 1 && sum(values(u)...) == want
	}, 10*time.Second, 100*time.Millisecond, "the usage from before the restart is counted: %v, want %v", g.usageTotals(), want)

	// Killed without a chance to flush, the responses it wrote are there
	// still (each is committed before its answer ends).
	third := g.respond("sk-alice", second.Get("id").String(), "And of Spain?")
	g.kill()
	g = startProc(t, env)
	status, _ = g.call(http.MethodGet, "/v1/responses/"+third.Get("id").String(), "sk-alice", "")
	assert.Equal(t, http.StatusOK, status)
}

func values(m map[string][3]int64) [][3]int64 {
	var out [][3]int64
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestStateLostWhileRunning stops Redis under a running gateway: chat
// goes on, the failed writes are counted and queued, /ready says the
// store is degraded, and when Redis is back the queued write lands.
func TestStateLostWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway processes")
	}
	redis := redistest.Start(t)
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "ok")))
	g := startProc(t, map[string]string{"CURSOR_API_URL": up.URL, "STATE_URL": redis.URL()})
	redis.Stop()

	start := time.Now()
	status, res := g.call(http.MethodPost, "/v1/chat/completions", "", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, status, "%s", res.Raw)
	kept := g.respond("", "", "remember me")
	assert.Less(t, time.Since(start), 6*time.Second, "a lost store holds no answer for longer than its short timeout")

	require.Eventually(t, func() bool {
		status, r := g.call(http.MethodGet, "/ready", "", "")
		return status == http.StatusOK && r.Get("state.status").String() == "degraded" && r.Get("state.engine").String() == "redis"
	}, 10*time.Second, 100*time.Millisecond, "/ready shows the store degraded and the gateway still ready")
	req, err := http.Get(g.url + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(req.Body)
	req.Body.Close()
	require.NoError(t, err)
	assert.Regexp(t, `cursor2api_state_write_failures_total\{engine="redis"\} [1-9]`, string(metrics))
	assert.Regexp(t, `cursor2api_state_writes_queued\{engine="redis"\} [1-9]`, string(metrics))
	status, _ = g.call(http.MethodGet, "/v1/responses/"+kept.Get("id").String(), "", "")
	assert.Equal(t, http.StatusServiceUnavailable, status, "a read of a lost store says so")

	redis.Start()
	require.Eventually(t, func() bool {
		status, _ := g.call(http.MethodGet, "/v1/responses/"+kept.Get("id").String(), "", "")
		return status == http.StatusOK
	}, 15*time.Second, 200*time.Millisecond, "the queued write lands once Redis is back")
	_, r := g.call(http.MethodGet, "/ready", "", "")
	assert.Equal(t, "ok", r.Get("state.status").String(), "%s", r.Raw)
}

// TestStateStartErrors: a gateway whose state store cannot be had does
// not start, and says which setting to fix, within a bounded time.
func TestStateStartErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway processes")
	}
	missing := t.TempDir() + "/nope"
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{name: "redis unreachable", env: map[string]string{"STATE_URL": "redis://:s3cret@127.0.0.1:1/0", "STATE_CONNECT_TIMEOUT": "2"},
			want: []string{"STATE_URL=redis://:xxxxx@127.0.0.1:1/0", "did not answer within 2s"}},
		{name: "missing dir", env: map[string]string{"STATE_DIR": missing}, want: []string{"STATE_DIR=" + missing, "does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestGatewayProcess$", "-test.count=1")
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "CURSOR2API_GATEWAY_PROCESS=1", "HOST=127.0.0.1", "PORT=1", "X_IS_HUMAN_MODE=static:x", "MODELS=claude-sonnet-4.6", "CURSOR_API_URL=http://127.0.0.1:1")
			for k, v := range tt.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s", out)
			assert.Equal(t, 1, exit.ExitCode())
			for _, w := range tt.want {
				assert.Contains(t, string(out), w)
			}
			assert.NotContains(t, string(out), "s3cret")
			assert.Less(t, time.Since(start), 15*time.Second)
		})
	}
}
