// Package keys is the native back door's pool of Cursor API keys
// (CURSOR_API_KEY). It keeps each key's access token fresh, sends a
// conversation to the same key (rendezvous hashing) so the upstream's prompt
// cache keeps hitting, and rests a key that hit a quota or rate limit; with
// a state store, replicas share the rests (shared.go). Keys appear in logs
// and errors only by their Fingerprint.
package keys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/services/state"
)

// ExchangePath is the key exchange's path under the base URL.
const ExchangePath = "/auth/exchange_user_api_key"

// Defaults for Options' durations.
const (
	DefaultExchangeTimeout  = 15 * time.Second
	DefaultCooldown         = 30 * time.Second
	DefaultFirstCooldownMax = 90 * time.Second
	DefaultMaxCooldown      = 30 * time.Minute
	DefaultProbeTimeout     = 10 * time.Minute
	DefaultBadRecheck       = 10 * time.Minute
	DefaultSyncEvery        = 5 * time.Second
)

// Options configure a Pool. Only Keys is required.
type Options struct {
	// Keys are the Cursor API keys, as config.CursorAPIKeys reads them
	// from CURSOR_API_KEY.
	// A key given twice counts once.
	Keys []string
	// BaseURL is the host of the key exchange (CURSOR_BACKEND_URL);
	// empty means models.CursorConnectURL.
	BaseURL string
	// HTTP makes the exchanges; nil means a client of its own.
	HTTP *http.Client
	// Header is added to every exchange request: the client type and
	// version the back door presents to Cursor.
	Header http.Header
	// Now is the clock; nil means time.Now. Tests inject their own.
	Now func() time.Time
	// Logger receives state changes (a key refused, resting, back); nil
	// discards them. Keys appear in it only by fingerprint.
	Logger *slog.Logger

	// ExchangeTimeout bounds one key exchange.
	ExchangeTimeout time.Duration
	// Cooldown is a key's first rest after a quota or rate limit when the
	// upstream gives no Retry-After; each further failure in a row
	// doubles it.
	Cooldown time.Duration
	// FirstCooldownMax caps the first rest, even against a longer
	// Retry-After, so that a key is tried again within minutes.
	FirstCooldownMax time.Duration
	// MaxCooldown caps the rest of a key that keeps failing.
	MaxCooldown time.Duration
	// ProbeTimeout frees a probe whose lease was never Done, so a lost
	// lease cannot keep a key out of use for ever.
	ProbeTimeout time.Duration
	// BadRecheck is how long a refused key stays out before it is
	// exchanged again (its account may have been put right).
	BadRecheck time.Duration

	// State, when set, shares the keys' rests with other replicas and the
	// next start (nil: this process only). The queue keeps writes while the
	// store is away; reads are bounded and never on a request's path.
	State *state.Queue
	// SyncEvery is how often the pool reads the shared rests again, at
	// most: a rest another replica began is honoured here within about
	// this long.
	SyncEvery time.Duration
}

// Pool hands out Cursor API keys and their access tokens per conversation.
// It is safe for concurrent use. Without Options.State it starts no
// goroutine of its own; with it, its reads and writes of the store run in
// short goroutines, each bounded by the store's timeout.
type Pool struct {
	opts     Options
	exchange string // the exchange's URL
	log      *slog.Logger
	now      func() time.Time

	mu   sync.Mutex
	keys []*key // in configuration order

	// Sharing the rests (Options.State); see shared.go.
	state    *state.Queue
	bg       sync.WaitGroup // the reads and writes of the store under way
	wmu      sync.Mutex     // one write of a record at a time, so the last written is the last state
	flushing bool           // a writer goroutine runs (guarded by mu)
	syncing  bool           // a read of the shared rests runs (guarded by mu)
	syncedAt time.Time      // when the last read began (guarded by mu)
	idle     chan struct{}  // closed when neither runs, for Wait (guarded by mu)
}

// key is one API key and everything the pool knows of it. All fields
// after name are guarded by Pool.mu.
type key struct {
	api  string // the API key itself: never logged
	name string // its fingerprint

	// The access token.
	token     string
	tokenExp  time.Time
	refreshAt time.Time // when a caller should exchange again, ahead of tokenExp
	gen       uint64    // counts tokens, so a 401 is held against the token it was for
	stale     bool      // the upstream refused the current token: exchange before use
	authFails int       // tokens refused in a row; the second makes the key bad
	flight    *flight   // the exchange under way, if any

	// Health.
	bad        string    // why Cursor refuses the key; empty when it does not
	badAt      time.Time // when it was refused
	rechecking bool      // a refused key is being tried again (BadRecheck)
	coolUntil  time.Time // the key rests until then
	failures   int       // quota or rate-limit failures in a row
	epoch      uint64    // counts rests: an outcome of a lease from before the last rest is stale
	probe      *Lease    // the one lease trying the key after its rest
	probeAt    time.Time // when the probe was handed out (ProbeTimeout)
	restKind   string    // what began the rest: quota or rate_limited
	restAt     time.Time // when the rest began
	okAt       time.Time // when the key last worked again after a rest or refusal

	// Sharing (Options.State).
	ver   uint64 // counts this process's changes of the key's health
	dirty bool   // a change is still to be written to the store

	// For Snapshot.
	requests  int64
	cooldowns int64
	lastErr   string
	lastErrAt time.Time
}

// New checks the options and makes a pool. It makes no network call:
// nothing at start-up waits for Cursor (see Check).
func New(opts Options) (*Pool, error) {
	if len(opts.Keys) == 0 {
		return nil, errors.New("CURSOR_API_KEY is empty: set one Cursor API key, or several separated by commas (cursor.com/dashboard → API keys)")
	}
	seen := make(map[string]bool, len(opts.Keys))
	var keys []*key
	for i, k := range opts.Keys {
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f || r == ',' }) {
			return nil, fmt.Errorf("CURSOR_API_KEY: key %d of %d is empty or holds a space, comma or control character: give the keys separated by commas", i+1, len(opts.Keys))
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, &key{api: k, name: Fingerprint(k)})
		}
	}
	if opts.BaseURL == "" {
		opts.BaseURL = models.CursorConnectURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("CURSOR_BACKEND_URL %q is not an http(s) base URL such as %s", opts.BaseURL, models.CursorConnectURL)
	}
	for name, values := range opts.Header {
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n") || strings.ContainsAny(name, " \r\n:") {
				return nil, fmt.Errorf("keys: header %q is malformed", name)
			}
		}
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	positive := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	positive(&opts.ExchangeTimeout, DefaultExchangeTimeout)
	positive(&opts.Cooldown, DefaultCooldown)
	positive(&opts.FirstCooldownMax, DefaultFirstCooldownMax)
	positive(&opts.MaxCooldown, DefaultMaxCooldown)
	positive(&opts.ProbeTimeout, DefaultProbeTimeout)
	positive(&opts.BadRecheck, DefaultBadRecheck)
	positive(&opts.SyncEvery, DefaultSyncEvery)
	opts.Keys = nil // the pool's keys live in p.keys only
	p := &Pool{
		opts:     opts,
		exchange: strings.TrimSuffix(opts.BaseURL, "/") + ExchangePath,
		log:      opts.Logger,
		now:      opts.Now,
		keys:     keys,
		state:    opts.State,
	}
	if p.state != nil {
		// A restarted gateway does not hammer the keys that were
		// resting when it stopped: it reads their rests first, within
		// the store's short timeout (a store that fails leaves every
		// key usable, as without one).
		p.syncedAt = p.now()
		_ = p.sync(context.Background())
	}
	return p, nil
}

// Len is the number of distinct keys in the pool.
func (p *Pool) Len() int { return len(p.keys) }
