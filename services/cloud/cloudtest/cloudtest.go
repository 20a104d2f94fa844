// Package cloudtest fakes Cursor's Cloud Agents API (/v1/agents, as the
// @cursor/sdk speaks it) in-process: agents and runs (409 agent_busy while
// one is active), a run's SSE stream resumable by Last-Event-ID, and errors
// as {"error":{"code","message"}}. Each run plays a Script chosen by its
// prompt; sdk_test.go drives the official SDK against this fake.
package cloudtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cursor2api/services/cursortest"
)

// DefaultAPIKey is the key the fake accepts unless Options.APIKey is set.
const DefaultAPIKey = "key_test_cloud"

// DefaultModels are the account's models unless Options.Models is set.
var DefaultModels = []string{"composer-2", "claude-4.5-sonnet"}

// DefaultRepos are the repositories the key can see unless Options.Repos
// is set.
var DefaultRepos = []string{"https://github.com/acme/widgets"}

// Step is one text delta of a run's agent message, sent after Delay.
type Step struct {
	Text  string
	Delay time.Duration
}

// Script is what a run does.
type Script struct {
	Steps []Step
	// Hold keeps the run RUNNING after its steps until it is cancelled or
	// the server closes: a long run.
	Hold bool
	// Status is the terminal status (FINISHED when empty); ERROR sends
	// Error as the run's error; any other string is sent as it is.
	Status string
	// Result is the run's result text (the steps joined when empty).
	Result string
	Error  string
	// Branch and PRURL are reported for each repository of the agent;
	// PRURL only when the agent was created with autoCreatePR.
	Branch, PRURL string
}

// DefaultScript answers by the prompt: "fail" errors, "long" holds until
// cancelled, "weird" ends in an unknown status, "slow" spaces its deltas;
// anything else finishes with a branch and (with autoCreatePR) a PR.
func DefaultScript(prompt string) Script {
	switch {
	case strings.Contains(prompt, "fail"):
		return Script{Steps: []Step{{Text: "Trying."}}, Status: "ERROR", Error: "the VM ran out of disk"}
	case strings.Contains(prompt, "long"):
		return Script{Steps: []Step{{Text: "Working"}, {Text: " on it."}}, Hold: true}
	case strings.Contains(prompt, "weird"):
		return Script{Steps: []Step{{Text: "Hmm."}}, Status: "PAUSED_FOR_REVIEW"}
	case strings.Contains(prompt, "slow"):
		return Script{Steps: []Step{{Text: "Fixed", Delay: 100 * time.Millisecond}, {Text: " the bug.", Delay: 100 * time.Millisecond}},
			Branch: "cursor/fix-bug", PRURL: "https://github.com/acme/widgets/pull/7"}
	}
	return Script{Steps: []Step{{Text: "Fixed"}, {Text: " the bug."}}, Branch: "cursor/fix-bug", PRURL: "https://github.com/acme/widgets/pull/7"}
}

// Options configures a fake. The zero value works.
type Options struct {
	APIKey string
	Models []string
	Repos  []string
	// Script picks a run's script by its prompt (DefaultScript when nil).
	Script func(prompt string) Script
	// Heartbeat is the interval of heartbeat events on an idle stream
	// (1s when zero).
	Heartbeat time.Duration
	// DropStreamAfter, when positive, cuts each run's first stream after
	// that many events, so that the client must resume by Last-Event-ID.
	DropStreamAfter int
	// StreamsFail makes every run stream answer 503, so that a client
	// must poll.
	StreamsFail bool
	// OmitResult ends run streams with done but no result event.
	OmitResult bool
}

// Server is a running fake.
type Server struct {
	URL  string
	opts Options
	srv  *httptest.Server
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	agents    map[string]*agent
	calls     cursortest.Recorder[Call]
	rateLimit int
}

// Call is one request the fake received.
type Call struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

type agent struct {
	ID           string
	Created      time.Time
	Repos        []repo
	AutoCreatePR bool
	Model        string
	Metadata     map[string]string
	Runs         []*run
}

type repo struct {
	URL         string `json:"url"`
	StartingRef string `json:"startingRef,omitempty"`
}

type run struct {
	ID, AgentID string
	Prompt      string
	Created     time.Time
	Updated     time.Time
	Status      string
	Result      string
	Error       string
	Git         []map[string]string
	events      []event
	changed     chan struct{} // closed and replaced on every new event
	cancel      chan struct{}
	cancelled   bool
	dropped     bool // the first stream was cut (DropStreamAfter)
}

type event struct {
	id   int
	name string
	data string
}

// NewServer starts a fake and closes it when the test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = DefaultAPIKey
	}
	if opts.Models == nil {
		opts.Models = DefaultModels
	}
	if opts.Repos == nil {
		opts.Repos = DefaultRepos
	}
	if opts.Script == nil {
		opts.Script = DefaultScript
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = time.Second
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{opts: opts, agents: map[string]*agent{}, ctx: ctx, stop: stop}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/agents", s.createAgent)
	mux.HandleFunc("GET /v1/agents/{agent}", s.getAgent)
	mux.HandleFunc("POST /v1/agents/{agent}/runs", s.createRun)
	mux.HandleFunc("GET /v1/agents/{agent}/runs", s.listRuns)
	mux.HandleFunc("GET /v1/agents/{agent}/runs/{run}", s.getRun)
	mux.HandleFunc("POST /v1/agents/{agent}/runs/{run}/cancel", s.cancelRun)
	mux.HandleFunc("GET /v1/agents/{agent}/runs/{run}/stream", s.stream)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /v1/me", s.me)
	mux.HandleFunc("GET /v1/repositories", s.repositories)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		// The SDK's privacy-mode lookup and analytics are not this API:
		// the SDK logs their failure and goes on.
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			writeError(w, http.StatusUnauthorized, "unauthorized", "invalid API key")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the runs, then the server.
func (s *Server) Close() {
	s.stop()
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.wg.Wait()
}

// RateLimit makes the next n creates (of agents or runs) answer 429.
func (s *Server) RateLimit(n int) {
	s.mu.Lock()
	s.rateLimit = n
	s.mu.Unlock()
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call { return s.calls.All() }

// CallsTo returns the requests whose method and path are given, as
// "POST /v1/agents".
func (s *Server) CallsTo(methodPath string) []Call {
	return s.calls.Where(func(c Call) bool { return c.Method+" "+c.Path == methodPath })
}

// RunStatus returns a run's status ("" when unknown).
func (s *Server) RunStatus(agentID, runID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.findLocked(agentID, runID); r != nil {
		return r.Status
	}
	return ""
}

// Prompts returns the prompts of an agent's runs in order.
func (s *Server) Prompts(agentID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[agentID]
	if a == nil {
		return nil
	}
	var out []string
	for _, r := range a.Runs {
		out = append(out, r.Prompt)
	}
	return out
}

func (s *Server) record(r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.calls.Add(Call{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
}

func (s *Server) findLocked(agentID, runID string) *run {
	a := s.agents[agentID]
	if a == nil {
		return nil
	}
	for _, r := range a.Runs {
		if r.ID == runID {
			return r
		}
	}
	return nil
}

// agentLocked returns the agent the request's path names, or answers 404
// and returns nil.
func (s *Server) agentLocked(w http.ResponseWriter, r *http.Request) *agent {
	a := s.agents[r.PathValue("agent")]
	if a == nil {
		writeError(w, http.StatusNotFound, "not_found", "agent not found")
	}
	return a
}

// runLocked returns the run the request's path names, or answers 404 and
// returns nil.
func (s *Server) runLocked(w http.ResponseWriter, r *http.Request) *run {
	rn := s.findLocked(r.PathValue("agent"), r.PathValue("run"))
	if rn == nil {
		writeError(w, http.StatusNotFound, "not_found", "run not found")
	}
	return rn
}

// writeError writes the API's error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return prefix + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

type prompt struct {
	Text   string            `json:"text"`
	Images []json.RawMessage `json:"images,omitempty"`
}

type createAgentBody struct {
	// AgentID is the id the client minted (the SDK does), or empty.
	AgentID      string               `json:"agentId"`
	Prompt       prompt               `json:"prompt"`
	Model        *struct{ ID string } `json:"model"`
	Repos        []repo               `json:"repos"`
	AutoCreatePR bool                 `json:"autoCreatePR"`
	Metadata     map[string]string    `json:"metadata"`
}

// takeRateLimit answers 429 when a rate limit is set.
func (s *Server) takeRateLimit(w http.ResponseWriter) bool {
	s.mu.Lock()
	limited := s.rateLimit > 0
	if limited {
		s.rateLimit--
	}
	s.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", "7")
		writeError(w, http.StatusTooManyRequests, "rate_limited", "too many requests; retry later")
	}
	return limited
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	if s.takeRateLimit(w) {
		return
	}
	var body createAgentBody
	if err := json.Unmarshal(readBody(r), &body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "invalid JSON: "+err.Error())
		return
	}
	if strings.TrimSpace(body.Prompt.Text) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "prompt.text is required")
		return
	}
	for _, rp := range body.Repos {
		if !slices.Contains(s.opts.Repos, rp.URL) {
			writeError(w, http.StatusForbidden, "repository_access_denied", fmt.Sprintf("repository %s is not accessible with this API key", rp.URL))
			return
		}
	}
	id := body.AgentID
	if id == "" {
		id = newID("bc-")
	}
	a := &agent{ID: id, Created: time.Now().UTC(), Repos: body.Repos, AutoCreatePR: body.AutoCreatePR, Metadata: body.Metadata}
	if body.Model != nil {
		a.Model = body.Model.ID
	}
	s.mu.Lock()
	if s.agents[a.ID] != nil {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "agent_id_conflict", "agent "+a.ID+" exists")
		return
	}
	s.agents[a.ID] = a
	rn := s.startRunLocked(a, body.Prompt.Text)
	out := map[string]any{"agent": s.agentJSONLocked(a), "run": runJSON(rn)}
	s.mu.Unlock()
	writeJSON(w, out)
}

// body reads the request's body (record kept a copy).
func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	return b
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	if s.takeRateLimit(w) {
		return
	}
	var body struct {
		Prompt prompt `json:"prompt"`
	}
	if err := json.Unmarshal(readBody(r), &body); err != nil || strings.TrimSpace(body.Prompt.Text) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "prompt.text is required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agentLocked(w, r)
	if a == nil {
		return
	}
	if last := a.Runs[len(a.Runs)-1]; !terminal(last.Status) {
		writeError(w, http.StatusConflict, "agent_busy", "agent "+a.ID+" already has an active run "+last.ID)
		return
	}
	rn := s.startRunLocked(a, body.Prompt.Text)
	writeJSON(w, map[string]any{"run": runJSON(rn)})
}

func terminal(status string) bool { return status != "CREATING" && status != "RUNNING" }

func (s *Server) agentJSONLocked(a *agent) map[string]any {
	status := "IDLE"
	last := a.Runs[len(a.Runs)-1]
	if !terminal(last.Status) {
		status = "ACTIVE"
	}
	return map[string]any{
		"id": a.ID, "status": status, "repos": a.Repos, "autoCreatePR": a.AutoCreatePR,
		"url": "https://cursor.com/agents?id=" + a.ID, "createdAt": a.Created.Format(time.RFC3339Nano),
		"updatedAt": last.Updated.Format(time.RFC3339Nano), "latestRunId": last.ID, "metadata": a.Metadata,
	}
}

func runJSON(rn *run) map[string]any {
	m := map[string]any{
		"id": rn.ID, "agentId": rn.AgentID, "status": rn.Status,
		"createdAt": rn.Created.Format(time.RFC3339Nano), "updatedAt": rn.Updated.Format(time.RFC3339Nano),
	}
	if terminal(rn.Status) {
		m["durationMs"] = rn.Updated.Sub(rn.Created).Milliseconds()
		m["result"] = rn.Result
		if rn.Error != "" {
			m["error"] = map[string]string{"code": "agent_error", "message": rn.Error}
		}
		if len(rn.Git) > 0 {
			m["git"] = map[string]any{"branches": rn.Git}
		}
	}
	return m
}

// startRunLocked creates a run and starts playing its script.
func (s *Server) startRunLocked(a *agent, text string) *run {
	now := time.Now().UTC()
	rn := &run{ID: newID("run-"), AgentID: a.ID, Prompt: text, Created: now, Updated: now, Status: "CREATING",
		changed: make(chan struct{}), cancel: make(chan struct{})}
	a.Runs = append(a.Runs, rn)
	sc := s.opts.Script(text)
	s.wg.Add(1)
	go s.play(a, rn, sc)
	return rn
}

// emitLocked appends an event to a run and wakes its streams.
func (rn *run) emitLocked(name string, data any) {
	b, _ := json.Marshal(data)
	rn.events = append(rn.events, event{id: len(rn.events) + 1, name: name, data: string(b)})
	rn.Updated = time.Now().UTC()
	close(rn.changed)
	rn.changed = make(chan struct{})
}

func (s *Server) play(a *agent, rn *run, sc Script) {
	defer s.wg.Done()
	wait := func(d time.Duration) bool {
		if d <= 0 {
			d = time.Millisecond
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-rn.cancel:
			return false
		case <-s.ctx.Done():
			return false
		}
	}
	if !wait(5 * time.Millisecond) {
		return
	}
	s.mu.Lock()
	if rn.cancelled {
		s.mu.Unlock()
		return
	}
	rn.Status = "RUNNING"
	rn.emitLocked("status", map[string]string{"status": "RUNNING"})
	s.mu.Unlock()
	var text strings.Builder
	for _, st := range sc.Steps {
		if !wait(st.Delay) {
			return
		}
		s.mu.Lock()
		if rn.cancelled {
			s.mu.Unlock()
			return
		}
		text.WriteString(st.Text)
		rn.emitLocked("interaction_update", map[string]string{"type": "text-delta", "text": st.Text})
		s.mu.Unlock()
	}
	if sc.Hold {
		select {
		case <-rn.cancel:
		case <-s.ctx.Done():
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rn.cancelled {
		return
	}
	rn.emitLocked("interaction_update", map[string]any{"type": "turn-ended", "usage": map[string]int{"inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 0, "cacheWriteTokens": 0}})
	rn.Status = sc.Status
	if rn.Status == "" {
		rn.Status = "FINISHED"
	}
	rn.Result = sc.Result
	if rn.Result == "" {
		rn.Result = text.String()
	}
	if rn.Status == "ERROR" {
		rn.Error = sc.Error
	}
	if sc.Branch != "" {
		for _, rp := range a.Repos {
			b := map[string]string{"repoUrl": rp.URL, "branch": sc.Branch}
			if a.AutoCreatePR && sc.PRURL != "" {
				b["prUrl"] = sc.PRURL
			}
			rn.Git = append(rn.Git, b)
		}
	}
	s.finishLocked(rn)
}

// finishLocked sends a terminal run's last events.
func (s *Server) finishLocked(rn *run) {
	rn.emitLocked("status", map[string]string{"status": rn.Status})
	if !s.opts.OmitResult {
		rn.emitLocked("result", runJSON(rn))
	}
	rn.emitLocked("done", map[string]any{})
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agentLocked(w, r)
	if a == nil {
		return
	}
	writeJSON(w, s.agentJSONLocked(a))
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agentLocked(w, r)
	if a == nil {
		return
	}
	items := []any{}
	for i := len(a.Runs) - 1; i >= 0; i-- {
		items = append(items, runJSON(a.Runs[i]))
	}
	writeJSON(w, map[string]any{"items": items})
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn := s.runLocked(w, r)
	if rn == nil {
		return
	}
	writeJSON(w, runJSON(rn))
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rn := s.runLocked(w, r)
	if rn == nil {
		return
	}
	if !terminal(rn.Status) {
		rn.cancelled = true
		close(rn.cancel)
		rn.Status = "CANCELLED"
		s.finishLocked(rn)
	}
	writeJSON(w, map[string]string{"id": rn.ID})
}

// stream is a run's events as server-sent events from after Last-Event-ID,
// then live until done, with heartbeats while idle.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rn := s.runLocked(w, r)
	s.mu.Unlock()
	if rn == nil {
		return
	}
	if s.opts.StreamsFail {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "streaming is down")
		return
	}
	next := 0
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.Atoi(last)
		s.mu.Lock()
		count := len(rn.events)
		s.mu.Unlock()
		if err != nil || n < 0 || n > count {
			writeError(w, http.StatusBadRequest, "invalid_last_event_id", "Last-Event-ID "+last+" names no event of this run")
			return
		}
		next = n
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	s.mu.Lock()
	drop := s.opts.DropStreamAfter > 0 && !rn.dropped
	rn.dropped = true
	s.mu.Unlock()
	sent := 0
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		s.mu.Lock()
		pending := slices.Clone(rn.events[next:])
		changed := rn.changed
		s.mu.Unlock()
		for _, ev := range pending {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.id, ev.name, ev.data); err != nil {
				return
			}
			next = ev.id
			if sent++; drop && sent == s.opts.DropStreamAfter {
				return
			}
			if ev.name == "done" {
				if fl != nil {
					fl.Flush()
				}
				return
			}
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-changed:
		case <-beat.C:
			if _, err := fmt.Fprint(w, "event: heartbeat\ndata: {}\n\n"); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	items := []map[string]any{}
	for _, m := range s.opts.Models {
		items = append(items, map[string]any{"id": m, "displayName": m})
	}
	writeJSON(w, map[string]any{"items": items})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"apiKeyName": "test key", "userEmail": "dev@example.com", "createdAt": "2026-01-01T00:00:00Z"})
}

func (s *Server) repositories(w http.ResponseWriter, r *http.Request) {
	items := []map[string]string{}
	for _, u := range s.opts.Repos {
		items = append(items, map[string]string{"url": u})
	}
	writeJSON(w, map[string]any{"items": items})
}
