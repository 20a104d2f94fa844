// Package doctor is `cursor2api doctor`: it runs the web chat's handshake
// step by step against the configured upstream (the checkpoint, the
// cookie, the challenge script, x-is-human, the model list, a one-token
// chat, and the format drift they met) and says what passed, what failed and what to set. Steps are
// values, so that another step (an in-process checkpoint solver) can be
// put in the list without changing the others.
package doctor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"cursor2api/config"
	"cursor2api/services"
)

// Outcome is how a step went.
type Outcome int

const (
	// Pass: the step works.
	Pass Outcome = iota
	// Skip: the step does not apply to this configuration.
	Skip
	// Warn: the step failed, but the gateway goes on without it (the
	// x-is-human value, which the upstream no longer checks).
	Warn
	// Fail: requests will fail until Fix is done.
	Fail
)

func (o Outcome) String() string {
	switch o {
	case Pass:
		return "ok"
	case Skip:
		return "skip"
	case Warn:
		return "warn"
	}
	return "FAIL"
}

// Result is what a step found.
type Result struct {
	Outcome Outcome
	// Detail says what was seen.
	Detail string
	// Fix says what to set, when something is wrong.
	Fix string
}

// Step is one part of the handshake.
type Step struct {
	// Name is what the report calls the step.
	Name string
	// Run checks the step. ctx bounds it; earlier steps' findings are in s.
	Run func(ctx context.Context, s *State) Result
}

// State is what the steps share: the configuration, the web chat it
// wires, and what earlier steps found.
type State struct {
	Config *config.Config
	// WebChat is the web chat alone, as the gateway wires it.
	WebChat *services.WebChat
	// Script and ScriptURL are the challenge script the script step
	// fetched ("" when it did not).
	Script, ScriptURL string
	// Allowed are the upstream ids the model step learned.
	Allowed []string
}

// NewState wires the web chat cfg describes, whatever BACKEND says: the
// handshake is the web chat's. Nothing else of the gateway is built.
func NewState(cfg *config.Config, logger *slog.Logger) (*State, error) {
	web := *cfg
	web.Backend = "web"
	w, err := services.NewWebChat(&web, logger)
	if err != nil {
		return nil, err
	}
	return &State{Config: &web, WebChat: w}, nil
}

// Steps is the handshake in the order a browser goes through it, then
// Drift: what the others met of the upstream's format that this version
// does not know. A checkpoint solver's step goes before Checkpoint (or in
// its place): slices.Insert(doctor.Steps(), 0, solverStep).
func Steps() []Step {
	return []Step{Checkpoint(), Cookie(), Script(), XIsHuman(), Models(), Chat(), Drift()}
}

// Run runs steps in order, each within budget, and writes one line per
// step (and what to set under it) to w. It returns the exit status: 0
// when no step failed, 1 when one did. Warnings do not fail the run.
func Run(ctx context.Context, w io.Writer, s *State, steps []Step, budget time.Duration) int {
	status := 0
	for _, step := range steps {
		sctx, cancel := context.WithTimeout(ctx, budget)
		start := time.Now()
		r := step.Run(sctx, s)
		cancel()
		fmt.Fprintf(w, "%-6s %-16s %s (%s)\n", "["+r.Outcome.String()+"]", step.Name, r.Detail, time.Since(start).Round(time.Millisecond))
		if r.Fix != "" {
			fmt.Fprintf(w, "%6s fix: %s\n", "", r.Fix)
		}
		if r.Outcome == Fail {
			status = 1
		}
	}
	if status == 0 {
		fmt.Fprintln(w, "every step passed: the gateway can reach the web chat")
	} else {
		fmt.Fprintln(w, "a step failed: set what its fix says and run `cursor2api doctor` again")
	}
	return status
}
