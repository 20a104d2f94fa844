package tests

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
	"cursor2api/services/state/redistest"
)

// reply is what a gateway answered a request with.
type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

// limitsClient bounds every request of the limits test: nothing hangs.
var limitsClient = &http.Client{Timeout: 60 * time.Second}

// post sends a chat request with a bearer key; safe off the test's
// goroutine (it reports, never fails the test).
func post(url, key, body string) reply {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := limitsClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

const limitsChat = `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`

// heldStream is the body of a stream the fake upstream holds open until
// the test lets it go by its name.
func heldStream(name string) string {
	return `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"HOLD-` + name + `"}]}`
}

// holdingUpstream is a fake upstream that holds each request naming
// HOLD-<name> before its answer, until release(name) (or the test's end).
type holdingUpstream struct {
	*cursortest.Server
	reached chan string
	mu      sync.Mutex
	holds   map[string]chan struct{}
}

var holdName = regexp.MustCompile(`HOLD-(\w+)`)

func newHoldingUpstream(t *testing.T) *holdingUpstream {
	u := &holdingUpstream{reached: make(chan string, 16), holds: map[string]chan struct{}{}}
	u.Server = cursortest.NewServer(t, func(_ int, req cursortest.Request) cursortest.Response {
		if m := holdName.FindSubmatch(req.Body); m != nil {
			held := u.hold(string(m[1])) // before it is reported, so release finds it
			u.reached <- string(m[1])
			<-held
		}
		return cursortest.Text(nil, "ok")
	})
	// Registered after the server's Close, so run before it: no handler
	// is left waiting (a killed replica's never ends by itself).
	t.Cleanup(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		for name, c := range u.holds {
			close(c)
			delete(u.holds, name)
		}
	})
	return u
}

func (u *holdingUpstream) hold(name string) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.holds[name]
	if !ok {
		c = make(chan struct{})
		u.holds[name] = c
	}
	return c
}

// release lets the stream name go (once).
func (u *holdingUpstream) release(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c, ok := u.holds[name]; ok {
		close(c)
		delete(u.holds, name)
	}
}

// openStream starts a held stream through g; its reply arrives on the
// channel when it ends (or dies). It returns once the upstream holds it.
func (u *holdingUpstream) openStream(t *testing.T, g *gatewayProc, key, name string) <-chan reply {
	t.Helper()
	done := make(chan reply, 1)
	go func() { done <- post(g.url, key, heldStream(name)) }()
	select {
	case got := <-u.reached:
		require.Equal(t, name, got, "the upstream holds the stream just opened")
	case r := <-done:
		t.Fatalf("stream %s ended before it reached the upstream: %d %s %v", name, r.status, r.body, r.err)
	case <-time.After(20 * time.Second):
		t.Fatalf("stream %s never reached the upstream", name)
	}
	return done
}

// TestLimitsAcrossReplicaProcesses runs two gateway processes on one
// redis-server, with a short LIMITS_SLOT_LEASE: a key of rpm 4 gets
// exactly 4 requests through the two together; a key of 2 concurrent
// streams gets a 429 on the third, for longer than a lease while its
// streams live, and its slots back when their replica is killed (within
// the lease) or when a stream ends (at once).
func TestLimitsAcrossReplicaProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs gateway processes")
	}
	// 5 s: renewed every 1.7 s, so a loaded machine has seconds of margin
	// before a live replica's slot could lapse.
	const lease = 5 * time.Second
	redis := redistest.Start(t)
	up := newHoldingUpstream(t)
	file := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(file, []byte("keys:\n"+
		"  - {name: team, key: sk-team, limits: {rpm: 4}}\n"+
		"  - {name: streams, key: sk-streams, limits: {concurrent: 2}}\n"), 0o600))
	env := map[string]string{"CURSOR_API_URL": up.URL, "STATE_URL": redis.URL(), "API_KEYS_FILE": file,
		"LIMITS_SLOT_LEASE": lease.String()}
	a, b := startProc(t, env), startProc(t, env)

	refused := func(what string) {
		t.Helper()
		r := post(a.url, "sk-streams", limitsChat)
		require.NoError(t, r.err)
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s: %s", what, r.body)
		assert.Equal(t, "1", r.header.Get("Retry-After"), what)
		msg := gjson.Get(r.body, "error.message").String()
		assert.Contains(t, msg, `"streams"`, what)
		assert.Contains(t, msg, "concurrent", what)
	}

	// Two streams through B; the third request, through A, is refused.
	b1 := up.openStream(t, b, "sk-streams", "b1")
	b2 := up.openStream(t, b, "sk-streams", "b2")
	held := time.Now()
	refused("the third request while B holds two streams")

	// The rpm key, meanwhile: 10 requests at once, half through each
	// replica, within one minute's window.
	if s := time.Now().Second(); s >= 55 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	var wg sync.WaitGroup
	replies := make(chan reply, 10)
	for i := range 10 {
		g := []*gatewayProc{a, b}[i%2]
		wg.Go(func() { replies <- post(g.url, "sk-team", limitsChat) })
	}
	wg.Wait()
	close(replies)
	ok := 0
	for r := range replies {
		require.NoError(t, r.err)
		switch r.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			assert.Contains(t, gjson.Get(r.body, "error.message").String(), `"team"`)
			assert.Contains(t, gjson.Get(r.body, "error.message").String(), "rpm")
			assert.NotEmpty(t, r.header.Get("Retry-After"))
		default:
			t.Fatalf("an rpm request: %d %s", r.status, r.body)
		}
	}
	assert.Equal(t, 4, ok, "exactly rpm through the two replicas together")

	// B renews its slots: past a lease and a renewal they are held still.
	time.Sleep(time.Until(held.Add(lease + lease/2)))
	refused("the third request after more than a lease, B's streams alive")

	// kill -9 B: its streams die, and nobody frees their slots but
	// their leases. Right after, they are held (renewed < lease/3 ago).
	b.kill()
	killed := time.Now()
	for _, s := range []<-chan reply{b1, b2} {
		r := <-s
		assert.False(t, r.err == nil && strings.Contains(r.body, "[DONE]"), "a stream of the killed replica did not finish: %d %s", r.status, r.body)
	}
	refused("the third request right after B was killed")
	deadline := killed.Add(4 * lease)
	for {
		r := post(a.url, "sk-streams", limitsChat)
		require.NoError(t, r.err)
		if r.status == http.StatusOK {
			assert.Equal(t, "ok", gjson.Get(r.body, "choices.0.message.content").String(), r.body)
			break
		}
		require.Equal(t, http.StatusTooManyRequests, r.status, r.body)
		require.True(t, time.Now().Before(deadline), "the killed replica's slots did not come back within %s (lease %s)", 4*lease, lease)
		time.Sleep(lease / 10)
	}
	t.Logf("the killed replica's slots came back %s after the kill (lease %s)", time.Since(killed).Round(time.Millisecond), lease)

	// A stream that ends frees its slot at once, not at its lease's end.
	a1 := up.openStream(t, a, "sk-streams", "a1")
	a2 := up.openStream(t, a, "sk-streams", "a2")
	refused("the third request while A holds two streams")
	up.release("a1")
	r := <-a1
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "[DONE]", "the stream ended normally")
	r = post(a.url, "sk-streams", limitsChat)
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, "the ended stream's slot came back: %s", r.body)
	up.release("a2")
	r = <-a2
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, r.body)
}
