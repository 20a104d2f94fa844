// Package nativetest fakes the backend of Cursor's native agent API
// in-process, in its real Connect framing over HTTP/1.1 and h2c, with the
// REST calls beside it. A test scripts each turn and afterwards reads what
// the fake received. The behaviour follows what the official @cursor/sdk
// expects (sdk_test.go drives that client against this fake).
//
// A tool round trip:
//
//	srv := nativetest.NewServer(t, nativetest.Options{
//		Script: func(req *agentv1.AgentRunRequest) nativetest.Script {
//			return nativetest.Script{Steps: []nativetest.Step{
//				nativetest.ToolCalls(nativetest.Call{Tool: "lookup", Args: map[string]any{"city": "Paris"}}),
//				nativetest.TextFunc(func(rs []nativetest.ExecResult) string { return rs[len(rs)-1].Text }),
//			}, Usage: nativetest.Usage{Input: 10, Output: 3}}
//		},
//	})
//	// point the client at srv.URL with nativetest.DefaultAPIKey, run a turn, then:
//	run := srv.Runs()[0] // run.Request, run.Execs[1].Outcome == "mcp_result.success", …
//
// Like the real server, every run opens with a request_context exec and
// does KV blob traffic around the script (Options.NoRequestContext and
// Options.NoKV turn them off), then ends with turn_ended and a checkpoint.
package nativetest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"cursor2api/services/cursortest"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/aiserverv1/aiserverv1connect"
)

// Model is one entry of the account's model list.
type Model struct {
	ID, DisplayName, Description string
}

// DefaultModels is the model list when Options.Models is empty.
var DefaultModels = []Model{
	{ID: "composer-2", DisplayName: "Composer 2", Description: "Cursor's agent model"},
	{ID: "claude-4.5-sonnet", DisplayName: "Sonnet 4.5", Description: "Anthropic"},
}

// DefaultAPIKey is the API key accepted when Options.APIKeys is empty.
const DefaultAPIKey = "key_test_native"

// Options configures a fake backend. The zero value works: it accepts
// DefaultAPIKey, lists DefaultModels, leaves the SDK on RunSSE+BidiAppend
// and answers every turn with the text "ok".
type Options struct {
	// APIKeys are the accepted API keys (DefaultAPIKey when empty).
	APIKeys []string
	// Models is the account's model list (DefaultModels when empty). A run
	// for another model fails with invalid_argument, ERROR_BAD_MODEL_NAME.
	Models []Model
	// TokenTTL is the life of an access token (one hour when zero). A
	// Connect call with an expired or unknown token fails unauthenticated.
	TokenTTL time.Duration
	// HTTP2 is GetServerConfig's http2_config: HTTP2_CONFIG_FORCE_ALL_ENABLED
	// or HTTP2_CONFIG_FORCE_BIDI_ENABLED make the SDK use the bidi Run over
	// HTTP/2; the zero value leaves it on RunSSE plus BidiAppend.
	HTTP2 aiserverv1.Http2Config
	// MinClientVersion, when set, refuses every Connect call whose
	// x-cursor-client-version is lower (compared by its numbers, so
	// "sdk-1.0.32" < "1.1") with resource_exhausted "Update Required".
	MinClientVersion string
	// Script picks the turn to play for a run request; nil plays Text("ok").
	Script func(req *agentv1.AgentRunRequest) Script
	// NoRequestContext skips the request_context exec that opens a turn.
	NoRequestContext bool
	// NoKV skips the KV traffic of a turn: the set_blob of the turn's blob
	// before turn_ended, and the get_blob of each earlier turn the run's
	// conversation_state names.
	NoKV bool
	// Wait bounds every wait for the client (an exec's result and close, a
	// KV answer, a BidiAppend); 10 s when zero.
	Wait time.Duration
}

// HTTPCall is one unary or REST call the fake received.
type HTTPCall struct {
	Path   string
	Header http.Header
}

// Server is a running fake backend.
type Server struct {
	// URL is the base URL, the SDK's CURSOR_BACKEND_URL.
	URL string

	opts     Options
	srv      *httptest.Server
	mu       sync.Mutex
	calls    cursortest.Recorder[HTTPCall]
	runs     []*Run
	tokens   map[string]token // access token -> its key and expiry
	blobs    map[string][]byte
	queues   map[string]*appendQueue // RunSSE request id -> its appends
	done     map[string]bool         // request ids whose run has ended
	inFlight atomic.Int64
	conns    atomic.Int64 // connections accepted, HTTP/1.1 and h2c alike
}

type token struct {
	key string
	exp time.Time
}

// NewServer starts a fake backend, closed when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake backend outside a test (the benchmark program runs
// one); the caller closes it.
func Start(opts Options) *Server {
	if len(opts.APIKeys) == 0 {
		opts.APIKeys = []string{DefaultAPIKey}
	}
	if len(opts.Models) == 0 {
		opts.Models = DefaultModels
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Wait == 0 {
		opts.Wait = 10 * time.Second
	}
	s := &Server{
		opts:   opts,
		tokens: map[string]token{},
		blobs:  map[string][]byte{},
		queues: map[string]*appendQueue{},
		done:   map[string]bool{},
	}
	gate := connect.WithInterceptors(&gateInterceptor{s: s})
	mux := http.NewServeMux()
	mux.Handle(agentv1connect.NewAgentServiceHandler(&agentService{s: s}, gate))
	mux.Handle(aiserverv1connect.NewBidiServiceHandler(&bidiService{s: s}, gate))
	mux.Handle(aiserverv1connect.NewServerConfigServiceHandler(&configService{s: s}, gate))
	mux.Handle(aiserverv1connect.NewDashboardServiceHandler(&dashboardService{s: s}, gate))
	mux.HandleFunc("POST /auth/exchange_user_api_key", s.exchange)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /v1/me", s.me)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Analytics and other calls the fake does not serve: recorded, 404.
		http.NotFound(w, r)
	})
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		mux.ServeHTTP(w, r)
	}))
	// HTTP/1.1 for RunSSE and BidiAppend, h2c for the bidi Run.
	s.srv.Config.Protocols = new(http.Protocols)
	s.srv.Config.Protocols.SetHTTP1(true)
	s.srv.Config.Protocols.SetUnencryptedHTTP2(true)
	// StateNew comes for every accepted connection, before the server
	// tells an h2c preface from an HTTP/1.1 request.
	s.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Close stops the server and ends the runs in flight.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Calls returns the unary and REST calls received so far (runs are in Runs).
func (s *Server) Calls() []HTTPCall { return s.calls.All() }

// CallsTo returns the calls received for one path.
func (s *Server) CallsTo(path string) []HTTPCall {
	return s.calls.Where(func(c HTTPCall) bool { return c.Path == path })
}

// Runs returns a snapshot of the runs received so far, in order of arrival.
func (s *Server) Runs() []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Run, len(s.runs))
	for i, r := range s.runs {
		out[i] = r.snapshot()
	}
	return out
}

// InFlight is the number of runs whose handler is still running; a client
// that cancels a turn brings it back to zero.
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// Conns is how many TCP connections the fake has accepted so far, over
// HTTP/1.1 and h2c alike: a test tells a reused connection from a new
// dial by it.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Blob returns a blob the fake stored (the data of a turn it set).
func (s *Server) Blob(id []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[hex.EncodeToString(id)]
	return b, ok
}

func (s *Server) record(r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/Run") || strings.HasSuffix(r.URL.Path, "/RunSSE") {
		return // recorded as a Run
	}
	s.calls.Add(HTTPCall{Path: r.URL.Path, Header: r.Header.Clone()})
}

// exchange is POST /auth/exchange_user_api_key: Bearer API key → tokens.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	key, ok := bearer(r.Header)
	if !ok || !slices.Contains(s.opts.APIKeys, key) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "Invalid API key"}})
		return
	}
	exp := time.Now().Add(s.opts.TokenTTL)
	access := jwt(exp)
	s.mu.Lock()
	s.tokens[access] = token{key: key, exp: exp}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{
		"accessToken":  access,
		"refreshToken": jwt(exp.Add(24 * time.Hour)),
		"authId":       "auth0|user_test",
	})
}

// models is GET /v1/models; REST calls carry the raw API key.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if !s.restAuth(w, r) {
		return
	}
	items := make([]map[string]string, 0, len(s.opts.Models))
	for _, m := range s.opts.Models {
		items = append(items, map[string]string{"id": m.ID, "displayName": m.DisplayName, "description": m.Description})
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	if !s.restAuth(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiKeyName": "test", "userEmail": "test@example.com", "createdAt": "2026-01-01T00:00:00Z"})
}

func (s *Server) restAuth(w http.ResponseWriter, r *http.Request) bool {
	key, ok := bearer(r.Header)
	if !ok || !slices.Contains(s.opts.APIKeys, key) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized", "message": "Invalid API key"})
		return false
	}
	return true
}

func bearer(h http.Header) (string, bool) {
	v, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	return v, ok && v != ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// jwt makes an unsigned-looking JWT whose payload carries exp, which is
// all a client reads from it.
func jwt(exp time.Time) string {
	enc := base64.RawURLEncoding
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body, _ := json.Marshal(map[string]any{"sub": "auth0|user_test", "exp": exp.Unix(), "iat": time.Now().Unix(), "jti": hex.EncodeToString(nonce)})
	return head + "." + enc.EncodeToString(body) + "." + enc.EncodeToString(nonce)
}

// checkToken answers whether a Connect call's access token is live.
func (s *Server) checkToken(h http.Header) *connect.Error {
	tok, ok := bearer(h)
	if !ok {
		return ErrUnauthenticated()
	}
	s.mu.Lock()
	t, known := s.tokens[tok]
	s.mu.Unlock()
	if !known || time.Now().After(t.exp) {
		return ErrUnauthenticated()
	}
	return nil
}

// gateInterceptor applies the checks the live server makes before any
// Connect call: the client version gate, then the access token.
type gateInterceptor struct{ s *Server }

func (g *gateInterceptor) check(h http.Header) error {
	if min := g.s.opts.MinClientVersion; min != "" && versionLess(h.Get("x-cursor-client-version"), min) {
		return ErrUpdateRequired()
	}
	if err := g.s.checkToken(h); err != nil {
		return err
	}
	return nil
}

func (g *gateInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := g.check(req.Header()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (g *gateInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (g *gateInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if err := g.check(conn.RequestHeader()); err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// versionLess compares the dotted numbers of two client versions, ignoring
// a leading non-numeric prefix such as "sdk-".
func versionLess(v, min string) bool {
	a, b := versionNumbers(v), versionNumbers(min)
	for i := range max(len(a), len(b)) {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func versionNumbers(v string) []int {
	i := strings.IndexAny(v, "0123456789")
	if i < 0 {
		return nil
	}
	var out []int
	for _, p := range strings.Split(v[i:], ".") {
		n, err := strconv.Atoi(strings.TrimRightFunc(p, func(r rune) bool { return r < '0' || r > '9' }))
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}

// errorWithDetails builds a Connect error carrying aiserver.v1.ErrorDetails,
// the way the live server reports errors.
func errorWithDetails(code connect.Code, kind aiserverv1.ErrorDetails_Error, title, detail string) *connect.Error {
	err := connect.NewError(code, errors.New(title+": "+detail))
	d, derr := connect.NewErrorDetail(&aiserverv1.ErrorDetails{
		Error:   kind,
		Details: &aiserverv1.CustomErrorDetails{Title: title, Detail: detail},
	})
	if derr == nil {
		err.AddDetail(d)
	}
	return err
}

// ErrUnauthenticated is the error for a bad or expired access token.
func ErrUnauthenticated() *connect.Error {
	return errorWithDetails(connect.CodeUnauthenticated, aiserverv1.ErrorDetails_ERROR_NOT_LOGGED_IN,
		"Not logged in", "Your session has expired or the token is invalid.")
}

// ErrUpdateRequired is the version gate's error: resource_exhausted, but
// not a quota.
func ErrUpdateRequired() *connect.Error {
	return errorWithDetails(connect.CodeResourceExhausted, aiserverv1.ErrorDetails_ERROR_OUTDATED_CLIENT,
		"Update Required", "Your version of Cursor is no longer supported. Please update to the latest version.")
}

// ErrQuota is a usage-limit error.
func ErrQuota() *connect.Error {
	return errorWithDetails(connect.CodeResourceExhausted, aiserverv1.ErrorDetails_ERROR_PRO_USER_USAGE_LIMIT,
		"Usage limit reached", "You have reached your usage limit for this billing period.")
}

// ErrBadModel is the error for a model the account cannot use.
func ErrBadModel(model string) *connect.Error {
	return errorWithDetails(connect.CodeInvalidArgument, aiserverv1.ErrorDetails_ERROR_BAD_MODEL_NAME,
		"Invalid model", fmt.Sprintf("The model %q does not exist or you do not have access to it.", model))
}

// ErrorDetailsOf returns the aiserver.v1.ErrorDetails an error carries.
func ErrorDetailsOf(err error) (*aiserverv1.ErrorDetails, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil, false
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if ed, ok := v.(*aiserverv1.ErrorDetails); ok {
			return ed, true
		}
	}
	return nil, false
}

type configService struct {
	aiserverv1connect.UnimplementedServerConfigServiceHandler
	s *Server
}

func (c *configService) GetServerConfig(context.Context, *connect.Request[aiserverv1.GetServerConfigRequest]) (*connect.Response[aiserverv1.GetServerConfigResponse], error) {
	return connect.NewResponse(&aiserverv1.GetServerConfigResponse{Http2Config: c.s.opts.HTTP2}), nil
}

type dashboardService struct {
	aiserverv1connect.UnimplementedDashboardServiceHandler
	s *Server
}

func (d *dashboardService) GetUserPrivacyMode(context.Context, *connect.Request[aiserverv1.GetUserPrivacyModeRequest]) (*connect.Response[aiserverv1.GetUserPrivacyModeResponse], error) {
	return connect.NewResponse(&aiserverv1.GetUserPrivacyModeResponse{PrivacyMode: aiserverv1.PrivacyMode_PRIVACY_MODE_NO_STORAGE}), nil
}
