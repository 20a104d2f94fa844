package anthropic

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/utils"
)

// Door is the Anthropic Messages door.
var Door = door.New("anthropic", ErrorBodyOf)

// Prefix is where the door's routes live.
const Prefix = "/v1/messages"

// Speaks reports whether a request on a route the doors share speaks the
// Anthropic API: every Anthropic client sends anthropic-version.
func Speaks(r *http.Request) bool { return r.Header.Get("anthropic-version") != "" }

// Handler serves the Messages API.
type Handler struct {
	Kit    *door.Kit
	Tokens *TokenCounter
}

// Routes adds the door's routes to g (at Prefix).
func (h Handler) Routes(g gin.IRoutes) {
	g.POST("", h.Messages)
	g.POST("/count_tokens", h.CountTokens)
}

// Messages is POST /v1/messages (the ?beta=true Claude Code adds changes
// nothing).
func (h Handler) Messages(c *gin.Context) {
	var wire MessagesRequest
	req, ok := h.Kit.Decode(c, &wire)
	if !ok {
		return
	}
	asked := req.Model
	var err error
	if req.Model, err = h.Kit.ResolveModel(req.Model); err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	if req.Model != asked {
		h.Kit.Logger.Debug("model alias", "request_id", door.RequestID(c), "asked", utils.Clip(asked, utils.QuoteLen), "model", req.Model)
	}
	prepared, ok := h.Kit.Prepare(c, req)
	if !ok {
		return
	}
	id := NewMessageID()
	if req.Stream {
		h.Kit.Stream(c, prepared, NewStreamWriter(door.EventStream(c, Ping), id, asked, prepared.EstimatedInputTokens()))
		return
	}
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any { return FromAnswer(id, asked, ans) })
}

// CountTokens is POST /v1/messages/count_tokens: an estimate of the
// request's input tokens that errs on the high side.
func (h Handler) CountTokens(c *gin.Context) {
	var wire MessagesRequest
	req, ok := h.Kit.Decode(c, &wire)
	if !ok {
		return
	}
	// What the model is given: deferred tools no reference loaded are not.
	wire.Tools = offeredWire(wire.Tools, chat.OfferedTools(req))
	if _, err := h.Kit.ResolveModel(wire.Model); err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	n, err := h.Tokens.Count(c.Request.Context(), &wire)
	if err != nil {
		h.Kit.Fail(c, err, nil)
		return
	}
	c.JSON(http.StatusOK, TokenCount{InputTokens: n})
}

// offeredWire is the tools of in that offered names.
func offeredWire(in []Tool, offered []models.Tool) []Tool {
	if len(offered) == len(in) {
		return in
	}
	names := make(map[string]bool, len(offered))
	for _, t := range offered {
		names[t.Name] = true
	}
	out := make([]Tool, 0, len(offered))
	for _, t := range in {
		if names[t.Name] {
			out = append(out, t)
		}
	}
	return out
}
