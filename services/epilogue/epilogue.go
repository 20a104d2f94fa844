// Package epilogue holds what back doors leave for after the answer, run
// by the door's handler once the answer is written. It sits apart from
// the back-door contract so that the doors reach no back-door package.
package epilogue

import (
	"context"
	"sync"
)

// An Epilogue holds what back doors leave for after the answer; the door
// runs it once the client has every event, before the response ends. So a
// reply's tail is drained without delaying the last event, and its
// connection is pooled before the client's next request.
type Epilogue struct {
	mu   sync.Mutex
	fns  []func()
	done bool
}

type epilogueKey struct{}

// With returns a context that carries a new epilogue, and the epilogue,
// which the caller runs.
func With(ctx context.Context) (context.Context, *Epilogue) {
	e := &Epilogue{}
	return context.WithValue(ctx, epilogueKey{}, e), e
}

// AfterAnswer adds fn to the epilogue ctx carries. It reports false, and
// keeps nothing, when ctx carries none or it has run: the caller then
// does without it. fn must be bounded: the response's end waits for it.
func AfterAnswer(ctx context.Context, fn func()) bool {
	e, ok := ctx.Value(epilogueKey{}).(*Epilogue)
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return false
	}
	e.fns = append(e.fns, fn)
	return true
}

// Run runs what was added, in order, once.
func (e *Epilogue) Run() {
	e.mu.Lock()
	fns := e.fns
	e.fns, e.done = nil, true
	e.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
