package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// mcpMetrics count the calls the gateway runs on MCP servers.
type mcpMetrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func newMCPMetrics(reg *prometheus.Registry) mcpMetrics {
	m := mcpMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "mcp_calls_total",
			Help: "Calls of MCP tools the gateway ran, by server, tool and outcome (ok, error, failed, timeout, cancelled, unavailable)."},
			[]string{"server", "tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "mcp_call_seconds",
			Help: "Duration of MCP tool calls, by server and tool.", Buckets: latencyBuckets},
			[]string{"server", "tool"}),
	}
	reg.MustRegister(m.calls, m.latency)
	return m
}

// RequestServer is the server and tool label of every call of a server a
// request named: those names are the client's, and each would be a new
// series.
const RequestServer = "request"

// MCPCall counts one MCP call (mcp.Options.Observe). The servers and
// tools are the configured ones, or RequestServer, so that their labels
// are bounded by the configuration.
func (m *Metrics) MCPCall(server, tool, outcome string, took time.Duration) {
	m.mcp.calls.WithLabelValues(server, tool, outcome).Inc()
	m.mcp.latency.WithLabelValues(server, tool).Observe(took.Seconds())
}
