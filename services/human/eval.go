// Package human obtains the x-is-human header Cursor's web chat demands by
// running its challenge script in goja inside a small browser-like
// environment; it caches and refreshes the answer, falling back to a
// configured value when the script cannot run.
package human

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/dop251/goja"
)

//go:embed shim.js
var shimSource string

// shim is compiled once; every evaluation runs it in a fresh runtime.
var shim = goja.MustCompile("shim.js", shimSource, true)

// ErrTimeout is returned when the script runs past its time budget.
var ErrTimeout = errors.New("challenge script ran past its time budget")

// maxTimerCallbacks bounds the timer callbacks one evaluation may run, so a
// script that keeps rescheduling itself ends even before the budget does.
const maxTimerCallbacks = 100000

// Result is the outcome of one evaluation, for diagnosis.
type Result struct {
	Value    string        // the header value; "" when Err is set
	Err      error         // why the evaluation failed
	Duration time.Duration // wall time of the whole evaluation
	// Misses are the globals (and, with Diagnose, navigator.*, document.*,
	// screen.* and location.* properties) the script read that the
	// environment does not define, in the order first read.
	Misses []string
}

// EvalOptions tune an evaluation beyond the defaults.
type EvalOptions struct {
	// Diagnose also records reads of missing navigator, document, screen
	// and location properties. It puts a recorder into those interfaces'
	// prototype chains, which a script could notice, so the gateway's own
	// evaluations leave it off; the xih command turns it on.
	Diagnose bool
}

// Evaluate runs script as if loaded from scriptURL by the browser b, calls
// window.V_C[0](), waits for the Promise it returns (running timers on a
// virtual clock), and returns JSON.stringify of the resolved value. The
// script is interrupted when budget or ctx runs out.
func Evaluate(ctx context.Context, script, scriptURL string, b Browser, budget time.Duration) (string, error) {
	r := Run(ctx, script, scriptURL, b, budget, EvalOptions{})
	if r.Err != nil && len(r.Misses) > 0 {
		return "", fmt.Errorf("%w (the script read undefined: %s)", r.Err, strings.Join(r.Misses, ", "))
	}
	return r.Value, r.Err
}

// Run is Evaluate with the diagnosis: the time taken and the missing
// globals the script read, whether or not it succeeded.
func Run(ctx context.Context, script, scriptURL string, b Browser, budget time.Duration, opts EvalOptions) Result {
	start := time.Now()
	var env *environment
	value, err := func() (value string, err error) {
		defer func() {
			// goja panics on some misuse by Go callbacks; a broken script
			// must never take the gateway down.
			if r := recover(); r != nil {
				value, err = "", fmt.Errorf("challenge environment: %v", r)
			}
		}()
		env, err = newEnvironment(ctx, scriptURL, b, opts)
		if err != nil {
			return "", err
		}
		return env.run(ctx, script, budget)
	}()
	res := Result{Value: value, Err: err, Duration: time.Since(start)}
	if env != nil {
		res.Misses = env.Misses()
	}
	return res
}

func newEnvironment(ctx context.Context, scriptURL string, b Browser, opts EvalOptions) (*environment, error) {
	u, err := url.Parse(scriptURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("script URL %q is not an absolute http(s) URL", scriptURL)
	}
	vm := goja.New()
	env := &environment{vm: vm, browser: b.withDefaults(), scriptURL: u, native: map[*goja.Object]string{}}
	env.loop = &timerLoop{vm: vm, start: time.Now()}
	env.installToString()
	natives := env.natives()
	natives["__installSubtle"] = func() map[string]any {
		subtle, keyCtor, subtleCtor := installSubtle(vm, vm.Get("DOMException"), env.fn)
		return map[string]any{"subtle": subtle, "CryptoKey": keyCtor, "SubtleCrypto": subtleCtor}
	}
	for k, v := range natives {
		if err := vm.Set(k, v); err != nil {
			return nil, fmt.Errorf("installing %s: %w", k, err)
		}
	}
	ret, err := vm.RunProgram(shim)
	if err != nil {
		return nil, fmt.Errorf("browser shim: %w", err)
	}
	hooks := ret.ToObject(vm)
	env.setExecuting, _ = goja.AssertFunction(hooks.Get("setExecuting"))
	// The global object's chain is window -> Window.prototype ->
	// WindowProperties -> EventTarget.prototype, as in Chrome; the
	// recorder takes WindowProperties' place and notes every global the
	// script looks up in vain.
	etProto := hooks.Get("EventTargetPrototype").ToObject(vm)
	rec := vm.NewDynamicObject(&missRecorder{env: env, tail: etProto})
	_ = rec.SetPrototype(etProto)
	if err := hooks.Get("WindowPrototype").ToObject(vm).SetPrototype(rec); err != nil {
		return nil, fmt.Errorf("installing the miss recorder: %w", err)
	}
	if opts.Diagnose {
		objectProto := vm.Get("Object").ToObject(vm).Get("prototype").ToObject(vm)
		for _, name := range []string{"navigator", "document", "screen", "location"} {
			// Insert the recorder after the object's own interfaces, before
			// the prototypes it shares with others (EventTarget, Object).
			p := vm.Get(name).ToObject(vm).Prototype()
			for p != nil && p.Prototype() != nil && p.Prototype() != objectProto && p.Prototype() != etProto {
				p = p.Prototype()
			}
			if p == nil || p.Prototype() == nil {
				continue
			}
			tail := p.Prototype()
			r := vm.NewDynamicObject(&missRecorder{env: env, prefix: name + ".", tail: tail})
			_ = r.SetPrototype(tail)
			_ = p.SetPrototype(r)
		}
	}
	return env, nil
}

// run executes the script and its entry point under the budget.
func (env *environment) run(ctx context.Context, script string, budget time.Duration) (string, error) {
	vm := env.vm
	loop := env.loop
	stop, exited := make(chan struct{}), make(chan struct{})
	defer func() {
		// The watcher is gone before the interrupt is cleared, so the
		// report read afterwards (Misses) runs uninterrupted.
		close(stop)
		<-exited
		vm.ClearInterrupt()
	}()
	go func() {
		defer close(exited)
		t := time.NewTimer(budget)
		defer t.Stop()
		select {
		case <-t.C:
			vm.Interrupt(ErrTimeout)
		case <-ctx.Done():
			vm.Interrupt(ctx.Err())
		case <-stop:
		}
	}()

	// A Promise rejected with no handler is how async scripts fail
	// silently; remember the last one to explain a Promise that never
	// settles.
	var unhandled *goja.Promise
	vm.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		switch {
		case op == goja.PromiseRejectionReject:
			unhandled = p
		case p == unhandled:
			unhandled = nil // handled after all
		}
	})
	// An interrupt is consumed by the first JS call it stops, so every
	// call's error counts, even these small ones.
	if _, err := env.setExecuting(goja.Undefined(), vm.ToValue(true)); err != nil {
		return "", fmt.Errorf("starting the challenge script: %w", unwrapInterrupt(err))
	}
	if _, err := vm.RunScript(env.scriptURL.String(), script); err != nil {
		return "", fmt.Errorf("running challenge script: %w", unwrapInterrupt(err))
	}
	if _, err := env.setExecuting(goja.Undefined(), vm.ToValue(false)); err != nil {
		return "", fmt.Errorf("running challenge script: %w", unwrapInterrupt(err))
	}
	// Let the script's own start-up timers run before calling in.
	if err := loop.runUntil(func() bool { return entryPoint(vm) != nil }); err != nil {
		return "", err
	}
	entry := entryPoint(vm)
	if entry == nil {
		return "", errors.New("challenge script left no window.V_C[0] function")
	}
	ret, err := entry(goja.Undefined())
	if err != nil {
		return "", fmt.Errorf("calling window.V_C[0]: %w", unwrapInterrupt(err))
	}
	value := ret
	if p, ok := ret.Export().(*goja.Promise); ok {
		if err := loop.runUntil(func() bool { return p.State() != goja.PromiseStatePending }); err != nil {
			return "", err
		}
		switch p.State() {
		case goja.PromiseStatePending:
			if unhandled != nil {
				return "", fmt.Errorf("window.V_C[0]() returned a Promise that never settled; a Promise was rejected unhandled with %s", describe(vm, unhandled.Result()))
			}
			return "", errors.New("window.V_C[0]() returned a Promise that never settled")
		case goja.PromiseStateRejected:
			return "", fmt.Errorf("window.V_C[0]() rejected: %s", describe(vm, p.Result()))
		}
		value = p.Result()
	}
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	out, err := stringify(goja.Undefined(), value)
	if err != nil {
		return "", fmt.Errorf("JSON.stringify of the answer: %w", unwrapInterrupt(err))
	}
	if goja.IsUndefined(out) {
		return "", errors.New("window.V_C[0]() answered undefined")
	}
	return out.String(), nil
}

// describe renders a rejection reason; for an Error, its name and message
// (never its stack: reading it could run a script's getter).
func describe(vm *goja.Runtime, v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if name, msg := o.Get("name"), o.Get("message"); name != nil && msg != nil && !goja.IsUndefined(msg) {
			return name.String() + ": " + msg.String()
		}
	}
	return v.String()
}

// entryPoint returns window.V_C[0] when the script has defined it.
func entryPoint(vm *goja.Runtime) goja.Callable {
	vc := vm.Get("V_C")
	if vc == nil || goja.IsUndefined(vc) || goja.IsNull(vc) {
		return nil
	}
	first := vc.ToObject(vm).Get("0")
	if first == nil {
		return nil
	}
	fn, _ := goja.AssertFunction(first)
	return fn
}

func unwrapInterrupt(err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if inner, ok := ie.Value().(error); ok {
			return inner
		}
	}
	return err
}

// timerLoop runs setTimeout/setInterval callbacks in order of due time on a
// virtual clock: the script never really waits, but sees time advance.
type timerLoop struct {
	vm      *goja.Runtime
	start   time.Time
	virtual time.Duration
	nextID  int64
	timers  []*timer
	ran     int
}

type timer struct {
	id       int64
	due      time.Duration
	every    time.Duration // > 0 for setInterval
	fn       goja.Callable
	args     []goja.Value
	canceled bool
}

func (l *timerLoop) now() float64 {
	return float64(time.Since(l.start)+l.virtual) / float64(time.Millisecond)
}

func (l *timerLoop) add(fn goja.Callable, ms float64, repeat bool, args []goja.Value) int64 {
	l.nextID++
	d := time.Duration(max(ms, 0) * float64(time.Millisecond))
	t := &timer{id: l.nextID, due: l.virtual + d, fn: fn, args: args}
	if repeat {
		t.every = max(d, time.Millisecond)
	}
	l.timers = append(l.timers, t)
	return t.id
}

func (l *timerLoop) clear(id int64) {
	for _, t := range l.timers {
		if t.id == id {
			t.canceled = true
		}
	}
}

// runUntil runs due timers, earliest first, until done reports true or no
// timer is left.
func (l *timerLoop) runUntil(done func() bool) error {
	for !done() {
		live := l.timers[:0]
		for _, t := range l.timers {
			if !t.canceled {
				live = append(live, t)
			}
		}
		l.timers = live
		if len(l.timers) == 0 {
			return nil
		}
		sort.SliceStable(l.timers, func(i, j int) bool { return l.timers[i].due < l.timers[j].due })
		t := l.timers[0]
		if t.every > 0 {
			t.due += t.every
		} else {
			l.timers = l.timers[1:]
		}
		l.virtual = max(l.virtual, t.due)
		l.ran++
		if l.ran > maxTimerCallbacks {
			return fmt.Errorf("challenge script scheduled more than %d timer callbacks", maxTimerCallbacks)
		}
		if _, err := t.fn(goja.Undefined(), t.args...); err != nil {
			return fmt.Errorf("timer callback: %w", unwrapInterrupt(err))
		}
	}
	return nil
}
