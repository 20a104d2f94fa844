package handlers

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// Regression tests of the holes a hostile-input probe found (issue 18).

func TestGuardHostAllowList(t *testing.T) {
	t.Run("loopback default", func(t *testing.T) {
		s := newStack(t, nil, script(t, []string{"hello"}))
		for _, host := range []string{"localhost", "LOCALHOST:8002", "127.0.0.1:9", "[::1]:8002"} {
			r := s.doHost(t, host, http.MethodGet, "/v1/models", "")
			assert.Equal(t, http.StatusOK, r.status, "host %s: %s", host, r.body)
		}
		// A rebinding page on the attacker's name that resolves to 127.0.0.1.
		before := len(s.up.Requests())
		r := s.doHost(t, "attacker.example:8002", http.MethodPost, "/v1/chat/completions", userHi)
		assertAPIError(t, r, http.StatusForbidden, "permission_error", "", "host_not_allowed", "ALLOWED_HOSTS", "attacker.example")
		assert.Len(t, s.up.Requests(), before)
	})
	t.Run("configured", func(t *testing.T) {
		s := newStack(t, map[string]string{"ALLOWED_HOSTS": "gw.example,*.corp.example"}, script(t, []string{"hello"}))
		for host, ok := range map[string]bool{"gw.example": true, "api.corp.example:443": true, "corp.example": false, "localhost": false, "gw.example.attacker": false} {
			r := s.doHost(t, host, http.MethodGet, "/health", "")
			assert.Equal(t, ok, r.status == http.StatusOK, "host %s: %d", host, r.status)
		}
	})
	t.Run("not loopback", func(t *testing.T) {
		s := newStack(t, map[string]string{"HOST": "0.0.0.0"}, script(t, []string{"hello"}))
		r := s.doHost(t, "anything.example", http.MethodGet, "/health", "")
		assert.Equal(t, http.StatusOK, r.status, "no host check by default beyond loopback")
	})
}

func TestGuardContentType(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"hello"}))
	cases := []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/vnd.api+json", true},
		{"text/plain", false},
		{"text/plain;charset=UTF-8", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"", false},
		{"application/jsonp", false},
	}
	for _, tc := range cases {
		t.Run(tc.contentType, func(t *testing.T) {
			before := len(s.up.Requests())
			req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(userHi))
			require.NoError(t, err)
			req.Header.Set("Content-Type", tc.contentType)
			if tc.contentType == "" {
				req.Header["Content-Type"] = nil
			}
			resp, err := s.Client().Do(req)
			require.NoError(t, err)
			r := readReply(t, resp)
			if tc.ok {
				assert.Equal(t, http.StatusOK, r.status, r.body)
				return
			}
			assertAPIError(t, r, http.StatusUnsupportedMediaType, "invalid_request_error", "", "unsupported_media_type", "Content-Type: application/json")
			assert.Len(t, s.up.Requests(), before, "a refused body never reaches the upstream")
		})
	}
}

func TestGuardCORS(t *testing.T) {
	s := newStack(t, map[string]string{"ALLOWED_ORIGINS": "http://app.example:3000"}, script(t, []string{"hello"}))

	t.Run("preflight of an allowed origin", func(t *testing.T) {
		r := s.do(t, http.MethodOptions, "/v1/chat/completions", "",
			"Origin", "http://app.example:3000", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
		assert.Equal(t, http.StatusNoContent, r.status, r.body)
		assert.Equal(t, "http://app.example:3000", r.header.Get("Access-Control-Allow-Origin"))
		assert.Contains(t, r.header.Get("Access-Control-Allow-Methods"), "POST")
		assert.Equal(t, "authorization,content-type", r.header.Get("Access-Control-Allow-Headers"))
		assert.Contains(t, r.header.Values("Vary"), "Origin")
	})
	t.Run("request of an allowed origin", func(t *testing.T) {
		r := s.chat(t, userHi, "Origin", "http://app.example:3000")
		assert.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "http://app.example:3000", r.header.Get("Access-Control-Allow-Origin"))
	})
	t.Run("other origins", func(t *testing.T) {
		before := len(s.up.Requests())
		for _, origin := range []string{"http://evil.example", "http://app.example:3001", "https://app.example:3000", "null"} {
			r := s.do(t, http.MethodOptions, "/v1/chat/completions", "", "Origin", origin, "Access-Control-Request-Method", "POST")
			assertAPIError(t, r, http.StatusForbidden, "permission_error", "", "origin_not_allowed", "ALLOWED_ORIGINS")
			assert.Empty(t, r.header.Get("Access-Control-Allow-Origin"))
			r = s.chat(t, userHi, "Origin", origin)
			assertAPIError(t, r, http.StatusForbidden, "permission_error", "", "origin_not_allowed", "ALLOWED_ORIGINS")
		}
		assert.Len(t, s.up.Requests(), before)
	})
	t.Run("same origin", func(t *testing.T) {
		r := s.chat(t, userHi, "Origin", s.URL)
		assert.Equal(t, http.StatusOK, r.status, r.body)
	})
	t.Run("no origin is allowed by default", func(t *testing.T) {
		closed := newStack(t, nil, script(t, []string{"hello"}))
		r := closed.chat(t, userHi, "Origin", "http://app.example:3000")
		assert.Equal(t, http.StatusForbidden, r.status)
	})
}

func TestTrailingSlashIsServed(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"hello"}))
	r := s.do(t, http.MethodPost, "/v1/chat/completions/", userHi)
	require.Equal(t, http.StatusOK, r.status, "not a redirect with an empty body: %s", r.body)
	assert.Equal(t, "hello", gjson.Get(r.body, "choices.0.message.content").String())
	r = s.do(t, http.MethodGet, "/v1/models//", "")
	assert.Equal(t, http.StatusOK, r.status, r.body)
	r = s.do(t, http.MethodGet, "/v1/nothing/", "")
	assertAPIError(t, r, http.StatusNotFound, "invalid_request_error", "", "not_found", "/v1/chat/completions")
}

func TestClientStringsAreClipped(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"hello"}))
	huge := strings.Repeat("m", 1<<20)
	r := s.chat(t, `{"model":"`+huge+`","messages":[{"role":"user","content":"hi"}]}`)
	assertAPIError(t, r, http.StatusNotFound, "invalid_request_error", "model", "model_not_found")
	assert.Less(t, len(r.body), 2048, "the 404 does not echo the whole model name")
	r = s.do(t, http.MethodGet, "/"+huge[:60000], "")
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Less(t, len(r.body), 2048, "nor a whole path")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"`+huge+`","content":"hi"}]}`)
	assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", "messages[0].role", "")
	assert.Less(t, len(r.body), 2048, "nor a whole role")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tool_choice":"`+huge+`"}`)
	assert.Less(t, len(r.body), 2048, "nor a whole tool_choice")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"`+huge+`","function":{"name":"f"}}]}`)
	assert.Less(t, len(r.body), 2048, "nor a whole tool type")
	r = s.chat(t, `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"`+huge+`"}}]}`)
	assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", "tools[0].function.name", "")
	assert.Less(t, len(r.body), 2048, "nor a whole tool name")
	for _, line := range strings.Split(s.logs.String(), "\n") {
		assert.Less(t, len(line), 4096, "a log line of bounded length: %.200s", line)
	}
}

func TestAuthMessagesArePrecise(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "key-one"}, script(t, []string{"hello"}))
	cases := []struct {
		name, header, code, hint string
	}{
		{"basic", "Basic a2V5LW9uZQ==", "unsupported_auth_scheme", `"Basic"`},
		{"token scheme", "Token key-one", "unsupported_auth_scheme", `"Token"`},
		{"no scheme", "key-one", "malformed_authorization", "no scheme"},
		{"bearer alone", "Bearer", "missing_api_key", "holds no key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, http.MethodGet, "/v1/models", "", "Authorization", tc.header)
			assertAPIError(t, r, http.StatusUnauthorized, "authentication_error", "", tc.code, tc.hint, "Authorization: Bearer")
			assert.NotContains(t, r.body, "a2V5LW9uZQ", "the credential is never echoed")
		})
	}
	r := s.do(t, http.MethodGet, "/v1/models", "", "Authorization", "Bearer\tkey-one")
	assert.Equal(t, http.StatusOK, r.status, "a tab separates the scheme as well: %s", r.body)
	r = s.do(t, http.MethodGet, "/v1/models", "", "Authorization", "BEARER   key-one ")
	assert.Equal(t, http.StatusOK, r.status, r.body)
}

// TestAuthNeverLogsTheCredential sends a secret in every wrong place of
// the auth headers, to the doors and to the admin endpoint, and finds no
// eight bytes of it in the log or the answer.
func TestAuthNeverLogsTheCredential(t *testing.T) {
	s := newStack(t, map[string]string{"API_KEY": "key-one", "ADMIN_KEY": "admin-key-one"}, script(t, []string{"hello"}))
	const secret = "sk-SeCrEt0123456789abcdef"
	headers := [][]string{
		{"Authorization", secret + " Bearer"},              // the key before the scheme
		{"Authorization", secret + " " + secret},           // twice, no scheme
		{"Authorization", secret},                          // no scheme at all
		{"Authorization", "Bearer:" + secret},              // a colon for the space
		{"Authorization", "Bearer " + secret},              // a wrong key
		{"Authorization", "Basic " + secret},               // another scheme
		{"Authorization", secret[:12] + " " + secret[12:]}, // a space inside the key
		{"X-Api-Key", secret},
	}
	for _, h := range headers {
		for _, path := range []string{"/v1/models", "/v1/organization/usage/completions"} {
			r := s.do(t, http.MethodGet, path, "", h...)
			assert.Equal(t, http.StatusUnauthorized, r.status, "%s %q: %s", path, h[1], r.body)
			for i := 0; i+8 <= len(secret); i++ {
				assert.NotContains(t, r.body, secret[i:i+8], "%s %q: the answer", path, h[1])
			}
		}
	}
	logs := s.logs.String()
	require.Equal(t, 2*len(headers), strings.Count(logs, "status=401"), "every refusal is in the log")
	for i := 0; i+8 <= len(secret); i++ {
		require.NotContains(t, logs, secret[i:i+8], "the log holds part of the credential")
	}
}

func TestParamPathsHaveIndexes(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"never sent"}))
	cases := []struct {
		name, body, param string
	}{
		{"role of the second message", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"hi"},{"role":7,"content":"x"}]}`, "messages[1].role"},
		{"content", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{"content part", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"a"},7]}]}`, "messages[1].content"},
		{"tool call name", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}},{"id":"d","function":{"name":3}}]}]}`, "messages[1].tool_calls[1].function.name"},
		{"tool name", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function","function":{"name":["f"]}}]}`, "tools[0].function.name"},
		{"top-level field", `{"model":5,"messages":[{"role":"user","content":"a"}]}`, "model"},
		{"validation error", `{"model":"claude-sonnet-4.6","messages":[{"role":"user","content":"a"},{"role":"robot","content":"x"}]}`, "messages[1].role"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := s.chat(t, tc.body)
			assertAPIError(t, r, http.StatusBadRequest, "invalid_request_error", tc.param, "", tc.param)
		})
	}
	assert.Empty(t, s.up.Requests())
}

func TestBodyReadDeadline(t *testing.T) {
	s := newStack(t, map[string]string{"BODY_READ_TIMEOUT": "0.3"}, script(t, []string{"hello"}))
	conn, err := net.Dial("tcp", s.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	// A million bytes announced, one sent: a slow-body attack.
	_, err = conn.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second))) // a bound for a broken gateway, not a timing
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the gateway answers instead of waiting forever")
	r := readReply(t, resp)
	assertAPIError(t, r, http.StatusRequestTimeout, "invalid_request_error", "", "request_timeout", "BODY_READ_TIMEOUT")
	assert.Empty(t, s.up.Requests())

	t.Run("a long answer outlives the body deadline", func(t *testing.T) {
		slow := newStack(t, map[string]string{"BODY_READ_TIMEOUT": "0.2"}, paced([][]string{{"a", "b", "c", "d"}}, 150*time.Millisecond))
		r := slow.chat(t, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		out := checkStream(t, r, "claude-sonnet-4.6")
		assert.Equal(t, "abcd", out.Text)
		assert.Nil(t, out.Error)
	})
}

// readReply reads a whole response.
func readReply(t testing.TB, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	_, err := bufio.NewReader(resp.Body).WriteTo(&b)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b.String()}
}

// doHost sends a request with the given Host header (which net/http
// takes from Request.Host, never from the header map).
func (s *stack) doHost(t testing.TB, host, method, path, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	return readReply(t, resp)
}
