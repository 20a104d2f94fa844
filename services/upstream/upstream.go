// Package upstream is the contract between the core and its back doors:
// a back door takes the conversation as plain text turns and a model id,
// and streams the model's reply back as text deltas. It knows nothing of
// tools, thinking tags or any client protocol; package chat does that work.
package upstream

import (
	"context"

	"cursor2api/models"
)

// Request is one conversation sent to a back door.
type Request struct {
	// Model is the back door's own model id.
	Model    string
	Messages []models.Turn
	// RequestID is the gateway's request id, for logs.
	RequestID string
}

// DeltaKind says what a Delta carries.
type DeltaKind uint8

const (
	DeltaText      DeltaKind = iota + 1 // the model's text, protocol markup included
	DeltaReasoning                      // native reasoning, when the model has it
)

// Delta is one piece of the streamed reply.
type Delta struct {
	Kind DeltaKind
	Text string
}

// Upstream streams a reply to a conversation. Stream calls fn for each
// delta in order and returns the usage the upstream reported (nil when it
// reported none). Its errors are *models.Error, or the context's error when
// the caller went away. When fn returns an error the stream stops, the
// upstream request is cancelled, and that error is returned. Stream
// returns only once nothing of the request is left running.
type Upstream interface {
	Stream(ctx context.Context, req Request, fn func(Delta) error) (*models.Usage, error)
}
