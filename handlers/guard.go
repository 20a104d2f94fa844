package handlers

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/utils"
)

// guard is the first line against hostile input, on every route. The Host
// must be allowed (against DNS rebinding); a browser Origin must be ours or
// allowed (preflights are answered here); a body must be JSON, which no
// cross-site simple request can send, and arrive within timeout, so a
// trickling client cannot hold a connection forever.
func guard(hosts, origins []string, timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if !hostAllowed(hosts, r.Host) {
			door.Abort(c, &models.Error{Status: http.StatusForbidden, Kind: models.KindPermission, Code: "host_not_allowed",
				Message: fmt.Sprintf("the Host %q is not allowed; add it to ALLOWED_HOSTS on the gateway", utils.Clip(r.Host, utils.QuoteLen))})
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
			if !originAllowed(origins, origin) {
				door.Abort(c, &models.Error{Status: http.StatusForbidden, Kind: models.KindPermission, Code: "origin_not_allowed",
					Message: fmt.Sprintf("browser requests from %q are not allowed; add the origin to ALLOWED_ORIGINS on the gateway", utils.Clip(origin, utils.QuoteLen))})
				return
			}
			h := c.Writer.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", RequestIDHeader+", Retry-After")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS") // DELETE: /v1/responses/{id}
				if want := r.Header.Get("Access-Control-Request-Headers"); want != "" {
					h.Set("Access-Control-Allow-Headers", want)
				}
				h.Set("Access-Control-Max-Age", "600")
				c.AbortWithStatus(http.StatusNoContent)
				return
			}
		}
		// openai-go's GetStreaming sends {"stream":true} in the body of a
		// GET with no Content-Type; a GET changes nothing, so its body
		// needs no guard.
		if (r.ContentLength == 0 && len(r.TransferEncoding) == 0) || (r.Method == http.MethodGet && r.Header.Get("Content-Type") == "") {
			c.Next()
			return
		}
		// The console's sign-in and sign-out are HTML forms; the Origin
		// check above and their SameSite=Strict cookie keep other sites out.
		if !isJSON(r.Header.Get("Content-Type")) && !(strings.HasPrefix(r.URL.Path, "/console/") && isForm(r.Header.Get("Content-Type"))) {
			door.Abort(c, &models.Error{Status: http.StatusUnsupportedMediaType, Kind: models.KindInvalidRequest, Code: "unsupported_media_type",
				Message: fmt.Sprintf("the request body has Content-Type %q; send JSON with the header Content-Type: application/json", utils.Clip(r.Header.Get("Content-Type"), utils.QuoteLen))})
			return
		}
		if timeout > 0 {
			rc := http.NewResponseController(c.Writer)
			// A writer without deadlines (a test recorder) has nothing to protect.
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		c.Next()
	}
}

// deadlineBody lifts the read deadline once the body has been read, so
// that it never ends a long answer: the server keeps reading the
// connection to notice a client that leaves.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// hostAllowed matches the Host header, without its port, against the
// list: exact names (case-insensitive), "*", or "*.domain" for the
// domain's subdomains. An empty list allows every host.
func hostAllowed(allowed []string, hostport string) bool {
	if len(allowed) == 0 {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	for _, a := range allowed {
		a = strings.ToLower(a)
		switch {
		case a == "*" || a == host:
			return true
		case strings.HasPrefix(a, "*.") && strings.HasSuffix(host, a[1:]):
			return true
		}
	}
	return false
}

// sameOrigin reports whether a browser's Origin is the gateway itself
// (a page it served, or a tool on the same host and port).
func sameOrigin(origin, host string) bool {
	_, rest, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(rest, host)
}

// originAllowed matches an Origin exactly (scheme, host and port) against
// the list, or "*".
func originAllowed(allowed []string, origin string) bool {
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	return false
}

// isForm accepts an HTML form's urlencoded body.
func isForm(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// isJSON accepts application/json and every +json type, with parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// stripTrailingSlash serves "/v1/chat/completions/" as
// "/v1/chat/completions": clients that join a base URL and a path often
// leave a slash, and a redirect of a POST loses its body in some of them.
func stripTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimRight(p, "/")
			if r.URL.Path == "" {
				r.URL.Path = "/"
			}
			r.URL.RawPath = ""
		}
		next.ServeHTTP(w, r)
	})
}
