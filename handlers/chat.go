package handlers

import (
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/openai"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/utils"
)

// chatCompletions is the OpenAI chat-completions door.
func (s *server) chatCompletions(c *gin.Context) {
	var wire openai.ChatRequest
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	c.Set(keyModel, wire.Model)
	req, err := openai.ToRequest(&wire)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	prepared, ok := s.prepare(c, req)
	if !ok {
		return
	}
	// The answer names the model the client asked for, also when an
	// alias chose another, as the other doors do.
	id := "chatcmpl-" + utils.RandomString(utils.Alphanumerics, 24)
	created := time.Now().Unix()
	if req.Stream {
		s.stream(c, prepared, openai.NewStreamWriter(s.eventStream(c, nil), id, wire.Model, created, req.IncludeUsage))
		return
	}
	s.complete(c, prepared, func(ans *models.Answer) any { return openai.FromAnswer(id, wire.Model, created, ans) })
}

// answerStream is a door's encoder of a streamed answer.
type answerStream interface {
	chat.Sink
	// Started reports whether anything has been written, so that the
	// HTTP status can no longer change.
	Started() bool
	// Error ends a started stream with an error event.
	Error(e *models.Error) error
	// PingIfIdle writes a keepalive when nothing was written for idle.
	PingIfIdle(idle time.Duration) error
	// Hold and Release bracket writes that go out together (sse.Writer).
	Hold()
	Release()
}
