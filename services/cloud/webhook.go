package cloud

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Webhooks verifies Cursor's webhook deliveries (HMAC-SHA256 of the body
// with CLOUD_WEBHOOK_SECRET, in X-Webhook-Signature as sha256=<hex>),
// refuses replays of a delivery id, and wakes the requests waiting on the
// agent it names. Polling stays the fallback: a lost delivery only delays
// an answer until the next poll.
type Webhooks struct {
	secret []byte
	window time.Duration
	max    int

	mu      sync.Mutex
	seen    map[string]time.Time
	waiters map[string]map[chan struct{}]struct{}
}

// NewWebhooks returns a verifier for secret that remembers delivery ids
// for window (at most max of them; beyond that the oldest are forgotten).
func NewWebhooks(secret string, window time.Duration, max int) *Webhooks {
	return &Webhooks{secret: []byte(secret), window: window, max: max, seen: map[string]time.Time{}, waiters: map[string]map[chan struct{}]struct{}{}}
}

// Verify reports whether signature ("sha256=<hex>") signs body, comparing
// in constant time.
func (w *Webhooks) Verify(body []byte, signature string) bool {
	hexMAC, ok := strings.CutPrefix(strings.TrimSpace(signature), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexMAC)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, w.secret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// Sign returns the signature of body (for tests and senders).
func (w *Webhooks) Sign(body []byte) string {
	m := hmac.New(sha256.New, w.secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// FirstDelivery records a delivery id and reports whether it is new; a
// replay within the window is not.
func (w *Webhooks) FirstDelivery(id string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, at := range w.seen {
		if now.Sub(at) > w.window {
			delete(w.seen, k)
		}
	}
	if _, dup := w.seen[id]; dup {
		return false
	}
	if len(w.seen) >= w.max {
		var oldest string
		var at time.Time
		for k, t := range w.seen {
			if oldest == "" || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(w.seen, oldest)
	}
	w.seen[id] = now
	return true
}

// Wait returns a channel that is closed when a delivery names agentID,
// and the function that stops waiting (call it when done).
func (w *Webhooks) Wait(agentID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.waiters[agentID] == nil {
		w.waiters[agentID] = map[chan struct{}]struct{}{}
	}
	w.waiters[agentID][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.waiters[agentID][ch]; ok {
			delete(w.waiters[agentID], ch)
			if len(w.waiters[agentID]) == 0 {
				delete(w.waiters, agentID)
			}
		}
	}
}

// Wake wakes the requests waiting on agentID and returns how many.
func (w *Webhooks) Wake(agentID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for ch := range w.waiters[agentID] {
		close(ch)
		n++
	}
	delete(w.waiters, agentID)
	return n
}
