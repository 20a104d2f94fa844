package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/gemini"
	"cursor2api/models"
	"cursor2api/utils"
)

// geminiDoor renders errors as Google's error body.
var geminiDoor = &door{name: "gemini", errorBody: func(e *models.Error) any { return gemini.ErrorBodyOf(e) }}

// geminiPrefix is where the Gemini door's routes live: the API version
// Gemini CLI and Google's SDKs call.
const geminiPrefix = "/v1beta/"

// geminiModels answers GET /v1beta/models: every public model, the
// -thinking ones included, in one page.
func (s *server) geminiModels(c *gin.Context) {
	c.JSON(http.StatusOK, gemini.ModelListOf(s.Catalog.Names()))
}

// geminiModel answers GET /v1beta/models/{model}, the SDKs' models.get:
// a name an alias maps is a model too.
func (s *server) geminiModel(c *gin.Context) {
	name := gemini.ModelName(c.Param("model"))
	c.Set(keyModel, name)
	public, err := s.resolveModel(name)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	c.JSON(http.StatusOK, gemini.ModelOf(name, strings.HasSuffix(public, models.ThinkingSuffix)))
}

// geminiCall serves POST /v1beta/models/{model}:{method}, the method
// being generateContent, streamGenerateContent or countTokens.
func (s *server) geminiCall(c *gin.Context) {
	name, method, _ := strings.Cut(c.Param("model"), ":")
	name = gemini.ModelName(name)
	c.Set(keyModel, name)
	switch method {
	case "generateContent":
		s.generateContent(c, name, false)
	case "streamGenerateContent":
		s.generateContent(c, name, true)
	case "countTokens":
		s.geminiCountTokens(c, name)
	default:
		writeError(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: fmt.Sprintf("no method %q on models/%s: this gateway serves :generateContent, :streamGenerateContent and :countTokens",
				utils.Clip(method, utils.QuoteLen), utils.Clip(name, utils.QuoteLen))})
	}
}

// generateContent is the Gemini door's answer, streamed (with alt=sse
// as events, else as one JSON array) or whole.
func (s *server) generateContent(c *gin.Context, name string, stream bool) {
	var wire gemini.GenerateContentRequest
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	sse := stream && c.Query("alt") == "sse"
	req, err := gemini.ToRequest(&wire, name, sse)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	if _, err := s.resolveModel(name); err != nil {
		writeError(c, asError(err))
		return
	}
	prepared, ok := s.prepare(c, req)
	if !ok {
		return
	}
	// Thought parts only when the request asked for them, whatever
	// EXPOSE_THINKING says for the other doors.
	thoughts := req.ShowThinking
	id := gemini.NewResponseID()
	if sse {
		s.stream(c, prepared, gemini.NewStreamWriter(s.eventStream(c, gemini.NoPing), id, name, thoughts))
		return
	}
	s.complete(c, prepared, func(ans *models.Answer) any {
		resp := gemini.FromAnswer(id, name, ans, thoughts)
		if stream {
			// streamGenerateContent without alt=sse answers a JSON array
			// of responses; the whole answer is one.
			return []gemini.Response{resp}
		}
		return resp
	})
}

// geminiCountTokens answers :countTokens with an estimate of the
// request's input tokens (cl100k_base, as count_tokens counts).
func (s *server) geminiCountTokens(c *gin.Context, name string) {
	var wire gemini.CountTokensRequest
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	body := &wire.GenerateContentRequest
	if wire.Whole != nil {
		body = wire.Whole
	}
	req, err := gemini.ToRequest(body, name, false)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	if _, err := s.resolveModel(name); err != nil {
		writeError(c, asError(err))
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
	n, err := s.tokens.BPETokens(c.Request.Context(), text.String())
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	c.JSON(http.StatusOK, gemini.TokenCount{TotalTokens: n})
}
