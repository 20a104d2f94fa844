// Package readiness decides whether the gateway should get traffic, for
// /ready: it follows the outcome of upstream turns and gathers the state
// of the parts that can make answers fail (x-is-human, the egress pool),
// and says why when the answer is no.
package readiness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// Thresholds of the upstream check: after FailureThreshold failed turns in
// a row the gateway is not ready, until FailureWindow has passed since the
// last one (then traffic may try again) or a turn succeeds.
const (
	FailureThreshold = 3
	FailureWindow    = 30 * time.Second
)

// Human is the x-is-human state, as the wiring reads it.
type Human struct {
	Mode        string `json:"mode"`
	Evaluations int64  `json:"evaluations"`
	// Failing is true while the provider uses its fallback after a
	// failed refresh of the challenge script.
	Failing bool `json:"failing"`
}

// Proxy is the state of one egress proxy.
type Proxy struct {
	Proxy     string `json:"proxy"` // host:port, never credentials
	Active    bool   `json:"active"`
	Available bool   `json:"available"`
	// CoolingFor is how long the proxy still cools down after a failure.
	CoolingFor string `json:"cooling_for,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// Models are the models the gateway serves and where the list came from.
type Models struct {
	// Source is "configured" (MODELS), "upstream" (learned from it under
	// MODELS=auto), "fallback" (MODELS=auto before the upstream told its
	// list) or the back door's own ("agent").
	Source string `json:"source"`
	// Served are the public names a client may ask for.
	Served []string `json:"served"`
	// Upstream are the upstream ids the upstream accepts, when learned.
	Upstream   []string `json:"upstream,omitempty"`
	LearnedAge string   `json:"learned_age,omitempty"`
	// LastError is why the last attempt to learn them failed.
	LastError string `json:"last_error,omitempty"`
}

// Tracker follows the gateway's readiness. Human, Egress and Models, when
// set before use, are read on every report.
type Tracker struct {
	Human  func() Human
	Egress func() []Proxy
	Models func() Models
	// Checkpoint, when set, is Vercel's security checkpoint state.
	Checkpoint func() Checkpoint
	// Keys, when set, are the states of the native back door's API keys.
	Keys func() []Key
	// State, when set, is the state store's health. A degraded store
	// does not make the gateway unready: answers never wait for it.
	State func() State
	// MCP, when set, reports the MCP servers (a JSON-able value). A server
	// that is down leaves the gateway ready: its tools are just absent.
	MCP func() any
	// Check, when set, asks the back door whether it can answer without
	// a model call (the agent CLI: binary, version, login).
	Check func(context.Context) error
	// Now is the clock (tests set it); nil means time.Now.
	Now func() time.Time

	mu            sync.Mutex
	lastSuccess   time.Time
	lastFailure   time.Time
	lastError     string
	failuresInRow int
}

// Report is the body of /ready.
type Report struct {
	Ready    bool          `json:"ready"`
	Reasons  []string      `json:"reasons,omitempty"`
	Config   string        `json:"config"`
	Upstream UpstreamState `json:"upstream"`
	Models   *Models       `json:"models,omitempty"`
	XIsHuman *Human        `json:"x_is_human,omitempty"`
	Backend  *Backend      `json:"backend,omitempty"`
	Egress   []Proxy       `json:"egress,omitempty"`
	// Checkpoint is Vercel's security checkpoint, when it is passed.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Keys are the native back door's API keys, by fingerprint.
	Keys  []Key  `json:"keys,omitempty"`
	State *State `json:"state,omitempty"`
	// MCP are the configured MCP servers: state and tool count.
	MCP any `json:"mcp_servers,omitempty"`
}

// State is the health of the state store (STATE_URL).
type State struct {
	Engine string `json:"engine"`
	// Status is "ok", or "degraded" while the store fails; the writes
	// that failed wait in a bounded queue for a retry.
	Status       string `json:"status"`
	Queued       int    `json:"queued_writes"`
	FailedWrites uint64 `json:"failed_writes"`
	LastError    string `json:"last_error,omitempty"`
}

// Backend is the answer of the back door's own check.
type Backend struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
}

// UpstreamState is the outcome of the latest upstream turns.
type UpstreamState struct {
	LastSuccess    *time.Time `json:"last_success,omitempty"`
	LastSuccessAge string     `json:"last_success_age,omitempty"`
	LastFailure    *time.Time `json:"last_failure,omitempty"`
	LastFailureAge string     `json:"last_failure_age,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	FailuresInRow  int        `json:"failures_in_a_row"`
}

func (t *Tracker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Succeeded records an upstream turn that answered.
func (t *Tracker) Succeeded() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastSuccess, t.failuresInRow = t.now(), 0
}

// Failed records an upstream turn that failed with err.
func (t *Tracker) Failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastFailure, t.lastError = t.now(), utils.Clip(err.Error(), 300)
	t.failuresInRow++
}

// Upstream records the outcome of every turn of up. A turn the client
// abandoned, or one the upstream refused for the request's own sake (a
// 4xx other than 401, 403 and 429, e.g. a model it does not serve), says
// nothing about the upstream's health and is not recorded.
func (t *Tracker) Upstream(up upstream.Upstream) upstream.Upstream {
	return upstream.Wrap(up, func(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, next upstream.StreamFunc) (*models.Usage, error) {
		usage, err := next(ctx, req, fn)
		switch {
		case err == nil:
			t.Succeeded()
		case ctx.Err() != nil || errors.Is(err, context.Canceled):
			// the client left
		case upstreamFault(err):
			t.Failed(err)
		}
		return usage, err
	})
}

// upstreamFault reports whether err is the upstream's (or the way to it)
// rather than the request's.
func upstreamFault(err error) bool {
	var e *models.Error
	if !errors.As(err, &e) {
		return true
	}
	switch e.Status {
	case 401, 403, 429:
		return true
	}
	return e.Status >= 500
}

// Report says whether the gateway is ready and why not. ctx bounds the
// back door's check.
func (t *Tracker) Report(ctx context.Context) Report {
	now := t.now()
	r := Report{Config: "valid"} // an invalid configuration stops the gateway at start

	t.mu.Lock()
	u := UpstreamState{LastError: t.lastError, FailuresInRow: t.failuresInRow}
	if !t.lastSuccess.IsZero() {
		s := t.lastSuccess
		u.LastSuccess, u.LastSuccessAge = &s, age(now, s)
	}
	if !t.lastFailure.IsZero() {
		f := t.lastFailure
		u.LastFailure, u.LastFailureAge = &f, age(now, f)
	}
	t.mu.Unlock()
	r.Upstream = u
	if u.FailuresInRow >= FailureThreshold && now.Sub(*u.LastFailure) < FailureWindow {
		r.Reasons = append(r.Reasons, fmt.Sprintf("the last %d upstream turns failed (latest %s ago: %s)", u.FailuresInRow, u.LastFailureAge, u.LastError))
	}

	if t.Models != nil {
		m := t.Models()
		r.Models = &m
		if len(m.Served) == 0 {
			r.Reasons = append(r.Reasons, "no model is served")
		}
	}
	if t.Human != nil {
		h := t.Human()
		r.XIsHuman = &h
	}
	if t.State != nil {
		s := t.State()
		r.State = &s
	}
	if t.Check != nil {
		r.Backend = &Backend{Ready: true}
		if err := t.Check(ctx); err != nil {
			r.Backend = &Backend{Error: utils.Clip(err.Error(), 300)}
			r.Reasons = append(r.Reasons, "the back door cannot answer: "+r.Backend.Error)
		}
	}
	if t.Egress != nil {
		r.Egress = t.Egress()
		available := 0
		for _, p := range r.Egress {
			if p.Available {
				available++
			}
		}
		if len(r.Egress) > 0 && available == 0 {
			r.Reasons = append(r.Reasons, fmt.Sprintf("all %d egress proxies are cooling down after failures", len(r.Egress)))
		}
	}
	if t.Checkpoint != nil {
		c := t.Checkpoint()
		r.Checkpoint = &c
	}
	if t.Keys != nil {
		// After Check, which may have exchanged keys or found one refused.
		r.Keys = t.Keys()
	}
	if t.MCP != nil {
		r.MCP = t.MCP()
	}
	r.Ready = len(r.Reasons) == 0
	return r
}

// age is a duration rounded for people.
func age(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() }
