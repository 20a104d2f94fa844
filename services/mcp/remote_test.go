package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/mcp/mcptest"
)

func TestRemoteHosts(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler())
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	cases := []struct {
		name  string
		hosts []string
		url   string
		err   string // "" : connects
	}{
		{"ip listed, any port", []string{"127.0.0.1:*"}, srv.URL, ""},
		{"ip listed with its port", []string{"127.0.0.1" + port}, srv.URL, ""},
		{"bare ip: the scheme's default port only", []string{"127.0.0.1"}, srv.URL, "does not list it"},
		{"another port listed", []string{"127.0.0.1:1"}, srv.URL, "does not list it"},
		{"not listed", []string{"example.com"}, srv.URL, "does not list it"},
		{"name listed, resolves to loopback", []string{"localhost:*"}, "http://localhost" + port, "resolves to an address that is not public"},
		{"name and its loopback address listed", []string{"localhost:*", "127.0.0.1"}, "http://localhost" + port, ""},
		{"name and its loopback prefix listed", []string{"localhost:*", "127.0.0.0/8"}, "http://localhost" + port, ""},
		{"listed, nothing there", []string{"127.0.0.1:1"}, "http://127.0.0.1:1/", `the MCP server "calc" could not be connected: it did not answer as an MCP server`},
		{"link-local not listed by a wildcard", []string{"*.example.com"}, "http://169.254.169.254/", "does not list it"},
		{"wildcard needs a subdomain", []string{"*.example.com"}, "http://example.com/", "does not list it"},
		{"not http", []string{"127.0.0.1"}, "file:///etc/passwd", "http:// or https://"},
		{"bad label", []string{"127.0.0.1:*"}, srv.URL, "label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			label := "calc"
			if tc.name == "bad label" {
				label = "a__b"
			}
			r := &Remote{Hosts: tc.hosts, Options: Options{ConnectTimeout: 2e9}}
			require.NoError(t, ParseHosts(tc.hosts))
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			defer cancel()
			b, err := r.Dial(ctx, []models.MCPServer{{Label: label, URL: tc.url, Param: "tools[0].server_url", AllowedTools: []string{"echo"}}})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				var re *RemoteError
				require.True(t, errors.As(err, &re))
				assert.Equal(t, "tools[0].server_url", re.Param)
				assert.NotContains(t, re.Message, "connection refused", "no network detail for the client")
				return
			}
			require.NoError(t, err)
			defer b.Close()
			var names []string
			for _, tool := range b.Tools() {
				names = append(names, tool.Name)
			}
			assert.Equal(t, []string{"mcp__calc__echo"}, names, "allowed tools only")
			out, isErr := b.Run(ctx, "mcp__calc__echo", `{"text":"x"}`)
			assert.False(t, isErr)
			assert.Equal(t, "echo: x", out)
		})
	}
}

// TestRemoteFailuresLookAlike: whether nothing listens, nothing answers,
// TLS fails or the answer is not MCP, the client is told the same, so
// that the gateway cannot be used to scan ports; the log has the cause,
// with the URL cut to its scheme and host.
func TestRemoteFailuresLookAlike(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	silent := httptest.NewServer(&mcptest.Hostile{})
	defer silent.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>it works</html>")
	}))
	defer html.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	cases := map[string]string{
		"nothing listens":   closedURL + "/mcp?api_key=s3cret",
		"nothing answers":   silent.URL + "/hang-init?api_key=s3cret",
		"TLS to plain HTTP": strings.Replace(html.URL, "http://", "https://", 1) + "/mcp?api_key=s3cret",
		"an HTML page":      html.URL + "/mcp?api_key=s3cret",
		"404":               notFound.URL + "/mcp?api_key=s3cret",
	}
	var messages []string
	for name, u := range cases {
		t.Run(name, func(t *testing.T) {
			var log syncBuffer
			r := &Remote{Hosts: []string{"127.0.0.1", "127.0.0.1:*"}, Options: Options{ConnectTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&log, nil))}}
			_, err := r.Dial(context.Background(), []models.MCPServer{{Label: "probe", URL: u, Param: "p"}})
			require.Error(t, err)
			var re *RemoteError
			require.True(t, errors.As(err, &re))
			assert.False(t, re.Refused)
			messages = append(messages, re.Message)
			assert.Contains(t, log.String(), "could not be connected")
			assert.NotContains(t, log.String(), "s3cret", "the log shows no query string")
			assert.NotContains(t, log.String(), "/mcp", "the log shows no path")
		})
	}
	require.Len(t, messages, len(cases))
	for _, m := range messages {
		assert.Equal(t, `the MCP server "probe" could not be connected: it did not answer as an MCP server within the gateway's limits`, m)
	}
}

// TestRemoteAllowedToolsEmpty: allowed_tools [] offers no tool; absent
// offers all.
func TestRemoteAllowedToolsEmpty(t *testing.T) {
	srv := httptest.NewServer(mcptest.Handler())
	defer srv.Close()
	r := &Remote{Hosts: []string{"127.0.0.1", "127.0.0.1:*"}, Options: Options{ConnectTimeout: 5 * time.Second}}
	b, err := r.Dial(context.Background(), []models.MCPServer{
		{Label: "none", URL: srv.URL, AllowedTools: []string{}},
		{Label: "all", URL: srv.URL},
		{Label: "one", URL: srv.URL, AllowedTools: []string{"add"}},
	})
	require.NoError(t, err)
	defer b.Close()
	count := map[string]int{}
	for _, tool := range b.Tools() {
		server, _, _ := SplitName(tool.Name)
		count[server]++
	}
	assert.Zero(t, count["none"], "allowed_tools [] offers none")
	assert.Greater(t, count["all"], 3)
	assert.Equal(t, 1, count["one"])

	alone, err := r.Dial(context.Background(), []models.MCPServer{{Label: "none", URL: srv.URL, AllowedTools: []string{}}})
	require.NoError(t, err)
	defer alone.Close()
	assert.Empty(t, alone.Tools(), "allowed_tools [] offers none, also when no other server filters")
}
