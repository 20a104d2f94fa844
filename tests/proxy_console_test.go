package tests

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProxyPassesTheConsole: behind the shipped nginx and Caddy files, a
// browser's sign-in form (its Origin the proxy's address, port and all)
// reaches the console, and its session cookie opens the page.
func TestProxyPassesTheConsole(t *testing.T) {
	for _, kind := range proxyKinds {
		t.Run(kind.name, func(t *testing.T) {
			if _, err := exec.LookPath(kind.binary); err != nil {
				t.Skipf("%s is not installed (apt-get install %s)", kind.binary, kind.binary)
			}
			gw, _, _ := startGateway(t, map[string]string{"CURSOR_API_URL": "http://127.0.0.1:9/api/chat", "TLS_FINGERPRINT": "off",
				"API_KEY": "sk-proxy", "ADMIN_KEY": "adm-proxy-1"})
			port := freePort(t)
			kind.start(t, port, strings.TrimPrefix(gw, "http://"), "5s", false)
			base := fmt.Sprintf("http://127.0.0.1:%d", port)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

			req, err := http.NewRequest(http.MethodPost, base+"/console/login", strings.NewReader(url.Values{"admin_key": {"adm-proxy-1"}}.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the sign-in through %s: %s", kind.name, body)
			require.Len(t, resp.Cookies(), 1)

			req, err = http.NewRequest(http.MethodGet, base+"/console", nil)
			require.NoError(t, err)
			req.AddCookie(resp.Cookies()[0])
			resp, err = client.Do(req)
			require.NoError(t, err)
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, string(body), `id="traffic"`, "the console's page through %s", kind.name)
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
		})
	}
}
