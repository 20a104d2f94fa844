package handlers

import (
	"context"
	"html"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// screenshotDir is where the console's screenshots go: CONSOLE_SCREENSHOTS
// when set (CI keeps them), else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

var (
	cellRE = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	tagRE  = regexp.MustCompile(`<[^>]+>`)
)

// cells are the texts of a table row's cells, from its HTML (read through
// the DOM, so that it works with JavaScript off too).
func cells(row string) []string {
	var out []string
	for _, m := range cellRE.FindAllStringSubmatch(row, -1) {
		out = append(out, strings.TrimSpace(html.UnescapeString(tagRE.ReplaceAllString(m[1], ""))))
	}
	return out
}

// TestConsoleInABrowser drives Chromium through the console: sign in by
// the form, read each panel's figures of the traffic the test sent, keep
// screenshots, sign out; then the same with JavaScript off.
func TestConsoleInABrowser(t *testing.T) {
	bin := chromium(t)
	const admin = "adm-browser-test-5f3a9c"
	keys := []string{"sk-alice-0001", "sk-bob-0002", "sk-carol-0003"}
	reply := func(n int, req cursortest.Request) cursortest.Response {
		if strings.Contains(string(req.Body), "please fail") {
			return cursortest.Response{Status: http.StatusBadRequest, Body: `{"error":"refused for key sk-upstream-77aa88bb99cc00dd"}`}
		}
		return cursortest.Text(&cursortest.Usage{Input: 100, Output: 10}, "ok")
	}
	s := newStack(t, map[string]string{"API_KEY": strings.Join(keys, ","), "ADMIN_KEY": admin}, reply)
	chat := `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}]}`
	for range 3 {
		require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", keys[0], chat))
	}
	require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/messages", keys[1], `{"model":"claude-sonnet-4.6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	require.Equal(t, http.StatusOK, s.postJSON(t, "/v1/responses", keys[1], `{"model":"gemini-3-flash","input":"hi"}`))
	require.NotEqual(t, http.StatusOK, s.postJSON(t, "/v1/chat/completions", keys[2], strings.Replace(chat, "hi", "please fail", 1)))
	s.ledger.Flush(context.Background())
	alice, bob, carol := usage.KeyID(keys[0]), usage.KeyID(keys[1]), usage.KeyID(keys[2])

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
		pageHTML := func() string {
			h, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			require.NoError(t, err)
			return h
		}
		row := func(page, marker string) []string {
			i := strings.Index(page, marker)
			if i < 0 {
				k := strings.Index(page, `id="keys"`)
				t.Fatalf("%s not on the page; its keys: %s", marker, page[k:min(len(page), k+3000)])
			}
			j := strings.Index(page[i:], "</tr>")
			return cells(page[i : i+j])
		}

		// Signed out: the form, and nothing else.
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console"), chromedp.WaitReady(chromedp.CSS("#signin"))))
		page := pageHTML()
		assert.NotContains(t, page, `id="traffic"`)
		assert.NotContains(t, page, alice)
		shot("console-signin", false)

		// A wrong key: the form again.
		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#admin_key"), "wrong"), chromedp.Click(chromedp.CSS("#signin-submit")),
			chromedp.WaitReady(chromedp.CSS("#signin-error"))))
		assert.NotContains(t, pageHTML(), `id="traffic"`)

		require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#admin_key"), admin), chromedp.Click(chromedp.CSS("#signin-submit")),
			chromedp.WaitReady(chromedp.CSS("#end")))) // the whole page, not the first panels only
		page = pageHTML()
		text := tagRE.ReplaceAllString(page, " ")
		for _, secret := range append(keys, admin, "sk-upstream-77aa88bb99cc00dd") {
			assert.False(t, strings.Contains(page, secret), "the page shows the secret %q", secret)
		}

		// Traffic: 6 requests, 1 failed; 5 answered × (100 in, 10 out).
		assert.Equal(t, []string{"last 24 hours", "6", "1", "500", "50", "0"}, row(page, `id="total-24h"`))
		assert.Equal(t, []string{"last 30 days", "6", "1", "500", "50", "0"}, row(page, `id="total-30d"`))
		assert.Contains(t, page, "<svg")
		// By key, model and door: the 24 h and 30 days columns agree.
		for marker, want := range map[string][]string{
			`data-name="` + alice + `"`:     {alice, "3", "0", "300", "30", "0", "3", "0", "300", "30", "0", "none"},
			`data-name="` + bob + `"`:       {bob, "2", "0", "200", "20", "0", "2", "0", "200", "20", "0", "none"},
			`data-name="` + carol + `"`:     {carol, "1", "1", "0", "0", "0", "1", "1", "0", "0", "0", "none"},
			`data-name="claude-sonnet-4.6"`: {"claude-sonnet-4.6", "5", "1", "400", "40", "0", "5", "1", "400", "40", "0", "none"},
			`data-name="gemini-3-flash"`:    {"gemini-3-flash", "1", "0", "100", "10", "0", "1", "0", "100", "10", "0", "none"},
			`data-name="openai"`:            {"openai", "4", "1", "300", "30", "0", "4", "1", "300", "30", "0", "none"},
			`data-name="anthropic"`:         {"anthropic", "1", "0", "100", "10", "0", "1", "0", "100", "10", "0", "none"},
			`data-name="responses"`:         {"responses", "1", "0", "100", "10", "0", "1", "0", "100", "10", "0", "none"},
		} {
			assert.Equal(t, want, row(page, marker), marker)
		}
		// Errors: the failed request, scrubbed.
		errRow := row(page, `<td class="n">502</td>`)
		require.Len(t, errRow, 5)
		assert.Equal(t, "openai", errRow[1])
		assert.Contains(t, errRow[4], "refused for key [redacted]")
		// Health, version, configuration.
		assert.Contains(t, text, "test-version")
		assert.Regexp(t, `Ready:\s+yes`, text)
		assert.Contains(t, row(page, "<code>API_KEY</code>"), "•••• (set)")
		assert.Contains(t, row(page, "<code>ADMIN_KEY</code>"), "•••• (set)")
		shot("console", true)
		shot("console-top", false)

		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitReady(chromedp.CSS("#signin"))))
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/console"), chromedp.WaitReady(chromedp.CSS("#signin"))))
		assert.NotContains(t, pageHTML(), `id="traffic"`, "signed out")
	}
	t.Run("javascript", func(t *testing.T) { run(t, true) })
	t.Run("no javascript", func(t *testing.T) { run(t, false) })
	t.Logf("screenshots in %s", dir)
}
