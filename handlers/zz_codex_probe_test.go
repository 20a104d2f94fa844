package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"cursor2api/services/cursortest"
)

func TestZZCodexProbe(t *testing.T) {
	bin := os.Getenv("CODEX_BIN")
	if bin == "" {
		t.Skip("no CODEX_BIN")
	}
	model := os.Getenv("CODEX_MODEL")
	s := newStack(t, map[string]string{"MODELS": model}, func(n int, req cursortest.Request) cursortest.Response {
		return script(t, []string{"Hello from the probe."})(n, req)
	})
	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	n := 0
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		os.WriteFile(filepath.Join("/tmp/cx", r.Method+"_"+filepath.Base(r.URL.Path)+"_"+string(rune('0'+n))+".json"), append([]byte(r.URL.String()+"\n"+r.Header.Get("Authorization")+"\n"), body...), 0o644)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	home := t.TempDir()
	work := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(`model = "`+model+`"
model_provider = "c2a"
[model_providers.c2a]
name = "c2a"
base_url = "`+front.URL+`/v1"
wire_api = "responses"
env_key = "C2A_KEY"
`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "-s", "workspace-write", "-C", work, "say hi")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "C2A_KEY=sk-test", "HOME="+home)
	out, err := cmd.CombinedOutput()
	t.Logf("err=%v\n%s", err, out)
	t.Logf("logs:\n%s", s.logs.String())
}
