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
	"path"
	"reflect"
	"regexp"
	"slices"
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
	// APIKeysFile names client keys and gives them limits (YAML or
	// JSON; services/clientkeys), beside API_KEY's; reread on SIGHUP and
	// when it changes.
	APIKeysFile string `env:"API_KEYS_FILE"`
	// LimitsSlotLease is how long a concurrency slot counted in Redis
	// outlives its replica's last renewal (every third of it): a replica
	// that dies frees its slots within it.
	LimitsSlotLease Seconds `env:"LIMITS_SLOT_LEASE" envDefault:"30s"`

	// Models are the public models; "auto" (the default) publishes what
	// the web chat accepts, learned from it at start and refreshed.
	Models   []string          `env:"MODELS" envDefault:"auto" envSeparator:","`
	ModelMap map[string]string `env:"MODEL_MAP" envSeparator:"," envKeyValSeparator:"="`
	// ModelAliases are pattern=model entries, tried in order, mapping the
	// names clients send (dated ids, opus, haiku) to published models;
	// unpublished targets are skipped, and "default" is the first model.
	ModelAliases []string `env:"MODEL_ALIASES" envSeparator:"," envDefault:"claude-opus-*=claude-opus-4.6,claude-*-opus-*=claude-opus-4.6,claude-haiku-*=claude-haiku-4.5,claude-*-haiku-*=claude-haiku-4.5,claude-sonnet-4-5*=claude-sonnet-4.5,claude-*=claude-sonnet-4.6,claude-*=default,gpt-*=default,o[0-9]*=default,gemini-*=default,grok-*=default"`

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

	// MaxContinuations is how many times the web chat back door asks for
	// the rest of an answer the upstream cut at its output cap (0: never;
	// the answer then finishes "length").
	MaxContinuations int `env:"MAX_CONTINUATIONS" envDefault:"3"`
	// Checkpoint is "auto" (pass Vercel's security checkpoint in-process
	// and keep its cookie per egress) or "off" (only CURSOR_COOKIE).
	Checkpoint string `env:"CHECKPOINT" envDefault:"auto"`
	// CheckpointPageURL is fetched for a fresh challenge (empty:
	// CURSOR_API_URL's origin, the site the chat is on); CheckpointURL
	// receives the solution (empty: CURSOR_API_URL's origin +
	// /.well-known/vercel/security/request-challenge). Load fills both.
	CheckpointPageURL string `env:"CHECKPOINT_PAGE_URL"`
	CheckpointURL     string `env:"CHECKPOINT_URL"`

	MaxInputLength   int   `env:"MAX_INPUT_LENGTH" envDefault:"200000"`
	MaxBodyBytes     int64 `env:"MAX_BODY_BYTES" envDefault:"33554432"`
	MaxToolCallBytes int   `env:"MAX_TOOL_CALL_BYTES" envDefault:"1048576"`
	MaxAnswerBytes   int   `env:"MAX_ANSWER_BYTES" envDefault:"16777216"`
	// KiloToolStrict is auto, true or false.
	KiloToolStrict  string   `env:"KILO_TOOL_STRICT" envDefault:"auto"`
	StrictAgents    []string `env:"STRICT_AGENTS" envDefault:"roocode,kilocode,cline" envSeparator:","`
	TurnEndingTools []string `env:"TURN_ENDING_TOOLS" envDefault:"attempt_completion" envSeparator:","`
	StreamArgsAfter int      `env:"STREAM_ARGS_AFTER" envDefault:"2048"`
	ToolLoopMax     int      `env:"TOOL_LOOP_MAX_REPEAT" envDefault:"2"`
	ExposeThinking  bool     `env:"EXPOSE_THINKING" envDefault:"false"`
	// RefusalPatterns replace the built-in refusal patterns when set.
	RefusalPatterns []string `env:"REFUSAL_PATTERNS" envSeparator:";;"`

	// MCP: servers whose tools the gateway runs itself (services/mcp).
	// MCPServers is a JSON file's path or inline JSON ({"mcpServers": ...}).
	MCPServers        string   `env:"MCP_SERVERS"`
	MCPTools          string   `env:"MCP_TOOLS" envDefault:"always"`
	MCPAllowedTools   []string `env:"MCP_ALLOWED_TOOLS" envSeparator:","`
	MCPMaxRounds      int      `env:"MCP_MAX_ROUNDS" envDefault:"10"`
	MCPCallTimeout    Seconds  `env:"MCP_CALL_TIMEOUT" envDefault:"60"`
	MCPMaxResultBytes int      `env:"MCP_MAX_RESULT_BYTES" envDefault:"100000"`
	// MCPConnectTimeout bounds a server's handshake and tool listing
	// (for a request's servers: all of them together).
	MCPConnectTimeout Seconds `env:"MCP_CONNECT_TIMEOUT" envDefault:"30"`
	// MCPMaxResponseBytes caps what is read of one answer of an MCP
	// server over HTTP; MCPMaxTools the tools one server may offer;
	// MCPMaxRequestServers the servers one request may name.
	MCPMaxResponseBytes  int `env:"MCP_MAX_RESPONSE_BYTES" envDefault:"4194304"`
	MCPMaxTools          int `env:"MCP_MAX_TOOLS" envDefault:"200"`
	MCPMaxRequestServers int `env:"MCP_MAX_REQUEST_SERVERS" envDefault:"10"`
	// MCPRemoteHosts are the hosts a request's own MCP servers may be on.
	MCPRemoteHosts []string `env:"MCP_REMOTE_HOSTS" envSeparator:","`

	// ResponsesStoreMax, ResponsesStoreBytes and ResponsesStoreTTL bound
	// the in-memory store of responses that previous_response_id continues.
	ResponsesStoreMax   int     `env:"RESPONSES_STORE_MAX" envDefault:"1000"`
	ResponsesStoreBytes int64   `env:"RESPONSES_STORE_BYTES" envDefault:"268435456"`
	ResponsesStoreTTL   Seconds `env:"RESPONSES_STORE_TTL" envDefault:"3600"`
	// ResponsesWSIdle, ResponsesWSMaxTurns and ResponsesWSMaxBytes bound
	// a connection of the Responses WebSocket: its silence between turns,
	// its response.create messages, and the conversations it keeps.
	ResponsesWSIdle     Seconds `env:"RESPONSES_WS_IDLE_TIMEOUT" envDefault:"3600"`
	ResponsesWSMaxTurns int     `env:"RESPONSES_WS_MAX_TURNS" envDefault:"1000"`
	ResponsesWSMaxBytes int64   `env:"RESPONSES_WS_MAX_BYTES" envDefault:"67108864"`
	// StateURL picks the state store: empty, a file under StateDir;
	// redis:// or rediss://, a Redis shared by every replica; memory:,
	// this process's memory. StateDir empty: $XDG_STATE_HOME/cursor2api,
	// else ~/.local/state/cursor2api.
	StateURL string `env:"STATE_URL"`
	StateDir string `env:"STATE_DIR"`
	// StateConnectTimeout bounds the wait for a Redis STATE_URL at start.
	StateConnectTimeout Seconds `env:"STATE_CONNECT_TIMEOUT" envDefault:"30"`
	// StateSync is when the state file's log is synced to disk: second
	// (a second after a write; a power cut loses about the last second)
	// or always (before a write returns). A killed process loses nothing
	// either way.
	StateSync string `env:"STATE_SYNC" envDefault:"second"`
	// UsageRetention is how long the usage ledger keeps its records;
	// AdminKey guards the usage endpoint (empty: off).
	UsageRetention Seconds `env:"USAGE_RETENTION" envDefault:"7776000"`
	AdminKey       string  `env:"ADMIN_KEY"`
	// Backend is the back door: web (Cursor's web chat), agent (the
	// Cursor Agent CLI) or cursor (Cursor's native agent API).
	Backend string `env:"BACKEND" envDefault:"web"`
	// AgentBin is the Cursor Agent CLI to run on the agent backend.
	AgentBin          string  `env:"AGENT_BIN" envDefault:"agent"`
	AgentMaxProcs     int     `env:"AGENT_MAX_PROCS" envDefault:"4"`
	AgentQueueTimeout Seconds `env:"AGENT_QUEUE_TIMEOUT" envDefault:"30"`
	AgentModelsTTL    Seconds `env:"AGENT_MODELS_TTL" envDefault:"600"`
	// AgentWorkDir is where per-request workspaces are made ("": the
	// system's temporary directory).
	AgentWorkDir string `env:"AGENT_WORKDIR"`
	// CursorAPIKey authenticates the agent CLI (passed to it, never
	// logged) and, on the cursor backend, the native API: one key or
	// several separated by commas (CursorAPIKeys).
	CursorAPIKey string `env:"CURSOR_API_KEY"`

	// The cursor backend. CursorBackendURL replaces both Cursor hosts
	// (api2.cursor.sh, api.cursor.com), as the SDK's variable does. The
	// client version and type are what the gateway claims (Cursor gates old
	// versions). CursorTransport is auto (server's choice), http2 or sse.
	CursorBackendURL    string `env:"CURSOR_BACKEND_URL"`
	CursorClientVersion string `env:"CURSOR_CLIENT_VERSION" envDefault:"sdk-1.0.32"`
	CursorClientType    string `env:"CURSOR_CLIENT_TYPE" envDefault:"sdk"`
	CursorTransport     string `env:"CURSOR_TRANSPORT" envDefault:"auto"`
	// CursorModelsTTL is how often the account's model list is refreshed.
	CursorModelsTTL Seconds `env:"CURSOR_MODELS_TTL" envDefault:"600"`
	// CursorParkMax, CursorParkTTL and CursorParkBytes bound the turns
	// kept open at their tool calls, waiting for the client's results:
	// how many, for how long, and the memory of what they keep (the
	// conversation blobs the server stores with the gateway).
	CursorParkMax   int     `env:"CURSOR_PARK_MAX" envDefault:"256"`
	CursorParkTTL   Seconds `env:"CURSOR_PARK_TTL" envDefault:"300"`
	CursorParkBytes int64   `env:"CURSOR_PARK_BYTES" envDefault:"268435456"`
	// CompactionSecret derives the key that seals the summaries of the
	// Responses door's compaction items; it must match on every replica
	// (empty: derived from the deployment's other secrets, see
	// CompactionKey).
	CompactionSecret string `env:"COMPACTION_SECRET"`
	// Cursor Cloud Agents behind the Responses API (CLOUD_AGENTS=on, first
	// CURSOR_API_KEY). CloudPollInterval paces polling when a run's stream
	// fails. CloudIDSecret, if set, signs response ids instead of the keys;
	// it must match on every replica.
	CloudAgents       string  `env:"CLOUD_AGENTS" envDefault:"off"`
	CloudAPIURL       string  `env:"CLOUD_API_URL" envDefault:"https://api.cursor.com"`
	CloudMaxWait      Seconds `env:"CLOUD_MAX_WAIT" envDefault:"1800"`
	CloudPollInterval Seconds `env:"CLOUD_POLL_INTERVAL" envDefault:"5"`
	CloudIDSecret     string  `env:"CLOUD_ID_SECRET"`
	// CloudWebhookSecret, when set, turns on POST /v1/cloud/webhook for
	// Cursor's signed webhook deliveries.
	CloudWebhookSecret string `env:"CLOUD_WEBHOOK_SECRET"`
	// AliasesSet is true when MODEL_ALIASES was given rather than
	// defaulted; the cursor backend then adds no aliases of its own.
	AliasesSet bool `env:"-"`
	// AgentEnv is the environment the agent CLI runs with: CURSOR_API_KEY
	// and the basics a program needs (PATH, HOME, locale, XDG
	// directories), taken from the environment FromMap is given.
	AgentEnv []string `env:"-"`
	// ModelsSet is true when MODELS was given rather than defaulted; on
	// the agent backend it then restricts the CLI's model list.
	ModelsSet bool `env:"-"`

	ShutdownTimeout Seconds `env:"SHUTDOWN_TIMEOUT" envDefault:"30"`
	LogLevel        string  `env:"LOG_LEVEL" envDefault:"info"`

	// Limits against slow or hostile clients and cross-site requests. More
	// than MaxConnections wait in the kernel's backlog. AllowedHosts (empty:
	// any; the loopback names when HOST is loopback) guards against DNS
	// rebinding; AllowedOrigins are the browser origins allowed ("*": any).
	MaxConnections  int      `env:"MAX_CONNECTIONS" envDefault:"4096"`
	BodyReadTimeout Seconds  `env:"BODY_READ_TIMEOUT" envDefault:"30"`
	AllowedHosts    []string `env:"ALLOWED_HOSTS" envSeparator:","`
	AllowedOrigins  []string `env:"ALLOWED_ORIGINS" envSeparator:","`

	// LogFormat is text (logfmt-like) or json.
	LogFormat string `env:"LOG_FORMAT" envDefault:"text"`
	// TrustedProxies are the reverse proxies (addresses or CIDRs) whose
	// X-Forwarded-For / X-Real-IP name the client. Empty: trust none.
	TrustedProxies []string `env:"TRUSTED_PROXIES" envSeparator:","`
	// MetricsAddr, when set, serves /metrics on a listener of its own too.
	MetricsAddr string `env:"METRICS_ADDR"`
	// ProxyCooldown is how long an egress proxy rests after a failure
	// before it may be used again.
	ProxyCooldown Seconds `env:"PROXY_COOLDOWN" envDefault:"300"`
}

// ProxyURLs is PROXY_URL split into its comma-separated proxies.
func (c *Config) ProxyURLs() []string {
	var out []string
	for _, p := range strings.Split(c.ProxyURL, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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
	_, cfg.ModelsSet = environ["MODELS"]
	_, cfg.AliasesSet = environ["MODEL_ALIASES"]
	cfg.AgentEnv = agentEnv(environ)
	return &cfg, nil
}

// agentPassEnv are the variables of the gateway's environment the agent
// CLI gets: what any program needs to find itself, its home and its
// login. Nothing else of the gateway's (API_KEY, CURSOR_COOKIE, proxies)
// reaches the child.
var agentPassEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "CURSOR_API_KEY"}

func agentEnv(environ map[string]string) []string {
	var out []string
	for _, k := range agentPassEnv {
		if v, ok := environ[k]; ok && v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
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
	c.APIKeys = trimmed(c.APIKeys)
	c.BrowserProfile = strings.TrimSpace(c.BrowserProfile)
	c.validateCheckpoint(bad)
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
	for _, proxy := range c.ProxyURLs() {
		p, err := url.Parse(proxy)
		if err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "socks5") {
			bad("PROXY_URL: %q: use http://host:port, https://host:port or socks5://host:port, several separated by commas", redactProxy(proxy))
		}
	}
	if c.ProxyCooldown.Duration() <= 0 {
		bad("PROXY_COOLDOWN=%s: must be a positive number of seconds", c.ProxyCooldown.Duration())
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LOG_FORMAT=%q: use text or json", c.LogFormat)
	}
	proxies := c.TrustedProxies[:0]
	for _, p := range c.TrustedProxies {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		_, _, cidrErr := net.ParseCIDR(p)
		if net.ParseIP(p) == nil && cidrErr != nil {
			bad("TRUSTED_PROXIES: %q is neither an IP address nor a CIDR such as 10.0.0.0/8", p)
		}
		proxies = append(proxies, p)
	}
	c.TrustedProxies = proxies
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			bad("METRICS_ADDR=%q: use host:port, e.g. 127.0.0.1:9090", c.MetricsAddr)
		}
	}
	if c.Fingerprint != "chrome" && c.Fingerprint != "off" {
		bad("TLS_FINGERPRINT=%q: use chrome or off", c.Fingerprint)
	}
	if c.MaxDuration.Duration() < 0 {
		bad("MAX_DURATION must not be negative (0 = no total limit)")
	}
	if c.MaxContinuations < 0 || c.MaxContinuations > 20 {
		bad("MAX_CONTINUATIONS=%d: use 0 (never continue a cut answer) to 20", c.MaxContinuations)
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
	if c.ResponsesStoreMax < 0 {
		bad("RESPONSES_STORE_MAX=%d: use 0 (keep no responses) or a positive count", c.ResponsesStoreMax)
	}
	if c.ResponsesStoreBytes < 0 {
		bad("RESPONSES_STORE_BYTES=%d: use 0 (no cap) or a positive number of bytes", c.ResponsesStoreBytes)
	}
	if c.ResponsesStoreTTL.Duration() < time.Second {
		bad("RESPONSES_STORE_TTL=%s: must be at least 1 second", c.ResponsesStoreTTL.Duration())
	}
	if d := c.ResponsesWSIdle.Duration(); d < time.Second {
		bad("RESPONSES_WS_IDLE_TIMEOUT=%s: must be at least 1 second", d)
	}
	if c.ResponsesWSMaxTurns < 1 {
		bad("RESPONSES_WS_MAX_TURNS=%d: use a positive number of responses per connection", c.ResponsesWSMaxTurns)
	}
	if c.ResponsesWSMaxBytes < 1<<20 {
		bad("RESPONSES_WS_MAX_BYTES=%d: use at least 1048576 (1 MiB): an agent's conversation is kept whole", c.ResponsesWSMaxBytes)
	}
	c.StateURL, c.AdminKey = strings.TrimSpace(c.StateURL), strings.TrimSpace(c.AdminKey)
	if u := c.StateURL; u != "" && u != "memory:" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		// Only the scheme is quoted: the rest may hold a password.
		scheme, _, _ := strings.Cut(u, ":")
		if len(scheme) > 20 {
			scheme = scheme[:20]
		}
		bad("STATE_URL has the scheme %q: leave it empty (a file under STATE_DIR), or use memory: (no persistence) or a redis:// or rediss:// URL", scheme)
	}
	if c.StateSync = strings.TrimSpace(c.StateSync); c.StateSync != "second" && c.StateSync != "always" {
		v := c.StateSync
		if len(v) > 20 {
			v = v[:20] + "…"
		}
		bad("STATE_SYNC=%q: use second (sync the state file a second after a write, the default) or always (sync before each write returns)", v)
	}
	if c.StateConnectTimeout.Duration() < time.Second {
		bad("STATE_CONNECT_TIMEOUT=%s: wait at least 1 second for the state store at start", c.StateConnectTimeout.Duration())
	}
	if d := c.LimitsSlotLease.Duration(); d < time.Second || d > 10*time.Minute {
		bad("LIMITS_SLOT_LEASE=%s: use a lease from 1s to 10m (the default is 30s): a dead replica's concurrency slots come back within it, and each replica renews its slots every third of it", d)
	}
	if c.UsageRetention.Duration() < time.Hour {
		bad("USAGE_RETENTION=%s: keep usage records at least an hour (the default is 7776000, 90 days)", c.UsageRetention.Duration())
	}
	switch c.Backend {
	case "web", "agent", "cursor":
	default:
		bad("BACKEND=%q: use web (Cursor's web chat), agent (the Cursor Agent CLI) or cursor (Cursor's agent API with CURSOR_API_KEY)", c.Backend)
	}
	errs = append(errs, c.validateCursor()...)
	if c.CompactionSecret != "" && len(c.CompactionSecret) < 32 {
		bad("COMPACTION_SECRET is %d characters: use at least 32 random characters (it seals the summaries of compaction items), or leave it empty to derive one from API_KEY and the other secrets", len(c.CompactionSecret))
	}
	switch c.CloudAgents {
	case "off", "":
	case "on":
		if len(c.CursorAPIKeys()) == 0 {
			bad("CLOUD_AGENTS=on needs CURSOR_API_KEY (a Cursor API key from cursor.com/dashboard)")
		}
		if u, err := url.Parse(c.CloudAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("CLOUD_API_URL=%q: must be an absolute http or https URL", c.CloudAPIURL)
		}
		if c.CloudMaxWait.Duration() < time.Second {
			bad("CLOUD_MAX_WAIT=%s: must be at least 1 second", c.CloudMaxWait.Duration())
		}
		if c.CloudWebhookSecret != "" && len(c.CloudWebhookSecret) < 32 {
			bad("CLOUD_WEBHOOK_SECRET is %d characters: use at least 32 (the secret Cursor signs webhooks with)", len(c.CloudWebhookSecret))
		}
		if c.CloudPollInterval.Duration() < 100*time.Millisecond {
			bad("CLOUD_POLL_INTERVAL=%s: must be at least 0.1 second", c.CloudPollInterval.Duration())
		}
	default:
		bad("CLOUD_AGENTS=%q: use on (serve Cursor Cloud Agents as the cursor-cloud models of /v1/responses) or off", c.CloudAgents)
	}
	if strings.TrimSpace(c.AgentBin) == "" {
		bad("AGENT_BIN is empty: name the Cursor Agent CLI, e.g. agent or /home/me/.local/bin/agent")
	}
	if c.AgentMaxProcs < 1 {
		bad("AGENT_MAX_PROCS=%d: must be at least 1", c.AgentMaxProcs)
	}
	if c.AgentQueueTimeout.Duration() <= 0 {
		bad("AGENT_QUEUE_TIMEOUT=%s: must be a positive number of seconds", c.AgentQueueTimeout.Duration())
	}
	if c.AgentModelsTTL.Duration() < time.Second {
		bad("AGENT_MODELS_TTL=%s: must be at least 1 second", c.AgentModelsTTL.Duration())
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
	if c.MaxAnswerBytes < 1024 {
		bad("MAX_ANSWER_BYTES=%d: must be at least 1024", c.MaxAnswerBytes)
	}
	switch c.MCPTools {
	case "always", "when-no-client-tools", "off":
	default:
		bad("MCP_TOOLS=%q: must be always, when-no-client-tools or off", c.MCPTools)
	}
	if c.MCPMaxRounds < 1 {
		bad("MCP_MAX_ROUNDS=%d: must be at least 1", c.MCPMaxRounds)
	}
	if c.MCPCallTimeout.Duration() <= 0 {
		bad("MCP_CALL_TIMEOUT=%s: must be a positive number of seconds", c.MCPCallTimeout.Duration())
	}
	if c.MCPMaxResultBytes < 256 {
		bad("MCP_MAX_RESULT_BYTES=%d: must be at least 256", c.MCPMaxResultBytes)
	}
	if c.MCPConnectTimeout.Duration() <= 0 {
		bad("MCP_CONNECT_TIMEOUT=%s: must be a positive number of seconds", c.MCPConnectTimeout.Duration())
	}
	if c.MCPMaxResponseBytes < 65536 {
		bad("MCP_MAX_RESPONSE_BYTES=%d: must be at least 65536", c.MCPMaxResponseBytes)
	}
	if c.MCPMaxTools < 1 {
		bad("MCP_MAX_TOOLS=%d: must be at least 1", c.MCPMaxTools)
	}
	if c.MCPMaxRequestServers < 1 {
		bad("MCP_MAX_REQUEST_SERVERS=%d: must be at least 1", c.MCPMaxRequestServers)
	}
	for _, p := range c.RefusalPatterns {
		if _, err := regexp.Compile(p); err != nil {
			bad("REFUSAL_PATTERNS: %q is not a valid regular expression: %v", p, err)
		}
	}
	switch strings.ToLower(strings.TrimSpace(c.KiloToolStrict)) {
	case "auto", "":
		c.KiloToolStrict = "auto"
	case "true", "1", "on":
		c.KiloToolStrict = "true"
	case "false", "0", "off":
		c.KiloToolStrict = "false"
	default:
		bad("KILO_TOOL_STRICT=%q: use auto (strict for known agents), true or false", c.KiloToolStrict)
	}
	c.StrictAgents = trimmed(c.StrictAgents)
	c.TurnEndingTools = trimmed(c.TurnEndingTools)
	if c.StreamArgsAfter < 0 {
		bad("STREAM_ARGS_AFTER=%d: use 0 (stream at once) or a number of bytes", c.StreamArgsAfter)
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
	for _, a := range c.ModelAliases {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		pattern, target, ok := strings.Cut(a, "=")
		if !ok || strings.TrimSpace(pattern) == "" || strings.TrimSpace(target) == "" {
			bad("MODEL_ALIASES entry %q: write pattern=model, e.g. claude-*=claude-sonnet-4.6", a)
		} else if _, err := path.Match(strings.TrimSpace(pattern), ""); err != nil {
			bad("MODEL_ALIASES entry %q: the pattern is not a valid glob (use * and ?)", a)
		}
	}
	c.Models = trimmed(c.Models)
	if len(c.Models) == 0 {
		bad("MODELS lists no model: use auto (what the upstream accepts) or name at least one, e.g. MODELS=gemini-3-flash")
	}
	if c.Backend == "web" && len(c.Models) > 1 && slices.ContainsFunc(c.Models, isAuto) {
		bad("MODELS=%s: auto stands alone (the upstream's models); or list the models to publish without it", strings.Join(c.Models, ","))
	}
	errs = append(errs, c.validateLimits()...)
	return errors.Join(errs...)
}

// validateCursor checks the cursor backend's settings. A missing key is
// not an error here: the gateway starts, /ready says what is wrong, and
// requests get the error.
func (c *Config) validateCursor() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if u := strings.TrimSpace(c.CursorBackendURL); u != "" {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("CURSOR_BACKEND_URL=%q: must be an absolute http or https URL, e.g. https://api2.cursor.sh", u)
		}
		c.CursorBackendURL = strings.TrimRight(u, "/")
	}
	c.CursorTransport = strings.ToLower(strings.TrimSpace(c.CursorTransport))
	switch c.CursorTransport {
	case "auto", "http2", "sse":
	case "":
		c.CursorTransport = "auto"
	default:
		bad("CURSOR_TRANSPORT=%q: use auto (as Cursor's server config says), http2 or sse", c.CursorTransport)
	}
	if strings.TrimSpace(c.CursorClientVersion) == "" {
		bad("CURSOR_CLIENT_VERSION is empty: use a version Cursor accepts, e.g. sdk-1.0.32")
	}
	if strings.TrimSpace(c.CursorClientType) == "" {
		bad("CURSOR_CLIENT_TYPE is empty: use the client type matching CURSOR_CLIENT_VERSION, e.g. sdk")
	}
	if c.CursorModelsTTL.Duration() < time.Second {
		bad("CURSOR_MODELS_TTL=%s: must be at least 1 second", c.CursorModelsTTL.Duration())
	}
	if c.CursorParkMax < 0 {
		bad("CURSOR_PARK_MAX=%d: use 0 (never keep a turn open) or a positive count", c.CursorParkMax)
	}
	if c.CursorParkTTL.Duration() < time.Second {
		bad("CURSOR_PARK_TTL=%s: must be at least 1 second", c.CursorParkTTL.Duration())
	}
	if c.CursorParkBytes < 1<<20 {
		bad("CURSOR_PARK_BYTES=%d: must be at least 1048576 (1 MiB)", c.CursorParkBytes)
	}
	return errs
}

// CompactionKey is the secret compaction items are sealed with:
// COMPACTION_SECRET, or else the deployment's other secrets together, so
// that replicas and restarts agree without shared state (and changing
// API_KEY then retires the items sealed before).
func (c *Config) CompactionKey() string {
	if c.CompactionSecret != "" {
		return c.CompactionSecret
	}
	return "derived\x00" + strings.Join(c.APIKeys, ",") + "\x00" + c.CursorAPIKey + "\x00" + c.CloudIDSecret + "\x00" + c.AdminKey
}

// CloudOn reports whether Cursor Cloud Agents are served.
func (c *Config) CloudOn() bool { return c.CloudAgents == "on" }

// CursorAPIKeys is CURSOR_API_KEY split into its comma-separated keys,
// read as API_KEY's list is (trimmed).
func (c *Config) CursorAPIKeys() []string {
	return trimmed(strings.Split(c.CursorAPIKey, ","))
}

// validateLimits checks the limits block and fills in the loopback
// default of ALLOWED_HOSTS.
func (c *Config) validateLimits() []error {
	var errs []error
	if c.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("MAX_CONNECTIONS=%d: must be at least 1", c.MaxConnections))
	}
	if c.BodyReadTimeout.Duration() <= 0 {
		errs = append(errs, fmt.Errorf("BODY_READ_TIMEOUT=%s: must be a positive number of seconds", c.BodyReadTimeout.Duration()))
	}
	c.AllowedHosts = trimmed(c.AllowedHosts)
	if len(c.AllowedHosts) == 0 && c.Loopback() {
		c.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	c.AllowedOrigins = trimmed(c.AllowedOrigins)
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		if u, err := url.Parse(o); err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("ALLOWED_ORIGINS entry %q: write an origin like http://localhost:3000, or *", o))
		}
	}
	return errs
}

// trimmed returns the list's entries with white space trimmed, empty ones
// dropped.
func trimmed(list []string) []string {
	out := list[:0]
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ModelsAuto reports whether MODELS asks for the upstream's own models
// (MODELS=auto, the default): the web backend then learns them.
func (c *Config) ModelsAuto() bool { return len(c.Models) == 1 && isAuto(c.Models[0]) }

func isAuto(name string) bool { return strings.EqualFold(name, "auto") }

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

// redactProxy hides the password of a proxy URL in error messages.
func redactProxy(proxy string) string {
	if u, err := url.Parse(proxy); err == nil && u.User != nil {
		return u.Redacted()
	}
	return proxy
}

// validateCheckpoint checks CHECKPOINT and its URLs, and derives
// CHECKPOINT_URL from CURSOR_API_URL's origin when it is empty.
func (c *Config) validateCheckpoint(bad func(format string, args ...any)) {
	c.Checkpoint = strings.ToLower(strings.TrimSpace(c.Checkpoint))
	if c.Checkpoint != "auto" && c.Checkpoint != "off" {
		bad("CHECKPOINT=%q: must be auto (pass Vercel's security checkpoint) or off (only CURSOR_COOKIE)", c.Checkpoint)
		return
	}
	if p, err := url.Parse(c.CursorAPIURL); err == nil && p.Host != "" {
		origin := p.Scheme + "://" + p.Host
		if c.CheckpointURL == "" {
			c.CheckpointURL = origin + "/.well-known/vercel/security/request-challenge"
		}
		if c.CheckpointPageURL == "" {
			c.CheckpointPageURL = origin + "/"
		}
	}
	if c.Checkpoint == "off" {
		return
	}
	for _, u := range []struct{ name, value string }{{"CHECKPOINT_PAGE_URL", c.CheckpointPageURL}, {"CHECKPOINT_URL", c.CheckpointURL}} {
		if p, err := url.Parse(u.value); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			bad("%s=%q: must be an absolute http or https URL (or set CHECKPOINT=off)", u.name, u.value)
		}
	}
}
