package mcp

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

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
		{"ip listed", []string{"127.0.0.1"}, srv.URL, ""},
		{"not listed", []string{"example.com"}, srv.URL, "does not list it"},
		{"name listed, resolves to loopback", []string{"localhost"}, "http://localhost" + port, "resolves to 127.0.0.1"},
		{"name and its loopback address listed", []string{"localhost", "127.0.0.1"}, "http://localhost" + port, ""},
		{"link-local literal", []string{"169.254.169.254"}, "http://169.254.169.254/", "could not be reached"}, // listed: allowed, then unreachable here
		{"link-local not listed by a wildcard", []string{"*.example.com"}, "http://169.254.169.254/", "does not list it"},
		{"wildcard needs a subdomain", []string{"*.example.com"}, "http://example.com/", "does not list it"},
		{"not http", []string{"127.0.0.1"}, "file:///etc/passwd", "http:// or https://"},
		{"bad label", []string{"127.0.0.1"}, srv.URL, "label"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			label := "calc"
			if tc.name == "bad label" {
				label = "a__b"
			}
			r := &Remote{Hosts: tc.hosts, Options: Options{ConnectTimeout: 2e9}}
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			defer cancel()
			b, err := r.Dial(ctx, []models.MCPServer{{Label: label, URL: tc.url, Param: "tools[0].server_url", AllowedTools: []string{"echo"}}})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				var re *RemoteError
				require.True(t, errors.As(err, &re))
				assert.Equal(t, "tools[0].server_url", re.Param)
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
