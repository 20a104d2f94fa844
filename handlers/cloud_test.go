package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"cursor2api/services/cloud"
	"cursor2api/services/cloud/cloudtest"
)

// End-to-end tests of Cursor Cloud Agents behind the Responses door:
// openai-go's Responses client drives the gateway in front of the fake
// Cloud Agents API.

const cloudGatewayKey = "gw-cloud-key"

// cloudEnv is the configuration of a gateway serving the fake.
func cloudEnv(fake *cloudtest.Server, more ...string) map[string]string {
	env := map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": cloudtest.DefaultAPIKey, "CLOUD_API_URL": fake.URL,
		"API_KEY": cloudGatewayKey, "CLOUD_POLL_INTERVAL": "0.1", "CLOUD_MAX_WAIT": "20"}
	for i := 0; i+1 < len(more); i += 2 {
		env[more[i]] = more[i+1]
	}
	return env
}

func cloudClient(s *stack) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(s.URL+"/v1"), option.WithAPIKey(cloudGatewayKey), option.WithMaxRetries(0))
	return &c
}

func cloudParams(prompt string, background bool, md map[string]string) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "cursor-cloud/composer-2", Input: userInput(prompt)}
	if background {
		p.Background = openai.Bool(true)
	}
	if md == nil {
		md = map[string]string{"repository": "acme/widgets", "ref": "main", "auto_create_pr": "true"}
	}
	p.Metadata = shared.Metadata(md)
	return p
}

// pollDone polls a response until it leaves queued and in_progress.
func pollDone(t *testing.T, c *openai.Client, id string) *responses.Response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := c.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
		require.NoError(t, err)
		if r.Status != responses.ResponseStatusQueued && r.Status != responses.ResponseStatusInProgress {
			return r
		}
		require.True(t, time.Now().Before(deadline), "response %s still %s", id, r.Status)
		time.Sleep(20 * time.Millisecond)
	}
}

func apiStatus(t *testing.T, err error) (*openai.Error, int) {
	t.Helper()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "an API error, got %v", err)
	return apiErr, apiErr.StatusCode
}

func TestCloudModels(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	page, err := c.Models.List(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	assert.Subset(t, ids, []string{"claude-sonnet-4.6", "cursor-cloud", "cursor-cloud/composer-2", "cursor-cloud/claude-4.5-sonnet"})

	// Off: no cloud model, and background is refused.
	off := newStack(t, map[string]string{"API_KEY": cloudGatewayKey}, script(t))
	page, err = cloudClient(off).Models.List(context.Background())
	require.NoError(t, err)
	for _, m := range page.Data {
		assert.NotContains(t, m.ID, "cursor-cloud")
	}
	_, err = cloudClient(off).Responses.New(context.Background(), cloudParams("fix the bug", true, nil))
	_, status := apiStatus(t, err)
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestCloudBackgroundPoll(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	r, err := c.Responses.New(context.Background(), cloudParams("fix the bug", true, nil))
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusQueued, r.Status)
	assert.True(t, r.Background)
	assert.True(t, strings.HasPrefix(r.ID, "resp_cloud_"), r.ID)

	done := pollDone(t, c, r.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, done.Status)
	assert.Equal(t, "Fixed the bug.\n\nBranch: cursor/fix-bug (https://github.com/acme/widgets)\nPull request: https://github.com/acme/widgets/pull/7", done.OutputText())
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", done.Metadata["pr_url"])
	assert.Equal(t, "cursor/fix-bug", done.Metadata["branch"])
	assert.Contains(t, done.Metadata["agent_url"], done.Metadata["agent_id"])
	assert.Equal(t, "cursor-cloud/composer-2", string(done.Model))
	assert.Equal(t, "https://github.com/acme/widgets", done.Metadata["repository"])

	creates := fake.CallsTo("POST /v1/agents")
	require.Len(t, creates, 1)
	var body struct {
		Prompt       struct{ Text string }
		Model        struct{ ID string }
		Repos        []struct{ URL, StartingRef string }
		AutoCreatePR bool
	}
	require.NoError(t, json.Unmarshal(creates[0].Body, &body))
	assert.Equal(t, "fix the bug", body.Prompt.Text)
	assert.Equal(t, "composer-2", body.Model.ID)
	require.Len(t, body.Repos, 1)
	assert.Equal(t, "https://github.com/acme/widgets", body.Repos[0].URL)
	assert.Equal(t, "main", body.Repos[0].StartingRef)
	assert.True(t, body.AutoCreatePR)
	assert.Equal(t, "Bearer "+cloudtest.DefaultAPIKey, creates[0].Header.Get("Authorization"))
	assert.NotContains(t, s.logs.String(), cloudtest.DefaultAPIKey, "the key is never logged")
}

// readCloudStream reads a stream to its end.
func readCloudStream(t *testing.T, st interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}) []responses.ResponseStreamEventUnion {
	t.Helper()
	var evs []responses.ResponseStreamEventUnion
	for st.Next() {
		evs = append(evs, st.Current())
	}
	require.NoError(t, st.Err())
	return evs
}

func TestCloudStreamResume(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, cloudParams("fix it slowly", true, nil))
	require.NoError(t, err)

	all := readCloudStream(t, c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}))
	var types []string
	var text strings.Builder
	for i, ev := range all {
		assert.Equal(t, int64(i), ev.SequenceNumber, "numbered from 0 without gaps")
		types = append(types, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}, types)
	assert.Equal(t, "Fixed the bug.\n\nBranch: cursor/fix-bug (https://github.com/acme/widgets)\nPull request: https://github.com/acme/widgets/pull/7", text.String())
	last := all[len(all)-1]
	assert.Equal(t, responses.ResponseStatusCompleted, last.Response.Status)
	assert.Equal(t, text.String(), last.Response.OutputText())

	// Resuming after event 4 gives the same events from 5 on.
	tail := readCloudStream(t, c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{StartingAfter: openai.Int(4)}))
	require.Len(t, tail, len(all)-5)
	for i, ev := range tail {
		assert.Equal(t, all[i+5].SequenceNumber, ev.SequenceNumber)
		assert.Equal(t, all[i+5].Type, ev.Type)
		assert.Equal(t, all[i+5].Delta, ev.Delta)
	}

	// Without background the request itself streams the run.
	evs := readCloudStream(t, c.Responses.NewStreaming(ctx, cloudParams("fix the bug", false, nil)))
	require.NotEmpty(t, evs)
	assert.Equal(t, "response.completed", evs[len(evs)-1].Type)
	assert.Contains(t, evs[len(evs)-1].Response.OutputText(), "Pull request: https://github.com/acme/widgets/pull/7")
}

// TestCloudStreamKeepalive: a run silent for longer than PING_INTERVAL
// gets OpenAI's keepalive events, which a client's idle timer counts
// where it passes over a comment. A keepalive repeats the number of the
// event before it, so the run's events keep theirs and a stream resumed
// after a keepalive loses nothing.
func TestCloudStreamKeepalive(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{Heartbeat: 100 * time.Millisecond, Script: func(string) cloudtest.Script {
		return cloudtest.Script{Steps: []cloudtest.Step{{Text: "Thinking"}, {Text: " it over.", Delay: 2500 * time.Millisecond}}}
	}})
	s := newStack(t, cloudEnv(fake, "PING_INTERVAL", "1"), script(t))
	c := cloudClient(s)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, cloudParams("think", true, nil))
	require.NoError(t, err)

	all := readCloudStream(t, c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}))
	var run []responses.ResponseStreamEventUnion // all but the keepalives
	var types []string
	keepalive := -1
	for i, ev := range all {
		types = append(types, ev.Type)
		if ev.Type != "keepalive" {
			run = append(run, ev)
			continue
		}
		require.Positive(t, i)
		assert.Equal(t, all[i-1].SequenceNumber, ev.SequenceNumber, "a keepalive repeats the number before it")
		if keepalive < 0 {
			keepalive = i
		}
	}
	require.Positive(t, keepalive, "a keepalive in the silence: %v", types)
	assert.Equal(t, "response.output_text.delta", all[keepalive-1].Type, "it came after the first words")
	for i, ev := range run {
		assert.Equal(t, int64(i), ev.SequenceNumber, "the run's events are numbered from 0 without gaps")
	}
	assert.Equal(t, "Thinking it over.", run[len(run)-1].Response.OutputText())

	// Resuming after the keepalive's number gives every event after it.
	after := all[keepalive].SequenceNumber
	tail := readCloudStream(t, c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{StartingAfter: openai.Int(after)}))
	require.Len(t, tail, len(run)-int(after)-1)
	assert.Equal(t, after+1, tail[0].SequenceNumber)
	assert.Equal(t, " it over.", tail[0].Delta)
}

func TestCloudWaitsWithoutBackground(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake, "CLOUD_MAX_WAIT", "1"), script(t))
	c := cloudClient(s)
	r, err := c.Responses.New(context.Background(), cloudParams("fix the bug", false, nil))
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCompleted, r.Status)
	assert.False(t, r.Background)
	assert.Contains(t, r.OutputText(), "Fixed the bug.")

	// A run past CLOUD_MAX_WAIT is cancelled and the request says why.
	_, err = c.Responses.New(context.Background(), cloudParams("a long task", false, nil))
	apiErr, status := apiStatus(t, err)
	assert.Equal(t, http.StatusGatewayTimeout, status)
	assert.Contains(t, apiErr.Message, "CLOUD_MAX_WAIT")
	creates := fake.CallsTo("POST /v1/agents")
	require.Len(t, creates, 2)
	var cancels int
	for _, call := range fake.Calls() {
		if strings.HasSuffix(call.Path, "/cancel") {
			cancels++
		}
	}
	assert.Equal(t, 1, cancels, "the run of a request that gave up is cancelled")
}

func TestCloudCancel(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, cloudParams("a long task", true, nil))
	require.NoError(t, err)
	cancelled, err := c.Responses.Cancel(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, cancelled.Status)
	got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, got.Status)
	assert.Equal(t, "CANCELLED", fake.RunStatus(got.Metadata["agent_id"], got.Metadata["run_id"]))

	// A stream of a cancelled run ends with response.cancelled.
	evs := readCloudStream(t, c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{}))
	assert.Equal(t, "response.cancelled", evs[len(evs)-1].Type)
}

func TestCloudFollowUp(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx := context.Background()
	first, err := c.Responses.New(ctx, cloudParams("fix the bug", true, nil))
	require.NoError(t, err)
	done := pollDone(t, c, first.ID)

	p := cloudParams("now add a test", true, map[string]string{})
	p.PreviousResponseID = openai.String(first.ID)
	second, err := c.Responses.New(ctx, p)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, second.ID)
	assert.Equal(t, first.ID, second.PreviousResponseID)
	again := pollDone(t, c, second.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, again.Status)
	assert.Equal(t, done.Metadata["agent_id"], again.Metadata["agent_id"], "the same agent")
	assert.Equal(t, first.ID, again.PreviousResponseID, "GET tells the previous response too")
	assert.NotEqual(t, done.Metadata["run_id"], again.Metadata["run_id"])
	assert.Equal(t, []string{"fix the bug", "now add a test"}, fake.Prompts(done.Metadata["agent_id"]))

	// A follow-up on a busy agent is a 409.
	long := cloudParams("a long task", true, map[string]string{})
	long.PreviousResponseID = openai.String(second.ID)
	busy, err := c.Responses.New(ctx, long)
	require.NoError(t, err)
	p.PreviousResponseID = openai.String(busy.ID)
	_, err = c.Responses.New(ctx, p)
	_, status := apiStatus(t, err)
	assert.Equal(t, http.StatusConflict, status)
	_, err = c.Responses.Cancel(ctx, busy.ID)
	require.NoError(t, err)
}

// TestCloudStateless proves a second gateway sharing only the configuration
// answers for an id the first created, while another API_KEY and a forged
// id get 404.
func TestCloudStateless(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	a := newStack(t, cloudEnv(fake), script(t))
	b := newStack(t, cloudEnv(fake), script(t))
	ctx := context.Background()
	r, err := cloudClient(a).Responses.New(ctx, cloudParams("fix the bug", true, nil))
	require.NoError(t, err)
	got := pollDone(t, cloudClient(b), r.ID)
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, r.ID, got.ID)

	other := newStack(t, cloudEnv(fake, "API_KEY", "another-deployment"), script(t))
	oc := openai.NewClient(option.WithBaseURL(other.URL+"/v1"), option.WithAPIKey("another-deployment"), option.WithMaxRetries(0))
	_, err = (&oc).Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	_, status := apiStatus(t, err)
	assert.Equal(t, http.StatusNotFound, status, "a foreign id")

	payload, mac, _ := strings.Cut(strings.TrimPrefix(r.ID, "resp_cloud_"), ".")
	for name, id := range map[string]string{
		"mac changed":     "resp_cloud_" + payload + "." + flip(mac),
		"payload changed": "resp_cloud_" + flip(payload) + "." + mac,
		"no mac":          "resp_cloud_" + payload,
		"garbage":         "resp_cloud_!!",
	} {
		_, err = cloudClient(a).Responses.Get(ctx, id, responses.ResponseGetParams{})
		_, status = apiStatus(t, err)
		assert.Equal(t, http.StatusNotFound, status, name)
		_, err = cloudClient(a).Responses.Cancel(ctx, id)
		_, status = apiStatus(t, err)
		assert.Equal(t, http.StatusNotFound, status, name)
	}
	assert.Len(t, fake.CallsTo("POST /v1/agents"), 1)
}

// flip changes the first character of s.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestCloudErrors(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx := context.Background()

	r, err := c.Responses.New(ctx, cloudParams("this will fail", true, nil))
	require.NoError(t, err)
	failed := pollDone(t, c, r.ID)
	assert.Equal(t, responses.ResponseStatusFailed, failed.Status)
	assert.Equal(t, "the VM ran out of disk", failed.Error.Message)

	r, err = c.Responses.New(ctx, cloudParams("something weird", true, nil))
	require.NoError(t, err)
	weird := pollDone(t, c, r.ID)
	assert.Equal(t, responses.ResponseStatusFailed, weird.Status)
	assert.Equal(t, "PAUSED_FOR_REVIEW", weird.Metadata["cloud_status"])
	assert.Contains(t, weird.Error.Message, "PAUSED_FOR_REVIEW")

	fake.RateLimit(1)
	_, err = c.Responses.New(ctx, cloudParams("fix the bug", true, nil))
	apiErr, status := apiStatus(t, err)
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Equal(t, "7", apiErr.Response.Header.Get("Retry-After"))

	_, err = c.Responses.New(ctx, cloudParams("fix the bug", true, map[string]string{"repository": "acme/secret"}))
	apiErr, status = apiStatus(t, err)
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, "metadata.repository", apiErr.Param)
	assert.Contains(t, apiErr.Message, "https://github.com/acme/secret")

	for _, tc := range []struct {
		md    map[string]string
		param string
	}{
		{map[string]string{"repository": "not a repo"}, "metadata.repository"},
		{map[string]string{"repository": "acme/widgets", "ref": "bad ref"}, "metadata.ref"},
		{map[string]string{"repository": "acme/widgets", "branch": "a..b"}, "metadata.branch"},
		{map[string]string{"repository": "acme/widgets", "ref": "main", "branch": "dev"}, "metadata.branch"},
		{map[string]string{"ref": "main"}, "metadata.repository"},
		{map[string]string{"repository": "acme/widgets", "auto_create_pr": "maybe"}, "metadata.auto_create_pr"},
	} {
		_, err = c.Responses.New(ctx, cloudParams("fix the bug", true, tc.md))
		apiErr, status = apiStatus(t, err)
		assert.Equal(t, http.StatusBadRequest, status, tc.md)
		assert.Equal(t, tc.param, apiErr.Param, tc.md)
	}
	p := cloudParams("fix the bug", true, nil)
	p.PreviousResponseID = openai.String("resp_cloud_forged.AAAA")
	_, err = c.Responses.New(ctx, p)
	apiErr, status = apiStatus(t, err)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "previous_response_id", apiErr.Param)
}

const webhookSecret = "0123456789abcdef0123456789abcdef-test"

func postWebhook(t *testing.T, s *stack, body, sig, id string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/cloud/webhook", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("X-Webhook-Signature", sig)
	}
	if id != "" {
		req.Header.Set("X-Webhook-ID", id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

func TestCloudWebhook(t *testing.T) {
	// Streams fail and polls are a minute apart: only the webhook can end
	// the wait early.
	fake := cloudtest.NewServer(t, cloudtest.Options{StreamsFail: true, Script: func(string) cloudtest.Script {
		// Long enough that the first poll sees it running.
		return cloudtest.Script{Steps: []cloudtest.Step{{Text: "Fixed the bug.", Delay: 500 * time.Millisecond}}, Branch: "cursor/fix-bug"}
	}})
	s := newStack(t, cloudEnv(fake, "CLOUD_WEBHOOK_SECRET", webhookSecret, "CLOUD_POLL_INTERVAL", "60"), script(t))
	signer := cloud.NewWebhooks(webhookSecret, time.Hour, 10)
	c := cloudClient(s)
	ctx := context.Background()

	r, err := c.Responses.New(ctx, cloudParams("fix it slowly", true, nil))
	require.NoError(t, err)
	agentID := ""
	type result struct {
		evs []responses.ResponseStreamEventUnion
		err error
	}
	got := make(chan result, 1)
	go func() {
		st := c.Responses.GetStreaming(ctx, r.ID, responses.ResponseGetParams{})
		var evs []responses.ResponseStreamEventUnion
		for st.Next() {
			evs = append(evs, st.Current())
		}
		got <- result{evs, st.Err()}
	}()
	snap, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	agentID = snap.Metadata["agent_id"]
	// Wait for the run to end upstream, then deliver.
	require.Eventually(t, func() bool {
		st := fake.RunStatus(agentID, snap.Metadata["run_id"])
		return st == "FINISHED"
	}, 5*time.Second, 10*time.Millisecond)

	body := `{"event":"statusChange","timestamp":"2026-11-26T12:00:00Z","id":"` + agentID + `","status":"FINISHED"}`
	for name, tc := range map[string]struct {
		sig, id string
		status  int
	}{
		"missing signature": {"", "d-1", http.StatusUnauthorized},
		"bad signature":     {signer.Sign([]byte(body + " ")), "d-1", http.StatusUnauthorized},
		"not sha256":        {"md5=abc", "d-1", http.StatusUnauthorized},
		"other secret":      {cloud.NewWebhooks(strings.Repeat("x", 32), time.Hour, 1).Sign([]byte(body)), "d-1", http.StatusUnauthorized},
		"missing id":        {signer.Sign([]byte(body)), "", http.StatusBadRequest},
	} {
		assert.Equal(t, tc.status, postWebhook(t, s, body, tc.sig, tc.id).StatusCode, name)
	}
	select {
	case <-got:
		t.Fatal("the stream ended before a good delivery")
	default:
	}
	assert.Equal(t, http.StatusOK, postWebhook(t, s, body, signer.Sign([]byte(body)), "d-1").StatusCode)
	assert.Equal(t, http.StatusConflict, postWebhook(t, s, body, signer.Sign([]byte(body)), "d-1").StatusCode, "a replay")

	select {
	case res := <-got:
		require.NoError(t, res.err)
		require.NotEmpty(t, res.evs)
		last := res.evs[len(res.evs)-1]
		assert.Equal(t, "response.completed", last.Type)
		assert.Contains(t, last.Response.OutputText(), "Fixed the bug.")
	case <-time.After(5 * time.Second):
		t.Fatal("the webhook did not wake the waiting stream")
	}

	// Without CLOUD_WEBHOOK_SECRET there is no such route.
	off := newStack(t, cloudEnv(fake), script(t))
	assert.Equal(t, http.StatusNotFound, postWebhook(t, off, body, signer.Sign([]byte(body)), "d-2").StatusCode)
}

// TestCloudClientLeaves: a client that leaves a request without
// background cancels its run, and nothing the request started outlives it.
func TestCloudClientLeaves(t *testing.T) {
	// Checked after the servers' cleanups (the first cleanup runs last).
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		goleak.VerifyNone(t, before)
	})
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx, cancel := context.WithCancel(context.Background())
	st := c.Responses.NewStreaming(ctx, cloudParams("a long task", false, nil))
	var agentID string
	for st.Next() {
		ev := st.Current()
		if ev.Type == "response.output_text.delta" {
			break
		}
	}
	cancel()
	_ = st.Close()
	creates := fake.CallsTo("POST /v1/agents")
	require.Len(t, creates, 1)
	require.Eventually(t, func() bool {
		for _, call := range fake.Calls() {
			if strings.HasSuffix(call.Path, "/cancel") {
				agentID = strings.Split(call.Path, "/")[3]
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "the run is cancelled")
	prompts := fake.Prompts(agentID)
	assert.Equal(t, []string{"a long task"}, prompts)
}

// TestCloudStreamWithoutResult: a stream that ends (done) without a result
// event is finished from the run itself.
func TestCloudStreamWithoutResult(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{OmitResult: true})
	s := newStack(t, cloudEnv(fake), script(t))
	c := cloudClient(s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs := readCloudStream(t, c.Responses.NewStreaming(ctx, cloudParams("fix the bug", false, nil)))
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	assert.Equal(t, "response.completed", last.Type)
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", last.Response.Metadata["pr_url"])
}
