package nativetest

import (
	"os"
	"path/filepath"
	"testing"
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
