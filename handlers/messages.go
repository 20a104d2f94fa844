package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/anthropic"
	"cursor2api/models"
	"cursor2api/utils"
)

// anthropicDoor renders errors as Anthropic's error body.
var anthropicDoor = &door{name: "anthropic", errorBody: func(e *models.Error) any { return anthropic.ErrorBodyOf(e) }}

// isAnthropic reports whether a request speaks the Anthropic API: it is
// on /v1/messages, or it carries the anthropic-version header every
// Anthropic client sends.
func isAnthropic(c *gin.Context) bool {
	return c.GetHeader("anthropic-version") != "" || strings.HasPrefix(c.Request.URL.Path, "/v1/messages")
}

// useDoorByRequest marks the request as the Gemini door's under /v1beta/,
// the Anthropic door's when it speaks the Anthropic API, else as the
// OpenAI door's, for routes that
// both share (GET /v1/models) and for unknown routes.
func useDoorByRequest(c *gin.Context) {
	if strings.HasPrefix(c.Request.URL.Path, geminiPrefix) {
		c.Set(keyDoor, geminiDoor)
	} else if isAnthropic(c) {
		c.Set(keyDoor, anthropicDoor)
	} else {
		c.Set(keyDoor, openaiDoor)
	}
	c.Next()
}

// messages is the Anthropic Messages door (POST /v1/messages; the
// ?beta=true Claude Code adds changes nothing).
func (s *server) messages(c *gin.Context) {
	var wire anthropic.MessagesRequest
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	c.Set(keyModel, wire.Model)
	req, err := anthropic.ToRequest(&wire)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	asked := req.Model
	if req.Model, err = s.resolveModel(req.Model); err != nil {
		writeError(c, asError(err))
		return
	}
	if req.Model != asked {
		s.Logger.Debug("model alias", "request_id", c.GetString(keyRequestID), "asked", utils.Clip(asked, utils.QuoteLen), "model", req.Model)
	}
	prepared, ok := s.prepare(c, req)
	if !ok {
		return
	}
	id := anthropic.NewMessageID()
	if req.Stream {
		w := anthropic.NewStreamWriter(s.eventStream(c, anthropic.Ping), id, asked, prepared.EstimatedInputTokens())
		s.stream(c, prepared, w)
		return
	}
	s.complete(c, prepared, func(ans *models.Answer) any { return anthropic.FromAnswer(id, asked, ans) })
}

// countTokens answers POST /v1/messages/count_tokens with an estimate of
// the request's input tokens that errs on the high side.
func (s *server) countTokens(c *gin.Context) {
	var wire anthropic.MessagesRequest
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	c.Set(keyModel, wire.Model)
	if _, err := anthropic.ToRequest(&wire); err != nil {
		writeError(c, asError(err))
		return
	}
	if _, err := s.resolveModel(wire.Model); err != nil {
		writeError(c, asError(err))
		return
	}
	n, err := s.tokens.Count(c.Request.Context(), &wire)
	if err != nil {
		s.fail(c, err, nil)
		return
	}
	c.JSON(http.StatusOK, anthropic.TokenCount{InputTokens: n})
}

// resolveModel maps a model name through the aliases to a published
// model; an unknown name is a 404 that lists the choices.
func (s *server) resolveModel(name string) (string, error) {
	if name == "" {
		return "", models.InvalidRequest("model", "model is required: GET /v1/models lists the available ones")
	}
	if public, ok := s.Aliases.Resolve(name, s.Catalog); ok {
		return public, nil
	}
	return "", &models.Error{
		Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "model_not_found", Param: "model",
		Message: fmt.Sprintf("model: the model %q does not exist and no MODEL_ALIASES entry maps it; available models: %s",
			utils.Clip(name, utils.QuoteLen), strings.Join(s.Catalog.Names(), ", ")),
	}
}
