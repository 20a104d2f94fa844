package services

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"cursor2api/models"
)

// HumanProvider supplies the x-is-human header value for one upstream
// request. Invalidate is called when the upstream rejected a value, so that
// a caching provider computes a fresh one.
type HumanProvider interface {
	Value(ctx context.Context) (string, error)
	Invalidate()
}

// RandomHuman is the simplest provider: a random 64-hex value per request,
// which is what reference gateways fall back to when the challenge script
// cannot run. The upstream decides whether it is enough.
type RandomHuman struct{}

// Value returns 32 random bytes in hex.
func (RandomHuman) Value(context.Context) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("x-is-human: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Invalidate does nothing: every value is fresh.
func (RandomHuman) Invalidate() {}

// StaticHuman sends a fixed value (or no header when empty).
type StaticHuman string

func (s StaticHuman) Value(context.Context) (string, error) { return string(s), nil }
func (StaticHuman) Invalidate()                             {}

// UpstreamRequest is one conversation sent to the upstream.
type UpstreamRequest struct {
	Model     string
	Messages  []UpstreamMessage
	RequestID string // the gateway's request id, for logs
}

// DeltaKind says what an upstream delta carries.
type DeltaKind uint8

const (
	DeltaText      DeltaKind = iota + 1 // text-delta: the model's text, markup included
	DeltaReasoning                      // reasoning-delta: native reasoning
)

// Delta is one piece of the upstream's streamed reply.
type Delta struct {
	Kind DeltaKind
	Text string
}

// Upstream streams a reply to a conversation. It calls fn for each delta in
// order and returns the usage the upstream reported (nil when it reported
// none). An error is a *models.APIError, or the context's error when the
// caller went away. When fn returns an error the stream stops and that error
// is returned.
type Upstream interface {
	Stream(ctx context.Context, req UpstreamRequest, fn func(Delta) error) (*models.Usage, error)
}

// CursorClient talks to Cursor's web chat endpoint.
type CursorClient struct {
	HTTP      *http.Client
	URL       string
	UserAgent string
	// IdleTimeout is how long the upstream may stay silent (before the
	// response headers or between frames) before the request is given up.
	IdleTimeout time.Duration
	// MaxDuration, when positive, caps a whole request however much it
	// keeps flowing.
	MaxDuration time.Duration
	// Cookie is sent as is (e.g. a _vcrcs cookie from a browser that
	// passed the Vercel checkpoint), besides any cookie the jar holds.
	Cookie string
	Human  HumanProvider
	Logger *slog.Logger
}

// Cancellation causes of the gateway's own limits.
var (
	errIdle        = errors.New("upstream made no progress")
	errMaxDuration = errors.New("request ran past MAX_DURATION")
)

// maxFrame bounds one SSE line from the upstream.
const maxFrame = 8 << 20

// Stream implements Upstream.
func (c *CursorClient) Stream(ctx context.Context, req UpstreamRequest, fn func(Delta) error) (*models.Usage, error) {
	if c.MaxDuration > 0 {
		var cancelMax context.CancelFunc
		ctx, cancelMax = context.WithTimeoutCause(ctx, c.MaxDuration, errMaxDuration)
		defer cancelMax()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// One timer guards every wait on the upstream; each frame re-arms it.
	idle := time.AfterFunc(c.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	httpReq, err := c.newRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(httpReq)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(req, resp)
	}
	idle.Reset(c.IdleTimeout)

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxFrame)
	var usage *models.Usage
	for sc.Scan() {
		idle.Reset(c.IdleTimeout)
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // comments, event names, blank separators
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			return usage, nil
		}
		frame := gjson.ParseBytes(data)
		switch frame.Get("type").String() {
		case "text-delta":
			if err := fn(Delta{Kind: DeltaText, Text: frame.Get("delta").String()}); err != nil {
				return usage, err
			}
		case "reasoning-delta":
			if err := fn(Delta{Kind: DeltaReasoning, Text: frame.Get("delta").String()}); err != nil {
				return usage, err
			}
		case "finish":
			if u := frame.Get("messageMetadata.usage"); u.Exists() {
				in, out := int(u.Get("inputTokens").Int()), int(u.Get("outputTokens").Int())
				total := int(u.Get("totalTokens").Int())
				if total == 0 {
					total = in + out
				}
				usage = &models.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: total}
			}
			// [DONE] normally follows; the reply is complete either way.
			return usage, nil
		case "error":
			msg := frame.Get("errorText").String()
			if msg == "" {
				msg = frame.Get("error").String()
			}
			c.log(ctx, req, slog.LevelWarn, "upstream error frame", "error", msg)
			return usage, models.Upstream(http.StatusBadGateway, "upstream_error", nil, "the upstream reported an error: %s", clip(msg, 300))
		}
	}
	if err := sc.Err(); err != nil {
		return usage, c.transportError(ctx, err)
	}
	if ctx.Err() != nil {
		return usage, c.transportError(ctx, ctx.Err())
	}
	c.log(ctx, req, slog.LevelWarn, "upstream stream ended without finish")
	return usage, models.Upstream(http.StatusBadGateway, "upstream_incomplete", nil, "the upstream ended its reply before finishing it; try again")
}

func (c *CursorClient) newRequest(ctx context.Context, req UpstreamRequest) (*http.Request, error) {
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	body := struct {
		Context  []any     `json:"context"`
		Model    string    `json:"model"`
		ID       string    `json:"id"`
		Messages []message `json:"messages"`
		Trigger  string    `json:"trigger"`
	}{Context: []any{}, Model: req.Model, ID: randomHex(8), Trigger: "submit-message"}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, message{Role: m.Role, Parts: []part{{Type: "text", Text: m.Text}}})
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding upstream request: %w", err)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("building upstream request: %w", err)
	}
	h := httpReq.Header
	for k, v := range BrowserHeaders(c.UserAgent) {
		h[k] = v
	}
	if c.Cookie != "" {
		h.Set("Cookie", c.Cookie)
	}
	if c.Human != nil {
		v, err := c.Human.Value(ctx)
		if err != nil {
			c.log(ctx, req, slog.LevelWarn, "x-is-human unavailable", "error", err)
		} else if v != "" {
			h.Set("x-is-human", v)
		}
	}
	return httpReq, nil
}

var chromeVersionRE = regexp.MustCompile(`Chrome/(\d+)`)

// BrowserHeaders is one consistent Chrome profile derived from the
// User-Agent, so that the client hints never contradict it.
func BrowserHeaders(ua string) http.Header {
	version := "142"
	if m := chromeVersionRE.FindStringSubmatch(ua); m != nil {
		version = m[1]
	}
	platform := `"Windows"`
	switch {
	case strings.Contains(ua, "Macintosh"):
		platform = `"macOS"`
	case strings.Contains(ua, "Linux"):
		platform = `"Linux"`
	}
	h := http.Header{}
	for k, v := range map[string]string{
		"User-Agent":         ua,
		"Accept":             "*/*",
		"Accept-Language":    "en-US,en;q=0.9",
		"Content-Type":       "application/json",
		"Origin":             "https://cursor.com",
		"Referer":            "https://cursor.com/",
		"Priority":           "u=1, i",
		"Sec-Ch-Ua":          fmt.Sprintf(`"Chromium";v="%s", "Not-A.Brand";v="24", "Google Chrome";v="%s"`, version, version),
		"Sec-Ch-Ua-Mobile":   "?0",
		"Sec-Ch-Ua-Platform": platform,
		"Sec-Fetch-Dest":     "empty",
		"Sec-Fetch-Mode":     "cors",
		"Sec-Fetch-Site":     "same-origin",
	} {
		h.Set(k, v)
	}
	return h
}

// transportError maps a failure to reach or read the upstream.
func (c *CursorClient) transportError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errIdle) {
		return models.Upstream(http.StatusGatewayTimeout, "upstream_timeout", err,
			"the upstream sent nothing for %s (TIMEOUT); try again, or raise TIMEOUT for slow models", c.IdleTimeout)
	}
	if errors.Is(context.Cause(ctx), errMaxDuration) {
		return models.Upstream(http.StatusGatewayTimeout, "max_duration", err,
			"the request ran past MAX_DURATION (%s); ask for a shorter answer or raise MAX_DURATION", c.MaxDuration)
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr // the client went away; nobody reads the answer
	}
	return models.Upstream(http.StatusBadGateway, "upstream_unreachable", err, "could not reach the upstream: %s", clip(err.Error(), 200))
}

var invalidModelRE = regexp.MustCompile(`(?i)invalid model`)

// statusError maps a non-200 upstream answer. HTML bodies (bot-check and
// checkpoint pages) are never forwarded.
func (c *CursorClient) statusError(req UpstreamRequest, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := upstreamMessage(raw)
	c.Logger.Warn("upstream refused", "request_id", req.RequestID, "upstream_status", resp.StatusCode, "model", req.Model, "message", clip(msg, 200))
	switch code := resp.StatusCode; {
	case code == http.StatusBadRequest && invalidModelRE.MatchString(msg):
		return &models.APIError{
			Status: http.StatusBadRequest, Type: models.ErrInvalidRequest, Code: "model_not_supported", Param: "model",
			Err:     &UpstreamStatusError{Status: code, Message: msg},
			Message: fmt.Sprintf("the upstream does not accept model %q (%s); map the public name to an allowed upstream id with MODEL_MAP", req.Model, clip(msg, 500)),
		}
	case code == http.StatusBadRequest:
		return models.Upstream(http.StatusBadGateway, "upstream_bad_request", nil, "the upstream rejected the request (400): %s", clip(msg, 300))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if c.Human != nil {
			c.Human.Invalidate()
		}
		return models.Upstream(http.StatusBadGateway, "upstream_forbidden", nil, "the upstream refused access (%d: %s): its bot check rejected the request; try again later", code, clip(msg, 200))
	case code == http.StatusTooManyRequests:
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &models.APIError{
			Status: http.StatusTooManyRequests, Type: models.ErrRateLimit, Code: "rate_limited", RetryAfter: retry,
			Message: fmt.Sprintf("the upstream is rate limiting this gateway (%s); wait and try again", clip(msg, 200)),
		}
	default:
		return models.Upstream(http.StatusBadGateway, "upstream_error", nil, "the upstream failed with status %d: %s", code, clip(msg, 300))
	}
}

// UpstreamStatusError is the upstream's own answer behind a mapped error.
type UpstreamStatusError struct {
	Status  int
	Message string
}

func (e *UpstreamStatusError) Error() string {
	return fmt.Sprintf("upstream status %d: %s", e.Status, e.Message)
}

var htmlTitleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// upstreamMessage extracts a readable message from an error body: the
// "error" field of JSON, the title of an HTML page, or the text itself.
func upstreamMessage(raw []byte) string {
	trimmed := bytes.TrimSpace(raw)
	if gjson.ValidBytes(trimmed) {
		r := gjson.ParseBytes(trimmed)
		for _, path := range []string{"error.message", "error", "message"} {
			if v := r.Get(path); v.Exists() && v.Type == gjson.String {
				return v.String()
			}
		}
	}
	if bytes.HasPrefix(trimmed, []byte("<")) {
		if m := htmlTitleRE.FindSubmatch(trimmed); m != nil {
			return "HTML page: " + strings.TrimSpace(string(m[1]))
		}
		return "an HTML page"
	}
	if len(trimmed) == 0 {
		return "empty body"
	}
	return string(trimmed)
}

func (c *CursorClient) log(ctx context.Context, req UpstreamRequest, level slog.Level, msg string, args ...any) {
	c.Logger.Log(ctx, level, msg, append([]any{"request_id", req.RequestID, "model", req.Model}, args...)...)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}
