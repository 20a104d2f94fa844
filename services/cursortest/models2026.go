package cursortest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// ModelGate plays the 2026 upstream's model rule: a request for a model
// outside its list is answered 400 {"error":"Invalid model. Allowed
// models: ..."}, whatever the reply function would say. The list can be
// changed while the fake runs, as the real one changed without notice.
// A fake without a gate accepts every model, as before 2026.
type ModelGate struct {
	mu      sync.Mutex
	allowed []string
}

// NewModelGate allows the given upstream ids (e.g. "google/gemini-3-flash").
func NewModelGate(allowed ...string) *ModelGate {
	return &ModelGate{allowed: slices.Clone(allowed)}
}

// Set replaces the allowed ids.
func (g *ModelGate) Set(allowed ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allowed = slices.Clone(allowed)
}

// Allowed returns the allowed ids.
func (g *ModelGate) Allowed() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.allowed)
}

// InvalidModel is the upstream's answer to a model outside allowed.
func InvalidModel(allowed []string) Response {
	body, _ := json.Marshal(map[string]string{"error": "Invalid model. Allowed models: " + strings.Join(allowed, ", ")})
	return Response{Status: http.StatusBadRequest, Header: map[string]string{"Content-Type": "application/json"}, Body: string(body)}
}

// Reply answers requests for an allowed model with next and the others
// with InvalidModel. next numbers only the requests it answers, from 0, so
// that a model probe does not shift a test's scripted replies.
func (g *ModelGate) Reply(next func(n int, req Request) Response) func(int, Request) Response {
	var mu sync.Mutex
	answered := 0
	return func(_ int, req Request) Response {
		allowed := g.Allowed()
		if !slices.Contains(allowed, req.Model) {
			return InvalidModel(allowed)
		}
		mu.Lock()
		n := answered
		answered++
		mu.Unlock()
		return next(n, req)
	}
}
