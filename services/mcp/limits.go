package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"unicode"

	"cursor2api/utils"
)

// Fixed bounds of what a server may make the gateway do; the ones an
// operator may want to change are Options.
const (
	// maxPages caps the pages of one tools/list: a server that answers
	// every page with a nextCursor would be listed forever.
	maxPages = 100
	// maxErrorText caps a server's error text kept for /ready and logs.
	maxErrorText = 300
)

// errTooLarge is a response body past Options.MaxResponseBytes.
var errTooLarge = errors.New("the MCP server's answer is larger than the gateway reads")

// limitTransport caps every response body it returns: reading past max
// bytes is an error, so that no answer of a server is ever read whole
// when it is huge. A session's long-lived event stream (a GET of
// text/event-stream: the SSE transport's) is left whole, each of its
// events bounded by the SDK's MaxEventSize instead.
type limitTransport struct {
	base http.RoundTripper
	max  int64
	// exceeded is set when a body passed max, so that the error the SDK
	// returns (which loses the cause) can be told apart.
	exceeded *atomic.Bool
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodGet && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max, exceeded: t.exceeded}
	return resp, nil
}

// limitedBody reads at most left bytes of rc, then fails.
type limitedBody struct {
	rc       io.ReadCloser
	left     int64
	exceeded *atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		if b.exceeded != nil {
			b.exceeded.Store(true)
		}
		return n + int(b.left), errTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// publicError is a failure whose cause may be told to the client that
// named the server: the server answered as an MCP server, and the
// gateway refused what it said (too many tools, pages, bytes).
type publicError struct{ msg string }

func (e *publicError) Error() string { return e.msg }

// ShortURL is u cut to its scheme and host: what logs and /ready may
// show of a server's address (a path or query may hold a key).
func ShortURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return "(an invalid URL)"
	}
	return p.Scheme + "://" + p.Host
}

// Scrub makes a server's or a transport's error text fit for logs and
// /ready: every URL in it cut to scheme and host, control characters
// dropped, the whole clipped.
func Scrub(s string) string {
	var b strings.Builder
	for len(s) > 0 && b.Len() < maxErrorText {
		i := indexURL(s)
		if i < 0 {
			writeClean(&b, s)
			break
		}
		writeClean(&b, s[:i])
		end := i + strings.IndexFunc(s[i:], func(r rune) bool {
			return unicode.IsSpace(r) || r == '"' || r == '\'' || r == '>' || r == ')'
		})
		if end < i {
			end = len(s)
		}
		b.WriteString(ShortURL(s[i:end]))
		s = s[end:]
	}
	out := b.String()
	if len(out) > maxErrorText {
		out = utils.CutRunes(out, maxErrorText) + "…"
	}
	return out
}

func indexURL(s string) int {
	i, j := strings.Index(s, "http://"), strings.Index(s, "https://")
	switch {
	case i < 0:
		return j
	case j < 0:
		return i
	}
	return min(i, j)
}

func writeClean(b *strings.Builder, s string) {
	for _, r := range s {
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
	}
}

// scrubErr is Scrub of err's text.
func scrubErr(err error) string {
	if err == nil {
		return ""
	}
	return Scrub(err.Error())
}

// tooLarge says what an error of a server whose body passed the cap was.
func tooLarge(max int) error {
	return &publicError{fmt.Sprintf("its answer is larger than %d bytes (the gateway's MCP_MAX_RESPONSE_BYTES)", max)}
}
