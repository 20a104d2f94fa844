package gemini

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/utils"
)

// Door is the Gemini door.
var Door = door.New("gemini", ErrorBodyOf)

// Prefix is the API version Gemini CLI and Google's SDKs call: every
// route under it is the door's.
const Prefix = "/v1beta/"

// Handler serves the Gemini API's models routes.
type Handler struct {
	Kit *door.Kit
	// CountTokens counts a text's tokens for :countTokens.
	CountTokens func(ctx context.Context, text string) (int, error)
}

// Routes adds the door's routes to g (at Prefix).
func (h Handler) Routes(g gin.IRoutes) {
	g.GET("models", h.Models)
	g.GET("models/:model", h.Model)
	g.POST("models/:model", h.Call)
}

// Models answers GET /v1beta/models: every public model, the -thinking
// ones included, in one page.
func (h Handler) Models(c *gin.Context) {
	c.JSON(http.StatusOK, ModelListOf(h.Kit.Catalog.Names()))
}

// Model answers GET /v1beta/models/{model}, the SDKs' models.get: a name
// an alias maps is a model too.
func (h Handler) Model(c *gin.Context) {
	name := ModelName(c.Param("model"))
	door.SetModel(c, name)
	public, err := h.Kit.ResolveModel(name)
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	c.JSON(http.StatusOK, ModelOf(name, strings.HasSuffix(public, models.ThinkingSuffix)))
}

// Call serves POST /v1beta/models/{model}:{method}, the method being
// generateContent, streamGenerateContent or countTokens.
func (h Handler) Call(c *gin.Context) {
	name, method, _ := strings.Cut(c.Param("model"), ":")
	name = ModelName(name)
	door.SetModel(c, name)
	switch method {
	case "generateContent":
		h.generate(c, name, false)
	case "streamGenerateContent":
		h.generate(c, name, true)
	case "countTokens":
		h.countTokens(c, name)
	default:
		door.WriteError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: fmt.Sprintf("no method %q on models/%s: this gateway serves :generateContent, :streamGenerateContent and :countTokens",
				utils.Clip(method, utils.QuoteLen), utils.Clip(name, utils.QuoteLen))})
	}
}

// generate is the door's answer, streamed (with alt=sse as events, else
// as one JSON array) or whole.
func (h Handler) generate(c *gin.Context, name string, stream bool) {
	var wire GenerateContentRequest
	if apiErr := h.Kit.ReadJSON(c, &wire); apiErr != nil {
		door.WriteError(c, apiErr)
		return
	}
	sse := stream && c.Query("alt") == "sse"
	req, ok := h.convert(c, &wire, name, sse)
	if !ok {
		return
	}
	prepared, ok := h.Kit.Prepare(c, req)
	if !ok {
		return
	}
	// Thought parts only when the request asked for them, whatever
	// EXPOSE_THINKING says for the other doors.
	thoughts := req.ShowThinking
	id := NewResponseID()
	if sse {
		h.Kit.Stream(c, prepared, NewStreamWriter(door.EventStream(c, NoPing), id, name, thoughts))
		return
	}
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any {
		resp := FromAnswer(id, name, ans, thoughts)
		if stream {
			// streamGenerateContent without alt=sse answers a JSON array
			// of responses; the whole answer is one.
			return []Response{resp}
		}
		return resp
	})
}

// convert converts a request body for the model name (ToRequest) and
// checks the name; on false the error is answered.
func (h Handler) convert(c *gin.Context, body *GenerateContentRequest, name string, sse bool) (*models.Request, bool) {
	req, err := ToRequest(body, name, sse)
	if err == nil {
		_, err = h.Kit.ResolveModel(name)
	}
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return nil, false
	}
	return req, true
}

// countTokens answers :countTokens with an estimate of the request's
// input tokens (cl100k_base, as the Anthropic door counts).
func (h Handler) countTokens(c *gin.Context, name string) {
	var wire CountTokensRequest
	if apiErr := h.Kit.ReadJSON(c, &wire); apiErr != nil {
		door.WriteError(c, apiErr)
		return
	}
	body := &wire.GenerateContentRequest
	if wire.Whole != nil {
		body = wire.Whole
	}
	req, ok := h.convert(c, body, name, false)
	if !ok {
		return
	}
	var text strings.Builder
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			text.WriteString(b.Text)
			text.WriteString(b.Name)
			text.WriteString(b.Arguments)
			text.WriteByte('\n')
		}
	}
	for _, t := range req.Tools {
		text.WriteString(t.Name)
		text.WriteString(t.Description)
		text.Write(t.Parameters)
		text.WriteByte('\n')
	}
	n, err := h.CountTokens(c.Request.Context(), text.String())
	if err != nil {
		h.Kit.Fail(c, err, nil)
		return
	}
	c.JSON(http.StatusOK, TokenCount{TotalTokens: n})
}
