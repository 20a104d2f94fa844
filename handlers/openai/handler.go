package openai

import (
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/utils"
)

// Door is the OpenAI chat-completions door. Its error shape is the
// gateway's default, for routes that belong to no other door.
var Door = door.New("openai", ErrorBodyOf)

// Handler serves POST /v1/chat/completions.
type Handler struct{ Kit *door.Kit }

// ChatCompletions is the chat-completions door.
func (h Handler) ChatCompletions(c *gin.Context) {
	var wire ChatRequest
	req, ok := h.Kit.Decode(c, &wire)
	if !ok {
		return
	}
	prepared, ok := h.Kit.Prepare(c, req)
	if !ok {
		return
	}
	// The answer names the model the client asked for, also when an
	// alias chose another, as the other doors do.
	id := "chatcmpl-" + utils.RandomString(utils.Alphanumerics, 24)
	created := time.Now().Unix()
	if req.Stream {
		h.Kit.Stream(c, prepared, NewStreamWriter(door.EventStream(c, nil), id, wire.Model, created, req.IncludeUsage))
		return
	}
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any { return FromAnswer(id, wire.Model, created, ans) })
}
