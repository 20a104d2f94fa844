// Package console is the operator's read-only web console at /console:
// health, traffic, usage by key, model and door, the last errors and the
// configuration in force, rendered by the server (html/template, SVG
// charts, embedded CSS) for the holder of ADMIN_KEY.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/services/readiness"
	"cursor2api/services/usage"
	"cursor2api/utils"
)

//go:embed assets
var assets embed.FS

// Prefix is the console's path.
const Prefix = "/console"

// CookieName is the session cookie's name.
const CookieName = "c2a_console"

// SessionTTL is how long a sign-in lasts.
const SessionTTL = 12 * time.Hour

// KeyView is a client key as the console shows it: its fingerprint
// (usage.KeyID), and when the gateway knows them, its name and limits.
type KeyView struct {
	ID     string
	Name   string
	Limits []Limit
}

// Limit is one limit of a client key and how much of it is used.
type Limit struct {
	Name string // e.g. "rpm", "tokens_per_day", "concurrent"
	Used int64
	Max  int64
}

// Options configure the console.
type Options struct {
	// AdminKey signs in; the console is not served without it.
	AdminKey string
	Version  string
	Started  time.Time
	Backend  string
	// Usage is the ledger the traffic panels read (nil: no traffic).
	Usage *usage.Ledger
	// Ready reports the health panel (nil: nothing to report).
	Ready func(context.Context) readiness.Report
	// Errors are the last failed requests (nil: none kept).
	Errors *Errors
	// Settings are the configuration in force, secrets masked (see
	// SettingsOf).
	Settings []Setting
	// ClientKeys are the fingerprints of the configured client keys.
	ClientKeys []string
	// Keys, when set, names the client keys and tells their limits; it
	// is the hook for named keys (API_KEYS_FILE). Keys it lists that
	// the ledger has not seen are shown too.
	Keys   func() []KeyView
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Attempts counts the failed sign-ins, shared with the other doors
	// ADMIN_KEY opens (nil: the console's own).
	Attempts *Attempts
}

// Console serves the pages.
type Console struct {
	o       Options
	signKey []byte
	page    *template.Template
	signIn  *template.Template
	traffic *trafficCache
	// tries are the failed sign-ins by client address.
	tries *Attempts
}

// New returns the console of o.
func New(o Options) *Console {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Attempts == nil {
		o.Attempts = NewAttempts()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Started.IsZero() {
		o.Started = o.Now()
	}
	// The session key is derived from ADMIN_KEY, so that every replica
	// with the same key accepts the same sessions, and a new ADMIN_KEY
	// ends them all.
	mac := hmac.New(sha256.New, []byte(o.AdminKey))
	mac.Write([]byte("cursor2api console session v1"))
	funcs := template.FuncMap{"num": formatInt, "scrub": Scrub, "pct": percent, "ago": func(t time.Time) string { return o.Now().Sub(t).Round(time.Second).String() }}
	return &Console{
		o:       o,
		signKey: mac.Sum(nil),
		page:    template.Must(template.New("page.html").Funcs(funcs).ParseFS(assets, "assets/page.html")),
		signIn:  template.Must(template.New("signin.html").Funcs(funcs).ParseFS(assets, "assets/signin.html")),
		traffic: &trafficCache{hours: map[int64][]group{}, ids: map[string]int32{}},
		tries:   o.Attempts,
	}
}

// Routes adds the console's routes under g (which is at Prefix).
func (cs *Console) Routes(g gin.IRoutes) {
	g.Use(securityHeaders)
	g.GET("", cs.index)
	g.POST("/login", cs.login)
	g.POST("/logout", cs.logout)
	g.GET("/console.css", func(c *gin.Context) {
		b, _ := assets.ReadFile("assets/console.css")
		c.Header("Cache-Control", "private, max-age=300")
		c.Data(http.StatusOK, "text/css; charset=utf-8", b)
	})
}

// securityHeaders: a strict policy; the pages need no script at all.
func securityHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer Chromium sends
	// "Origin: null" on the forms' POSTs, which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	c.Next()
}

// token is a session: its expiry and an HMAC of it under the session key.
func (cs *Console) token(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	mac := hmac.New(sha256.New, cs.signKey)
	mac.Write([]byte(e))
	return e + "." + hex.EncodeToString(mac.Sum(nil))
}

func (cs *Console) validToken(tok string) bool {
	e, sig, ok := strings.Cut(tok, ".")
	if !ok || len(e) > 20 {
		return false
	}
	n, err := strconv.ParseInt(e, 10, 64)
	if err != nil || cs.o.Now().Unix() >= n {
		return false
	}
	want := cs.token(time.Unix(n, 0))
	return subtle.ConstantTimeCompare([]byte(want), []byte(e+"."+sig)) == 1
}

func (cs *Console) keyMatches(given string) bool {
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(cs.o.AdminKey)) == 1
}

// signedIn: a valid session cookie, or ADMIN_KEY as a bearer token, which
// is an attempt like the form's. It reports false when it has answered.
func (cs *Console) signedIn(c *gin.Context) bool {
	if scheme, tok, ok := strings.Cut(c.GetHeader("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		if cs.tooMany(c) {
			return false
		}
		if !cs.tryKey(c, strings.TrimSpace(tok)) {
			cs.showSignIn(c, http.StatusOK, "")
			return false
		}
		return true
	}
	tok, err := c.Cookie(CookieName)
	if err != nil || !cs.validToken(tok) {
		cs.showSignIn(c, http.StatusOK, "")
		return false
	}
	return true
}

// tooMany answers 429 when the client's address has spent its failed
// sign-ins; the right key is refused too, or guessing would go on.
func (cs *Console) tooMany(c *gin.Context) bool {
	wait := cs.tries.Wait(c.ClientIP(), cs.o.Now())
	if wait <= 0 {
		return false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	c.Header("Retry-After", strconv.Itoa(secs))
	cs.showSignIn(c, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong keys from your address: wait %d seconds, then sign in again.", secs))
	return true
}

// tryKey checks a sign-in's key, counting a wrong one against the
// client's address.
func (cs *Console) tryKey(c *gin.Context, given string) bool {
	ip := c.ClientIP()
	if cs.keyMatches(given) {
		cs.tries.Succeed(ip)
		return true
	}
	client := utils.Clip(ip, utils.QuoteLen)
	if cs.tries.Fail(ip, cs.o.Now()) {
		cs.o.Logger.Warn("console: too many wrong keys; sign-ins refused for a while", "client", client, "window", SignInWindow.String())
	} else {
		cs.o.Logger.Warn("console: a sign-in with a wrong key", "client", client)
	}
	return false
}

// sameOrigin refuses a form posted from another site: a browser sends
// Origin on every POST; SameSite=Strict keeps the cookie off it as well.
func sameOrigin(c *gin.Context) bool {
	origin := c.GetHeader("Origin")
	if origin == "" || origin == "null" {
		return origin == "" // tools without Origin; "null" is a sandboxed or privacy-hidden page
	}
	_, host, ok := strings.Cut(origin, "://")
	return ok && (strings.EqualFold(host, c.Request.Host) || strings.EqualFold(host, c.GetHeader("X-Forwarded-Host")))
}

func secure(c *gin.Context) bool {
	return c.Request.TLS != nil || strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https")
}

func (cs *Console) setCookie(c *gin.Context, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{Name: CookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(c), SameSite: http.SameSiteStrictMode})
}

func (cs *Console) showSignIn(c *gin.Context, status int, message string) {
	c.Status(status)
	c.Header("Content-Type", "text/html; charset=utf-8")
	if err := cs.signIn.Execute(c.Writer, map[string]string{"Message": message}); err != nil {
		cs.o.Logger.Warn("console: rendering the sign-in page", "error", err)
	}
}

func (cs *Console) login(c *gin.Context) {
	if !sameOrigin(c) {
		cs.showSignIn(c, http.StatusForbidden, "This form must be sent from the console's own page.")
		return
	}
	if cs.tooMany(c) {
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, 4096)
	if !cs.tryKey(c, c.PostForm("admin_key")) {
		cs.showSignIn(c, http.StatusUnauthorized, "That is not the gateway's ADMIN_KEY.")
		return
	}
	cs.setCookie(c, cs.token(cs.o.Now().Add(SessionTTL)), int(SessionTTL/time.Second))
	c.Redirect(http.StatusSeeOther, Prefix)
}

func (cs *Console) logout(c *gin.Context) {
	if !sameOrigin(c) {
		cs.showSignIn(c, http.StatusForbidden, "This form must be sent from the console's own page.")
		return
	}
	cs.setCookie(c, "", -1)
	c.Redirect(http.StatusSeeOther, Prefix)
}

func (cs *Console) index(c *gin.Context) {
	if !cs.signedIn(c) {
		return
	}
	v, err := cs.view(c.Request.Context())
	if err != nil {
		cs.o.Logger.Warn("console: reading the usage ledger", "error", err)
	}
	c.Status(http.StatusOK)
	c.Header("Content-Type", "text/html; charset=utf-8")
	if err := cs.page.Execute(c.Writer, v); err != nil {
		cs.o.Logger.Warn("console: rendering the page", "error", err)
	}
}
