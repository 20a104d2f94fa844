package nativetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// SDK returns the directory holding the official @cursor/sdk and a Node 22
// binary to run it with, for a test that drives the SDK against a fake, or
// skips the test: .ci/run installs both (CURSOR_SDK_DIR, NODE22_BIN). The
// SDK is proprietary: it is installed at test time, never committed.
func SDK(t testing.TB) (sdkDir, node string) {
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

// RunSDKDriver runs driver, a Node script of ours that uses the official
// SDK (testdata/*.mjs), against the fake at backendURL with apiKey, in a
// fresh HOME, within 90 seconds; env adds the driver's own settings. It
// decodes every line of JSON the driver printed into a T, logs what the
// driver printed (clipped) and returns the lines and its stderr.
func RunSDKDriver[T any](t testing.TB, driver, backendURL, apiKey string, env ...string) ([]T, string) {
	t.Helper()
	sdkDir, node := SDK(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	abs, err := filepath.Abs(driver)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, node, abs)
	cmd.Dir = home
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CURSOR_SDK_DIR=" + sdkDir,
		"CURSOR_BACKEND_URL=" + backendURL,
		"CURSOR_API_KEY=" + apiKey,
		"DRIVER_TIMEOUT_MS=60000",
	}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var lines []T
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l T
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	t.Logf("driver exit: %v\nstdout:\n%s\nstderr:\n%s", err, clipLog(stdout.String()), clipLog(stderr.String()))
	return lines, stderr.String()
}

// clipLog keeps a driver's output short enough to read in a test log.
func clipLog(s string) string {
	if len(s) > 8000 {
		return s[:8000] + "…"
	}
	return s
}
