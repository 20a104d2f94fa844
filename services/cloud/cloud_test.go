package cloud_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/models"
	"cursor2api/services/cloud"
	"cursor2api/services/cloud/cloudtest"
	"cursor2api/utils"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestIDs(t *testing.T) {
	ids := cloud.NewIDs("secret")
	ref := cloud.Ref{AgentID: "bc-1", RunID: "run-2", Model: "cursor-cloud/composer-2", Created: 1700000000}
	id := ids.Encode(ref)
	assert.True(t, cloud.IsID(id))
	got, ok := ids.Decode(id, "")
	require.True(t, ok)
	assert.Equal(t, ref, got)

	follow := cloud.Ref{AgentID: "bc-1", RunID: "run-3", Model: "cursor-cloud", Created: 1700000100, PrevRunID: "run-2", PrevModel: ref.Model, PrevCreated: ref.Created}
	fid := ids.Encode(follow)
	got, ok = ids.Decode(fid, "")
	require.True(t, ok)
	assert.Equal(t, follow, got)
	prev, ok := got.Prev()
	require.True(t, ok)
	assert.Equal(t, id, ids.Encode(prev), "the previous response's id, rebuilt")
	_, ok = ref.Prev()
	assert.False(t, ok)

	_, ok = cloud.NewIDs("other secret").Decode(id, "")
	assert.False(t, ok, "another deployment's id")
	payload, mac, _ := strings.Cut(strings.TrimPrefix(id, cloud.IDPrefix), ".")
	for name, bad := range map[string]string{
		"empty":         "",
		"no prefix":     "resp_" + payload + "." + mac,
		"no mac":        cloud.IDPrefix + payload,
		"short mac":     cloud.IDPrefix + payload + "." + mac[:10],
		"other payload": cloud.IDPrefix + "YmMtMQByd24tMgB4ADE" + "." + mac,
		"not base64":    cloud.IDPrefix + "!!." + mac,
		"huge":          cloud.IDPrefix + strings.Repeat("A", 2000) + "." + mac,
	} {
		_, ok := ids.Decode(bad, "")
		assert.False(t, ok, name)
	}
}

// TestIDsOwners: an id decodes for the client key that launched its run
// only, and its follow-ups' ids and their previous ids stay that key's.
func TestIDsOwners(t *testing.T) {
	ids := cloud.NewIDs("secret")
	a := cloud.Ref{AgentID: "bc-1", RunID: "run-2", Model: "cursor-cloud", Created: 1700000000, Owner: "key_aaaaaaaa"}
	id := ids.Encode(a)
	for _, owner := range []string{"key_bbbbbbbb", "", "key_aaaaaaa", "key_aaaaaaaa\x00"} {
		_, ok := ids.Decode(id, owner)
		assert.False(t, ok, "decoded for %q", owner)
	}
	got, ok := ids.Decode(id, "key_aaaaaaaa")
	require.True(t, ok)
	assert.Equal(t, a, got)

	open := a
	open.Owner = ""
	_, ok = ids.Decode(ids.Encode(open), "key_aaaaaaaa")
	assert.False(t, ok, "an id of no owner (auth off) is no key's")
	assert.NotEqual(t, id, ids.Encode(open), "the owner is in the MAC")

	follow := cloud.Ref{AgentID: "bc-1", RunID: "run-3", Model: "cursor-cloud", Created: 1700000100, PrevRunID: "run-2", PrevModel: a.Model, PrevCreated: a.Created, Owner: a.Owner}
	got, ok = ids.Decode(ids.Encode(follow), "key_aaaaaaaa")
	require.True(t, ok)
	prev, ok := got.Prev()
	require.True(t, ok)
	assert.Equal(t, id, ids.Encode(prev), "the previous id is the owner's")
}

func TestUpstreamModel(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		ok          bool
	}{
		{"cursor-cloud", "", true},
		{"cursor-cloud/composer-2", "composer-2", true},
		{"cursor-cloud/", "", false},
		{"cursor-cloudy", "", false},
		{"composer-2", "", false},
	} {
		m, ok := cloud.UpstreamModel(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.model, m, tc.name)
	}
}

func TestClientAgainstFake(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{DropStreamAfter: 2})
	c := cloud.NewClient(fake.URL, cloudtest.DefaultAPIKey, nil)
	ctx := context.Background()
	agent, run, err := c.CreateAgent(ctx, &cloud.CreateAgentRequest{Prompt: cloud.Prompt{Text: "fix it slowly"},
		Repos: []cloud.Repo{{URL: cloudtest.DefaultRepos[0]}}, AutoCreatePR: true})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(agent.ID, "bc-"))
	assert.Equal(t, cloud.StatusCreating, run.Status)

	// The first stream is cut after two events: resumed from the last id.
	var names []string
	last := ""
	err = c.StreamRun(ctx, agent.ID, run.ID, "", func(ev cloud.Event) error {
		names, last = append(names, ev.Name), ev.ID
		return nil
	})
	require.ErrorIs(t, err, cloud.ErrStreamEnded)
	assert.Equal(t, "2", last)
	require.NoError(t, c.StreamRun(ctx, agent.ID, run.ID, last, func(ev cloud.Event) error {
		if ev.Name != "heartbeat" {
			names = append(names, ev.Name)
		}
		return nil
	}))
	assert.Equal(t, []string{"status", "interaction_update", "interaction_update", "interaction_update", "status", "result", "done"}, names)

	got, err := c.GetRun(ctx, agent.ID, run.ID)
	require.NoError(t, err)
	assert.Equal(t, cloud.StatusFinished, got.Status)
	assert.Equal(t, "Fixed the bug.", got.Result)
	require.NotNil(t, got.Git)
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", got.Git.Branches[0].PRURL)

	ms, err := c.Models(ctx)
	require.NoError(t, err)
	assert.Equal(t, cloudtest.DefaultModels, ms)

	// Errors become the gateway's.
	_, err = c.GetRun(ctx, agent.ID, "run-missing")
	assertKind(t, err, http.StatusNotFound, models.KindNotFound)
	fake.RateLimit(1)
	_, err = c.CreateRun(ctx, agent.ID, cloud.Prompt{Text: "again"}, nil)
	e := assertKind(t, err, http.StatusTooManyRequests, models.KindRateLimit)
	assert.Equal(t, 7, e.RetryAfter)
	_, _, err = cloud.NewClient(fake.URL, "wrong key", nil).CreateAgent(ctx, &cloud.CreateAgentRequest{Prompt: cloud.Prompt{Text: "x"}})
	e = assertKind(t, err, http.StatusBadGateway, models.KindAPI)
	assert.Contains(t, e.Message, "CURSOR_API_KEY")
	assert.NotContains(t, e.Error(), "wrong key")

	// A follow-up while the agent is busy is a 409.
	_, err = c.CreateRun(ctx, agent.ID, cloud.Prompt{Text: "a long task"}, nil)
	require.NoError(t, err)
	_, err = c.CreateRun(ctx, agent.ID, cloud.Prompt{Text: "more"}, nil)
	e = assertKind(t, err, http.StatusConflict, models.KindInvalidRequest)
	assert.Equal(t, "agent_busy", e.Code)
}

func assertKind(t *testing.T, err error, status int, kind models.ErrorKind) *models.Error {
	t.Helper()
	var e *models.Error
	require.True(t, errors.As(err, &e), "a *models.Error, got %v", err)
	assert.Equal(t, status, e.Status)
	assert.Equal(t, kind, e.Kind)
	return e
}

func TestStreamEndsWithContext(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{Heartbeat: 10 * time.Millisecond})
	c := cloud.NewClient(fake.URL, cloudtest.DefaultAPIKey, nil)
	agent, run, err := c.CreateAgent(context.Background(), &cloud.CreateAgentRequest{Prompt: cloud.Prompt{Text: "a long task"}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	beats := 0
	err = c.StreamRun(ctx, agent.ID, run.ID, "", func(ev cloud.Event) error {
		if ev.Name == "heartbeat" {
			beats++
		}
		return nil
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Greater(t, beats, 2, "heartbeats keep an idle stream alive")
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := cloud.NewClient(url, "k", nil).GetRun(context.Background(), "a", "r")
	e := assertKind(t, err, http.StatusBadGateway, models.KindAPI)
	assert.Contains(t, e.Message, "CLOUD_API_URL")
}

func TestModelNames(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := cloud.New(cloud.Config{ModelsTTL: time.Hour}, cloud.NewClient(fake.URL, cloudtest.DefaultAPIKey, nil))
	want := []string{"cursor-cloud", "cursor-cloud/composer-2", "cursor-cloud/claude-4.5-sonnet"}
	assert.Equal(t, want, s.ModelNames(context.Background()))
	assert.Equal(t, want, s.ModelNames(context.Background()))
	assert.Len(t, fake.CallsTo("GET /v1/models"), 1, "cached")

	down := cloud.New(cloud.Config{}, cloud.NewClient(fake.URL, "wrong", nil))
	assert.Equal(t, []string{"cursor-cloud"}, down.ModelNames(context.Background()))
}

func TestWebhooks(t *testing.T) {
	w := cloud.NewWebhooks("0123456789abcdef0123456789abcdef", time.Minute, 2)
	body := []byte(`{"id":"bc-1","status":"FINISHED"}`)
	sig := w.Sign(body)
	assert.True(t, w.Verify(body, sig))
	for name, bad := range map[string]string{"empty": "", "no scheme": strings.TrimPrefix(sig, "sha256="), "not hex": "sha256=zz",
		"other body": w.Sign([]byte("{}")), "truncated": sig[:len(sig)-2]} {
		assert.False(t, w.Verify(body, bad), name)
	}

	now := time.Now()
	assert.True(t, w.FirstDelivery("a", now))
	assert.False(t, w.FirstDelivery("a", now), "a replay")
	assert.True(t, w.FirstDelivery("a", now.Add(2*time.Minute)), "past the window")
	assert.True(t, w.FirstDelivery("b", now.Add(2*time.Minute)))
	assert.True(t, w.FirstDelivery("c", now.Add(2*time.Minute)), "over max, the oldest is forgotten")

	ch, stop := w.Wait("bc-1")
	_, stopOther := w.Wait("bc-2")
	defer stopOther()
	assert.Equal(t, 1, w.Wake("bc-1"))
	select {
	case <-ch:
	default:
		t.Fatal("not woken")
	}
	stop()
	assert.Equal(t, 0, w.Wake("bc-1"))
}

// Answers with fields the client does not read, a run status and stream
// events it does not know: what it needs is read, the rest passed over,
// and each unknown kind noted once.
func TestClientToleratesUnknownParts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("id: 1\nevent: status\ndata: {\"status\":\"RUNNING\",\"newField\":1}\n\n" +
				"id: 2\nevent: tool_progress\ndata: {\"secret\":\"tool output\"}\n\n" +
				"retry: 1000\n: a comment\n\n" +
				"id: 3\nevent: interaction_update\ndata: {\"type\":\"text-delta\",\"text\":\"hi\"}\n\n" +
				"id: 4\nevent: tool_progress\ndata: {}\n\n" +
				"id: 5\nevent: done\ndata: {}\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"run-1","agentId":"bc-1","status":"PAUSED","result":"","costUsd":0.1,"git":{"branches":[{"branch":"b","newThing":[1]}],"other":true}}`))
	}))
	defer srv.Close()
	var logs strings.Builder
	c := cloud.NewClient(srv.URL, "k", srv.Client())
	c.Drift = utils.NewDrift(slog.New(slog.NewTextHandler(&logs, nil)))
	run, err := c.GetRun(context.Background(), "bc-1", "run-1")
	require.NoError(t, err)
	assert.Equal(t, "PAUSED", run.Status, "an unknown status is shown as it is")
	require.Len(t, run.Git.Branches, 1)
	assert.Equal(t, "b", run.Git.Branches[0].Branch)
	var names []string
	require.NoError(t, c.StreamRun(context.Background(), "bc-1", "run-1", "", func(ev cloud.Event) error {
		names = append(names, ev.Name)
		return nil
	}))
	assert.Equal(t, []string{"status", "tool_progress", "interaction_update", "tool_progress", "done"}, names)
	assert.Equal(t, []utils.DriftNotice{
		{Component: "cloud agents", Kind: `run status "PAUSED"`, Count: 1},
		{Component: "cloud agents", Kind: `stream event "tool_progress"`, Count: 2},
	}, c.Drift.Notices())
	assert.Equal(t, 2, strings.Count(logs.String(), "upstream format drift"), logs.String())
	assert.NotContains(t, logs.String(), "tool output")
}
