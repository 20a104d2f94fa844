package cursortest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fake's Vercel checkpoint (EnableCheckpoint), as public solvers
// describe it: a request without a valid _vcrcs cookie gets a challenge
// "2.<issued>.<window>.<base64 of id;salt;seed;steps>.<mac>"; a solution
// POSTed to SolvePath sets "1.<issued>.<ttl>.<id>.<mac>", bound to the
// solver's User-Agent and address. It checks solutions with its own code.

// SolvePath is where a browser sends the checkpoint's solution.
const SolvePath = "/.well-known/vercel/security/request-challenge"

// CheckpointVariant is how a chat request without a valid cookie is
// refused.
type CheckpointVariant uint8

const (
	// CheckpointChallenge answers 429 with x-vercel-mitigated: challenge,
	// x-vercel-challenge-token and the checkpoint's HTML page.
	CheckpointChallenge CheckpointVariant = iota
	// CheckpointDenied answers 403 {"error":"Access denied"}; the
	// challenge comes with the site's page (GET PagePath).
	CheckpointDenied
)

// CheckpointOptions configure the fake checkpoint.
type CheckpointOptions struct {
	Variant CheckpointVariant
	// TTL is the cookie's lifetime, in whole seconds (default an hour).
	TTL time.Duration
	// Steps and Window shape the proof of work (defaults 4 and 60, as
	// real tokens have).
	Steps, Window int
	// Now is the checkpoint's clock (tests move it); nil means time.Now.
	Now func() time.Time
	// PagePath is the site's page, answered on GET (default "/").
	PagePath string
	// ExtraFields are appended to the token's payload after its four
	// fields, as a later layout of the real checkpoint may add them.
	ExtraFields []string
}

// CheckpointStats count what the fake checkpoint did.
type CheckpointStats struct {
	// Challenged counts refused chat requests; Pages, page fetches
	// answered with a challenge; Solved and Refused, solutions accepted
	// and refused; Passed, chat requests let through by a valid cookie.
	Challenged, Pages, Solved, Refused, Passed int
}

// Checkpoint is the fake's checkpoint.
type Checkpoint struct {
	opts CheckpointOptions
	key  []byte

	mu     sync.Mutex
	used   map[string]bool
	refuse bool
	stats  CheckpointStats
}

// tokenLife is how long a challenge token may be answered.
const tokenLife = 10 * time.Minute

// sitePage answers a GET (chat requests are POSTs) with the site's page,
// unrecorded: what the checkpoint keeper fetches for a challenge finds
// none without the checkpoint.
func sitePage(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	w.Header().Set("Content-Type", "text/html")
	_, _ = fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Cursor</title></head><body></body></html>")
	return true
}

// EnableCheckpoint puts the fake behind the checkpoint.
func (s *Server) EnableCheckpoint(opts CheckpointOptions) *Checkpoint {
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	if opts.Steps <= 0 {
		opts.Steps = 4
	}
	if opts.Window <= 0 || opts.Window > 60 {
		opts.Window = 60
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PagePath == "" {
		opts.PagePath = "/"
	}
	c := &Checkpoint{opts: opts, key: randomBytes(32), used: map[string]bool{}}
	s.mu.Lock()
	s.gate = c.serve
	s.mu.Unlock()
	return c
}

// Refuse makes the checkpoint refuse every solution (or accept good ones
// again).
func (c *Checkpoint) Refuse(refuse bool) {
	c.mu.Lock()
	c.refuse = refuse
	c.mu.Unlock()
}

// Stats returns the counts so far.
func (c *Checkpoint) Stats() CheckpointStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Checkpoint) count(f func(*CheckpointStats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// serve answers what the checkpoint answers and reports whether it did;
// a chat request with a valid cookie goes on to the chat.
func (c *Checkpoint) serve(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == SolvePath:
		c.solve(w, r)
		return true
	case r.Method == http.MethodGet && r.URL.Path == c.opts.PagePath:
		if c.validCookie(r) {
			return sitePage(w, r)
		}
		c.count(func(s *CheckpointStats) { s.Pages++ })
		c.challenge(w)
		return true
	case c.validCookie(r):
		c.count(func(s *CheckpointStats) { s.Passed++ })
		return false
	}
	c.count(func(s *CheckpointStats) { s.Challenged++ })
	if c.opts.Variant == CheckpointDenied {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprint(w, `{"error":"Access denied"}`)
		return true
	}
	c.challenge(w)
	return true
}

// challenge writes the checkpoint page with a fresh token.
func (c *Checkpoint) challenge(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "private, no-store, max-age=0")
	h.Set("X-Vercel-Mitigated", "challenge")
	h.Set("X-Vercel-Challenge-Token", c.token())
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = fmt.Fprint(w, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Vercel Security Checkpoint</title></head>`+
		`<body><p>We're verifying your browser</p></body></html>`)
}

// token issues a challenge token signed with the fake's key.
func (c *Checkpoint) token() string {
	fields := append([]string{hexOf(16), hexOf(4), hexOf(20), strconv.Itoa(c.opts.Steps)}, c.opts.ExtraFields...)
	payload := strings.Join(fields, ";")
	head := fmt.Sprintf("2.%d.%d.%s", c.opts.Now().Unix(), c.opts.Window, base64.StdEncoding.EncodeToString([]byte(payload)))
	return head + "." + c.mac(head)
}

func (c *Checkpoint) mac(s string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// solve checks a solution and sets the cookie.
func (c *Checkpoint) solve(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("X-Vercel-Challenge-Token")
	err := c.verify(token, r.Header.Get("X-Vercel-Challenge-Solution"), r.Header.Get("X-Vercel-Challenge-Version"))
	c.mu.Lock()
	if err == nil && c.refuse {
		err = fmt.Errorf("refusing every solution")
	}
	if err != nil {
		c.stats.Refused++
	} else {
		c.stats.Solved++
	}
	c.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	issued, ttl := c.opts.Now().Unix(), max(int64(c.opts.TTL/time.Second), 1)
	head := fmt.Sprintf("1.%d.%d.%s", issued, ttl, hexOf(8))
	value := head + "." + c.mac(head+"\x00"+r.UserAgent()+"\x00"+clientAddr(r))
	http.SetCookie(w, &http.Cookie{Name: "_vcrcs", Value: value, Path: "/", MaxAge: int(ttl), HttpOnly: true, SameSite: http.SameSiteLaxMode})
	w.WriteHeader(http.StatusNoContent)
}

// offsetMultipliers pick where each step's prefix is read.
var offsetMultipliers = []int64{498787, 533737, 619763, 708403, 828071}

// verify checks a token (signature, age, first use) and its solution.
func (c *Checkpoint) verify(token, solution, version string) error {
	if version != "2" {
		return fmt.Errorf("challenge version %q", version)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 5 || !hmac.Equal([]byte(c.mac(strings.Join(parts[:4], "."))), []byte(parts[4])) {
		return fmt.Errorf("bad token")
	}
	c.mu.Lock()
	used := c.used[token]
	c.used[token] = true
	c.mu.Unlock()
	if used {
		return fmt.Errorf("token used")
	}
	issued, _ := strconv.ParseInt(parts[1], 10, 64)
	window, _ := strconv.ParseInt(parts[2], 10, 64)
	if c.opts.Now().Sub(time.Unix(issued, 0)) > tokenLife {
		return fmt.Errorf("token expired")
	}
	payload, _ := base64.StdEncoding.DecodeString(parts[3])
	fields := strings.Split(string(payload), ";")
	salt, seed := fields[1], fields[2]
	steps, _ := strconv.Atoi(fields[3])
	nonces := strings.Split(solution, ";")
	if len(nonces) != steps {
		return fmt.Errorf("%d nonces for %d steps", len(nonces), steps)
	}
	at := issued * offsetMultipliers[issued%5] % int64(len(seed)-4)
	prefix := seed[at : at+4]
	for i, nonce := range nonces {
		sum := sha256.Sum256([]byte(salt + nonce))
		h := hex.EncodeToString(sum[:])
		if !strings.HasPrefix(h, prefix) {
			return fmt.Errorf("step %d: hash does not start with %s", i+1, prefix)
		}
		at = issued * offsetMultipliers[i%5] % window
		prefix = h[at : at+4]
	}
	return nil
}

// clientAddr is the address a cookie is bound to: the first
// X-Forwarded-For entry (a test's proxy names itself there), else the
// connection's IP.
func clientAddr(r *http.Request) string {
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		return strings.TrimSpace(first)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// validCookie reports whether r carries a cookie this checkpoint set, for
// r's User-Agent and address, within its lifetime.
func (c *Checkpoint) validCookie(r *http.Request) bool {
	ck, err := r.Cookie("_vcrcs")
	if err != nil {
		return false
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 5 {
		return false
	}
	head := strings.Join(parts[:4], ".")
	if !hmac.Equal([]byte(c.mac(head+"\x00"+r.UserAgent()+"\x00"+clientAddr(r))), []byte(parts[4])) {
		return false
	}
	issued, err1 := strconv.ParseInt(parts[1], 10, 64)
	ttl, err2 := strconv.ParseInt(parts[2], 10, 64)
	return err1 == nil && err2 == nil && c.opts.Now().Before(time.Unix(issued+ttl, 0))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// hexOf is n random bytes in hex.
func hexOf(n int) string { return hex.EncodeToString(randomBytes(n)) }
