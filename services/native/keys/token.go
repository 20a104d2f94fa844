package keys

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

const (
	// useSlack is how long before its exp a token is no longer handed
	// out: a call started just before the exp would fail in flight.
	useSlack = 30 * time.Second
	// aheadMax is the latest a token is refreshed: 5 minutes before its
	// exp, or at 80% of its life when that comes first.
	aheadMax = 5 * time.Minute
	// minLife is the life assumed of a token whose exp is missing,
	// unreadable or already past (a clock out of step): it is used, and
	// exchanged again soon.
	minLife = 2 * time.Minute
	// defaultLife is the life assumed of a token with no readable exp.
	defaultLife = 30 * time.Minute
	// retryAhead is how long a failed refresh ahead of expiry waits
	// before the next try, while the current token still serves.
	retryAhead = 30 * time.Second
	// maxExchangeBody bounds what is read of an exchange's answer.
	maxExchangeBody = 64 << 10
)

// flight is one key exchange under way; callers for the same key wait on
// it rather than exchange again.
type flight struct {
	done  chan struct{}
	token string
	gen   uint64
	err   error
}

// errKeyOut says that the exchange took the key out of use (refused,
// or resting after a rate limit): the caller picks another key.
var errKeyOut = errors.New("the key is out of use")

// token returns a valid access token for k and its generation, exchanging
// the key when it has none, when the upstream refused the last one, or
// when the last is near its exp. One exchange per key runs at a time; a
// refresh ahead of expiry makes no one else wait.
func (p *Pool) token(ctx context.Context, k *key) (string, uint64, error) {
	for {
		p.mu.Lock()
		if k.bad != "" {
			p.mu.Unlock()
			return "", 0, errKeyOut
		}
		now := p.now()
		valid := k.token != "" && !k.stale && now.Before(k.tokenExp.Add(-useSlack))
		if valid && (now.Before(k.refreshAt) || k.flight != nil) {
			token, gen := k.token, k.gen
			p.mu.Unlock()
			return token, gen, nil
		}
		f, leader := k.flight, false
		if f == nil {
			f, leader = &flight{done: make(chan struct{})}, true
			k.flight = f
		}
		p.mu.Unlock()

		if leader {
			p.refresh(ctx, k, f, valid)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return "", 0, ctx.Err()
		}
		switch {
		case f.err == nil:
			return f.token, f.gen, nil
		case !leader && isContextError(f.err) && ctx.Err() == nil:
			// The leader's caller left; this one has not: try again,
			// as the leader this time.
			continue
		case valid && !errors.Is(f.err, errKeyOut) && !isContextError(f.err):
			// A refresh ahead of expiry failed; the current token
			// still serves (refresh put the next try off).
			continue
		}
		return "", 0, f.err
	}
}

// refresh runs the exchange for k and records its outcome. ahead says a
// valid token is being refreshed before its time.
func (p *Pool) refresh(ctx context.Context, k *key, f *flight, ahead bool) {
	res, err := p.exchangeKey(ctx, k)
	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(f.done)
	k.flight = nil
	now := p.now()
	var refused *refusal
	var limited *rateLimit
	switch {
	case err == nil:
		k.token, k.stale = res.token, false
		k.tokenExp = res.exp
		k.refreshAt = refreshTime(now, res.exp)
		k.gen++
		if k.bad != "" {
			// Refused by the upstream while this exchange ran: the
			// refusal stands until BadRecheck.
			f.err = errKeyOut
			break
		}
		if k.rechecking {
			p.log.Info("Cursor accepts a refused API key again", "key", k.name)
			k.okAt = now
			p.changed(k) // the other replicas may take it again too
		}
		k.rechecking = false
		f.token, f.gen = k.token, k.gen
	case errors.As(err, &refused):
		p.markBad(k, now, refused.reason)
		f.err = errKeyOut
	case errors.As(err, &limited):
		k.lastErr, k.lastErrAt = limited.reason, now
		p.coolDown(k, now, RateLimited, limited.retryAfter)
		f.err = errKeyOut
	default:
		if !isContextError(err) || ctx.Err() == nil {
			k.lastErr, k.lastErrAt = clipErr(err.Error(), k, k.token), now
		}
		if ahead && !isContextError(err) {
			// The current token still serves: try again a little later
			// rather than on every call while Cursor's auth is down.
			k.refreshAt = now.Add(retryAhead)
			p.log.Warn("refreshing a Cursor access token failed; the current one serves until its exp", "key", k.name, "exp", k.tokenExp, "err", k.lastErr)
		}
		f.err = err
	}
}

// refreshTime is when a token fetched at now and expiring at exp should
// be exchanged again: at 80% of its life or 5 minutes before its exp,
// whichever comes first, but never before half its life, so that a short
// token is not exchanged on every call.
func refreshTime(now, exp time.Time) time.Time {
	life := exp.Sub(now)
	ahead := max(life/5, min(aheadMax, life/2))
	return exp.Add(-ahead)
}

// exchanged is a key exchange's result.
type exchanged struct {
	token string
	exp   time.Time
}

// refusal is an exchange that Cursor refused (401 or 403): the key is bad.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

// rateLimit is an exchange that Cursor rate-limited (429).
type rateLimit struct {
	reason     string
	retryAfter time.Duration
}

func (r *rateLimit) Error() string { return r.reason }

// exchangeKey trades k's API key for an access token:
// POST {base}/auth/exchange_user_api_key, body {}, the key as a bearer
// token, answering {"accessToken","refreshToken","authId"}. Only the
// access token is kept: refreshing means exchanging the key again.
func (p *Pool) exchangeKey(ctx context.Context, k *key) (exchanged, error) {
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, p.opts.ExchangeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.exchange, strings.NewReader("{}"))
	if err != nil {
		return exchanged{}, models.Upstream(http.StatusBadGateway, "cursor_auth_request", err, "cannot make the key exchange request for CURSOR_BACKEND_URL")
	}
	for name, values := range p.opts.Header {
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+k.api)
	resp, err := p.opts.HTTP.Do(req)
	if err != nil {
		if outer.Err() != nil {
			return exchanged{}, outer.Err() // the caller left
		}
		return exchanged{}, models.Upstream(http.StatusBadGateway, "cursor_auth_unreachable", errors.New(clipErr(err.Error(), k)),
			"Cursor's key exchange at %s cannot be reached: check the network or CURSOR_BACKEND_URL", p.opts.BaseURL)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBody))
	if err != nil {
		if outer.Err() != nil {
			return exchanged{}, outer.Err()
		}
		return exchanged{}, models.Upstream(http.StatusBadGateway, "cursor_auth_unreachable", errors.New(clipErr(err.Error(), k)),
			"Cursor's key exchange at %s broke off its answer", p.opts.BaseURL)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return exchanged{}, &refusal{reason: fmt.Sprintf("Cursor refused the key (HTTP %d: %s)", resp.StatusCode, upstreamMessage(body, k))}
	case resp.StatusCode == http.StatusTooManyRequests:
		return exchanged{}, &rateLimit{
			reason:     fmt.Sprintf("Cursor rate-limited the key exchange (HTTP 429: %s)", upstreamMessage(body, k)),
			retryAfter: RetryAfter(resp.Header.Get("Retry-After"), p.now()),
		}
	default:
		status := http.StatusBadGateway
		if resp.StatusCode >= 500 {
			status = http.StatusServiceUnavailable
		}
		return exchanged{}, models.Upstream(status, "cursor_auth_failed", nil,
			"Cursor's key exchange at %s answered HTTP %d: %s", p.opts.BaseURL, resp.StatusCode, upstreamMessage(body, k))
	}
	var out struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.AccessToken == "" {
		return exchanged{}, models.Upstream(http.StatusBadGateway, "cursor_auth_failed", nil,
			"Cursor's key exchange at %s gave no access token (is CURSOR_BACKEND_URL right?)", p.opts.BaseURL)
	}
	now := p.now()
	exp, ok := tokenExpiry(out.AccessToken)
	switch {
	case !ok:
		exp = now.Add(defaultLife)
		p.log.Debug("the Cursor access token has no readable exp; assuming its life", "key", k.name, "life", defaultLife)
	case exp.Sub(now) < minLife:
		p.log.Warn("the Cursor access token expires (almost) at once: is this host's clock right?", "key", k.name, "exp", exp)
		exp = now.Add(minLife)
	}
	return exchanged{token: out.AccessToken, exp: exp}, nil
}

// tokenExpiry reads a JWT's exp claim without checking its signature:
// the pool only needs to know when to exchange again, and Cursor checks
// the token.
func tokenExpiry(jwt string) (time.Time, bool) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return time.Time{}, false
	}
	exp, err := claims.Exp.Float64()
	if err != nil || exp <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(exp), 0), true
}

// RetryAfter reads a Retry-After header (seconds, or an HTTP date) as a
// duration from now; zero when absent or unreadable. The back door uses
// it for the outcomes it reports.
func RetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// upstreamMessage is what an error answer says: the message of a Connect
// error body ({"code","message"}) or the body itself, clipped and with
// the key scrubbed.
func upstreamMessage(body []byte, k *key) string {
	var connect struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Error   any    `json:"error"`
	}
	text := string(bytes.TrimSpace(body))
	if json.Unmarshal(body, &connect) == nil {
		switch {
		case connect.Message != "" && connect.Code != "":
			text = connect.Code + ": " + connect.Message
		case connect.Message != "":
			text = connect.Message
		}
	}
	if text == "" {
		text = "(no body)"
	}
	return clipErr(text, k)
}

// clipErr makes an error text fit the key's state and logs: the key, and
// any of the given access tokens, replaced by the key's fingerprint; then
// clipped. It reads only k's immutable fields.
func clipErr(s string, k *key, tokens ...string) string {
	s = strings.ReplaceAll(s, k.api, k.name)
	for _, t := range tokens {
		if t != "" {
			s = strings.ReplaceAll(s, t, "<"+k.name+" token>")
		}
	}
	return utils.Clip(s, 2*utils.QuoteLen)
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
