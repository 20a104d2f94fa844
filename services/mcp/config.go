// Package mcp is the gateway's bridge to MCP servers (MCP_SERVERS, in the
// {"mcpServers": {...}} shape of Claude Code and Cursor). It keeps a session
// to each, lists their tools as mcp__<server>__<tool> and runs calls with a
// timeout and a cap; it implements chat.ToolRunner, so the core knows no MCP.
package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"cursor2api/models"
)

// ServerConfig is one entry of "mcpServers": a command to run (stdio) or
// a URL to reach (streamable HTTP, or SSE when Type says "sse").
type ServerConfig struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Type is "stdio", "http" (streamable HTTP, falling back to SSE) or
	// "sse"; empty: from Command or URL.
	Type string `json:"type"`
	// Disabled leaves the server out (opencode's and Cursor's files have it).
	Disabled bool `json:"disabled"`

	// client, when set, reaches this server (a request's server, pinned
	// to the address its host was checked at).
	client *http.Client
	// only are the names of the tools to offer when filtered (a
	// request's allowed_tools: empty offers none).
	only     []string
	filtered bool
}

// stdio reports whether the server is a child process.
func (c ServerConfig) stdio() bool { return c.Command != "" }

// serverName is what a server may be called: its tools' names embed it.
var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ParseConfig reads MCP_SERVERS: inline JSON (starting with '{') or the
// path of a JSON file, in the {"mcpServers": {...}} shape.
func ParseConfig(value string) (map[string]ServerConfig, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	data := []byte(value)
	if !strings.HasPrefix(value, "{") {
		var err error
		if data, err = os.ReadFile(value); err != nil {
			return nil, fmt.Errorf("MCP_SERVERS: reading the file: %w", err)
		}
	}
	var file struct {
		Servers map[string]ServerConfig `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf(`MCP_SERVERS: not JSON of the shape {"mcpServers": {"name": {"command": ...} or {"url": ...}}}: %w`, err)
	}
	if file.Servers == nil {
		return nil, fmt.Errorf(`MCP_SERVERS: no "mcpServers" object; the shape is {"mcpServers": {"name": {"command": ...} or {"url": ...}}}`)
	}
	out := make(map[string]ServerConfig, len(file.Servers))
	for name, s := range file.Servers {
		if s.Disabled {
			continue
		}
		if !serverName.MatchString(name) || strings.Contains(name, "__") {
			return nil, fmt.Errorf("MCP_SERVERS: server name %q: use letters, digits, '-' and single '_' (at most 64), as it becomes part of its tools' names", name)
		}
		switch {
		case s.Command != "" && s.URL != "":
			return nil, fmt.Errorf("MCP_SERVERS: server %q has both command and url: give one", name)
		case s.Command == "" && s.URL == "":
			return nil, fmt.Errorf("MCP_SERVERS: server %q needs a command (stdio) or a url (streamable HTTP)", name)
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			return nil, fmt.Errorf("MCP_SERVERS: server %q: url must be http:// or https://", name)
		}
		switch s.Type {
		case "", "stdio", "http", "streamable-http", "streamableHttp", "sse", "local", "remote":
		default:
			return nil, fmt.Errorf("MCP_SERVERS: server %q: unknown type %q (stdio, http or sse)", name, s.Type)
		}
		out[name] = s
	}
	return out, nil
}

// CheckGlobs checks MCP_ALLOWED_TOOLS' patterns.
func CheckGlobs(globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("MCP_ALLOWED_TOOLS: bad pattern %q: %w", g, err)
		}
	}
	return nil
}

// allowed reports whether a tool's full name passes the globs (none: all).
func allowed(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// ToolName is the name a server's tool is offered under.
func ToolName(server, tool string) string { return models.MCPToolName(server, tool) }

// SplitName returns the server and tool of a name made by ToolName.
func SplitName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}

func sortedNames(m map[string]ServerConfig) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
