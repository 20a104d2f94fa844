package keys

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable clock for the pool and the fake alike.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeAuth is Cursor's key exchange in its real shape: POST
// /auth/exchange_user_api_key, body {}, the API key as a bearer token,
// answering {"accessToken","refreshToken","authId"} with JWTs whose exp
// is life from the clock's now.
type fakeAuth struct {
	t     *testing.T
	clock *clock
	life  time.Duration
	srv   *httptest.Server

	mu        sync.Mutex
	exchanges map[string]int    // per API key
	refuse    map[string]int    // API key → status to answer instead (with body)
	body      map[string]string // the body of a refusal
	header    http.Header       // the last request's headers
	minted    int
	gate      chan struct{} // when set, each exchange waits for it (or its request's end)
	entered   chan struct{} // when set, told of each exchange as it starts
}

func newFakeAuth(t *testing.T, c *clock) *fakeAuth {
	f := &fakeAuth{t: t, clock: c, life: time.Hour, exchanges: map[string]int{}, refuse: map[string]int{}, body: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAuth) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/auth/exchange_user_api_key" {
		http.Error(w, `{"code":"not_found","message":"no such route"}`, http.StatusNotFound)
		return
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || string(body) != "{}" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"code":"invalid_argument","message":"bad exchange request"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.exchanges[key]++
	f.header = r.Header.Clone()
	status, gate, entered := f.refuse[key], f.gate, f.entered
	refusal := f.body[key]
	f.minted++
	n := f.minted
	f.mu.Unlock()
	if entered != nil {
		select { // never blocks the fake: a full channel has told enough
		case entered <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "10")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, refusal)
		return
	}
	now := f.clock.Now()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"accessToken":  jwt(map[string]any{"sub": "auth0|user_1", "type": "api_key_token", "iat": now.Unix(), "exp": now.Add(f.life).Unix(), "n": n}),
		"refreshToken": jwt(map[string]any{"sub": "auth0|user_1", "exp": now.Add(f.life).Unix(), "refresh": n}),
		"authId":       "auth0|user_1",
	})
}

func (f *fakeAuth) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exchanges[key]
}

func (f *fakeAuth) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.exchanges {
		n += c
	}
	return n
}

func (f *fakeAuth) setRefuse(key string, status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status == 0 {
		delete(f.refuse, key)
		return
	}
	f.refuse[key], f.body[key] = status, body
}

func (f *fakeAuth) setGate(gate, entered chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.entered = gate, entered
}

// jwt makes an unsigned-looking JWT with the given claims.
func jwt(claims map[string]any) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload, _ := json.Marshal(claims)
	return head + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString([]byte("signature"))
}

// logBuffer collects a pool's logs, at every level.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newPool makes a pool of keys against f, logging into a buffer.
func newPool(t *testing.T, f *fakeAuth, keys []string, tweak func(*Options)) (*Pool, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts := Options{
		Keys:    keys,
		BaseURL: f.srv.URL,
		HTTP:    f.srv.Client(),
		Now:     f.clock.Now,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Header:  http.Header{"X-Cursor-Client-Type": {"sdk"}, "X-Cursor-Client-Version": {"sdk-1.0.32"}},
	}
	if tweak != nil {
		tweak(&opts)
	}
	p, err := New(opts)
	require.NoError(t, err)
	return p, logs
}

// stateOf is the named key's snapshot.
func stateOf(t *testing.T, p *Pool, name string) KeyState {
	t.Helper()
	for _, s := range p.Snapshot() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no key %s in the snapshot", name)
	return KeyState{}
}

func sessions(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("session-%02d", i)
	}
	return out
}

// bounded is a context for a test's waits: a bug makes a test fail, not
// hang.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wait receives from ch within a bound.
func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
	}
	var zero T
	return zero
}
