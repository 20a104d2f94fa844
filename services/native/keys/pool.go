package keys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// probeWait is the Retry-After of a 429 while the only key left is being
// probed: about a short turn.
const probeWait = 5 * time.Second

// Lease is one use of a key: the calls of one turn (or one attempt of
// it). Its holder must call Done exactly once with how the calls went;
// further calls of Done are ignored.
type Lease struct {
	pool  *Pool
	k     *key
	token string
	gen   uint64 // the token's generation
	epoch uint64 // the key's rest count when the lease was taken
	probe bool
	aside bool // taken from a resting key by AcquireAny: says nothing of its rest
	done  atomic.Bool
}

// Name is the key's fingerprint, for logs and metrics.
func (l *Lease) Name() string { return l.k.name }

// APIKey is the key itself, for Cursor's REST calls (/v1/models). Never
// log it.
func (l *Lease) APIKey() string { return l.k.api }

// AccessToken is a valid access token for Connect calls. Never log it.
func (l *Lease) AccessToken() string { return l.token }

// Probe reports whether this lease is the one trying the key after its
// rest: its outcome decides whether the key's conversations come back.
func (l *Lease) Probe() bool { return l.probe }

// String is the key's fingerprint, so that printing a lease reveals
// nothing.
func (l *Lease) String() string { return l.k.name }

// LogValue is the key's fingerprint, so that logging a lease reveals
// nothing.
func (l *Lease) LogValue() slog.Value { return slog.StringValue(l.k.name) }

// OutcomeKind classes how a lease's calls went.
type OutcomeKind uint8

const (
	// OK: the upstream served the calls. It ends a key's run of failures
	// and, for a probe, brings the key's conversations back.
	OK OutcomeKind = iota
	// Unauthorized: the upstream refused the access token (401,
	// unauthenticated). The first time, the next Acquire exchanges the key
	// again; if the fresh token is refused too, the key is bad.
	Unauthorized
	// Quota: the key's usage limit is reached. The key rests.
	Quota
	// RateLimited: the upstream asked to slow down (429). The key rests.
	RateLimited
	// NotKeysFault: the call failed for a reason another key would not
	// change (a version gate, an unknown model, a bad request). The key's
	// state is untouched.
	NotKeysFault
	// Transient: the upstream or the network failed, or the client left.
	// The key's state is untouched; a probe is handed to the next caller.
	Transient
)

var outcomeNames = [...]string{"ok", "unauthorized", "quota", "rate_limited", "not_keys_fault", "transient"}

func (k OutcomeKind) String() string {
	if int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return fmt.Sprintf("OutcomeKind(%d)", k)
}

// Outcome is how a lease's calls went.
type Outcome struct {
	Kind OutcomeKind
	// RetryAfter is the upstream's Retry-After for Quota and RateLimited,
	// zero when it gave none (see RetryAfter).
	RetryAfter time.Duration
	// Err is what went wrong, kept (clipped, keys scrubbed) as the key's
	// last error.
	Err error
}

// Acquire leases a key with a valid token for session (a session id or
// SessionHash; empty gets any key). The same session gets the same key while
// it is usable, and its next key after a Done that took it out of use.
// Errors are a *models.Error (401 every key refused, 429 every key rests,
// 502/503 exchange unreachable) or ctx's error.
func (p *Pool) Acquire(ctx context.Context, session string) (*Lease, error) {
	// Each failed round takes a key out of use, so a round per key (and
	// one more for a key brought back by BadRecheck) is enough.
	for range 2*len(p.keys) + 1 {
		p.mu.Lock()
		now := p.now()
		k, err := p.choose(now, session)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		l := &Lease{pool: p, k: k, epoch: k.epoch}
		if k.failures > 0 { // its rest is over: this lease probes it
			l.probe = true
			k.probe, k.probeAt = l, now
		}
		p.mu.Unlock()

		l.token, l.gen, err = p.token(ctx, k)
		if err == nil {
			p.mu.Lock()
			k.requests++
			p.mu.Unlock()
			if l.probe {
				p.log.Debug("probing a Cursor API key after its rest", "key", k.name)
			}
			return l, nil
		}
		p.release(l)
		if !errors.Is(err, errKeyOut) {
			return nil, err
		}
	}
	return nil, models.Upstream(http.StatusServiceUnavailable, "cursor_keys_unsettled", nil,
		"no Cursor API key in CURSOR_API_KEY could be used after trying each; retry shortly")
}

// AcquireAny is Acquire for calls a rest does not stop (the model list, served
// whatever the quota): when every key rests it leases the one whose rest ends
// first, leaving the rest as it is, so a gateway learns its models even then.
func (p *Pool) AcquireAny(ctx context.Context) (*Lease, error) {
	l, err := p.Acquire(ctx, "")
	var me *models.Error
	if err == nil || !errors.As(err, &me) || me.Status != http.StatusTooManyRequests {
		return l, err
	}
	p.mu.Lock()
	var k *key
	for _, c := range p.keys {
		if c.bad == "" && (k == nil || c.coolUntil.Before(k.coolUntil)) {
			k = c
		}
	}
	p.mu.Unlock()
	if k == nil {
		return nil, err
	}
	l = &Lease{pool: p, k: k, aside: true}
	if l.token, l.gen, err = p.token(ctx, k); err != nil {
		if errors.Is(err, errKeyOut) {
			return p.Acquire(ctx, "") // says why no key serves now
		}
		return nil, err
	}
	p.mu.Lock()
	k.requests++
	p.mu.Unlock()
	return l, nil
}

// choose picks session's key among the usable ones, by rendezvous
// hashing. A key is usable when Cursor has not refused it (or refused it
// BadRecheck ago), it is not resting, and no other lease is probing it.
// With none usable, it says why as the error Acquire returns. p.mu is held.
func (p *Pool) choose(now time.Time, session string) (*key, error) {
	var best *key
	var bestScore uint64
	wait, waiting := time.Duration(0), false
	soon := func(d time.Duration) {
		if !waiting || d < wait {
			wait, waiting = d, true
		}
	}
	var refused []string
	p.syncDue(now)
	for _, k := range p.keys {
		if k.bad != "" && now.Sub(k.badAt) >= p.opts.BadRecheck {
			p.log.Info("trying a refused Cursor API key again", "key", k.name)
			p.recheck(k)
		}
		switch {
		case k.bad != "":
			refused = append(refused, k.name+": "+k.bad)
			continue
		case now.Before(k.coolUntil):
			soon(k.coolUntil.Sub(now))
			continue
		case k.probe != nil && now.Sub(k.probeAt) < p.opts.ProbeTimeout:
			// A probe is under way: the key may be back within a turn.
			soon(probeWait)
			continue
		}
		if s := score(session, k.name); best == nil || s > bestScore {
			best, bestScore = k, s
		}
	}
	switch {
	case best != nil:
		return best, nil
	case waiting:
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		return nil, &models.Error{
			Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "cursor_keys_resting", RetryAfter: secs,
			Message: fmt.Sprintf("every Cursor API key in CURSOR_API_KEY hit its quota or a rate limit; retry in %d s, or add keys to CURSOR_API_KEY", secs),
		}
	default:
		return nil, &models.Error{
			Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "cursor_api_key_refused",
			Message: "Cursor refuses every key in CURSOR_API_KEY (" + utils.Clip(strings.Join(refused, "; "), 4*utils.QuoteLen) +
				"): set CURSOR_API_KEY to a valid Cursor API key (cursor.com/dashboard → API keys)",
		}
	}
}

// release frees l's probe, if it is one, with no verdict on the key: the
// next caller whose conversation belongs to the key probes it.
func (p *Pool) release(l *Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.k.probe == l {
		l.k.probe = nil
	}
}

// Done tells the pool how the lease's calls went. It must be called once
// per lease, whatever happened (Transient when the client left).
func (l *Lease) Done(o Outcome) {
	if !l.done.CompareAndSwap(false, true) {
		return
	}
	p, k := l.pool, l.k
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if k.probe == l {
		k.probe = nil
	}
	if o.Kind != OK && o.Err != nil {
		k.lastErr, k.lastErrAt = o.Kind.String()+": "+clipErr(o.Err.Error(), k, l.token, k.token), now
	}
	// An outcome counts for the key's health only if the key has not
	// rested (nor been refused) since the lease was taken: leases taken
	// before a rest report what the rest already knows.
	current := l.epoch == k.epoch && k.bad == "" && !l.aside
	switch o.Kind {
	case OK:
		if l.gen == k.gen {
			k.authFails = 0
		}
		if current && k.failures > 0 {
			p.log.Info("a Cursor API key works again after its rest", "key", k.name, "failures", k.failures)
			k.failures, k.coolUntil, k.restKind, k.okAt = 0, time.Time{}, "", now
			p.changed(k)
		}
	case Unauthorized:
		// Held against the token once, however many calls it failed.
		if l.gen == k.gen && !k.stale && k.bad == "" {
			k.stale = true
			k.authFails++
			if k.authFails >= 2 {
				reason := "Cursor refused a freshly exchanged access token"
				if o.Err != nil {
					reason += " (" + k.lastErr + ")"
				}
				p.markBad(k, now, reason)
			}
		}
	case Quota, RateLimited:
		if current {
			p.coolDown(k, now, o.Kind, o.RetryAfter)
		}
	}
}

// recheck gives a refused key another chance: its next use exchanges
// it again. p.mu is held.
func (p *Pool) recheck(k *key) {
	k.bad, k.stale, k.authFails, k.rechecking = "", true, 0, true
}

// markBad takes k out of use because Cursor refuses it. p.mu is held.
func (p *Pool) markBad(k *key, now time.Time, reason string) {
	k.bad, k.badAt = clipErr(reason, k), now
	k.lastErr, k.lastErrAt = k.bad, now
	k.epoch++
	k.probe = nil
	p.changed(k)
	p.log.Warn("Cursor refuses an API key in CURSOR_API_KEY; its conversations move to the other keys", "key", k.name, "reason", k.bad, "recheck_in", p.opts.BadRecheck)
}

// coolDown rests k after a quota or rate-limit failure (kind). p.mu is
// held.
func (p *Pool) coolDown(k *key, now time.Time, kind OutcomeKind, retryAfter time.Duration) {
	k.failures++
	k.cooldowns++
	d := cooldown(p.opts, k.failures, retryAfter)
	k.coolUntil, k.restKind, k.restAt = now.Add(d), kind.String(), now
	k.epoch++
	k.probe = nil
	p.changed(k)
	p.log.Info("a Cursor API key rests after a quota or rate limit; its conversations move to the other keys", "key", k.name, "for", d, "failures", k.failures, "err", k.lastErr)
}

// cooldown is the rest after the failures-th quota or rate-limit failure
// in a row: the first is short (Cooldown, or the upstream's Retry-After,
// at most FirstCooldownMax), each further one doubles, up to MaxCooldown.
func cooldown(o Options, failures int, retryAfter time.Duration) time.Duration {
	if failures <= 1 {
		d := o.Cooldown
		if retryAfter > 0 {
			d = retryAfter
		}
		return min(d, o.FirstCooldownMax)
	}
	d := o.Cooldown
	for i := 1; i < failures && d < o.MaxCooldown; i++ {
		d *= 2
	}
	return min(max(d, retryAfter), o.MaxCooldown)
}

// State is a key's state in a Snapshot.
type State string

const (
	StateOK      State = "ok"      // in use
	StateBad     State = "bad"     // Cursor refuses it (Reason says why)
	StateCooling State = "cooling" // resting until CoolingUntil
	StateProbing State = "probing" // its rest is over: the next of its conversations tries it
)

// KeyState is one key's state, for /ready and /metrics.
type KeyState struct {
	Name         string // the fingerprint
	State        State
	Reason       string    // why the key is bad
	CoolingUntil time.Time // when a cooling key's rest ends
	Failures     int       // quota or rate-limit failures in a row
	ProbeActive  bool      // a probing key's probe is under way
	Requests     int64     // leases given
	Cooldowns    int64     // rests so far
	LastError    string    // clipped, keys scrubbed
	LastErrorAt  time.Time
	TokenExpires time.Time // zero before the first exchange
}

// Snapshot returns every key's state, in configuration order.
func (p *Pool) Snapshot() []KeyState {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.syncDue(now) // so that /ready and /metrics show other replicas' rests on a quiet replica too
	out := make([]KeyState, 0, len(p.keys))
	for _, k := range p.keys {
		s := KeyState{
			Name: k.name, State: StateOK, Failures: k.failures, Requests: k.requests, Cooldowns: k.cooldowns,
			LastError: k.lastErr, LastErrorAt: k.lastErrAt, TokenExpires: k.tokenExp,
		}
		switch {
		case k.bad != "":
			s.State, s.Reason = StateBad, k.bad
		case now.Before(k.coolUntil):
			s.State, s.CoolingUntil = StateCooling, k.coolUntil
		case k.failures > 0:
			s.State = StateProbing
			s.ProbeActive = k.probe != nil && now.Sub(k.probeAt) < p.opts.ProbeTimeout
		}
		out = append(out, s)
	}
	return out
}

// Check, for /ready, exchanges every key without a fresh token (a refused
// one only after BadRecheck), each within ExchangeTimeout. It returns nil
// when some key can serve now, else the error Acquire would return.
func (p *Pool) Check(ctx context.Context) error {
	errs := make([]error, len(p.keys))
	var wg sync.WaitGroup
	for i, k := range p.keys {
		p.mu.Lock()
		if k.bad != "" && p.now().Sub(k.badAt) >= p.opts.BadRecheck {
			p.recheck(k)
		}
		skip := k.bad != ""
		p.mu.Unlock()
		if skip {
			errs[i] = errKeyOut
			continue
		}
		wg.Go(func() {
			_, _, errs[i] = p.token(ctx, k)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	exchanged := false
	var unreachable error
	for _, err := range errs {
		switch {
		case err == nil:
			exchanged = true
		case !errors.Is(err, errKeyOut):
			unreachable = err
		}
	}
	if !exchanged && unreachable != nil {
		return unreachable
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.choose(p.now(), "")
	return err
}
