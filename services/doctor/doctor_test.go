package doctor

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services/cursortest"
)

// scripts serves challenge scripts: /ok.js answers, /throws.js throws,
// anything else is a 404.
func scripts(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.js":
			_, _ = w.Write([]byte(`window.V_C = [function () { return Promise.resolve({b: navigator.userAgent.length > 0}); }];`))
		case "/throws.js":
			_, _ = w.Write([]byte(`window.V_C = [function () { return Promise.reject(new Error("no human")); }];`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// upstream2026 is the fake web chat of 2026: one allowed model, and a
// page in front of the chat (the requests without a model). A chat
// answer that is a refusal (a checkpoint, a 403) comes before the
// model's check, as the bot checks stand in front of the chat.
func upstream2026(page cursortest.Response, chat cursortest.Response) func(int, cursortest.Request) cursortest.Response {
	gate := cursortest.NewModelGate("google/gemini-3-flash")
	answer := gate.Reply(cursortest.Always(chat))
	return func(n int, req cursortest.Request) cursortest.Response {
		switch {
		case req.Model == "":
			return page
		case chat.Status != 0:
			return chat
		}
		return answer(n, req)
	}
}

// behindCheckpoint puts the fake behind its Vercel checkpoint, refusing
// every solution when refuse is set.
func behindCheckpoint(refuse bool) func(*cursortest.Server) {
	return func(up *cursortest.Server) { up.EnableCheckpoint(cursortest.CheckpointOptions{}).Refuse(refuse) }
}

var (
	ok         = cursortest.Text(nil, "ok")
	checkpoint = cursortest.Response{Status: http.StatusTooManyRequests, Body: "<html><title>Vercel Security Checkpoint</title></html>"}
	forbidden  = cursortest.Response{Status: http.StatusForbidden, Body: `{"error":"Access denied"}`}
)

func newState(t *testing.T, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *State {
	t.Helper()
	return newStateWith(t, env, reply, nil)
}

// newStateWith is newState with the fake set up first by setup (nil: as
// it comes), e.g. behind its Vercel checkpoint.
func newStateWith(t *testing.T, env map[string]string, reply func(int, cursortest.Request) cursortest.Response, setup func(*cursortest.Server)) *State {
	t.Helper()
	up := cursortest.NewServer(t, reply)
	if setup != nil {
		setup(up)
	}
	vars := map[string]string{"CURSOR_API_URL": up.URL + "/api/chat", "CHECKPOINT_PAGE_URL": up.URL + "/", "TLS_FINGERPRINT": "off", "X_IS_HUMAN_MODE": "random"}
	maps.Copy(vars, env)
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	s, err := NewState(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return s
}

func TestSteps(t *testing.T) {
	js := scripts(t)
	withScript := func(path string) map[string]string {
		return map[string]string{"X_IS_HUMAN_MODE": "script", "SCRIPT_URL": js.URL + path}
	}
	cases := []struct {
		name    string
		step    Step
		before  []Step // steps whose findings this one uses
		env     map[string]string
		page    cursortest.Response
		chat    cursortest.Response
		want    Outcome
		detail  []string
		fix     string
		without string // never in the output (a secret)
		// anyModel: the upstream before 2026, which accepted any id
		anyModel bool
		// setup prepares the fake (its checkpoint)
		setup func(*cursortest.Server)
	}{
		{name: "checkpoint: none", step: Checkpoint(), page: ok, chat: ok, want: Pass, detail: []string{"the site asks for no checkpoint (direct)"}},
		{name: "checkpoint: passed", step: Checkpoint(), page: ok, chat: ok, setup: behindCheckpoint(false), want: Pass,
			detail: []string{"passed Vercel's security checkpoint in-process: direct in ", "cookie valid for 1h0m0s"}},
		{name: "checkpoint: refused", step: Checkpoint(), page: ok, chat: ok, setup: behindCheckpoint(true), want: Fail,
			detail: []string{"could not pass Vercel's security checkpoint through direct"}, fix: "CURSOR_COOKIE"},
		{name: "checkpoint: off, and there", step: Checkpoint(), env: map[string]string{"CHECKPOINT": "off"}, page: ok, chat: ok, setup: behindCheckpoint(false),
			want: Fail, detail: []string{"with Vercel's security checkpoint, and CHECKPOINT=off"}, fix: "CHECKPOINT=auto"},
		{name: "checkpoint: off, and none", step: Checkpoint(), env: map[string]string{"CHECKPOINT": "off"}, page: ok, chat: ok, want: Pass,
			detail: []string{"answered 200, no checkpoint page"}},

		{name: "cookie: not set", step: Cookie(), page: ok, chat: ok, want: Skip, detail: []string{"CURSOR_COOKIE is not set"}},
		{name: "cookie: the checkpoint's", step: Cookie(), env: map[string]string{"CURSOR_COOKIE": "_vcrcs=secretvalue; theme=dark"}, page: ok, chat: ok,
			want: Pass, detail: []string{"_vcrcs, theme", "sent with every upstream request"}, without: "secretvalue"},
		{name: "cookie: not the checkpoint's", step: Cookie(), env: map[string]string{"CURSOR_COOKIE": "theme=dark"}, page: ok, chat: ok,
			want: Warn, detail: []string{"theme"}, fix: "_vcrcs"},
		{name: "cookie: not a cookie", step: Cookie(), env: map[string]string{"CURSOR_COOKIE": "secretvalue"}, page: ok, chat: ok,
			want: Fail, detail: []string{"not a cookie header"}, fix: "name=value", without: "secretvalue"},

		{name: "script: fetched", step: Script(), env: withScript("/ok.js"), page: ok, chat: ok, want: Pass, detail: []string{"fetched", "/ok.js"}},
		{name: "script: gone", step: Script(), env: withScript("/gone.js"), page: ok, chat: ok, want: Warn, detail: []string{"could not fetch", "404"}, fix: "SCRIPT_URL"},
		{name: "script: another mode", step: Script(), page: ok, chat: ok, want: Skip, detail: []string{"X_IS_HUMAN_MODE=random"}},

		{name: "x-is-human: computed", step: XIsHuman(), before: []Step{Script()}, env: withScript("/ok.js"), page: ok, chat: ok,
			want: Pass, detail: []string{"computed a 10-byte value"}},
		{name: "x-is-human: the script fails", step: XIsHuman(), before: []Step{Script()}, env: withScript("/throws.js"), page: ok, chat: ok,
			want: Warn, detail: []string{"the script failed", "no human"}, fix: "cursor2api xih"},
		{name: "x-is-human: no script", step: XIsHuman(), before: []Step{Script()}, env: withScript("/gone.js"), page: ok, chat: ok,
			want: Skip, detail: []string{"no script was fetched"}},

		{name: "models: auto", step: Models(), page: ok, chat: ok, want: Pass,
			detail: []string{"accepts google/gemini-3-flash", "MODELS=auto publishes gemini-3-flash, gemini-3-flash-thinking"}},
		{name: "models: explicit and refused", step: Models(), env: map[string]string{"MODELS": "claude-sonnet-4.6"}, page: ok, chat: ok,
			want: Fail, detail: []string{"refuses every model of MODELS", "claude-sonnet-4.6"}, fix: "MODELS=auto"},
		{name: "models: explicit, partly refused", step: Models(), env: map[string]string{"MODELS": "gemini-3-flash,claude-sonnet-4.6"}, page: ok, chat: ok,
			want: Warn, detail: []string{"it refuses claude-sonnet-4.6"}, fix: "MODELS=auto"},
		{name: "models: any id accepted", step: Models(), page: ok, chat: ok, anyModel: true, want: Pass,
			detail: []string{"accepts any model id"}},
		{name: "models: checkpoint", step: Models(), page: ok, chat: checkpoint, want: Fail,
			detail: []string{"could not learn the upstream's models"}, fix: "CURSOR_COOKIE"},

		{name: "chat: answered", step: Chat(), before: []Step{Models()}, page: ok, chat: cursortest.Text(nil, "ok", " then more"), want: Pass,
			detail: []string{`google/gemini-3-flash answered "ok`}},
		{name: "chat: the fallback model without a model list", step: Chat(), page: ok, chat: ok, want: Pass,
			detail: []string{`google/gemini-3-flash answered "ok"`}},
		{name: "chat: forbidden", step: Chat(), page: ok, chat: forbidden, want: Fail, detail: []string{"did not answer", "403"}, fix: "CURSOR_COOKIE"},
		{name: "chat: explicit model refused", step: Chat(), env: map[string]string{"MODELS": "claude-sonnet-4.6"}, page: ok, chat: ok,
			want: Fail, detail: []string{"anthropic/claude-sonnet-4.6 did not answer"}, fix: "MODELS=auto"},
		{name: "chat: silent", step: Chat(), page: ok, chat: cursortest.Text(nil), want: Fail, detail: []string{"finished without a word"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reply := upstream2026(tc.page, tc.chat)
			if tc.anyModel {
				reply = cursortest.Always(tc.chat)
			}
			s := newStateWith(t, tc.env, reply, tc.setup)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, b := range tc.before {
				b.Run(ctx, s)
			}
			r := tc.step.Run(ctx, s)
			assert.Equal(t, tc.want, r.Outcome, "%s / fix: %s", r.Detail, r.Fix)
			for _, d := range tc.detail {
				assert.Contains(t, r.Detail, d)
			}
			if tc.fix != "" {
				assert.Contains(t, r.Fix, tc.fix)
			}
			if tc.without != "" {
				assert.NotContains(t, r.Detail+r.Fix, tc.without)
			}
		})
	}
}

func TestRun(t *testing.T) {
	js := scripts(t)
	cases := []struct {
		name   string
		setup  func(*cursortest.Server)
		want   int
		output []string
	}{
		{"every step passes", nil, 0, []string{`(?m)^\[ok\] +checkpoint +the site asks for no checkpoint`, `(?m)^\[skip\] +cookie `, `(?m)^\[ok\] +challenge script `,
			`(?m)^\[ok\] +x-is-human `, `(?m)^\[ok\] +models `, `(?m)^\[ok\] +chat `,
			`(?m)^\[ok\] +format drift +nothing the upstream sent was new`, `every step passed`}},
		{"the checkpoint is passed", behindCheckpoint(false), 0, []string{`(?m)^\[ok\] +checkpoint +passed Vercel's security checkpoint`,
			`(?m)^\[ok\] +models `, `(?m)^\[ok\] +chat `, `every step passed`}},
		{"the upstream's format drifts", func(up *cursortest.Server) {
			up.EnableCheckpoint(cursortest.CheckpointOptions{ExtraFields: []string{"1"}})
		}, 0, []string{`(?m)^\[ok\] +checkpoint +passed`, `(?m)^\[ok\] +chat `,
			`(?m)^\[warn\] +format drift +the upstream sent what this version does not know.*vercel checkpoint: challenge token with 5 payload fields \(1×\)`,
			`(?m)^ +fix: requests still work`}},
		{"the checkpoint stands in the way", behindCheckpoint(true), 1, []string{`(?m)^\[FAIL\] +checkpoint +could not pass`, `(?m)^ +fix: .*CURSOR_COOKIE`,
			`(?m)^\[FAIL\] +chat `, `a step failed`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStateWith(t, map[string]string{"X_IS_HUMAN_MODE": "script", "SCRIPT_URL": js.URL + "/ok.js"}, upstream2026(ok, ok), tc.setup)
			var out bytes.Buffer
			assert.Equal(t, tc.want, Run(context.Background(), &out, s, Steps(), 10*time.Second))
			for _, o := range tc.output {
				assert.Regexp(t, o, out.String())
			}
		})
	}
}

// A step that never returns on its own is bounded by the budget.
func TestRunBoundsEachStep(t *testing.T) {
	s := newState(t, nil, upstream2026(ok, ok))
	slow := Step{Name: "slow", Run: func(ctx context.Context, _ *State) Result {
		<-ctx.Done()
		return Result{Outcome: Fail, Detail: ctx.Err().Error()}
	}}
	var out bytes.Buffer
	start := time.Now()
	assert.Equal(t, 1, Run(context.Background(), &out, s, []Step{slow}, 50*time.Millisecond))
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Regexp(t, `(?m)^\[FAIL\] +slow `, out.String())
	assert.Contains(t, out.String(), "deadline exceeded")
}
