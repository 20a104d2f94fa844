// Package config loads the gateway's settings from the environment (and an
// optional .env file) once at start, validates them, and hands them to the
// rest of the program as plain values. Nothing reads the environment after
// Load. It imports nothing of the project: package services turns these
// values into the gateway's parts.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/joho/godotenv"
)

// Seconds is a duration written in the environment as whole seconds ("60")
// or as a Go duration ("90s", "2m").
type Seconds time.Duration

// UnmarshalText implements encoding.TextUnmarshaler for caarlos0/env.
func (s *Seconds) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	if n, err := strconv.ParseFloat(text, 64); err == nil {
		*s = Seconds(time.Duration(n * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seconds nor a duration like 90s", text)
	}
	*s = Seconds(d)
	return nil
}

// Duration returns s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }

// Config is every setting of the gateway.
type Config struct {
	Host    string   `env:"HOST" envDefault:"127.0.0.1"`
	Port    int      `env:"PORT" envDefault:"8002"`
	APIKeys []string `env:"API_KEY" envSeparator:","`

	Models   []string          `env:"MODELS" envDefault:"claude-sonnet-4.6" envSeparator:","`
	ModelMap map[string]string `env:"MODEL_MAP" envSeparator:"," envKeyValSeparator:"="`

	CursorAPIURL string `env:"CURSOR_API_URL" envDefault:"https://cursor.com/api/chat"`
	// ScriptURL is the x-is-human challenge script; "auto" finds it on
	// ScriptPageURL. The default is the URL public reference gateways use.
	ScriptURL     string `env:"SCRIPT_URL" envDefault:"https://cursor.com/149e9513-01fa-4fb0-aad4-566afd725d1b/2d206a39-8ed7-437e-a3be-862e0f06eea3/a-4-a/c.js?i=0&v=3&h=cursor.com"`
	ScriptPageURL string `env:"SCRIPT_PAGE_URL" envDefault:"https://cursor.com/"`
	// BrowserProfile names the browser the gateway poses as (checked
	// against the known profiles when the gateway is wired).
	BrowserProfile string `env:"BROWSER_PROFILE" envDefault:"chrome-windows"`
	XIsHumanMode   string `env:"X_IS_HUMAN_MODE" envDefault:"script"`
	// XIsHuman is XIsHumanMode parsed by Load.
	XIsHuman     XIsHuman `env:"-"`
	XIsHumanTTL  Seconds  `env:"X_IS_HUMAN_TTL" envDefault:"300"`
	Timeout      Seconds  `env:"TIMEOUT" envDefault:"60"`
	Cookie       string   `env:"CURSOR_COOKIE"`
	Fingerprint  string   `env:"TLS_FINGERPRINT" envDefault:"chrome"`
	ProxyURL     string   `env:"PROXY_URL"`
	HTTPSProxy   string   `env:"HTTPS_PROXY"`
	MaxDuration  Seconds  `env:"MAX_DURATION" envDefault:"0"`
	PingInterval Seconds  `env:"PING_INTERVAL" envDefault:"15"`
	ModelCheck   Seconds  `env:"MODEL_CHECK_INTERVAL" envDefault:"0"`
	// UserAgent overrides the profile's User-Agent; empty: the profile's.
	UserAgent string `env:"USER_AGENT"`

	MaxInputLength   int   `env:"MAX_INPUT_LENGTH" envDefault:"200000"`
	MaxBodyBytes     int64 `env:"MAX_BODY_BYTES" envDefault:"33554432"`
	MaxToolCallBytes int   `env:"MAX_TOOL_CALL_BYTES" envDefault:"1048576"`
	KiloToolStrict   bool  `env:"KILO_TOOL_STRICT" envDefault:"false"`
	ToolLoopMax      int   `env:"TOOL_LOOP_MAX_REPEAT" envDefault:"2"`
	ExposeThinking   bool  `env:"EXPOSE_THINKING" envDefault:"false"`
	// RefusalPatterns replace the built-in refusal patterns when set.
	RefusalPatterns []string `env:"REFUSAL_PATTERNS" envSeparator:";;"`

	ShutdownTimeout Seconds `env:"SHUTDOWN_TIMEOUT" envDefault:"30"`
	LogLevel        string  `env:"LOG_LEVEL" envDefault:"info"`
}

// XIsHuman is how the x-is-human header is obtained.
type XIsHuman struct {
	Kind   string // script, random, static or off
	Static string // the value for static
}

// parseXIsHuman reads X_IS_HUMAN_MODE: script, random, static:<value> or off.
func parseXIsHuman(s string) (XIsHuman, error) {
	switch {
	case s == "" || s == "script":
		return XIsHuman{Kind: "script"}, nil
	case s == "random" || s == "off":
		return XIsHuman{Kind: s}, nil
	case strings.HasPrefix(s, "static:") && len(s) > len("static:"):
		return XIsHuman{Kind: "static", Static: strings.TrimPrefix(s, "static:")}, nil
	}
	return XIsHuman{}, fmt.Errorf("%q: use script, random, static:<value> or off", s)
}

// Load reads the process environment, overlaid on the .env file in the
// working directory when there is one (real environment variables win), and
// validates the result.
func Load() (*Config, error) {
	environ := map[string]string{}
	if dot, err := godotenv.Read(".env"); err == nil {
		environ = dot
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading .env: %w", err)
	}
	for k, v := range env.ToMap(os.Environ()) {
		environ[k] = v
	}
	return FromMap(environ)
}

// FromMap builds a Config from the given variables only. Tests use it to
// stay independent of the machine's environment.
func FromMap(environ map[string]string) (*Config, error) {
	var cfg Config
	if err := env.ParseWithOptions(&cfg, env.Options{Environment: environ}); err != nil {
		return nil, fmt.Errorf("configuration: %w", nameVariables(err, environ))
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return &cfg, nil
}

// nameVariables rewrites the parse errors of caarlos0/env, which name the
// Go field, to name the environment variable and its value instead.
func nameVariables(err error, environ map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := reflect.TypeFor[Config]().FieldByName(pe.Name); ok {
				key := f.Tag.Get("env")
				out = append(out, fmt.Errorf("%s=%q: %v", key, environ[key], pe.Err))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

func (c *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.Port < 1 || c.Port > 65535 {
		bad("PORT=%d: must be between 1 and 65535", c.Port)
	}
	if strings.TrimSpace(c.Host) == "" {
		bad("HOST is empty: use 127.0.0.1 for local use or 0.0.0.0 to listen on every interface")
	}
	keys := c.APIKeys[:0]
	for _, k := range c.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	c.APIKeys = keys
	c.BrowserProfile = strings.TrimSpace(c.BrowserProfile)
	for _, u := range []struct{ name, value string }{{"CURSOR_API_URL", c.CursorAPIURL}, {"SCRIPT_URL", c.ScriptURL}, {"SCRIPT_PAGE_URL", c.ScriptPageURL}} {
		if u.value == "" && u.name != "CURSOR_API_URL" {
			continue
		}
		if u.name == "SCRIPT_URL" && u.value == "auto" {
			if c.ScriptPageURL == "" {
				bad("SCRIPT_URL=auto needs SCRIPT_PAGE_URL, the page whose <script src> loads the challenge")
			}
			continue
		}
		p, err := url.Parse(u.value)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("%s=%q: must be an absolute http or https URL", u.name, u.value)
		}
	}
	if c.Timeout.Duration() <= 0 {
		bad("TIMEOUT=%s: must be a positive number of seconds", c.Timeout.Duration())
	}
	if c.ProxyURL == "" {
		c.ProxyURL = c.HTTPSProxy
	}
	if c.ProxyURL != "" {
		p, err := url.Parse(c.ProxyURL)
		if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "socks5") {
			bad("PROXY_URL=%q: use http://host:port, https://host:port or socks5://host:port", c.ProxyURL)
		}
	}
	if c.Fingerprint != "chrome" && c.Fingerprint != "off" {
		bad("TLS_FINGERPRINT=%q: use chrome or off", c.Fingerprint)
	}
	if c.MaxDuration.Duration() < 0 {
		bad("MAX_DURATION must not be negative (0 = no total limit)")
	}
	if d := c.PingInterval.Duration(); d < time.Second || d > time.Minute {
		bad("PING_INTERVAL=%s: must be between 1 and 60 seconds", d)
	}
	if d := c.ModelCheck.Duration(); d != 0 && d < time.Minute {
		bad("MODEL_CHECK_INTERVAL=%s: use 0 (off) or at least 60 seconds", d)
	}
	var err error
	if c.XIsHuman, err = parseXIsHuman(c.XIsHumanMode); err != nil {
		bad("X_IS_HUMAN_MODE=%v", err)
	}
	if c.XIsHumanTTL.Duration() < time.Second {
		bad("X_IS_HUMAN_TTL=%s: must be at least 1 second", c.XIsHumanTTL.Duration())
	}
	if c.ShutdownTimeout.Duration() < 0 {
		bad("SHUTDOWN_TIMEOUT must not be negative")
	}
	if c.MaxInputLength < 1000 {
		bad("MAX_INPUT_LENGTH=%d: must be at least 1000 characters", c.MaxInputLength)
	}
	if c.MaxBodyBytes < 1024 {
		bad("MAX_BODY_BYTES=%d: must be at least 1024", c.MaxBodyBytes)
	}
	if c.MaxToolCallBytes < 1024 {
		bad("MAX_TOOL_CALL_BYTES=%d: must be at least 1024", c.MaxToolCallBytes)
	}
	for _, p := range c.RefusalPatterns {
		if _, err := regexp.Compile(p); err != nil {
			bad("REFUSAL_PATTERNS: %q is not a valid regular expression: %v", p, err)
		}
	}
	if c.ToolLoopMax < 0 {
		bad("TOOL_LOOP_MAX_REPEAT=%d: use 0 (off) or a positive count", c.ToolLoopMax)
	}
	if _, err := c.SlogLevel(); err != nil {
		bad("LOG_LEVEL=%q: use debug, info, warn or error", c.LogLevel)
	}
	for k, v := range c.ModelMap {
		if strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
			bad("MODEL_MAP entry %q=%q: write public=upstream, e.g. claude-sonnet-4.6=anthropic/claude-sonnet-4.6", k, v)
		}
	}
	models := c.Models[:0]
	for _, m := range c.Models {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	c.Models = models
	if len(c.Models) == 0 {
		bad("MODELS lists no model: name at least one, e.g. MODELS=claude-sonnet-4.6")
	}
	return errors.Join(errs...)
}

// SlogLevel parses LOG_LEVEL.
func (c *Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.LogLevel))
	return l, err
}

// Addr is the listen address.
func (c *Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// Loopback reports whether the gateway listens on a loopback address only.
func (c *Config) Loopback() bool {
	if c.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(c.Host)
	return ip != nil && ip.IsLoopback()
}
