package nativetest_test

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

	"github.com/stretchr/testify/require"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/nativetest"
)

// sdkEnv returns the official SDK's directory and a Node 22 binary, or
// skips: .ci/run installs them (CURSOR_SDK_DIR, NODE22_BIN).
func sdkEnv(t *testing.T) (sdkDir, node string) {
	t.Helper()
	sdkDir, node = os.Getenv("CURSOR_SDK_DIR"), os.Getenv("NODE22_BIN")
	if sdkDir == "" || node == "" {
		t.Skip("SKIPPED: the official @cursor/sdk test needs CURSOR_SDK_DIR (npm install --prefix DIR @cursor/sdk@1.0.32) and NODE22_BIN (a Node >= 22.13, e.g. from npm's node@22.23.3); .ci/run sets both")
	}
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules", "@cursor", "sdk", "package.json")); err != nil {
		t.Skipf("SKIPPED: CURSOR_SDK_DIR=%s holds no @cursor/sdk: %v", sdkDir, err)
	}
	return sdkDir, node
}

// driverLine is one JSON line the driver printed.
type driverLine struct {
	Type    string          `json:"type"`
	Message json.RawMessage `json:"message"`
	Status  string          `json:"status"`
	Result  *string         `json:"result"`
	Error   json.RawMessage `json:"error"`
	Usage   json.RawMessage `json:"usage"`
	Args    json.RawMessage `json:"args"`
	Name    string          `json:"name"`
}

// runDriver runs testdata/sdkdriver.mjs against the fake.
func runDriver(t *testing.T, srv *nativetest.Server, model string, tool bool, prompts ...string) ([]driverLine, string) {
	t.Helper()
	sdkDir, node := sdkEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ps, err := json.Marshal(prompts)
	require.NoError(t, err)
	driver, err := filepath.Abs("testdata/sdkdriver.mjs")
	require.NoError(t, err)
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, node, driver)
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CURSOR_SDK_DIR=" + sdkDir,
		"CURSOR_BACKEND_URL=" + srv.URL,
		"CURSOR_API_KEY=" + nativetest.DefaultAPIKey,
		"DRIVER_MODEL=" + model,
		"DRIVER_PROMPTS=" + string(ps),
		"DRIVER_CWD=" + home,
		"DRIVER_TIMEOUT_MS=60000",
	}
	if tool {
		cmd.Env = append(cmd.Env, "DRIVER_TOOL=1")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	outText := stdout.String()
	var lines []driverLine
	sc := bufio.NewScanner(strings.NewReader(outText))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l driverLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	t.Logf("driver exit: %v\nstdout:\n%s\nstderr:\n%s", err, clip(outText), clip(stderr.String()))
	return lines, stderr.String()
}

func clip(s string) string {
	if len(s) > 8000 {
		return s[:8000] + "…"
	}
	return s
}

func TestSDKTextTurn(t *testing.T) {
	srv := nativetest.NewServer(t, nativetest.Options{
		Script: func(req *agentv1.AgentRunRequest) nativetest.Script {
			return nativetest.Script{Steps: []nativetest.Step{nativetest.Text("Hello", " world")}, Usage: nativetest.Usage{Input: 10, Output: 2}}
		},
	})
	lines, _ := runDriver(t, srv, "composer-2", false, "say hello")
	for _, c := range srv.Calls() {
		t.Logf("call %s", c.Path)
	}
	for _, r := range srv.Runs() {
		t.Logf("run %s req=%v execs=%+v err=%v", r.Transport, r.Request != nil, r.Execs, r.Err)
	}
	_ = lines
	_ = strings.Join
}
