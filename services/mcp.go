package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"cursor2api/config"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/services/mcp"
	"cursor2api/services/metrics"
	"cursor2api/services/readiness"
)

// withMCP connects the gateway to MCP_SERVERS: the core offers and runs
// their tools, /ready shows them, the metrics count their calls. The
// servers connect when Serve starts the bridge.
func withMCP(cfg *config.Config, gw *Gateway, m *metrics.Metrics, ready *readiness.Tracker, logger *slog.Logger) error {
	callOptions := mcp.Options{
		CallTimeout:      cfg.MCPCallTimeout.Duration(),
		ConnectTimeout:   cfg.MCPConnectTimeout.Duration(),
		MaxResultBytes:   cfg.MCPMaxResultBytes,
		MaxResponseBytes: cfg.MCPMaxResponseBytes,
		MaxTools:         cfg.MCPMaxTools,
		Logger:           logger,
		Observe:          m.MCPCall,
	}
	if len(cfg.MCPRemoteHosts) > 0 {
		if err := mcp.ParseHosts(cfg.MCPRemoteHosts); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
		remote := callOptions
		// A request names its servers and their tools as it likes: one
		// label for all of them keeps the metrics' series bounded.
		remote.Observe = func(_, _, outcome string, took time.Duration) {
			m.MCPCall(metrics.RequestServer, metrics.RequestServer, outcome, took)
		}
		gw.Chat = gw.Chat.WithRemote(remoteRunners{&mcp.Remote{Hosts: cfg.MCPRemoteHosts, Options: remote, MaxServers: cfg.MCPMaxRequestServers}})
	}
	servers, err := mcp.ParseConfig(cfg.MCPServers)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if len(servers) == 0 || cfg.MCPTools == "off" {
		return nil
	}
	if err := mcp.CheckGlobs(cfg.MCPAllowedTools); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	opts := callOptions
	opts.Servers, opts.Allowed = servers, cfg.MCPAllowedTools
	bridge := mcp.New(opts)
	mode := chat.RunnerAlways
	if cfg.MCPTools == "when-no-client-tools" {
		mode = chat.RunnerWhenNoClientTools
	}
	gw.Chat = gw.Chat.WithRunner(bridge, mode, cfg.MCPMaxRounds)
	gw.MCP = bridge
	ready.MCP = func() any { return bridge.States() }
	return nil
}

// StartMCP connects the MCP servers in the background until ctx ends or
// StopMCP; nothing without MCP_SERVERS.
func (gw *Gateway) StartMCP(ctx context.Context) {
	if gw.MCP != nil {
		gw.MCP.Start(ctx)
	}
}

// StopMCP disconnects the MCP servers and ends their processes.
func (gw *Gateway) StopMCP() {
	if gw.MCP != nil {
		gw.MCP.Close()
	}
}

// MCPTools lists the MCP tools for GET /v1/tools; nil without MCP.
func (gw *Gateway) MCPTools() func() any {
	if gw.MCP == nil {
		return nil
	}
	return func() any { return gw.MCP.Catalog() }
}

// remoteRunners connect to a request's own MCP servers (chat.RemoteRunners).
type remoteRunners struct{ remote *mcp.Remote }

func (r remoteRunners) Connect(ctx context.Context, servers []models.MCPServer) (chat.ToolRunner, func(), error) {
	b, err := r.remote.Dial(ctx, servers)
	if err != nil {
		var re *mcp.RemoteError
		if !errors.As(err, &re) {
			return nil, nil, err
		}
		if re.Refused {
			return nil, nil, models.InvalidRequest(re.Param, "%s", re.Message)
		}
		return nil, nil, &models.Error{Status: http.StatusFailedDependency, Kind: models.KindInvalidRequest, Code: "mcp_server_unreachable", Param: re.Param, Message: re.Message}
	}
	var once sync.Once
	return b, func() { once.Do(b.Close) }, nil
}
