package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
)

// readyTimeout bounds the back door's own readiness check.
const readyTimeout = 20 * time.Second

// ready answers /ready: 200 when the gateway should get traffic, else 503,
// with a JSON body saying why either way.
func (s *server) ready(c *gin.Context) {
	if s.Readiness == nil {
		c.JSON(http.StatusOK, gin.H{"ready": true})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	report := s.Readiness.Report(ctx)
	status := http.StatusOK
	if !report.Ready {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, report)
}

// countRequests counts every request of a door by door, model and status
// once it is answered. A model name outside the catalog is counted as
// "other", so that clients cannot grow the metric without bound.
func (s *server) countRequests(c *gin.Context) {
	c.Next()
	s.count(c)
}

// count counts an answered request (or WebSocket turn).
func (s *server) count(c *gin.Context) {
	status := c.Writer.Status()
	if v := c.GetInt(door.KeyStatus); v != 0 {
		status = v
	}
	s.Metrics.Request(door.Of(c).Name, s.kit.ModelLabel(c.GetString(door.KeyModel)), status)
	if id := c.GetString(door.KeyClient); id != "" && c.GetBool(door.KeyAnswer) {
		var tokens int64
		if u, ok := c.Value(door.KeyUsage).(models.Usage); ok {
			tokens = int64(u.InputTokens) + int64(u.OutputTokens)
		}
		s.Metrics.ClientRequest(c.GetString(door.KeyClientName), id, tokens)
	}
}

// listTools answers GET /v1/tools: the tools of the configured MCP servers
// that are connected, as the model is offered them.
func (s *server) listTools(c *gin.Context) {
	var data any = []any{}
	if s.Tools != nil {
		data = s.Tools()
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

// turn runs one turn of a WebSocket (serve, on its own context c) inside
// what the router runs around a request: the access line, the metrics
// and the usage record.
func (s *server) turn(c *gin.Context, serve func()) {
	start := time.Now()
	serve()
	s.countTokens(c)
	if s.Metrics != nil {
		s.count(c)
	}
	if s.Usage != nil {
		s.record(c)
	}
	logRequest(s.Logger, s.errors, c, start)
}
