package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/handlers/server"
	"cursor2api/services/cloud/cloudtest"
)

// gatewayProcessEnv marks the test binary run as a second gateway process.
const gatewayProcessEnv = "CURSOR2API_TEST_GATEWAY_PROCESS"

// TestCloudGatewayProcess is not a test: it is the second gateway process
// of TestCloudStatelessAcrossProcesses (the test binary run again with
// gatewayProcessEnv set). It serves the configuration of its environment,
// prints its address, and ends when its stdin closes.
func TestCloudGatewayProcess(t *testing.T) {
	if os.Getenv(gatewayProcessEnv) != "1" {
		t.Skip("the helper process of TestCloudStatelessAcrossProcesses")
	}
	cfg, err := config.Load()
	require.NoError(t, err)
	srv, err := server.New(cfg, slog.New(slog.DiscardHandler), server.Options{Version: version})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Printf("LISTENING http://%s\n", ln.Addr())
	require.NoError(t, srv.Serve(ctx, ln))
}

// TestCloudStatelessAcrossProcesses: a cloud response created by one
// gateway process is answered (GET, cancel) by another OS process with
// the same configuration and no shared storage.
func TestCloudStatelessAcrossProcesses(t *testing.T) {
	fake := cloudtest.NewServer(t, cloudtest.Options{})
	env := map[string]string{"CLOUD_AGENTS": "on", "CURSOR_API_KEY": cloudtest.DefaultAPIKey, "CLOUD_API_URL": fake.URL,
		"API_KEY": "gw-key", "CLOUD_POLL_INTERVAL": "0.1", "X_IS_HUMAN_MODE": "static:test-x-is-human", "MODELS": "claude-sonnet-4.6"}
	urlA, _, _ := startGateway(t, env)

	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCloudGatewayProcess$", "-test.v")
	cmd.Env = append(os.Environ(), gatewayProcessEnv+"=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	urlB := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
			urlB = u
			break
		}
	}
	require.NotEmpty(t, urlB, "the second process listens")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	assert.NotEqual(t, urlA, urlB)

	client := func(base string) openai.Client {
		return openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("gw-key"), option.WithMaxRetries(0))
	}
	a, b := client(urlA), client(urlB)
	params := responses.ResponseNewParams{Model: "cursor-cloud", Background: openai.Bool(true),
		Input:    responses.ResponseNewParamsInputUnion{OfString: openai.String("fix the bug")},
		Metadata: shared.Metadata{"repository": "acme/widgets", "auto_create_pr": "true"}}
	r, err := a.Responses.New(ctx, params)
	require.NoError(t, err)
	var got *responses.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err = b.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		if got.Status == responses.ResponseStatusCompleted || time.Now().After(deadline) {
			break
		}
	}
	assert.Equal(t, responses.ResponseStatusCompleted, got.Status)
	assert.Equal(t, "https://github.com/acme/widgets/pull/7", got.Metadata["pr_url"])

	// And the other way round: B creates a long run, A cancels it.
	params.Input = responses.ResponseNewParamsInputUnion{OfString: openai.String("a long task")}
	long, err := b.Responses.New(ctx, params)
	require.NoError(t, err)
	cancelled, err := a.Responses.Cancel(ctx, long.ID)
	require.NoError(t, err)
	assert.Equal(t, responses.ResponseStatusCancelled, cancelled.Status)
}
