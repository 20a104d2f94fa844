// Package human obtains the x-is-human header value that Cursor's web chat
// demands: it runs the upstream's challenge script in an embedded pure-Go
// JavaScript engine (goja) inside a small browser-like environment, caches
// the answer, refreshes it before it expires, and falls back to a
// configured value when the script cannot be run.
package human

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/dop251/goja"
)

//go:embed shim.js
var shimSource string

// shim is compiled once; every evaluation runs it in a fresh runtime.
var shim = goja.MustCompile("shim.js", shimSource, true)

// Browser is the identity the environment presents; it must match the
// headers the gateway sends upstream.
type Browser struct {
	UserAgent  string
	GLVendor   string
	GLRenderer string
}

// DefaultBrowser is a common desktop Chrome on Windows.
var DefaultBrowser = Browser{
	UserAgent:  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
	GLVendor:   "Google Inc. (NVIDIA)",
	GLRenderer: "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
}

// ErrTimeout is returned when the script runs past its time budget.
var ErrTimeout = errors.New("challenge script ran past its time budget")

// maxTimerCallbacks bounds the timer callbacks one evaluation may run, so a
// script that keeps rescheduling itself ends even before the budget does.
const maxTimerCallbacks = 100000

var chromeRE = regexp.MustCompile(`Chrome/(\d+)`)

// Evaluate runs script as if loaded from scriptURL by the browser b, calls
// window.V_C[0](), waits for the Promise it returns (running timers on a
// virtual clock), and returns JSON.stringify of the resolved value. The
// script is interrupted when budget or ctx runs out.
func Evaluate(ctx context.Context, script, scriptURL string, b Browser, budget time.Duration) (string, error) {
	vm := goja.New()
	loop := &timerLoop{vm: vm, start: time.Now()}

	stop := make(chan struct{})
	defer close(stop)
	go func() {
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

	if err := installNatives(vm, loop, scriptURL, b); err != nil {
		return "", err
	}
	if _, err := vm.RunProgram(shim); err != nil {
		return "", fmt.Errorf("browser shim: %w", unwrapInterrupt(err))
	}
	if _, err := vm.RunScript(scriptURL, script); err != nil {
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
			return "", errors.New("window.V_C[0]() returned a Promise that never settled")
		case goja.PromiseStateRejected:
			return "", fmt.Errorf("window.V_C[0]() rejected: %s", p.Result().String())
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

// installNatives defines the Go functions the shim builds on, and __env.
func installNatives(vm *goja.Runtime, loop *timerLoop, scriptURL string, b Browser) error {
	u, err := url.Parse(scriptURL)
	if err != nil || u.Host == "" {
		return fmt.Errorf("script URL %q is not absolute", scriptURL)
	}
	version := "142"
	if m := chromeRE.FindStringSubmatch(b.UserAgent); m != nil {
		version = m[1]
	}
	platform, uaPlatform := "Win32", "Windows"
	switch {
	case strings.Contains(b.UserAgent, "Macintosh"):
		platform, uaPlatform = "MacIntel", "macOS"
	case strings.Contains(b.UserAgent, "Linux"):
		platform, uaPlatform = "Linux x86_64", "Linux"
	}
	env := map[string]any{
		"userAgent": b.UserAgent, "scriptURL": scriptURL, "host": u.Host,
		"platform": platform, "uaPlatform": uaPlatform,
		"glVendor": b.GLVendor, "glRenderer": b.GLRenderer,
		"brands": []any{
			map[string]any{"brand": "Chromium", "version": version},
			map[string]any{"brand": "Not-A.Brand", "version": "24"},
			map[string]any{"brand": "Google Chrome", "version": version},
		},
	}
	throw := func(format string, args ...any) { panic(vm.NewTypeError(fmt.Sprintf(format, args...))) }
	natives := map[string]any{
		"__env": env,
		"__now": loop.now,
		"__timer": func(fn goja.Value, ms float64, repeat bool, args []goja.Value) int64 {
			f, ok := goja.AssertFunction(fn)
			if !ok {
				return 0 // setTimeout with a string body: not supported, ignored
			}
			return loop.add(f, ms, repeat, args)
		},
		"__clearTimer": loop.clear,
		"__fillRandom": func(buf goja.ArrayBuffer, off, n int) {
			b := buf.Bytes()
			if n > 65536 || off < 0 || n < 0 || off+n > len(b) {
				throw("getRandomValues: %d bytes requested, the limit is 65536", n)
			}
			_, _ = rand.Read(b[off : off+n])
		},
		"__uuid": func() string {
			var b [16]byte
			_, _ = rand.Read(b[:])
			b[6] = b[6]&0x0f | 0x40
			b[8] = b[8]&0x3f | 0x80
			return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		},
		"__digest": func(alg string, data goja.ArrayBuffer) goja.ArrayBuffer {
			var sum []byte
			switch alg {
			case "SHA-1":
				s := sha1.Sum(data.Bytes())
				sum = s[:]
			case "SHA-256":
				s := sha256.Sum256(data.Bytes())
				sum = s[:]
			case "SHA-384":
				s := sha512.Sum384(data.Bytes())
				sum = s[:]
			case "SHA-512":
				s := sha512.Sum512(data.Bytes())
				sum = s[:]
			default:
				throw("crypto.subtle.digest: unsupported algorithm %q", alg)
			}
			return vm.NewArrayBuffer(sum)
		},
		"__utf8":     func(s string) goja.ArrayBuffer { return vm.NewArrayBuffer([]byte(s)) },
		"__fromUtf8": func(b goja.ArrayBuffer) string { return string(b.Bytes()) },
		"__btoa": func(s string) string {
			raw := make([]byte, 0, len(s))
			for _, r := range s {
				if r > 0xff {
					throw("btoa: the string contains characters outside of the Latin1 range")
				}
				raw = append(raw, byte(r))
			}
			return base64.StdEncoding.EncodeToString(raw)
		},
		"__atob": func(s string) string {
			raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.Join(strings.Fields(s), ""), "="))
			if err != nil {
				throw("atob: the string is not correctly encoded")
			}
			rs := make([]rune, len(raw))
			for i, c := range raw {
				rs[i] = rune(c)
			}
			return string(rs)
		},
		"__hash": func(s string) string {
			sum := sha256.Sum256([]byte(s))
			return hex.EncodeToString(sum[:])
		},
	}
	for k, v := range natives {
		if err := vm.Set(k, v); err != nil {
			return fmt.Errorf("installing %s: %w", k, err)
		}
	}
	return nil
}
