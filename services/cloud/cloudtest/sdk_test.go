package cloudtest_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cloud/cloudtest"
	"cursor2api/services/native/nativetest"
)

// line is one JSON line the driver printed.
type line struct {
	Type    string `json:"type"`
	AgentID string `json:"agentId"`
	RunID   string `json:"runId"`
	Status  string `json:"status"`
	Result  *string
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Git *struct {
		Branches []struct {
			RepoURL string `json:"repoUrl"`
			Branch  string `json:"branch"`
			PRURL   string `json:"prUrl"`
		} `json:"branches"`
	} `json:"git"`
	Texts        []string        `json:"texts"`
	Models       []string        `json:"models"`
	Me           json.RawMessage `json:"me"`
	Repos        json.RawMessage `json:"repos"`
	Name         string          `json:"name"`
	Code         any             `json:"code"`
	ErrorMessage string          `json:"error_message"`
}

// runDriver runs testdata/clouddriver.mjs against the fake with steps.
func runDriver(t *testing.T, srv *cloudtest.Server, steps ...map[string]any) []line {
	t.Helper()
	js, err := json.Marshal(steps)
	require.NoError(t, err)
	lines, _ := nativetest.RunSDKDriver[line](t, "testdata/clouddriver.mjs", srv.URL, cloudtest.DefaultAPIKey,
		"DRIVER_REPO="+cloudtest.DefaultRepos[0], "DRIVER_STEPS="+string(js))
	return lines
}

func linesOf(ls []line, typ string) []line {
	var out []line
	for _, l := range ls {
		if l.Type == typ {
			out = append(out, l)
		}
	}
	return out
}

func send(prompt string) map[string]any { return map[string]any{"op": "send", "prompt": prompt} }

// TestSDKCloudRuns drives the official SDK's cloud agent through a run that
// finishes with a PR, a follow-up on the same agent, a run that errors, a
// long run it cancels, and the account calls, against the fake.
func TestSDKCloudRuns(t *testing.T) {
	srv := cloudtest.NewServer(t, cloudtest.Options{})
	lines := runDriver(t, srv,
		map[string]any{"op": "account"},
		send("fix the bug"),
		send("now add a test"),
		send("this will fail"),
		map[string]any{"op": "send", "prompt": "a long task", "cancel": true},
	)
	require.Empty(t, linesOf(lines, "driver_error"))
	require.Empty(t, linesOf(lines, "driver_send_error"))

	acct := linesOf(lines, "account")
	require.Len(t, acct, 1)
	assert.Equal(t, cloudtest.DefaultModels, acct[0].Models)
	assert.Contains(t, string(acct[0].Me), "test key")
	assert.Contains(t, string(acct[0].Repos), cloudtest.DefaultRepos[0])

	res := linesOf(lines, "driver_result")
	require.Len(t, res, 4)
	first := res[0]
	assert.Equal(t, "finished", first.Status)
	require.NotNil(t, first.Result)
	assert.Equal(t, "Fixed the bug.", *first.Result)
	require.NotNil(t, first.Git)
	require.Len(t, first.Git.Branches, 1)
	assert.Equal(t, "cursor/fix-bug", first.Git.Branches[0].Branch)
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", first.Git.Branches[0].PRURL)
	assert.Equal(t, []string{"Fixed", " the bug."}, first.Texts, "the text deltas of interaction_update")

	// The follow-up is a second run of the same agent.
	assert.Equal(t, first.AgentID, res[1].AgentID)
	assert.NotEqual(t, first.RunID, res[1].RunID)
	assert.Equal(t, "finished", res[1].Status)
	assert.Equal(t, []string{"fix the bug", "now add a test", "this will fail", "a long task"}, srv.Prompts(first.AgentID))
	assert.Len(t, srv.CallsTo("POST /v1/agents"), 1)
	assert.Len(t, srv.CallsTo("POST /v1/agents/"+first.AgentID+"/runs"), 3)

	assert.Equal(t, "error", res[2].Status)
	require.NotNil(t, res[2].Error)
	assert.Contains(t, res[2].Error.Message, "the VM ran out of disk")

	assert.Equal(t, "cancelled", res[3].Status)
	assert.Equal(t, "CANCELLED", srv.RunStatus(res[3].AgentID, res[3].RunID))
	assert.Len(t, srv.CallsTo("POST /v1/agents/"+res[3].AgentID+"/runs/"+res[3].RunID+"/cancel"), 1)

	// What the SDK sends: the key as a bearer, its client type and version.
	create := srv.CallsTo("POST /v1/agents")[0]
	assert.Equal(t, "Bearer "+cloudtest.DefaultAPIKey, create.Header.Get("Authorization"))
	assert.Equal(t, "sdk", create.Header.Get("x-cursor-client-type"))
	assert.NotEmpty(t, create.Header.Get("x-cursor-client-version"))
	var body struct {
		Prompt struct{ Text string }
		Repos  []struct {
			URL         string `json:"url"`
			StartingRef string `json:"startingRef"`
		}
		AutoCreatePR bool `json:"autoCreatePR"`
		Model        struct{ ID string }
	}
	require.NoError(t, json.Unmarshal(create.Body, &body))
	assert.Equal(t, "fix the bug", body.Prompt.Text)
	assert.Equal(t, cloudtest.DefaultRepos[0], body.Repos[0].URL)
	assert.Equal(t, "main", body.Repos[0].StartingRef)
	assert.True(t, body.AutoCreatePR)
	assert.Equal(t, "composer-2", body.Model.ID)
}

// TestSDKCloudResume cuts each run's first stream: the SDK resumes with
// Last-Event-ID and sees every delta once.
func TestSDKCloudResume(t *testing.T) {
	srv := cloudtest.NewServer(t, cloudtest.Options{DropStreamAfter: 2})
	lines := runDriver(t, srv, send("fix it slowly"))
	res := linesOf(lines, "driver_result")
	require.Len(t, res, 1)
	assert.Equal(t, "finished", res[0].Status)
	assert.Equal(t, []string{"Fixed", " the bug."}, res[0].Texts)
	var resumed []string
	for _, c := range srv.CallsTo("GET /v1/agents/" + res[0].AgentID + "/runs/" + res[0].RunID + "/stream") {
		resumed = append(resumed, c.Header.Get("Last-Event-ID"))
	}
	require.GreaterOrEqual(t, len(resumed), 2, "a second stream request")
	assert.Equal(t, "", resumed[0])
	assert.Equal(t, "2", resumed[1])
}

// TestSDKCloudErrors: a rate limit is the SDK's RateLimitError, a busy
// agent its AgentBusyError... and a repository the key cannot see is
// refused at create.
func TestSDKCloudErrors(t *testing.T) {
	srv := cloudtest.NewServer(t, cloudtest.Options{Repos: []string{"https://github.com/acme/other"}})
	lines := runDriver(t, srv, send("fix the bug"))
	errs := linesOf(lines, "driver_send_error")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].ErrorMessage, "repository_access_denied")
	assert.Contains(t, errs[0].ErrorMessage, cloudtest.DefaultRepos[0])

	srv = cloudtest.NewServer(t, cloudtest.Options{})
	srv.RateLimit(1)
	lines = runDriver(t, srv, send("fix the bug"))
	errs = linesOf(lines, "driver_send_error")
	require.Len(t, errs, 1)
	assert.Equal(t, "RateLimitError", errs[0].Name)
}
