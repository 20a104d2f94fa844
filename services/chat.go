// Package services is the gateway's core, free of HTTP framework code: it
// validates a chat request, builds the upstream's text conversation with
// the tool protocol, talks to Cursor's web chat, and turns the reply back
// into text and tool calls through the utils parser.
package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"cursor2api/models"
	"cursor2api/utils"
)

// ChatSettings are the parts of the configuration the chat service uses.
type ChatSettings struct {
	Catalog          *models.Catalog
	MaxInputLength   int
	MaxToolCallBytes int
	// KiloToolStrict requires a tool call whenever the request has tools
	// and tool_choice is not "none".
	KiloToolStrict bool
	// ExposeThinking sends the thinking of -thinking models to the client
	// as reasoning_content instead of keeping it internal.
	ExposeThinking bool
	// ToolLoopMaxRepeat is how many identical tool rounds in a row are
	// tolerated before the gateway answers instead of the model (0: off).
	ToolLoopMaxRepeat int
}

// ChatService answers chat completions through an Upstream.
type ChatService struct {
	settings ChatSettings
	upstream Upstream
	logger   *slog.Logger
}

// NewChatService returns a ChatService.
func NewChatService(settings ChatSettings, upstream Upstream, logger *slog.Logger) *ChatService {
	return &ChatService{settings: settings, upstream: upstream, logger: logger}
}

// Prepared is a validated request, ready to be sent upstream.
type Prepared struct {
	RequestID string
	Model     models.ResolvedModel
	Trigger   string // empty when no tool is exposed
	Messages  []UpstreamMessage
	ToolNames []string
	// RequireCall is true when the turn must contain a tool call.
	RequireCall bool
	// SingleCall keeps only the first tool call (parallel_tool_calls: false).
	SingleCall   bool
	IncludeUsage bool
	// LoopStop, when set, is the answer to give without asking the
	// upstream: the history shows the agent repeating a tool call.
	LoopStop string
}

// Prepare validates the request and builds the upstream conversation. Its
// errors are *models.APIError naming the parameter to fix.
func (s *ChatService) Prepare(req *models.ChatRequest, requestID string) (*Prepared, error) {
	if req.Model == "" {
		return nil, models.InvalidRequest("model", "model is required: GET /v1/models lists the available ones")
	}
	model, ok := s.settings.Catalog.Resolve(req.Model)
	if !ok {
		return nil, &models.APIError{
			Status: 404, Type: models.ErrInvalidRequest, Code: "model_not_found", Param: "model",
			Message: fmt.Sprintf("the model %q does not exist; available models: %s", req.Model, strings.Join(s.settings.Catalog.Names(), ", ")),
		}
	}
	if err := ValidateTools(req.Tools); err != nil {
		return nil, err
	}
	choice, err := ParseToolChoice(req.ToolChoice, req.Tools)
	if err != nil {
		return nil, err
	}
	opts := PromptOptions{
		Tools:          req.Tools,
		Choice:         choice,
		Thinking:       model.Thinking,
		SingleCall:     req.ParallelToolCalls != nil && !*req.ParallelToolCalls,
		MaxInputLength: s.settings.MaxInputLength,
	}
	p := &Prepared{RequestID: requestID, Model: model, SingleCall: opts.SingleCall}
	if opts.toolsActive() {
		opts.Trigger = NewTrigger()
		p.Trigger = opts.Trigger
		for _, t := range req.Tools {
			p.ToolNames = append(p.ToolNames, t.Function.Name)
		}
		p.RequireCall = choice.Mode == ChoiceRequired || choice.Mode == ChoiceFunction || s.settings.KiloToolStrict
		if choice.Mode == ChoiceFunction {
			p.ToolNames = []string{choice.Name}
		}
	}
	if p.Messages, err = BuildConversation(req.Messages, opts); err != nil {
		return nil, err
	}
	p.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	p.LoopStop = DetectToolLoop(req.Messages, s.settings.ToolLoopMaxRepeat)
	return p, nil
}

// Sink receives a streamed answer.
type Sink interface {
	Text(text string) error
	Reasoning(text string) error
	ToolCall(id, name, arguments string) error
}

// Answer is a complete, non-streamed answer.
type Answer struct {
	Text string
	// Thinking is the reasoning to show, when ExposeThinking is on.
	Thinking  string
	ToolCalls []models.ToolCall
	Usage     models.Usage
	Retried   bool
}

// Stream sends the answer to sink as it arrives and returns its usage.
//
// When a tool call is required, visible text is held back until the turn's
// outcome is known: the first tool call releases it and the rest streams
// live; a turn that ends without a call is discarded and asked once more
// with a reminder, and that second turn is sent whatever it holds. The
// client sees one clean turn either way.
func (s *ChatService) Stream(ctx context.Context, p *Prepared, sink Sink) (models.Usage, error) {
	if p.LoopStop != "" {
		s.logger.Warn("tool loop stopped", "request_id", p.RequestID, "model", p.Model.Public)
		return loopUsage(p), sink.Text(p.LoopStop)
	}
	if !p.RequireCall {
		return s.streamTurn(ctx, p, p.Messages, sink)
	}
	first := &heldSink{sink: sink}
	usage, err := s.streamTurn(ctx, p, p.Messages, first)
	if err != nil || first.released {
		return usage, err
	}
	s.logger.Warn("required tool call missing, retrying once", "request_id", p.RequestID, "model", p.Model.Public, "stream", true)
	second := &heldSink{sink: sink}
	retryUsage, err := s.streamTurn(ctx, p, withReminder(p.Messages, p.Trigger), second)
	if err != nil {
		if ctx.Err() != nil || second.released {
			return usage, err
		}
		s.logger.Warn("retry failed, answering with the first reply", "request_id", p.RequestID, "error", err)
		return usage, first.release()
	}
	return addUsage(usage, retryUsage), second.release()
}

// streamTurn streams one upstream turn to sink.
func (s *ChatService) streamTurn(ctx context.Context, p *Prepared, msgs []UpstreamMessage, sink Sink) (models.Usage, error) {
	calls := 0
	return s.attempt(ctx, p, msgs, func(ev utils.Event) error {
		switch ev.Kind {
		case utils.EventText, utils.EventBadCall:
			return sink.Text(ev.Text)
		case utils.EventToolCall:
			if p.SingleCall && calls > 0 {
				return nil
			}
			calls++
			return sink.ToolCall(NewToolCallID(), ev.Name, ev.Arguments)
		case utils.EventThinking:
			if s.settings.ExposeThinking {
				return sink.Reasoning(ev.Text)
			}
		}
		return nil
	})
}

// heldSink holds text and reasoning back until the first tool call (or
// release), then passes everything straight on.
type heldSink struct {
	sink     Sink
	released bool
	held     []heldEvent
}

type heldEvent struct {
	reasoning bool
	text      string
}

func (h *heldSink) Text(text string) error {
	if h.released {
		return h.sink.Text(text)
	}
	h.held = append(h.held, heldEvent{text: text})
	return nil
}

func (h *heldSink) Reasoning(text string) error {
	if h.released {
		return h.sink.Reasoning(text)
	}
	h.held = append(h.held, heldEvent{reasoning: true, text: text})
	return nil
}

func (h *heldSink) ToolCall(id, name, arguments string) error {
	if err := h.release(); err != nil {
		return err
	}
	return h.sink.ToolCall(id, name, arguments)
}

// release sends what was held and switches to passing events straight on.
func (h *heldSink) release() error {
	if h.released {
		return nil
	}
	h.released = true
	for _, ev := range h.held {
		var err error
		if ev.reasoning {
			err = h.sink.Reasoning(ev.text)
		} else {
			err = h.sink.Text(ev.text)
		}
		if err != nil {
			return err
		}
	}
	h.held = nil
	return nil
}

// Complete collects the whole answer. When a tool call is required and the
// answer has none, it asks once more with a reminder, and returns that
// second answer whatever it holds.
func (s *ChatService) Complete(ctx context.Context, p *Prepared) (*Answer, error) {
	if p.LoopStop != "" {
		s.logger.Warn("tool loop stopped", "request_id", p.RequestID, "model", p.Model.Public)
		return &Answer{Text: p.LoopStop, Usage: loopUsage(p)}, nil
	}
	ans, err := s.collect(ctx, p, p.Messages)
	if err != nil {
		return nil, err
	}
	if !p.RequireCall || len(ans.ToolCalls) > 0 {
		return ans, nil
	}
	s.logger.Warn("required tool call missing, retrying once", "request_id", p.RequestID, "model", p.Model.Public)
	retry, err := s.collect(ctx, p, withReminder(p.Messages, p.Trigger))
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.logger.Warn("retry failed, answering with the first reply", "request_id", p.RequestID, "error", err)
		return ans, nil
	}
	retry.Retried = true
	retry.Usage = addUsage(ans.Usage, retry.Usage)
	return retry, nil
}

func (s *ChatService) collect(ctx context.Context, p *Prepared, msgs []UpstreamMessage) (*Answer, error) {
	var text, thinking strings.Builder
	ans := &Answer{}
	usage, err := s.attempt(ctx, p, msgs, func(ev utils.Event) error {
		switch ev.Kind {
		case utils.EventText, utils.EventBadCall:
			text.WriteString(ev.Text)
		case utils.EventThinking:
			thinking.WriteString(ev.Text)
		case utils.EventToolCall:
			if p.SingleCall && len(ans.ToolCalls) > 0 {
				return nil
			}
			ans.ToolCalls = append(ans.ToolCalls, models.ToolCall{
				ID: NewToolCallID(), Type: "function",
				Function: models.FunctionCall{Name: ev.Name, Arguments: ev.Arguments},
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ans.Text = text.String()
	if len(ans.ToolCalls) > 0 {
		ans.Text = strings.TrimSpace(ans.Text)
	}
	if s.settings.ExposeThinking {
		ans.Thinking = thinking.String()
	}
	ans.Usage = usage
	return ans, nil
}

// attempt runs one upstream request through a fresh parser.
func (s *ChatService) attempt(ctx context.Context, p *Prepared, msgs []UpstreamMessage, handle func(utils.Event) error) (models.Usage, error) {
	parser := utils.NewParser(utils.ParserOptions{
		Trigger:       p.Trigger,
		Thinking:      p.Model.Thinking,
		ToolNames:     p.ToolNames,
		MaxBuffered:   s.settings.MaxToolCallBytes,
		EndTurnAtCall: true,
	})
	outChars := 0
	deliver := func(events []utils.Event) error {
		for _, ev := range events {
			outChars += utf8.RuneCountInString(ev.Text) + len(ev.Arguments)
			if err := handle(ev); err != nil {
				return err
			}
		}
		return nil
	}
	promptChars := 0
	for _, m := range msgs {
		promptChars += utf8.RuneCountInString(m.Text)
	}
	reported, err := s.upstream.Stream(ctx, UpstreamRequest{Model: p.Model.Upstream, Messages: msgs, RequestID: p.RequestID}, func(d Delta) error {
		switch d.Kind {
		case DeltaText:
			if err := deliver(parser.Feed(d.Text)); err != nil {
				return err
			}
			if parser.Done() {
				return errTurnEnded // stop reading: the client runs the tool
			}
		case DeltaReasoning:
			if p.Model.Thinking {
				return deliver([]utils.Event{{Kind: utils.EventThinking, Text: d.Text}})
			}
		}
		return nil
	})
	if errors.Is(err, errTurnEnded) {
		s.logger.Debug("turn ended at its tool calls; upstream request cancelled", "request_id", p.RequestID)
		err, reported = nil, nil // the upstream's usage, if any, was never read
	}
	if err != nil {
		return models.Usage{}, err
	}
	if err := deliver(parser.Close()); err != nil {
		return models.Usage{}, err
	}
	if reported != nil && reported.TotalTokens > 0 {
		return *reported, nil
	}
	u := models.Usage{PromptTokens: estimateTokens(promptChars), CompletionTokens: estimateTokens(outChars)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u, nil
}

// addUsage sums the usage of two upstream turns.
func addUsage(a, b models.Usage) models.Usage {
	return models.Usage{
		PromptTokens:     a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens,
		TotalTokens:      a.TotalTokens + b.TotalTokens,
	}
}

// loopUsage estimates the usage of an answer the gateway gave itself.
func loopUsage(p *Prepared) models.Usage {
	out := estimateTokens(utf8.RuneCountInString(p.LoopStop))
	return models.Usage{CompletionTokens: out, TotalTokens: out}
}

// errTurnEnded stops the upstream stream once the turn's calls are complete.
var errTurnEnded = errors.New("turn ended at its tool calls")

// estimateTokens approximates a token count from characters (about four
// characters a token for English and code), for when the upstream reports
// no usage.
func estimateTokens(chars int) int { return (chars + 3) / 4 }

// withReminder returns a copy of msgs whose last user message ends with a
// firm reminder to call a tool.
func withReminder(msgs []UpstreamMessage, trigger string) []UpstreamMessage {
	out := append([]UpstreamMessage(nil), msgs...)
	note := fmt.Sprintf("Reminder: this reply MUST call a function. Start it with %s followed by an <invoke> block, as the system prompt describes.", trigger)
	if n := len(out); n > 0 && out[n-1].Role == "user" {
		out[n-1].Text += "\n\n" + note
		return out
	}
	return append(out, UpstreamMessage{Role: "user", Text: note})
}

// NewToolCallID returns an OpenAI-style tool call id.
func NewToolCallID() string { return "call_" + randomString(24) }

// IsClientGone reports whether err only means the caller went away.
func IsClientGone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
