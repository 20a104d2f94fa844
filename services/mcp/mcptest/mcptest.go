// Package mcptest is a real MCP server for tests, made with the official
// SDK, over stdio (Build) and streamable HTTP (Handler). Its tools are echo,
// add, fail, huge, hang, crash (stdio only), pid and spawn (a sleeping
// grandchild, for process-group checks). Hostile misbehaves on purpose.
package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"cursor2api/utils/gobuild"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type hugeIn struct {
	N int `json:"n" jsonschema:"how many bytes"`
}

type noIn struct{}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer returns the test server; stdio enables crash.
func NewServer(stdio bool) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers."}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(in.A + in.B)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("the disk is on fire")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "huge", Description: "Return n bytes."}, func(_ context.Context, _ *sdk.CallToolRequest, in hugeIn) (*sdk.CallToolResult, any, error) {
		return text(strings.Repeat("x", in.N)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ noIn) (*sdk.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Minute):
			return text("late"), nil, nil
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	if stdio {
		sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Dies mid-call."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
		sdk.AddTool(s, &sdk.Tool{Name: "spawn", Description: "Starts a grandchild that sleeps; returns its pid."}, func(context.Context, *sdk.CallToolRequest, noIn) (*sdk.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go cmd.Wait()
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})
	}
	return s
}

// Handler serves the test server over streamable HTTP.
func Handler() http.Handler {
	s := NewServer(false)
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// Build compiles the stdio server into a temporary directory of t and
// returns its path.
func Build(t testing.TB) string {
	t.Helper()
	return gobuild.ForTest(t, BuildTo)
}

// BuildTo compiles the stdio server into dir, for a TestMain.
func BuildTo(dir string) (string, error) {
	bin, err := gobuild.Beside(filepath.Join("..", "testdata", "mcpserver"), dir, "mcpserver")
	if err != nil {
		return "", fmt.Errorf("mcptest: building the server: %w", err)
	}
	return bin, nil
}

// Alive reports whether a process with pid exists (and is not a zombie).
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the state follows the command in parentheses
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
