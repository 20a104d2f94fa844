package human

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // Intl time zones must not depend on the host's zoneinfo

	"github.com/dop251/goja"
	"golang.org/x/text/collate"
	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// environment is the Go half of one evaluation's browser: the natives the
// shim builds on, the native-function registry behind
// Function.prototype.toString, and the record of globals the script read
// that the environment does not define.
type environment struct {
	vm        *goja.Runtime
	loop      *timerLoop
	browser   Browser
	scriptURL *url.URL

	native map[*goja.Object]string // functions that must look native, by name
	// setExecuting switches document.currentScript on while the script's
	// top level runs.
	setExecuting goja.Callable

	mu     sync.Mutex
	misses []string // in order of first read
	seen   map[string]bool
	done   bool // the run is over: lookups are the report's, not the script's
}

// chromeAbsent are globals scripts probe for that Chrome does not have
// either (automation leaks, Node.js globals checked by obfuscator
// helpers): reading them is expected and not reported as a miss.
var chromeAbsent = map[string]bool{
	"domAutomation": true, "domAutomationController": true, "_WEBDRIVER_ELEM_CACHE": true, "callPhantom": true,
	"_phantom": true, "__nightmare": true, "_selenium": true, "callSelenium": true, "_Selenium_IDE_Recorder": true,
	"__webdriver_evaluate": true, "__selenium_evaluate": true, "__webdriver_script_fn": true, "__driver_evaluate": true,
	"__fxdriver_evaluate": true, "__lastWatirAlert": true, "__playwright": true, "__pwInitScripts": true,
	"Buffer": true, "process": true, "require": true, "module": true, "exports": true, "global": true,
	"define": true, "Deno": true, "Bun": true, "emit": true, "spawn": true, "phantom": true, "__phantomas": true,
	"Cypress": true, "webdriver": true, "seleniumWebdriver": true, "driver": true, "selenium": true,
}

// recordMiss notes a read of name that found nothing.
func (e *environment) recordMiss(name string) {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if chromeAbsent[last] || strings.HasPrefix(last, "cdc_") || strings.HasPrefix(last, "$cdc_") {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done || e.seen[name] {
		return
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[name] = true
	e.misses = append(e.misses, name)
}

// Misses are the recorded misses still undefined now: a name the script
// read before defining it itself is not the environment's gap.
func (e *environment) Misses() []string {
	e.mu.Lock()
	e.done = true
	misses := slices.Clone(e.misses)
	e.mu.Unlock()
	global := e.vm.GlobalObject()
	var out []string
	for _, m := range misses {
		if head, rest, nested := strings.Cut(m, "."); nested {
			if o, ok := global.Get(head).(*goja.Object); ok && has(o, rest) {
				continue
			}
		} else if has(global, m) {
			continue
		}
		out = append(out, m)
	}
	return out
}

func has(o *goja.Object, name string) bool {
	v := o.Get(name)
	return v != nil && !goja.IsUndefined(v)
}

// missRecorder is a dynamic object placed in a prototype chain just before
// the chain's ordinary tail: every lookup that reaches it found nothing
// before. It records the name unless the tail has it, and always answers
// "not here", so lookups go on exactly as without it (an undeclared
// identifier still throws a ReferenceError).
type missRecorder struct {
	env    *environment
	prefix string
	tail   *goja.Object // the rest of the chain, consulted to tell a miss
}

func (m *missRecorder) Get(key string) goja.Value {
	m.note(key)
	return nil
}
func (m *missRecorder) Set(string, goja.Value) bool { return false }
func (m *missRecorder) Has(key string) bool {
	m.note(key)
	return false
}
func (m *missRecorder) Delete(string) bool { return true }
func (m *missRecorder) Keys() []string     { return nil }

func (m *missRecorder) note(key string) {
	if m.tail != nil && has(m.tail, key) {
		return
	}
	// Protocol probes made by the engine and by JSON.stringify, not by
	// the script: resolving a Promise with an object reads its "then".
	if key == "" || key == "then" || key == "toJSON" || key == "constructor" {
		return
	}
	m.env.recordMiss(m.prefix + key)
}

// fn builds a function that looks native: name and length as given,
// toString "function name() { [native code] }".
func (e *environment) fn(name string, length int, f func(goja.FunctionCall) goja.Value) *goja.Object {
	o := e.vm.ToValue(f).(*goja.Object)
	_ = o.DefineDataProperty("name", e.vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = o.DefineDataProperty("length", e.vm.ToValue(length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	e.native[o] = name
	return o
}

// installToString replaces Function.prototype.toString with one that shows
// the environment's own functions as native code, and is native itself.
func (e *environment) installToString() {
	fproto := e.vm.Get("Function").(*goja.Object).Get("prototype").(*goja.Object)
	orig, _ := goja.AssertFunction(fproto.Get("toString"))
	ts := e.fn("toString", 0, func(c goja.FunctionCall) goja.Value {
		o, ok := c.This.(*goja.Object)
		if !ok {
			panic(e.vm.NewTypeError("Function.prototype.toString requires that 'this' be a Function"))
		}
		if name, ok := e.native[o]; ok {
			return e.vm.ToValue("function " + name + "() { [native code] }")
		}
		v, err := orig(c.This, c.Arguments...)
		if err != nil {
			panic(err)
		}
		return v
	})
	_ = fproto.DefineDataProperty("toString", ts, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// markNative is called by the shim for each function it defines.
func (e *environment) markNative(c goja.FunctionCall) goja.Value {
	o, ok := c.Argument(0).(*goja.Object)
	if !ok {
		return goja.Undefined()
	}
	if _, done := e.native[o]; !done {
		e.native[o] = c.Argument(1).String()
	}
	return goja.Undefined()
}

func (e *environment) throwf(format string, args ...any) {
	panic(e.vm.NewTypeError(fmt.Sprintf(format, args...)))
}

// natives are the Go functions the shim builds on, named __*; the shim
// deletes them from the global object when it is done.
func (e *environment) natives() map[string]any {
	vm := e.vm
	b := e.browser
	brands := []any{}
	for _, br := range b.Brands() {
		brands = append(brands, map[string]any{"brand": br[0], "version": br[1]})
	}
	fullBrands := []any{}
	for _, br := range b.Brands() {
		v := br[1] + ".0.0.0"
		if br[1] == b.MajorVersion() {
			v = b.FullVersion
		}
		fullBrands = append(fullBrands, map[string]any{"brand": br[0], "version": v})
	}
	langs := make([]any, len(b.Languages))
	for i, l := range b.Languages {
		langs[i] = l
	}
	return map[string]any{
		"__env": map[string]any{
			"userAgent": b.UserAgent, "scriptURL": e.scriptURL.String(), "host": e.scriptURL.Host,
			"hostname": e.scriptURL.Hostname(), "platform": b.Platform, "uaPlatform": b.UAPlatform,
			"platformVersion": b.PlatformVersion, "arch": b.Arch, "bitness": b.Bitness, "fullVersion": b.FullVersion,
			"glVendor": b.GLVendor, "glRenderer": b.GLRenderer, "brands": brands, "fullBrands": fullBrands,
			"screenWidth": b.ScreenWidth, "screenHeight": b.ScreenHeight, "availHeight": b.AvailHeight,
			"pixelRatio": b.PixelRatio, "colorDepth": b.ColorDepth, "cores": b.Cores, "memory": b.MemoryGB,
			"languages": langs, "timeZone": b.TimeZone, "timeOrigin": float64(e.loop.start.UnixMicro()) / 1000,
		},
		"__markNative": e.markNative,
		"__nativeNoop": func(name string) *goja.Object {
			// Console methods: they never look at their arguments, so a
			// getter on an argument (the DevTools probe) is never run.
			return e.fn(name, 0, func(goja.FunctionCall) goja.Value { return goja.Undefined() })
		},
		"__now": e.loop.now,
		"__timer": func(fn goja.Value, ms float64, repeat bool, args []goja.Value) int64 {
			f, ok := goja.AssertFunction(fn)
			if !ok {
				return 0 // a string body: eval'd timers are not supported
			}
			return e.loop.add(f, ms, repeat, args)
		},
		"__clearTimer": e.loop.clear,
		"__fillRandom": func(buf goja.ArrayBuffer, off, n int) {
			bs := buf.Bytes()
			if n > 65536 {
				panic(e.domException(fmt.Sprintf("Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (%d) exceeds the number of bytes of entropy available via this API (65536).", n), "QuotaExceededError"))
			}
			if off < 0 || n < 0 || off+n > len(bs) {
				e.throwf("getRandomValues: view out of range")
			}
			_, _ = rand.Read(bs[off : off+n])
		},
		"__uuid": func() string {
			var u [16]byte
			_, _ = rand.Read(u[:])
			u[6] = u[6]&0x0f | 0x40
			u[8] = u[8]&0x3f | 0x80
			return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
		},
		"__utf8": func(s string) goja.ArrayBuffer { return vm.NewArrayBuffer([]byte(s)) },
		"__fromUtf8": func(buf goja.ArrayBuffer, fatal bool) string {
			bs := buf.Bytes()
			if fatal && !validUTF8(bs) {
				e.throwf("Failed to execute 'decode' on 'TextDecoder': The encoded data was not valid for encoding utf-8")
			}
			return strings.ToValidUTF8(string(bs), "\uFFFD")
		},
		"__btoa": func(s string) string {
			raw := make([]byte, 0, len(s))
			for _, r := range s {
				if r > 0xff {
					panic(e.domException("Failed to execute 'btoa' on 'Window': The string to be encoded contains characters outside of the Latin1 range.", "InvalidCharacterError"))
				}
				raw = append(raw, byte(r))
			}
			return base64.StdEncoding.EncodeToString(raw)
		},
		"__atob": func(s string) string {
			clean := strings.Join(strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("\t\n\f\r ", r) }), "")
			if len(clean)%4 == 0 {
				clean = strings.TrimSuffix(strings.TrimSuffix(clean, "="), "=")
			}
			raw, err := base64.RawStdEncoding.DecodeString(clean)
			if err != nil || len(clean)%4 == 1 {
				panic(e.domException("Failed to execute 'atob' on 'Window': The string to be decoded is not correctly encoded.", "InvalidCharacterError"))
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
		"__parseURL": e.parseURL,
		"__tzOffset": func(tz string, ms float64) any {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return nil
			}
			_, off := time.UnixMilli(int64(ms)).In(loc).Zone()
			return off / 60
		},
		"__validTZ": func(tz string) any {
			if strings.EqualFold(tz, "utc") {
				return "UTC"
			}
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return nil
			}
			return loc.String()
		},
		"__locale": func(tag string) any {
			t, err := language.Parse(tag)
			if err != nil {
				return nil
			}
			return t.String()
		},
		"__formatNumber": func(locale string, n float64, minFrac, maxFrac int, grouping bool) string {
			if math.IsNaN(n) {
				return "NaN"
			}
			if math.IsInf(n, 0) {
				if n < 0 {
					return "-∞"
				}
				return "∞"
			}
			opts := []number.Option{number.MinFractionDigits(minFrac), number.MaxFractionDigits(maxFrac)}
			if !grouping {
				opts = append(opts, number.NoSeparator())
			}
			return message.NewPrinter(language.Make(locale)).Sprint(number.Decimal(n, opts...))
		},
		"__collate": func(locale, a, b string, base bool) int {
			var opts []collate.Option
			if base {
				opts = append(opts, collate.IgnoreCase, collate.IgnoreDiacritics)
			}
			return collate.New(language.Make(locale), opts...).CompareString(a, b)
		},
		"__plural": func(locale string, n float64, ordinal bool) string {
			rules := plural.Cardinal
			if ordinal {
				rules = plural.Ordinal
			}
			s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%f", math.Abs(n)), "0"), ".")
			intPart, frac, _ := strings.Cut(s, ".")
			i := 0
			fmt.Sscan(intPart, &i)
			f := 0
			if frac != "" {
				fmt.Sscan(frac, &f)
			}
			forms := map[plural.Form]string{plural.Zero: "zero", plural.One: "one", plural.Two: "two", plural.Few: "few", plural.Many: "many"}
			if name, ok := forms[rules.MatchPlural(language.Make(locale), i, len(frac), len(frac), f, f)]; ok {
				return name
			}
			return "other"
		},
	}
}

func validUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "") == string(b) }

// parseURL resolves href against base with Go's URL parser and returns
// the WHATWG URL components, or null for an invalid URL.
func (e *environment) parseURL(href string, base goja.Value) any {
	var u *url.URL
	var err error
	if base != nil && !goja.IsUndefined(base) {
		b, berr := url.Parse(base.String())
		if berr != nil || b.Scheme == "" {
			return nil
		}
		if u, err = b.Parse(strings.TrimSpace(href)); err != nil {
			return nil
		}
	} else if u, err = url.Parse(strings.TrimSpace(href)); err != nil || u.Scheme == "" {
		return nil
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		u.Host, port = u.Hostname(), ""
	}
	special := slices.Contains([]string{"http", "https", "ws", "wss", "ftp", "file"}, u.Scheme)
	if special && u.Path == "" && u.Opaque == "" {
		u.Path = "/"
	}
	origin := "null"
	if special && u.Scheme != "file" {
		origin = u.Scheme + "://" + u.Host
	}
	search, hash := "", ""
	if u.RawQuery != "" {
		search = "?" + u.RawQuery
	}
	if u.Fragment != "" {
		hash = "#" + u.EscapedFragment()
	}
	password, _ := u.User.Password()
	return map[string]any{
		"href": u.String(), "protocol": u.Scheme + ":", "host": u.Host, "hostname": u.Hostname(), "port": port,
		"pathname": u.EscapedPath(), "search": search, "hash": hash, "origin": origin,
		"username": u.User.Username(), "password": password,
	}
}

// domException builds a DOMException with the shim's constructor.
func (e *environment) domException(msg, name string) goja.Value {
	ctor, ok := goja.AssertConstructor(e.vm.Get("DOMException"))
	if !ok {
		return e.vm.NewTypeError(name + ": " + msg)
	}
	v, err := ctor(nil, e.vm.ToValue(msg), e.vm.ToValue(name))
	if err != nil {
		return e.vm.NewTypeError(name + ": " + msg)
	}
	return v
}
