package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/console"
	"cursor2api/handlers/door"
	"cursor2api/handlers/gemini"
	"cursor2api/models"
	"cursor2api/services/clientkeys"
	"cursor2api/utils"
)

// RequestIDHeader carries the request id both ways.
const RequestIDHeader = "X-Request-Id"

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._:\-]{1,128}$`)

// requestID takes the caller's X-Request-Id when it is sane (a reverse
// proxy's id then ties the logs together), else makes one, and echoes it on
// the response.
func requestID(c *gin.Context) {
	id := c.GetHeader(RequestIDHeader)
	if !requestIDRE.MatchString(id) {
		id = "req_" + utils.RandomString(utils.Alphanumerics, 20)
	}
	c.Set(door.KeyRequestID, id)
	c.Header(RequestIDHeader, id)
	c.Next()
}

// errorClipLen bounds the error message in an access log line.
const errorClipLen = 500

// accessLog writes one line per request, and keeps the failed ones in
// errs (when not nil) for the console. It never logs keys or prompts.
func accessLog(logger *slog.Logger, errs *console.Errors) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		logRequest(logger, errs, c, start)
	}
}

// logRequest writes the access line of a request (or a WebSocket turn)
// that started at start and is answered.
func logRequest(logger *slog.Logger, errs *console.Errors, c *gin.Context, start time.Time) {
	status := c.Writer.Status()
	if s := c.GetInt(door.KeyStatus); s != 0 {
		status = s
	}
	level := slog.LevelInfo
	e := c.GetString(door.KeyError)
	if e != "" && errs != nil && c.FullPath() != "" && !strings.HasPrefix(c.FullPath(), "/console") {
		// Failures of the gateway's routes, not of stray paths (scanners,
		// favicons) or of the console itself. Clipped here, scrubbed of
		// anything like a key by the ring.
		errs.Add(console.ErrorEntry{Time: start, RequestID: c.GetString(door.KeyRequestID), Door: door.Of(c).Name,
			Model: c.GetString(door.KeyModel), Status: status, Message: utils.Clip(e, errorClipLen)})
	}
	if e != "" && status >= 500 {
		level = slog.LevelWarn
	}
	if !logger.Enabled(c.Request.Context(), level) {
		return // LOG_LEVEL drops the line: build none of it
	}
	attrs := []any{
		"request_id", c.GetString(door.KeyRequestID),
		"door", door.Of(c).Name,
		"client", utils.Clip(c.ClientIP(), utils.QuoteLen),
		"method", utils.Clip(c.Request.Method, utils.QuoteLen),
		"path", utils.Clip(c.Request.URL.Path, utils.QuoteLen),
		"model", utils.Clip(c.GetString(door.KeyModel), utils.QuoteLen),
		"status", status,
		"duration_ms", time.Since(start).Milliseconds(),
	}
	if n := c.GetInt(door.KeyTurn); n > 0 {
		attrs = append(attrs, "turn", n)
	}
	if e != "" {
		// The doors clip what they quote of the client; the sink
		// bounds the line whatever a message holds.
		attrs = append(attrs, "error", utils.Clip(e, errorClipLen))
	}
	logger.Log(c.Request.Context(), level, "request", attrs...)
}

// auth requires one of the client keys in force as a bearer token (or in
// x-api-key, which Anthropic-style clients send). Keys are compared by
// their SHA-256, in constant time; the key's fingerprint and name are kept
// for what the request creates, the usage ledger and the limits.
func auth(keys *clientkeys.Set) gin.HandlerFunc {
	return func(c *gin.Context) {
		if keys.Empty() {
			c.Next()
			return
		}
		given, authErr := bearerToken(c.GetHeader("Authorization"))
		if given == "" {
			given = strings.TrimSpace(c.GetHeader("X-Api-Key"))
		}
		gemini := door.Of(c) == gemini.Door
		if given == "" && gemini {
			// Google's two places: Gemini CLI and the SDKs send the
			// header, a URL can carry ?key= (never logged: the access log
			// has the path only).
			if given = strings.TrimSpace(c.GetHeader("X-Goog-Api-Key")); given == "" {
				given = strings.TrimSpace(c.Query("key"))
			}
		}
		if given == "" {
			if authErr == nil {
				msg := "missing API key: send the header Authorization: Bearer <your API_KEY>, or x-api-key: <your API_KEY>"
				if gemini {
					msg = "missing API key: send the header x-goog-api-key: <your API_KEY> (GEMINI_API_KEY for Gemini CLI), or ?key=<your API_KEY>"
				}
				authErr = &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "missing_api_key", Message: msg}
			}
			door.Abort(c, authErr)
			return
		}
		key, ok := keys.Match(given)
		if !ok {
			door.Abort(c, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "invalid_api_key",
				Message: "invalid API key: check the key your client sends against the gateway's API_KEY or API_KEYS_FILE"})
			return
		}
		c.Set(door.KeyClient, key.Fingerprint)
		c.Set(door.KeyClientName, key.Name)
		c.Set(keyClientKey, key)
		c.Next()
	}
}

// bearerToken reads an Authorization header of the Bearer scheme (any
// case, separated from the key by spaces or tabs). Its error says what is
// wrong with a header that is there but unusable; it never quotes the key.
func bearerToken(header string) (string, *models.Error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", nil
	}
	scheme, token, found := header, "", false
	if i := strings.IndexAny(header, " \t"); i >= 0 {
		scheme, token, found = header[:i], strings.TrimSpace(header[i+1:]), true
	}
	bad := func(code, format string, args ...any) (string, *models.Error) {
		return "", &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case !found && strings.EqualFold(scheme, "Bearer"):
		return bad("missing_api_key", "the Authorization header says Bearer but holds no key: send Authorization: Bearer <your API_KEY>")
	case !found:
		return bad("malformed_authorization", "the Authorization header has no scheme: send Authorization: Bearer <your API_KEY>, with the word Bearer and a space before the key")
	case !strings.EqualFold(scheme, "Bearer"):
		// The first word is named only when it is a scheme: a client that
		// sends "<key> <something>" would find its key in the message,
		// which the access log keeps.
		named := "a scheme"
		if name, ok := knownScheme(scheme); ok {
			named = fmt.Sprintf("the scheme %q", name)
		}
		return bad("unsupported_auth_scheme", "the Authorization header uses %s, which this gateway does not take: send Authorization: Bearer <your API_KEY> (or the key alone in X-Api-Key)", named)
	case token == "":
		return bad("missing_api_key", "the Authorization header says Bearer but holds no key: send Authorization: Bearer <your API_KEY>")
	}
	return token, nil
}

// authSchemes are the names of HTTP authentication schemes (IANA's
// registry and a few in common use), the only first words of an
// Authorization header an error message quotes.
var authSchemes = []string{"Basic", "Digest", "DPoP", "GNAP", "HOBA", "Mutual", "Negotiate", "NTLM", "OAuth",
	"PrivateToken", "SCRAM-SHA-1", "SCRAM-SHA-256", "vapid", "Concealed", "Token", "AWS4-HMAC-SHA256", "ApiKey"}

// knownScheme is the registered spelling of scheme, if it is one.
func knownScheme(scheme string) (string, bool) {
	for _, s := range authSchemes {
		if strings.EqualFold(s, scheme) {
			return s, true
		}
	}
	return "", false
}
