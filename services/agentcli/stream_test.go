//go:build unix

package agentcli_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/agentcli"
	"cursor2api/services/agentcli/agentclitest"
	"cursor2api/services/upstream"
)

// fakeBin is the fake agent, built once for the package's tests.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeagent-")
	if err != nil {
		panic(err)
	}
	if fakeBin, err = agentclitest.BuildTo(dir); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is a CLI on the fake agent, with its home and workspace parent.
type fixture struct {
	cli  *agentcli.CLI
	home agentclitest.Home
	work string
	bin  string
}

func newFixture(t *testing.T, change func(*agentcli.Options)) *fixture {
	t.Helper()
	f := &fixture{home: agentclitest.NewHome(t), work: t.TempDir(), bin: fakeBin}
	opts := agentcli.Options{
		Bin: f.bin, Env: []string{"HOME=" + string(f.home), "CURSOR_API_KEY=key-test"},
		MaxProcs: 2, QueueTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second,
		WorkDir: f.work, ModelsTTL: time.Hour,
	}
	if change != nil {
		change(&opts)
	}
	f.cli = agentcli.New(opts)
	t.Cleanup(func() {
		f.home.WaitGone(t, 30*time.Second)
		assert.Zero(t, f.cli.Running(), "no process left running")
		entries, _ := os.ReadDir(f.work)
		assert.Empty(t, entries, "every workspace removed")
	})
	return f
}

func userTurns(text string) []models.Turn {
	return []models.Turn{{Role: models.RoleSystem, Text: "Be brief."}, {Role: models.RoleUser, Text: text}}
}

// collect streams a conversation and returns its text and reasoning.
func (f *fixture) collect(ctx context.Context, model, text string) (string, string, *models.Usage, error) {
	var out, reasoning strings.Builder
	usage, err := f.cli.Stream(ctx, upstream.Request{Model: model, Messages: userTurns(text), RequestID: "req-1"}, func(d upstream.Delta) error {
		if d.Kind == upstream.DeltaReasoning {
			reasoning.WriteString(d.Text)
		} else {
			out.WriteString(d.Text)
		}
		return nil
	})
	return out.String(), reasoning.String(), usage, err
}

func TestStreamRunsTheCLIAsATextModel(t *testing.T) {
	f := newFixture(t, nil)
	text, reasoning, usage, err := f.collect(context.Background(), "sonnet-4.5", "Say hello SCENARIO:hello")
	require.NoError(t, err)
	assert.Equal(t, "Hello, world!", text, "deltas once, the summary dropped, the last line drained without its newline")
	assert.Empty(t, reasoning)
	assert.Equal(t, &models.Usage{InputTokens: 120, OutputTokens: 7, TotalTokens: 127}, usage)

	calls := f.home.Calls(t)
	require.Len(t, calls, 1)
	c := calls[0]
	assert.Equal(t, []string{"-p", "--output-format", "stream-json", "--stream-partial-output", "--model", "sonnet-4.5",
		"--workspace", c.Cwd, "--force", "--trust", "--sandbox", "disabled", "--approve-mcps"}, c.Args)
	assert.Equal(t, "<system>\nBe brief.\n</system>\n\n<user>\nSay hello SCENARIO:hello\n</user>", c.Prompt, "the prompt on stdin")
	assert.ElementsMatch(t, []string{"HOME=" + string(f.home), "CURSOR_API_KEY=key-test"}, withoutPWD(c.Env), "only the given environment")
	assert.Equal(t, f.work, filepath.Dir(c.Cwd), "a fresh workspace under WorkDir")
	assert.JSONEq(t, string(agentcli.Permissions()), c.CLIJSON)
}

// withoutPWD drops PWD, which os/exec adds for the working directory.
func withoutPWD(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "PWD=") {
			out = append(out, e)
		}
	}
	return out
}

func TestStreamScenarios(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		scenario, text, reasoning string
	}{
		{"repeat", "haha!", ""},
		{"segments", "One. Two. Three.", ""},
		{"thinking", "Forty-two.", "Let me think."},
		{"slow", "slow", ""},
		{"late-crash", "done.", ""}, // a failure after a complete answer does not undo it
	} {
		text, reasoning, _, err := f.collect(context.Background(), "auto", "SCENARIO:"+tc.scenario)
		require.NoError(t, err, tc.scenario)
		assert.Equal(t, tc.text, text, tc.scenario)
		assert.Equal(t, tc.reasoning, reasoning, tc.scenario)
	}
}

func TestStreamErrors(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		model, scenario string
		status          int
		code, hint      string
	}{
		{"auto", "auth", http.StatusUnauthorized, "agent_not_logged_in", "CURSOR_API_KEY"},
		{"auto", "ratelimit", http.StatusTooManyRequests, "quota_exceeded", "usage limit"},
		{"missing-model", "hello", http.StatusBadRequest, "model_not_found", "auto, sonnet-4.5, sonnet-4.5-thinking, gpt-5"},
		{"auto", "crash", http.StatusBadGateway, "agent_failed", "something broke"},
		{"auto", "crash-midway", http.StatusBadGateway, "agent_failed", "connection reset"},
		{"auto", "stdout-error", http.StatusUnauthorized, "agent_not_logged_in", "Not logged in"}, // said on stdout, not as an event
		{"auto", "leaky", http.StatusBadGateway, "agent_failed", "request failed for key [CURSOR_API_KEY]"},
	} {
		_, _, _, err := f.collect(context.Background(), tc.model, "SCENARIO:"+tc.scenario)
		var e *models.Error
		require.ErrorAs(t, err, &e, tc.scenario)
		assert.Equal(t, tc.status, e.Status, "%s: %s", tc.scenario, e.Message)
		assert.Equal(t, tc.code, e.Code, tc.scenario)
		assert.Contains(t, e.Message, tc.hint, tc.scenario)
		assert.NotContains(t, e.Message, "key-test", "the API key never reaches a client")
	}
}

func TestStreamMissingBinary(t *testing.T) {
	f := newFixture(t, func(o *agentcli.Options) { o.Bin = filepath.Join(t.TempDir(), "no-agent") })
	_, _, _, err := f.collect(context.Background(), "auto", "hi")
	var e *models.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadGateway, e.Status)
	assert.Equal(t, "agent_not_found", e.Code)
	assert.Contains(t, e.Message, "AGENT_BIN")
}

func TestStreamStopsWhenTheCallerStops(t *testing.T) {
	f := newFixture(t, nil)
	stop := errors.New("turn ended")
	var got string
	_, err := f.cli.Stream(context.Background(), upstream.Request{Model: "auto", Messages: userTurns("SCENARIO:hang")}, func(d upstream.Delta) error {
		got += d.Text
		return stop
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, "Thinking about it", got)
	// The cleanup checks that the hanging process and its grandchild are gone.
}

func TestStreamClientGone(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := f.cli.Stream(ctx, upstream.Request{Model: "auto", Messages: userTurns("SCENARIO:hang")}, func(d upstream.Delta) error {
		cancel() // the client leaves after the first delta
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestStreamIdleTimeout(t *testing.T) {
	f := newFixture(t, func(o *agentcli.Options) { o.IdleTimeout = 300 * time.Millisecond })
	_, _, _, err := f.collect(context.Background(), "auto", "SCENARIO:silent")
	var e *models.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusGatewayTimeout, e.Status)
	assert.Contains(t, e.Message, "TIMEOUT")
}

func TestStreamDoesNotWaitForALingeringCLI(t *testing.T) {
	// TIMEOUT is long; the grace after the result is what ends the wait.
	f := newFixture(t, func(o *agentcli.Options) { o.IdleTimeout = time.Hour })
	text, _, usage, err := f.collect(context.Background(), "auto", "SCENARIO:linger")
	require.NoError(t, err, "a complete answer, however the CLI ends")
	assert.Equal(t, "bye.", text)
	assert.Equal(t, 7, usage.TotalTokens)
}

func TestStreamQueueIsBounded(t *testing.T) {
	f := newFixture(t, func(o *agentcli.Options) { o.MaxProcs = 1; o.QueueTimeout = 200 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := f.cli.Stream(ctx, upstream.Request{Model: "auto", Messages: userTurns("SCENARIO:hang")}, func(upstream.Delta) error {
			once.Do(func() { close(started) })
			return nil
		})
		done <- err
	}()
	<-started
	_, _, _, err := f.collect(context.Background(), "auto", "SCENARIO:hello")
	var e *models.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusTooManyRequests, e.Status)
	assert.Equal(t, 1, e.RetryAfter)
	assert.Contains(t, e.Message, "AGENT_MAX_PROCS")
	assert.Equal(t, 1, f.cli.Running())
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)

	text, _, _, err := f.collect(context.Background(), "auto", "SCENARIO:hello")
	require.NoError(t, err, "the slot is free again")
	assert.Equal(t, "Hello, world!", text)
}

func TestModelsAndReadiness(t *testing.T) {
	f := newFixture(t, nil)
	ids, err := f.cli.ListModels(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"auto", "sonnet-4.5", "sonnet-4.5-thinking", "gpt-5"}, ids)
	_, err = f.cli.ListModels(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, f.home.ModelsCalls(), "the list is cached")

	cat, err := f.cli.Catalog(context.Background(), []string{"gpt-5"})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpt-5", "gpt-5-thinking"}, cat.Names())
	_, err = f.cli.Catalog(context.Background(), []string{"claude-sonnet-4.6"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "auto, sonnet-4.5")

	r, err := f.cli.Ready(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "2026.11.20-fake", r.Version)
	assert.Equal(t, f.bin, r.Bin)
	assert.Contains(t, r.Status, "Logged in")

	out := newFixture(t, nil)
	out.home.SetLoggedOut(t)
	_, err = out.cli.Ready(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CURSOR_API_KEY")
}

func TestWatchModelsRefreshesTheCatalog(t *testing.T) {
	f := newFixture(t, func(o *agentcli.Options) { o.ModelsTTL = time.Millisecond })
	cat, err := f.cli.Catalog(context.Background(), nil)
	require.NoError(t, err)
	f.home.SetModels(t, "opus-4.6 - Claude Opus 4.6\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.cli.WatchModels(ctx, cat, nil, 10*time.Millisecond); close(done) }()
	require.Eventually(t, func() bool { return len(cat.Names()) == 2 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"opus-4.6", "opus-4.6-thinking"}, cat.Names())
	cancel()
	<-done
}
