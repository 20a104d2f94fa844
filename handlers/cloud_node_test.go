package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/services/cloud/cloudtest"
)

// TestCloudOpenAINode drives the official openai npm package's Responses
// client (OPENAI_NODE_DIR, installed by .ci/run, never committed) against
// the gateway serving the fake Cloud Agents API.
func TestCloudOpenAINode(t *testing.T) {
	dir := os.Getenv("OPENAI_NODE_DIR")
	if dir == "" {
		t.Skip("SKIPPED: openai-node's test needs OPENAI_NODE_DIR (npm install --prefix DIR openai@7.59.0); .ci/run sets it")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skipf("SKIPPED: OPENAI_NODE_DIR=%s holds no openai package: %v", dir, err)
	}
	node := nodeBinary(t)
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	s := newStack(t, cloudEnv(fake), script(t))
	driver, err := filepath.Abs("testdata/openai_node_cloud.mjs")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, driver)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_NODE_DIR=" + dir, "GATEWAY_URL=" + s.URL, "GATEWAY_KEY=" + cloudGatewayKey}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("driver exit: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	lines := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines[l["type"].(string)] = l
		}
	}
	require.NotContains(t, lines, "driver_error")
	assert.Equal(t, "queued", lines["created"]["status"])
	assert.Equal(t, true, lines["created"]["background"])
	assert.Equal(t, "completed", lines["done"]["status"])
	assert.Contains(t, lines["done"]["text"], "Pull request: https://github.com/acme/widgets/pull/7")
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", lines["done"]["metadata"].(map[string]any)["pr_url"])
	events, _ := lines["resumed"]["events"].([]any)
	require.NotEmpty(t, events)
	first := events[0].([]any)
	assert.EqualValues(t, 5, first[0], "the stream resumes after starting_after")
	assert.Equal(t, "response.completed", events[len(events)-1].([]any)[1])
	assert.Equal(t, "completed", lines["follow_up"]["status"])
	assert.Equal(t, lines["done"]["metadata"].(map[string]any)["agent_id"], lines["follow_up"]["agent_id"], "the follow-up runs on the same agent")
	assert.Equal(t, lines["created"]["id"], lines["follow_up"]["previous"])
	assert.Equal(t, "cancelled", lines["cancelled"]["status"])
	assert.EqualValues(t, 404, lines["forged"]["status"])
}
