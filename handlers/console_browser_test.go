package handlers

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"cursor2api/handlers/console"
	"cursor2api/services/cursortest"
	"cursor2api/services/usage"
)

// chromium finds Debian's Chromium (CHROMIUM names another), or skips.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: install Debian's chromium (apt-get install chromium) or set CHROMIUM to run the console's browser test")
	return ""
}

// screenshotDir is where the console's screenshots are kept:
// CONSOLE_SCREENSHOTS when set (.ci/run sets it), else the test's
// artifact directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.ArtifactDir()
}

// dom is a page as the browser holds it: its DOM serialised by Chromium
// (DevTools, no script), parsed, so a figure is read from what was
// rendered, with JavaScript on or off.
type dom struct{ root *html.Node }

func parseDOM(t *testing.T, page string) dom {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	return dom{root}
}

func (d dom) find(n *html.Node, match func(*html.Node) bool, out []*html.Node) []*html.Node {
	if n.Type == html.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = d.find(c, match, out)
	}
	return out
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// all are the elements with the tag and, when attr is not empty, that
// attribute's value.
func (d dom) all(tag, name, value string) []*html.Node {
	return d.find(d.root, func(n *html.Node) bool {
		return n.Data == tag && (name == "" || attr(n, name) == value)
	}, nil)
}

// byID is the element of an id, or nil.
func (d dom) byID(id string) *html.Node {
	if ns := d.find(d.root, func(n *html.Node) bool { return attr(n, "id") == id }, nil); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

var spaces = regexp.MustCompile(`\s+`)

// text is n's text, its white space collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(spaces.ReplaceAllString(b.String(), " "))
}

// cells are the texts of a row's cells.
func cells(tr *html.Node) []string {
	var out []string
	for c := tr.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "td" {
			out = append(out, text(c))
		}
	}
	return out
}

// rows are the rows with cells under n (a section or table).
func rows(d dom, n *html.Node) [][]string {
	var out [][]string
	for _, tr := range d.find(n, func(n *html.Node) bool { return n.Data == "tr" }, nil) {
		if c := cells(tr); len(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// TestConsoleInABrowser drives Chromium through the scripted run:
// traffic on three named keys of API_KEYS_FILE, one of them over its rpm
// through two doors; sign in by the form; read each panel's figures of
// that traffic from the rendered page; keep screenshots; sign out and see
// only the form. Then the same with JavaScript off. No key, ADMIN_KEY or
// session cookie is on any page.
func TestConsoleInABrowser(t *testing.T) {
	bin := chromium(t)
	const admin = "adm-browser-test-5f3a9c"
	const upstreamSecret = "sk-upstream-77aa88bb99cc00dd"
	alice, bob, carol := "sk-alice-0001", "sk-bob-0002", "sk-carol-0003"
	file := writeKeys(t, "keys:\n"+
		"  - {name: alice, key: "+alice+"}\n"+
		"  - {name: bob, key: "+bob+", limits: {rpm: 2, tokens_per_day: 100000}}\n"+
		"  - {name: carol, key: "+carol+", limits: {concurrent: 4}}\n")
	reply := func(n int, req cursortest.Request) cursortest.Response {
		if strings.Contains(string(req.Body), "please fail") {
			return cursortest.Response{Status: http.StatusBadRequest, Body: `{"error":"refused for key ` + upstreamSecret + `"}`}
		}
		return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
	}
	s := newStack(t, map[string]string{"API_KEYS_FILE": file, "ADMIN_KEY": admin}, reply)
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	messages := `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`

	// The traffic in one minute: bob's rpm is a fixed window on it.
	if time.Now().Second() > 45 {
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	}
	minute := time.Now().Unix() / 60
	// alice: 3 answers on the chat door.
	for range 3 {
		require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", alice, chat))
	}
	// bob: rpm 2, and 4 requests on three doors: 2 answers, then 2
	// refusals.
	require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/messages", bob, messages))
	require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/responses", bob, `{"model":"gemini-3-flash","input":"hi"}`))
	require.Equal(t, http.StatusTooManyRequests, s.postJSON(t, "/v1/chat/completions", bob, chat))
	require.Equal(t, http.StatusTooManyRequests, s.postJSON(t, "/v1/messages", bob, messages))
	// carol: one request the upstream refuses.
	require.Equal(t, http.StatusBadGateway, s.postJSON(t, "/v1/chat/completions", carol, strings.Replace(chat, "hi", "please fail", 1)))
	require.Equal(t, minute, time.Now().Unix()/60, "the traffic in one minute")
	sent := time.Unix(minute*60, 0).UTC()
	// A request's usage and error are kept after its response is sent,
	// before its access line is written: wait for the 8 lines, then
	// write the ledger's batch.
	accessLines := regexp.MustCompile(`msg=request [^\n]*path=/v1/`)
	require.Eventually(t, func() bool { return len(accessLines.FindAllString(s.logs.String(), -1)) == 8 }, 10*time.Second, 50*time.Millisecond)
	s.ledger.Flush(context.Background())
	idAlice, idBob, idCarol := usage.KeyID(alice), usage.KeyID(bob), usage.KeyID(carol)
	secrets := []string{alice, bob, carol, admin, upstreamSecret}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1200, 760))...)
	defer cancel()
	dir := screenshotDir(t)

	run := func(t *testing.T, js bool) {
		browser, cancel := chromedp.NewContext(alloc)
		defer cancel()
		require.NoError(t, chromedp.Do(browser), "starting Chromium")
		ctx, cancel := context.WithTimeout(browser, 60*time.Second)
		defer cancel()
		suffix := ""
		if !js {
			suffix = "-nojs"
			require.NoError(t, chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
				_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
				return chromedp.Void{}, err
			}))
		}
		shot := func(name string, full bool) {
			take := chromedp.CaptureScreenshot() // the viewport, as PNG
			if full {
				take = chromedp.FullScreenshot(100) // quality 100: PNG
			}
			png, err := chromedp.Run(ctx, take)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+suffix+".png"), png, 0o644))
		}
		var pages []string // every page seen, for the secrets' check
		page := func() dom {
			h, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			require.NoError(t, err)
			pages = append(pages, h)
			return parseDOM(t, h)
		}
		cookies := func() []*network.Cookie {
			var out []*network.Cookie
			require.NoError(t, chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
				r, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{s.URL + "/console"}})
				out = r.Cookies
				return chromedp.Void{}, err
			}))
			return out
		}
		// onlySignIn: the form and nothing of the panels.
		onlySignIn := func(d dom, why string) {
			t.Helper()
			require.NotNil(t, d.byID("signin"), why)
			for _, id := range []string{"health", "traffic", "keys", "models", "doors", "errors", "config", "signout"} {
				assert.Nil(t, d.byID(id), "%s: #%s", why, id)
			}
			all := text(d.root)
			for _, id := range []string{idAlice, idBob, idCarol, "bob", "test-version"} {
				assert.NotContains(t, all, id, why)
			}
		}

		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console"), chromedp.WaitReady(chromedp.CSS("#signin"))))
		onlySignIn(page(), "signed out")
		shot("console-signin", false)

		// A wrong key: the form again, saying so.
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#admin_key"), "wrong"), chromedp.Click(chromedp.CSS("#signin-submit")),
			chromedp.WaitReady(chromedp.CSS("#signin-error"))))
		d := page()
		onlySignIn(d, "a wrong key")
		assert.Contains(t, text(d.byID("signin-error")), "not the gateway's ADMIN_KEY")
		assert.Empty(t, cookies(), "no session for a wrong key")

		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#admin_key"), admin), chromedp.Click(chromedp.CSS("#signin-submit")),
			chromedp.WaitReady(chromedp.CSS("#end")))) // the whole page, not the first panels only
		d = page()
		jar := cookies()
		require.Len(t, jar, 1, "the session cookie")
		session := jar[0]
		assert.True(t, session.HTTPOnly)
		assert.Equal(t, network.CookieSameSiteStrict, session.SameSite)
		secrets := append(secrets, session.Value)

		// About and health.
		about := text(d.byID("about"))
		assert.Contains(t, about, "Version test-version")
		assert.Contains(t, about, "back door web")
		assert.Equal(t, "yes", text(d.byID("ready")))
		health := map[string][]string{}
		for _, r := range rows(d, d.byID("health")) {
			health[r[0]] = r
		}
		assert.Equal(t, []string{"back door", "ok", "valid"}, health["back door"])
		require.Len(t, health["upstream"], 3)
		assert.Equal(t, "1 failures in a row", health["upstream"][1], "carol's refused request")
		assert.Contains(t, health["upstream"][2], "refused for key [redacted]")
		require.Len(t, health["models"], 3)
		assert.Contains(t, health["models"][2], "claude-sonnet-4.6")
		assert.Contains(t, health["models"][2], "gemini-3-flash")

		// Traffic: 6 answered requests (the 2 refused never reached a
		// door), 1 failed; 5 answers × (100 in, 10 out).
		totals := []string{"6", "1", "500", "50", "0"}
		assert.Equal(t, append([]string{"last 24 hours"}, totals...), cells(d.byID("total-24h")))
		assert.Equal(t, append([]string{"last 30 days"}, totals...), cells(d.byID("total-30d")))
		assert.Len(t, d.all("svg", "class", "chart"), 2, "the two charts")
		hourly := text(d.byID("traffic"))
		assert.Contains(t, hourly, sent.Format("15:00")+": 6 requests, 1 errors, 500 input, 50 output, 0 cached tokens", "the chart's bar of this hour")

		// By key, model and door; the 24 h and 30 days columns agree.
		// bob's use is of the minute and UTC day the page was drawn in.
		at, err := time.Parse("2006-01-02 15:04:05", regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`).FindString(about))
		require.NoError(t, err, about)
		bobLimits := "rpm 2/2 (100%) tokens_per_day 220/100,000 (0%)"
		if at.Unix()/60 != minute {
			bobLimits = "rpm 0/2 (0%) tokens_per_day 220/100,000 (0%)"
		}
		if at.YearDay() != sent.YearDay() {
			bobLimits = "rpm 0/2 (0%) tokens_per_day 0/100,000 (0%)"
		}
		twice := func(c ...string) []string { return append(c, c...) }
		for _, tc := range []struct {
			section, name, label string
			counts               []string
			limits               string
		}{
			{"keys", idAlice, " alice", twice("3", "0", "300", "30", "0"), "none"},
			{"keys", idBob, " bob", twice("2", "0", "200", "20", "0"), bobLimits},
			{"keys", idCarol, " carol", twice("1", "1", "0", "0", "0"), "concurrent 0/4 (0%)"},
			{"models", "claude-sonnet-4.6", "", twice("5", "1", "400", "40", "0"), "none"},
			{"models", "gemini-3-flash", "", twice("1", "0", "100", "10", "0"), "none"},
			{"doors", "openai", "", twice("4", "1", "300", "30", "0"), "none"},
			{"doors", "anthropic", "", twice("1", "0", "100", "10", "0"), "none"},
			{"doors", "responses", "", twice("1", "0", "100", "10", "0"), "none"},
		} {
			var got [][]string
			for _, r := range rows(d, d.byID(tc.section)) {
				if r[0] == tc.name+tc.label {
					got = append(got, r)
				}
			}
			want := append(append([]string{tc.name + tc.label}, tc.counts...), tc.limits)
			if assert.Len(t, got, 1, "%s: %s", tc.section, tc.name) {
				if tc.name == idBob && at.Second() == 59 {
					want[len(want)-1], got[0][len(got[0])-1] = "", "" // drawn as the minute turned
				}
				assert.Equal(t, want, got[0], "%s: %s", tc.section, tc.name)
			}
		}
		assert.Len(t, rows(d, d.byID("keys")), 3, "the three keys of the file")

		// The last errors, newest first: carol's, scrubbed, then bob's two
		// refusals, naming the limit and the key.
		errs := rows(d, d.byID("errors"))
		require.Len(t, errs, 3, "%v", errs)
		assert.Equal(t, []string{"502", "openai", "claude-sonnet-4.6"}, errs[0][1:4])
		assert.Contains(t, errs[0][5], "refused for key [redacted]")
		for i, door := range []string{"anthropic", "openai"} { // bob's 4th, then his 3rd request
			assert.Equal(t, []string{"429", door}, errs[1+i][1:3])
			assert.Regexp(t, `^key "bob" is over its limit of 2 requests per minute \(rpm\); retry after \d+s$`, errs[1+i][5])
		}

		// The configuration in force, secrets masked.
		config := map[string]string{}
		for _, r := range rows(d, d.byID("config")) {
			config[r[0]] = r[1]
		}
		assert.Equal(t, "•••• (set)", config["ADMIN_KEY"])
		assert.Equal(t, "•••• (set)", config["API_KEYS_FILE"])
		assert.Equal(t, "(not set)", config["API_KEY"])
		assert.Equal(t, "claude-sonnet-4.6,gemini-3-flash", config["MODELS"])
		assert.Equal(t, s.up.URL+"/api/chat", config["CURSOR_API_URL"])
		shot("console", true)
		shot("console-top", false)

		// Signed out: the form only, on the console's page too, and no cookie.
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitReady(chromedp.CSS("#signin"))))
		onlySignIn(page(), "after signing out")
		assert.Empty(t, cookies(), "the session cookie is gone")
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console"), chromedp.WaitReady(chromedp.CSS("#signin"))))
		onlySignIn(page(), "the console after signing out")
		shot("console-signed-out", false)

		for i, p := range pages {
			for _, secret := range secrets {
				assert.False(t, strings.Contains(p, secret), "page %d shows the secret %q", i, secret)
			}
		}
	}
	t.Run("javascript", func(t *testing.T) { run(t, true) })
	t.Run("no javascript", func(t *testing.T) { run(t, false) })

	// Wrong keys until the address has spent its tries: then the form
	// says to wait, and refuses the right key too.
	t.Run("too many wrong keys", func(t *testing.T) {
		browser, cancel := chromedp.NewContext(alloc)
		defer cancel()
		require.NoError(t, chromedp.Do(browser), "starting Chromium")
		ctx, cancel := context.WithTimeout(browser, 60*time.Second)
		defer cancel()
		try := func(key string) string {
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console"), chromedp.WaitReady(chromedp.CSS("#signin")),
				chromedp.SendKeys(chromedp.CSS("#admin_key"), key), chromedp.Click(chromedp.CSS("#signin-submit")),
				chromedp.WaitReady(chromedp.CSS("#signin-error"))))
			h, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			require.NoError(t, err)
			d := parseDOM(t, h)
			assert.Nil(t, d.byID("traffic"))
			return text(d.byID("signin-error"))
		}
		var msg string
		for i := 0; i <= console.MaxFailedSignIns && !strings.Contains(msg, "wait"); i++ {
			msg = try("wrong-" + strconv.Itoa(i))
		}
		assert.Regexp(t, `^Too many wrong keys from your address: wait \d+ seconds, then sign in again\.$`, msg)
		assert.Contains(t, try(admin), "Too many wrong keys", "the right key is refused too")
		shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "console-signin-limited.png"), shot, 0o644))
	})
	names, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	assert.Len(t, names, 9, "the screenshots")
	t.Logf("screenshots in %s", dir)
}
