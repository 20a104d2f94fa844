package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/services/human"
	"cursor2api/services/upstream"
	"cursor2api/services/vercel"
	"cursor2api/services/webchat"
	"cursor2api/utils"
)

// cookieFix is what to do when the upstream wants a browser check.
const cookieFix = "open the chat (https://cursor.com) in a browser, pass the check, and set CURSOR_COOKIE to its cookies for cursor.com (at least _vcrcs=...; DevTools → Application → Cookies)"

var checkpointRE = regexp.MustCompile(`(?i)vercel security checkpoint`)

// Checkpoint is the step that passes Vercel's security checkpoint as the
// gateway does, with the web chat's own keeper: it fetches the site's
// page through each egress, solves the challenge when there is one, and
// reports the cookie it got. With CHECKPOINT=off it only loads the page
// and reports whether the checkpoint stands in the way.
func Checkpoint() Step {
	return Step{Name: "checkpoint", Run: func(ctx context.Context, s *State) Result {
		web := s.WebChat.Client
		if web.Checkpoint == nil {
			return detectCheckpoint(ctx, s)
		}
		egresses := []string{vercel.Direct}
		if web.Egress != nil {
			egresses = egresses[:0]
			for _, e := range web.Egress.State() {
				egresses = append(egresses, e.Label)
			}
		}
		var passed, none []string
		for _, egress := range egresses {
			start := time.Now()
			err := web.Checkpoint.Solve(ctx, egress, "", "")
			switch {
			case errors.Is(err, vercel.ErrNoCheckpoint):
				none = append(none, egress)
			case err != nil:
				return Result{Outcome: Fail, Detail: fmt.Sprintf("could not pass Vercel's security checkpoint through %s: %s", egress, utils.Clip(err.Error(), 300)),
					Fix: "try again later or through another egress (PROXY_URL); else " + cookieFix}
			default:
				passed = append(passed, fmt.Sprintf("%s in %s, cookie valid for %s", egress, time.Since(start).Round(time.Millisecond), cookieLife(web.Checkpoint, egress)))
			}
		}
		if len(passed) == 0 {
			return Result{Outcome: Pass, Detail: "the site asks for no checkpoint (" + strings.Join(none, ", ") + ")"}
		}
		return Result{Outcome: Pass, Detail: "passed Vercel's security checkpoint in-process: " + strings.Join(passed, "; ")}
	}}
}

// cookieLife is how long the keeper's cookie for egress still lasts.
func cookieLife(k *vercel.Keeper, egress string) time.Duration {
	for _, st := range k.State() {
		if st.Egress == egress {
			return st.ExpiresIn.Round(time.Minute)
		}
	}
	return 0
}

// detectCheckpoint loads the upstream's page as a browser's first visit
// does and reports whether Vercel's security checkpoint stands in the way
// (a 429 or its "Vercel Security Checkpoint" page): what can be said with
// CHECKPOINT=off.
func detectCheckpoint(ctx context.Context, s *State) Result {
	page, err := pageURL(s.Config.CursorAPIURL)
	if err != nil {
		return Result{Outcome: Fail, Detail: err.Error(), Fix: "set CURSOR_API_URL to the chat endpoint, e.g. https://cursor.com/api/chat"}
	}
	web := s.WebChat.Client
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	if err != nil {
		return Result{Outcome: Fail, Detail: err.Error()}
	}
	for k, v := range webchat.ProfileHeaders(web.UserAgent, web.Profile) {
		req.Header[k] = v
	}
	for k, v := range map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Site": "none", "Sec-Fetch-User": "?1"} {
		req.Header.Set(k, v)
	}
	req.Header.Del("Content-Type")
	req.Header.Del("Origin")
	if web.Cookie != "" {
		req.Header.Set("Cookie", web.Cookie)
	}
	resp, err := web.HTTP.Do(req)
	if err != nil {
		return Result{Outcome: Fail, Detail: fmt.Sprintf("could not load %s: %s", page, utils.Clip(err.Error(), 200)),
			Fix: "check the network: CURSOR_API_URL, PROXY_URL (or HTTPS_PROXY), TLS_FINGERPRINT"}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<10))
	if v := vercel.Inspect(resp.StatusCode, resp.Header, body); v.Kind != vercel.NotCheckpoint || checkpointRE.Match(body) {
		return Result{Outcome: Fail, Detail: fmt.Sprintf("%s answered %d with Vercel's security checkpoint, and CHECKPOINT=off", page, resp.StatusCode),
			Fix: "set CHECKPOINT=auto to pass it in-process, or " + cookieFix}
	}
	if resp.StatusCode >= 400 {
		return Result{Outcome: Fail, Detail: fmt.Sprintf("%s answered %d", page, resp.StatusCode),
			Fix: "the upstream refuses this address: try another egress (PROXY_URL) or " + cookieFix}
	}
	return Result{Outcome: Pass, Detail: fmt.Sprintf("%s answered %d, no checkpoint page (CHECKPOINT=off)", page, resp.StatusCode)}
}

// pageURL is the page in front of the chat endpoint: its origin.
func pageURL(api string) (string, error) {
	u, err := url.Parse(api)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("CURSOR_API_URL=%q is not an absolute URL", api)
	}
	return u.Scheme + "://" + u.Host + "/", nil
}

// Cookie is the step that reports whether CURSOR_COOKIE is set and sent, naming its
// cookies (never their values), and the cookies the upstream set.
func Cookie() Step {
	return Step{Name: "cookie", Run: func(_ context.Context, s *State) Result {
		web := s.WebChat.Client
		var jarred []string
		if u, err := url.Parse(s.Config.CursorAPIURL); err == nil && web.HTTP.Jar != nil {
			for _, c := range web.HTTP.Jar.Cookies(u) {
				jarred = append(jarred, c.Name)
			}
		}
		fromUpstream := ""
		if len(jarred) > 0 {
			fromUpstream = "; the upstream set " + strings.Join(jarred, ", ")
		}
		raw := strings.TrimSpace(s.Config.Cookie)
		if raw == "" {
			return Result{Outcome: Skip, Detail: "CURSOR_COOKIE is not set (needed only when the checkpoint step fails)" + fromUpstream}
		}
		cookies, err := http.ParseCookie(raw)
		if err != nil || len(cookies) == 0 {
			return Result{Outcome: Fail, Detail: "CURSOR_COOKIE is not a cookie header", Fix: "write CURSOR_COOKIE as name=value pairs separated by \"; \", e.g. _vcrcs=..."}
		}
		var names []string
		for _, c := range cookies {
			names = append(names, c.Name)
		}
		if web.Cookie != s.Config.Cookie {
			return Result{Outcome: Fail, Detail: "CURSOR_COOKIE is set but the web chat client does not send it"}
		}
		detail := fmt.Sprintf("CURSOR_COOKIE holds %s, sent with every upstream request%s", strings.Join(names, ", "), fromUpstream)
		if !slices.Contains(names, "_vcrcs") {
			return Result{Outcome: Warn, Detail: detail, Fix: "the checkpoint's cookie is _vcrcs: " + cookieFix}
		}
		return Result{Outcome: Pass, Detail: detail}
	}}
}

// scriptFix is what to do when the challenge script cannot be had.
const scriptFix = "the upstream no longer checks x-is-human, so requests go on with it empty; to compute it, set SCRIPT_URL to the current script (or SCRIPT_URL=auto to find it on SCRIPT_PAGE_URL), or set X_IS_HUMAN_MODE=off to stop trying"

// Script is the step that fetches the x-is-human challenge script.
func Script() Step {
	return Step{Name: "challenge script", Run: func(ctx context.Context, s *State) Result {
		if mode := s.WebChat.Human.Mode(); mode != "script" {
			return Result{Outcome: Skip, Detail: fmt.Sprintf("X_IS_HUMAN_MODE=%s: no script to fetch", mode)}
		}
		script, scriptURL, err := s.WebChat.Human.FetchScript(ctx)
		if err != nil {
			return Result{Outcome: Warn, Detail: fmt.Sprintf("could not fetch %s: %s", utils.Clip(scriptURL, 200), utils.Clip(err.Error(), 300)), Fix: scriptFix}
		}
		s.Script, s.ScriptURL = script, scriptURL
		return Result{Outcome: Pass, Detail: fmt.Sprintf("fetched %s (%d bytes)", utils.Clip(scriptURL, 200), len(script))}
	}}
}

// XIsHuman is the step that runs the fetched challenge script, as `cursor2api xih` does.
func XIsHuman() Step {
	return Step{Name: "x-is-human", Run: func(ctx context.Context, s *State) Result {
		p := s.WebChat.Human
		switch mode := p.Mode(); {
		case mode != "script":
			v, _ := p.Value(ctx)
			return Result{Outcome: Skip, Detail: fmt.Sprintf("X_IS_HUMAN_MODE=%s: %d bytes sent, no script run", mode, len(v))}
		case s.Script == "":
			return Result{Outcome: Skip, Detail: "no script was fetched: requests send x-is-human empty"}
		}
		res, _ := p.Check(ctx, s.Script, human.EvalOptions{Diagnose: true})
		if res.Err != nil {
			missing := ""
			if len(res.Misses) > 0 {
				missing = "; the script read what the environment lacks: " + utils.Clip(strings.Join(res.Misses, ", "), 300)
			}
			return Result{Outcome: Warn, Detail: fmt.Sprintf("the script failed: %s%s", utils.Clip(res.Err.Error(), 300), missing),
				Fix: scriptFix + "; `cursor2api xih -file script.js` runs a saved copy with every detail"}
		}
		return Result{Outcome: Pass, Detail: fmt.Sprintf("computed a %d-byte value (%d globals missing)", len(res.Value), len(res.Misses))}
	}}
}

// Models is the step that asks the upstream which model ids it accepts and compares them
// with what the gateway publishes.
func Models() Step {
	return Step{Name: "models", Run: func(ctx context.Context, s *State) Result {
		allowed, err := s.WebChat.Client.AllowedModels(ctx)
		if err != nil {
			if errors.Is(err, webchat.ErrUnrestricted) {
				return Result{Outcome: Pass, Detail: "the upstream accepts any model id"}
			}
			r := failure(err)
			r.Detail = "could not learn the upstream's models: " + r.Detail
			return r
		}
		s.Allowed = allowed
		detail := "the upstream accepts " + strings.Join(allowed, ", ")
		if s.Config.ModelsAuto() {
			c, err := webchat.CatalogOf(allowed)
			if err != nil {
				return Result{Outcome: Fail, Detail: err.Error()}
			}
			return Result{Outcome: Pass, Detail: detail + "; MODELS=auto publishes " + strings.Join(c.Names(), ", ")}
		}
		var refused []string
		for id, names := range s.WebChat.Catalog.Upstreams() {
			if !slices.Contains(allowed, id) {
				refused = append(refused, fmt.Sprintf("%s (%s)", strings.Join(names, ", "), id))
			}
		}
		slices.Sort(refused)
		switch {
		case len(refused) == 0:
			return Result{Outcome: Pass, Detail: detail + "; every model of MODELS is accepted"}
		case len(refused) == len(s.WebChat.Catalog.Upstreams()):
			return Result{Outcome: Fail, Detail: detail + "; it refuses every model of MODELS: " + strings.Join(refused, "; "),
				Fix: "set MODELS=auto (publish what the upstream accepts), or MODELS=" + webchat.PublicName(allowed[0])}
		}
		return Result{Outcome: Warn, Detail: detail + "; it refuses " + strings.Join(refused, "; "),
			Fix: "drop them from MODELS, or set MODELS=auto"}
	}}
}

// chatPrompt asks for the shortest answer.
const chatPrompt = "Reply with the single word: ok"

// errEnough ends the chat at its first word.
var errEnough = errors.New("answered")

// Chat is the step that sends a one-line chat and waits for the first word of the answer.
func Chat() Step {
	return Step{Name: "chat", Run: func(ctx context.Context, s *State) Result {
		model := ""
		if len(s.Allowed) > 0 {
			model = s.Allowed[0]
		} else if def, ok := s.WebChat.Catalog.Default(); ok {
			m, _ := s.WebChat.Catalog.Resolve(def)
			model = m.Upstream
		}
		var got strings.Builder
		_, err := s.WebChat.Client.Stream(ctx, upstream.Request{Model: model, RequestID: "doctor",
			Messages: []models.Turn{{Role: models.RoleUser, Text: chatPrompt}}}, func(d upstream.Delta) error {
			if d.Kind == upstream.DeltaText {
				got.WriteString(d.Text)
				if strings.TrimSpace(got.String()) != "" {
					return errEnough
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			r := failure(err)
			r.Detail = fmt.Sprintf("%s did not answer: %s", model, r.Detail)
			return r
		}
		if strings.TrimSpace(got.String()) == "" {
			return Result{Outcome: Fail, Detail: model + " finished without a word", Fix: "try again; if it stays silent, set MODELS to another model the models step lists"}
		}
		return Result{Outcome: Pass, Detail: fmt.Sprintf("%s answered %q", model, utils.Clip(strings.TrimSpace(got.String()), 40))}
	}}
}

// failure turns a back-door error into a failed result with its fix.
func failure(err error) Result {
	r := Result{Outcome: Fail, Detail: utils.Clip(err.Error(), 300)}
	var e *models.Error
	if !errors.As(err, &e) {
		return r
	}
	r.Detail = utils.Clip(e.Message, 300)
	switch e.Code {
	case "upstream_rate_limited":
		r.Fix = "wait and try again; if it persists, " + cookieFix
	case "upstream_forbidden":
		r.Fix = "the upstream rejected this client: " + cookieFix + "; or try another egress (PROXY_URL)"
	case "model_not_supported":
		r.Fix = "set MODELS=auto to publish what the upstream accepts"
	case "upstream_timeout", "max_duration":
		r.Fix = "the upstream is slow or unreachable: check PROXY_URL, or raise TIMEOUT"
	case "upstream_unreachable":
		r.Fix = "check CURSOR_API_URL, PROXY_URL (or HTTPS_PROXY) and TLS_FINGERPRINT"
	default:
		r.Fix = "try again later; the gateway's log (LOG_LEVEL=debug) has the upstream's answer"
	}
	return r
}

// Drift is the step that lists what the earlier steps met of the
// upstream's format that this version does not know (a challenge token's
// extra fields, a frame of a new type, a new finish reason): the gateway
// passed over it, but a format change is under way, and the next one may
// stop it. It runs last.
func Drift() Step {
	return Step{Name: "format drift", Run: func(_ context.Context, s *State) Result {
		notices := s.WebChat.Drift.Notices()
		if len(notices) == 0 {
			return Result{Outcome: Pass, Detail: "nothing the upstream sent was new to this version"}
		}
		seen := make([]string, len(notices))
		for i, n := range notices {
			seen[i] = fmt.Sprintf("%s: %s (%d×)", n.Component, n.Kind, n.Count)
		}
		return Result{Outcome: Warn, Detail: "the upstream sent what this version does not know, and it was passed over: " + strings.Join(seen, "; "),
			Fix: "requests still work; the upstream's format is changing: update cursor2api, or report these kinds"}
	}}
}
