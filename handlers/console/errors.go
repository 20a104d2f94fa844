package console

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"cursor2api/utils"
)

// MaxErrors is how many failed requests the console keeps.
const MaxErrors = 100

// errorClip bounds a kept message.
const errorClip = 300

// ErrorEntry is a failed request as the console lists it.
type ErrorEntry struct {
	Time      time.Time
	RequestID string
	Door      string
	Model     string
	Status    int
	Message   string
}

// Errors keeps the last MaxErrors failed requests of this replica, in a
// ring: adding is a lock and a copy, whatever the traffic.
type Errors struct {
	mu   sync.Mutex
	ring [MaxErrors]ErrorEntry
	next int
	n    int
}

// Add keeps e, its message scrubbed of keys and clipped.
func (es *Errors) Add(e ErrorEntry) {
	e.Message = Scrub(e.Message)
	e.Model = utils.Clip(Scrub(e.Model), utils.QuoteLen)
	es.mu.Lock()
	defer es.mu.Unlock()
	es.ring[es.next] = e
	es.next = (es.next + 1) % MaxErrors
	es.n = min(es.n+1, MaxErrors)
}

// List returns the kept errors, the newest first.
func (es *Errors) List() []ErrorEntry {
	es.mu.Lock()
	defer es.mu.Unlock()
	out := make([]ErrorEntry, 0, es.n)
	for i := 1; i <= es.n; i++ {
		out = append(out, es.ring[(es.next-i+MaxErrors)%MaxErrors])
	}
	return out
}

// What looks like a secret in an error message: a bearer token, a key
// with a known prefix, a URL's user info, or a long run of key-like
// characters (hex, base64), and key=value pairs named like secrets.
var (
	secretRE = regexp.MustCompile(`(?i)(bearer\s+)\S+|\b(?:sk|pk|rk|key|crsr|user|ghp|gho|xox[a-z])[-_][A-Za-z0-9_\-]{6,}|://[^/\s:@]*:[^/\s@]*@|[A-Za-z0-9+/_\-]{32,}={0,2}`)
	namedRE  = regexp.MustCompile(`(?i)\b([a-z_]*(?:key|secret|token|cookie|password)[a-z_]*)(["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
)

// Scrub replaces what looks like a key in s by "[redacted]", drops control
// characters and clips the result.
func Scrub(s string) string {
	s = utils.Clip(s, 4*errorClip) // bound the regexp's work
	s = namedRE.ReplaceAllString(s, "${1}${2}[redacted]")
	s = secretRE.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case strings.HasPrefix(strings.ToLower(m), "bearer"):
			return m[:6] + " [redacted]"
		case strings.HasPrefix(m, "://"):
			return "://[redacted]@"
		}
		return "[redacted]"
	})
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return utils.Clip(s, errorClip)
}
