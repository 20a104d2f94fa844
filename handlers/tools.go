package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// listTools answers GET /v1/tools: the tools of the configured MCP servers
// that are connected, as the model is offered them.
func (s *server) listTools(c *gin.Context) {
	var data any = []any{}
	if s.Tools != nil {
		data = s.Tools()
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}
