package native

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// KeySource hands out the credentials of one request: which API key, and
// its access token. A pool of several keys (package keys) keeps a session
// on one key, cools keys that hit their quota and refreshes tokens; the
// back door only reports how each lease went.
type KeySource interface {
	// Acquire returns a lease on a key for the conversation session
	// identifies (may be empty).
	Acquire(ctx context.Context, session string) (Lease, error)
}

// Lease is one key lent to one run.
type Lease interface {
	// APIKey is the user API key, for REST calls.
	APIKey() string
	// AccessToken is the key's exchanged token, for Connect calls.
	AccessToken() string
	// Fingerprint names the key in logs without revealing it.
	Fingerprint() string
	// Done reports how the run went, once.
	Done(Outcome)
}

// OutcomeKind is how a run ended, as far as its key is concerned.
type OutcomeKind uint8

const (
	OutcomeOK           OutcomeKind = iota // the key worked
	OutcomeUnauthorized                    // the token or the key was refused
	OutcomeQuota                           // the key's usage limit is reached
	OutcomeRateLimited                     // the key is asked to slow down
	OutcomeNotKeysFault                    // failed for a reason no other key changes (version gate, bad model)
	OutcomeTransient                       // the network or the server failed
)

// Outcome is how a run ended, with how long the key should rest.
type Outcome struct {
	Kind       OutcomeKind
	RetryAfter time.Duration
}

// errNoKey is what a request gets when CURSOR_API_KEY is empty.
var errNoKey = &models.Error{
	Status: http.StatusServiceUnavailable, Kind: models.KindAPI, Code: "cursor_no_key",
	Message: "the cursor backend has no API key: set CURSOR_API_KEY (Cursor dashboard > Integrations > User API Keys)",
}

// exchangeKeys is the simple KeySource: each key exchanged for a token on
// first use and again when the token nears its expiry or was refused. A
// session stays on one key (by hash); nothing is cooled. The key pool of
// package keys replaces it where several keys must share the load.
type exchangeKeys struct {
	keys    []string
	baseURL string // where /auth/exchange_user_api_key lives
	http    *http.Client
	header  func(http.Header)

	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	access string
	exp    time.Time
}

// newExchangeKeys returns the simple KeySource over keys.
func newExchangeKeys(keys []string, baseURL string, hc *http.Client, header func(http.Header)) *exchangeKeys {
	return &exchangeKeys{keys: keys, baseURL: baseURL, http: hc, header: header, tokens: map[string]token{}}
}

// tokenMargin is how long before its expiry a token is replaced.
const tokenMargin = 5 * time.Minute

func (k *exchangeKeys) Acquire(ctx context.Context, session string) (Lease, error) {
	if len(k.keys) == 0 {
		return nil, errNoKey
	}
	key := k.keys[0]
	if len(k.keys) > 1 {
		h := fnv.New32a()
		h.Write([]byte(session))
		key = k.keys[int(h.Sum32()%uint32(len(k.keys)))]
	}
	k.mu.Lock()
	t, ok := k.tokens[key]
	k.mu.Unlock()
	if !ok || (!t.exp.IsZero() && time.Until(t.exp) < tokenMargin) {
		var err error
		if t, err = k.exchange(ctx, key); err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.tokens[key] = t
		k.mu.Unlock()
	}
	return &simpleLease{k: k, key: key, access: t.access}, nil
}

// exchange trades an API key for an access token.
func (k *exchangeKeys) exchange(ctx context.Context, key string) (token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.baseURL+"/auth/exchange_user_api_key", strings.NewReader("{}"))
	if err != nil {
		return token{}, err
	}
	if k.header != nil {
		k.header(req.Header)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := k.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return token{}, ctx.Err()
		}
		return token{}, models.Upstream(http.StatusBadGateway, "cursor_unreachable", err,
			"could not reach Cursor to exchange the API key (CURSOR_BACKEND_URL %s): %v", k.baseURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return token{}, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "cursor_bad_key",
			Message: fmt.Sprintf("Cursor refused the API key %s (HTTP %d): check CURSOR_API_KEY", fingerprint(key), resp.StatusCode)}
	case resp.StatusCode != http.StatusOK:
		return token{}, models.Upstream(http.StatusBadGateway, "cursor_exchange", nil,
			"Cursor's key exchange answered HTTP %d: %s", resp.StatusCode, utils.Clip(strings.TrimSpace(string(body)), 200))
	}
	var out struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.AccessToken == "" {
		return token{}, models.Upstream(http.StatusBadGateway, "cursor_exchange", err, "Cursor's key exchange answered without an access token")
	}
	return token{access: out.AccessToken, exp: jwtExpiry(out.AccessToken)}, nil
}

// forget drops a key's token, so that the next lease exchanges it again.
func (k *exchangeKeys) forget(key string) {
	k.mu.Lock()
	delete(k.tokens, key)
	k.mu.Unlock()
}

type simpleLease struct {
	k           *exchangeKeys
	key, access string
	once        sync.Once
}

func (l *simpleLease) APIKey() string      { return l.key }
func (l *simpleLease) AccessToken() string { return l.access }
func (l *simpleLease) Fingerprint() string { return fingerprint(l.key) }
func (l *simpleLease) Done(o Outcome) {
	l.once.Do(func() {
		if o.Kind == OutcomeUnauthorized {
			l.k.forget(l.key)
		}
	})
}

// fingerprint names a key in logs: a short hash, never the key.
func fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key:" + hex.EncodeToString(sum[:4])
}

// jwtExpiry reads the exp claim of a JWT; zero when it has none.
func jwtExpiry(jwt string) time.Time {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if d.Decode(&claims) != nil {
		return time.Time{}
	}
	sec, err := claims.Exp.Float64()
	if err != nil || sec <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0)
}
