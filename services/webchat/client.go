// Package webchat is the back door to Cursor's web chat: it sends a text
// conversation to /api/chat and reads the Vercel AI SDK event stream back
// as deltas, with the browser profile, x-is-human header, Chrome TLS
// fingerprint, retries and model probe the site expects.
package webchat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/egress"
	"cursor2api/services/epilogue"
	"cursor2api/services/upstream"
	"cursor2api/services/vercel"
	"cursor2api/utils"
)

// HumanProvider supplies the x-is-human header value for one upstream
// request. Invalidate is called when the upstream rejected a value, so that
// a caching provider computes a fresh one.
type HumanProvider interface {
	Value(ctx context.Context) (string, error)
	Invalidate()
}

// StaticHuman sends a fixed value (or no header when empty).
type StaticHuman string

func (s StaticHuman) Value(context.Context) (string, error) { return string(s), nil }
func (StaticHuman) Invalidate()                             {}

// Ready implements ReadyHuman: the value is always at hand.
func (s StaticHuman) Ready() (string, bool) { return string(s), true }

// A ReadyHuman is a HumanProvider that can say when its value is at hand
// (a fixed one, a fresh cached one): a request then takes it as it is,
// without setting up a deadline for a wait that cannot happen.
type ReadyHuman interface {
	HumanProvider
	// Ready returns the value and true when it is at hand, without
	// waiting; else false, and the caller asks Value.
	Ready() (string, bool)
}

// Client talks to Cursor's web chat endpoint. It implements
// upstream.Upstream.
type Client struct {
	HTTP      *http.Client
	URL       string
	UserAgent string
	// IdleTimeout is how long the upstream may stay silent (before the
	// response headers or between frames) before the request is given up.
	IdleTimeout time.Duration
	// MaxDuration, when positive, caps a whole request however much it
	// keeps flowing.
	MaxDuration time.Duration
	// MaxContinuations is how many times an answer the upstream cut at
	// its output cap is continued (0: never); see continuation.go.
	MaxContinuations int
	// Cookie is sent as is (e.g. a _vcrcs cookie from a browser that
	// passed the Vercel checkpoint), besides any cookie the jar holds.
	Cookie string
	// Profile, when set, holds the browser profile's identifying headers
	// (User-Agent, sec-ch-ua*, Accept-Language); they are laid over
	// BrowserHeaders(UserAgent), so that the upstream sees the same
	// browser the x-is-human environment poses as.
	Profile http.Header
	Human   HumanProvider
	// HumanWait bounds the wait for Human's value (0: 5 seconds); past
	// it the header goes out empty.
	HumanWait time.Duration
	Logger    *slog.Logger
	// Checkpoint, when set, passes Vercel's security checkpoint and
	// keeps its cookie per egress (checkpoint.go).
	Checkpoint *vercel.Keeper
	// Egress, when set, is the pool of outbound proxies: each attempt is
	// pinned to one, which the checkpoint cookie is bound to.
	Egress *egress.Pool
	// Drift is told of frames of a type, and finish reasons, the reader
	// does not know; nil: one that logs to Logger is made on first use.
	Drift     *utils.Drift
	driftOnce sync.Once

	// headers are BrowserHeaders(UserAgent) with Profile laid over them:
	// the same on every request, so built once (by browserHeaders).
	headersOnce sync.Once
	headers     http.Header
	// readers are the streams' frame readers, reused from stream to
	// stream with their buffers.
	readers sync.Pool
}

// browserHeaders returns the browser's headers of every upstream request.
// Callers copy them into a request and never change them.
func (c *Client) browserHeaders() http.Header {
	c.headersOnce.Do(func() { c.headers = ProfileHeaders(c.UserAgent, c.Profile) })
	return c.headers
}

// ProfileHeaders is BrowserHeaders(ua) with a browser profile's own
// identifying headers laid over it: what the upstream and the challenge
// script's host see of the browser.
func ProfileHeaders(ua string, profile http.Header) http.Header {
	h := BrowserHeaders(ua)
	for k, v := range profile {
		h[k] = v
	}
	return h
}

// Cancellation causes of the gateway's own limits.
var (
	errIdle        = errors.New("upstream made no progress")
	errMaxDuration = errors.New("request ran past MAX_DURATION")
)

// maxRefusal bounds what is read of a non-200 answer: enough for an error
// body or the checkpoint's page and its token.
const maxRefusal = 64 << 10

// maxDrain and maxDrainWait bound what is read of a finished reply's
// tail (normally "data: [DONE]" and the chunked body's end) so that its
// connection can be reused; a longer or slower tail closes it instead.
const (
	maxDrain     = 16 << 10
	maxDrainWait = 2 * time.Second
)

// maxFrame bounds one SSE line from the upstream.
const maxFrame = 8 << 20

// retryBackoff is the pause before the one retry of a failed attempt.
const retryBackoff = 500 * time.Millisecond

// Stream implements upstream.Upstream. An attempt failing before any output
// with a 403 (x-is-human refreshed), a 5xx or a connection error is retried
// once. A Vercel checkpoint refusal is retried once passed (at most
// maxCheckpointPasses times), and a capped answer is continued.
func (c *Client) Stream(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error) (*models.Usage, error) {
	if c.MaxDuration > 0 {
		var cancelMax context.CancelFunc
		ctx, cancelMax = context.WithTimeoutCause(ctx, c.MaxDuration, errMaxDuration)
		defer cancelMax()
	}
	return c.streamContinued(ctx, req, fn)
}

// segment is one upstream request, retried once as Stream says, with out
// (nil for the first segment) stitching its text onto the answer so far.
func (c *Client) segment(ctx context.Context, req upstream.Request, st *stitcher, fn func(upstream.Delta) error) (*models.Usage, string, error) {
	delivered := false
	counted := func(d upstream.Delta) error {
		delivered = true
		return fn(d)
	}
	passes := 0
	for attempt := 1; ; attempt++ {
		out := counted
		if st != nil {
			st.reset(counted)
			out = st.delta
		}
		usage, finish, err := c.attempt(ctx, req, out, passes < maxCheckpointPasses)
		if passed := (*checkpointPassed)(nil); errors.As(err, &passed) {
			passes++
			attempt-- // the checkpoint is passed: the same attempt again
			continue
		}
		if err == nil && st != nil {
			err = st.end()
		}
		var retry *retryableError
		if !errors.As(err, &retry) {
			return usage, finish, err
		}
		if attempt > 1 || delivered {
			return usage, finish, retry.err
		}
		c.log(ctx, req, slog.LevelWarn, "upstream attempt failed, retrying once", "upstream_status", retry.status, "error", retry.err)
		select {
		case <-time.After(retryBackoff):
		case <-ctx.Done():
			return nil, "", c.transportError(ctx, ctx.Err())
		}
	}
}

// retryableError marks a failure worth one more attempt; err is what the
// caller gets when there is none left.
type retryableError struct {
	status int
	err    error
}

func (e *retryableError) Error() string { return e.err.Error() }

// attempt is one upstream request; mayPass says whether it may pass the
// Vercel checkpoint if asked. It returns the usage and the finish reason
// the upstream reported ("" when it gave none).
func (c *Client) attempt(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, mayPass bool) (*models.Usage, string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// What comes before the request is bounded on its own: the wait for
	// x-is-human by HumanWait, a cookie refresh by the checkpoint keeper.
	ctx, egress := c.pinEgress(ctx)
	// The upstream request runs under a context of its own, cancelled
	// with ctx (with its cause) until the reply finishes: a finished
	// reply's tail may be read after the attempt returns (see the
	// deferred drain below).
	reqCtx, cancelReq := context.WithCancelCause(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(ctx, func() { cancelReq(context.Cause(ctx)) })
	httpReq, err := c.newRequest(reqCtx, req)
	if err != nil {
		unlink()
		cancelReq(nil)
		return nil, "", err
	}
	sentCookie := c.setCookie(ctx, httpReq.Header, egress)
	// One timer guards every wait on the upstream, the tail's included;
	// each read touches it.
	idle := newIdleTimer(c.IdleTimeout, func() { cancel(errIdle); cancelReq(errIdle) })
	resp, err := c.HTTP.Do(httpReq)
	if err != nil {
		idle.stop()
		unlink()
		cancelReq(nil)
		mapped := c.transportError(ctx, err)
		if ctx.Err() == nil {
			return nil, "", &retryableError{err: mapped}
		}
		return nil, "", mapped
	}
	// A connection returns to the pool only if its body is read to the end.
	// A finished reply's tail is read in the request's epilogue, so the last
	// event never waits for it; every other exit closes the connection.
	finished, drainNow := false, false
	defer func() {
		if !finished || !unlink() {
			idle.stop()
			unlink()
			cancelReq(nil)
			resp.Body.Close()
			return
		}
		drain := func() {
			// Bounded by the idle timer, now min(TIMEOUT, maxDrainWait),
			// and by maxDrain.
			idle.reset(min(c.IdleTimeout, maxDrainWait))
			_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
			idle.stop()
			resp.Body.Close()
			cancelReq(nil)
		}
		if drainNow || !epilogue.AfterAnswer(ctx, drain) {
			drain()
		}
	}()
	if resp.StatusCode != http.StatusOK {
		// The refusal is read under the idle timer; passing a checkpoint
		// is bounded by the keeper itself.
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		idle.stop()
		return nil, "", c.refused(ctx, req, egress, sentCookie, resp, mayPass)
	}
	idle.touch()

	fr := c.newFrameReader(resp.Body, idle)
	defer c.freeFrameReader(fr)
	var usage *models.Usage
	for {
		fr.deltaRun()
		line, whole := fr.buffered()
		var err error
		if !whole {
			// Deliver what is merged before waiting for more: nothing
			// that could already be sent is held back.
			if err := fr.flush(fn); err != nil {
				return usage, "", err
			}
			line, err = fr.line()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			if ferr := fr.flush(fn); ferr != nil {
				return usage, "", ferr
			}
			if errors.Is(err, errFrameTooLong) {
				return usage, "", models.Upstream(http.StatusBadGateway, "upstream_frame_too_long", err, "the upstream sent a frame over %d bytes", maxFrame)
			}
			return usage, "", c.transportError(ctx, err)
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // comments, event names, blank separators
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			fr.endCalls()
			err := fr.flush(fn)
			finished = err == nil
			return usage, "", err
		}
		if fr.fastDelta(data) {
			continue // the common text or reasoning delta, read without a parser
		}
		frame := gjson.ParseBytes(data)
		switch typ := frame.Get("type").String(); typ {
		case "text-delta":
			fr.add(upstream.DeltaText, frame.Get("delta").String())
		case "reasoning-delta":
			fr.add(upstream.DeltaReasoning, frame.Get("delta").String())
		case "finish":
			fr.endCalls()
			if err := fr.flush(fn); err != nil {
				return usage, "", err
			}
			if u := frame.Get("messageMetadata.usage"); u.Exists() {
				in, out := int(u.Get("inputTokens").Int()), int(u.Get("outputTokens").Int())
				total := int(u.Get("totalTokens").Int())
				if total == 0 {
					total = in + out
				}
				usage = &models.Usage{InputTokens: in, OutputTokens: out, TotalTokens: total}
			}
			reason := frame.Get("finishReason").String()
			if reason == "" {
				reason = frame.Get("messageMetadata.finishReason").String()
			}
			if !slices.Contains(finishReasons, reason) {
				c.drift().Note("web chat", fmt.Sprintf("finish reason %q", reason))
			}
			// [DONE] normally follows; the reply is complete either way.
			finished = true
			// A cut answer is continued at once, by a request that wants
			// this connection: its tail is read now, not after the answer.
			drainNow = reason == finishLength && c.MaxContinuations > 0
			return usage, reason, nil
		case "error":
			if err := fr.flush(fn); err != nil {
				return usage, "", err
			}
			msg := frame.Get("errorText").String()
			if msg == "" {
				msg = frame.Get("error").String()
			}
			c.log(ctx, req, slog.LevelWarn, "upstream error frame", "error", utils.Clip(msg, 300))
			return usage, "", models.Upstream(http.StatusBadGateway, "upstream_error", nil, "the upstream reported an error: %s", utils.Clip(msg, 300))
		default:
			// The rare tool frames; other types are ignored, and noted
			// when this version does not know them.
			if !fr.toolFrame(typ, frame) && !knownFrame(typ) {
				c.drift().Note("web chat", frameKind(typ))
			}
		}
	}
	if err := fr.flush(fn); err != nil {
		return usage, "", err
	}
	if ctx.Err() != nil {
		return usage, "", c.transportError(ctx, ctx.Err())
	}
	c.log(ctx, req, slog.LevelWarn, "upstream stream ended without finish")
	return usage, "", models.Upstream(http.StatusBadGateway, "upstream_incomplete", nil, "the upstream ended its reply before finishing it; try again")
}

func (c *Client) newRequest(ctx context.Context, req upstream.Request) (*http.Request, error) {
	payload := appendRequestBody(nil, req.Model, req.Messages)
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("building upstream request: %w", err)
	}
	h := httpReq.Header
	for k, v := range c.browserHeaders() {
		h[k] = v
	}
	if c.Human != nil {
		v, ready := "", false
		if r, ok := c.Human.(ReadyHuman); ok {
			v, ready = r.Ready()
		}
		var err error
		if !ready {
			// The upstream no longer checks the value (2026): a script
			// that fails or is slow costs an empty header, never the
			// request.
			wait := c.HumanWait
			if wait <= 0 {
				wait = defaultHumanWait
			}
			hctx, cancel := context.WithTimeout(ctx, wait)
			v, err = c.Human.Value(hctx)
			cancel()
		}
		switch {
		case err != nil:
			c.log(ctx, req, slog.LevelDebug, "x-is-human unavailable; sending it empty", "error", err)
			h["X-Is-Human"] = []string{""}
		case v != "":
			h.Set("x-is-human", v)
		}
	}
	return httpReq, nil
}

// appendRequestBody appends the page's request body for messages: the
// browser's shape (its docs folder, empty, as the context the page
// attaches to every message (2026), a 16-hex id per message, the submit
// trigger), built without reflection, as JSON.stringify writes it (<, >
// and & as they are).
func appendRequestBody(b []byte, model string, messages []models.Turn) []byte {
	size := 160 + len(model)
	for _, m := range messages {
		size += len(m.Text) + len(m.Role) + 80
	}
	b = slices.Grow(b, size+size/16) // room for some escapes
	b = append(b, `{"context":[{"type":"file","content":"","filePath":"/docs/"}],"model":`...)
	b = utils.AppendJSONString(b, model)
	b = append(b, `,"id":"`...)
	b = append(b, utils.RandomString(utils.Alphanumerics, 16)...)
	b = append(b, `","messages":[`...)
	for i, m := range messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = append(b, utils.RandomString(utils.HexDigits, 16)...)
		b = append(b, `","role":`...)
		b = utils.AppendJSONString(b, string(m.Role))
		b = append(b, `,"parts":[{"type":"text","text":`...)
		b = utils.AppendJSONString(b, m.Text)
		b = append(b, `}]}`...)
	}
	return append(b, `],"trigger":"submit-message"}`...)
}

// defaultHumanWait bounds how long a request waits for its x-is-human
// value when HumanWait is 0.
const defaultHumanWait = 5 * time.Second

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
func (c *Client) transportError(ctx context.Context, err error) error {
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
	return models.Upstream(http.StatusBadGateway, "upstream_unreachable", err, "could not reach the upstream: %s", utils.Clip(err.Error(), 200))
}

var (
	invalidModelRE = regexp.MustCompile(`(?i)invalid model`)
	checkpointRE   = regexp.MustCompile(`(?i)vercel security checkpoint`)
)

// defaultRetryAfter is the Retry-After sent for a checkpoint page that
// gives none.
const defaultRetryAfter = 60

// statusError maps a non-200 upstream answer. HTML bodies (bot-check and
// checkpoint pages) are never forwarded. Failures worth a second attempt
// come wrapped in *retryableError.
func (c *Client) statusError(req upstream.Request, resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	msg := upstreamMessage(raw)
	code := resp.StatusCode
	cause := &UpstreamStatusError{Status: code, Message: msg}
	c.Logger.Warn("upstream refused", "request_id", req.RequestID, "upstream_status", code, "model", req.Model, "message", utils.Clip(msg, 200))
	switch {
	case code == http.StatusTooManyRequests || checkpointRE.Match(raw):
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || retry <= 0 {
			retry = defaultRetryAfter
		}
		return &models.Error{
			Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "upstream_rate_limited", RetryAfter: retry,
			Message: fmt.Sprintf("the upstream is rate limiting this gateway or asking for a browser check (%d: %s); wait %d seconds and try again, or set CURSOR_COOKIE from a browser that passed the check", code, utils.Clip(msg, 120), retry),
			Err:     cause,
		}
	case code == http.StatusBadRequest && invalidModelRE.MatchString(msg):
		return &models.Error{
			Status: http.StatusBadRequest, Kind: models.KindInvalidRequest, Code: "model_not_supported", Param: "model",
			Err:     cause,
			Message: fmt.Sprintf("the upstream does not accept model %q (%s); map the public name to an allowed upstream id with MODEL_MAP", req.Model, utils.Clip(msg, 500)),
		}
	case code == http.StatusBadRequest:
		return models.Upstream(http.StatusBadGateway, "upstream_bad_request", cause, "the upstream rejected the request (400): %s", utils.Clip(msg, 300))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if c.Human != nil {
			c.Human.Invalidate()
		}
		return &retryableError{status: code, err: models.Upstream(http.StatusBadGateway, "upstream_forbidden", cause,
			"the upstream rejected the bot check (%d: %s), also after refreshing x-is-human; check SCRIPT_URL and X_IS_HUMAN_MODE, or try again later", code, utils.Clip(msg, 200))}
	case code >= 500:
		return &retryableError{status: code, err: models.Upstream(http.StatusBadGateway, "upstream_error", cause,
			"the upstream failed with status %d (%s), also on a second try; try again later", code, utils.Clip(msg, 300))}
	default:
		return models.Upstream(http.StatusBadGateway, "upstream_error", cause, "the upstream answered with status %d: %s", code, utils.Clip(msg, 300))
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

func (c *Client) log(ctx context.Context, req upstream.Request, level slog.Level, msg string, args ...any) {
	c.Logger.Log(ctx, level, msg, append([]any{"request_id", req.RequestID, "model", req.Model}, args...)...)
}
