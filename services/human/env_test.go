package human

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvironmentLooksNative(t *testing.T) {
	var got map[string]any
	runJS(t, `
const ts = Function.prototype.toString;
const getter = Object.getOwnPropertyDescriptor(Navigator.prototype, "userAgent").get;
return {
  toStringOfToString: ts.toString(), toStringCall: ts.call(ts),
  setTimeout: String(setTimeout), createElement: document.createElement.toString(), log: ts.call(console.log),
  getter: ts.call(getter), encrypt: ts.call(crypto.subtle.encrypt), TextEncoder: ts.call(TextEncoder),
  own: (function mine() { return 1; }).toString(),
  names: [setTimeout.name, document.createElement.name, getter.name, console.log.name],
  onProto: Object.getOwnPropertyNames(navigator).length === 0 && Object.getOwnPropertyNames(screen).length === 0,
  webdriver: navigator.webdriver, webdriverOwn: Object.getOwnPropertyDescriptor(navigator, "webdriver") === undefined,
  tag: Object.prototype.toString.call(navigator) + Object.prototype.toString.call(screen),
  noHelpers: Object.getOwnPropertyNames(window).concat(Object.getOwnPropertyNames(document), Object.getOwnPropertyNames(document.createElement("div")), Object.getOwnPropertyNames(new URL("https://x/"))).filter((k) => k.startsWith("__")),
  automation: ["domAutomation", "callPhantom", "__nightmare", "cdc_adoQpoasnfa76pfcZLmcfl_Array", "_phantom", "webdriver"].filter((k) => k in window),
  illegal: (() => { try { new Navigator(); return "constructed"; } catch (e) { return e.name + ": " + e.message; } })(),
  badThis: (() => { try { ts.call({}); return "no error"; } catch (e) { return e.name; } })(),
};`, &got)
	native := func(name string) string { return "function " + name + "() { [native code] }" }
	assert.Equal(t, native("toString"), got["toStringOfToString"])
	assert.Equal(t, native("toString"), got["toStringCall"])
	assert.Equal(t, native("setTimeout"), got["setTimeout"])
	assert.Equal(t, native("createElement"), got["createElement"])
	assert.Equal(t, native("log"), got["log"])
	assert.Equal(t, native("get userAgent"), got["getter"])
	assert.Equal(t, native("encrypt"), got["encrypt"])
	assert.Equal(t, native("TextEncoder"), got["TextEncoder"])
	assert.Equal(t, "function mine() { return 1; }", got["own"], "the script's own functions keep their source")
	assert.Equal(t, []any{"setTimeout", "createElement", "get userAgent", "log"}, got["names"])
	assert.Equal(t, true, got["onProto"], "navigator and screen values are getters on their prototypes")
	assert.Equal(t, false, got["webdriver"])
	assert.Equal(t, true, got["webdriverOwn"])
	assert.Equal(t, "[object Navigator][object Screen]", got["tag"])
	assert.Empty(t, got["noHelpers"], "the shim's Go helpers are gone")
	assert.Empty(t, got["automation"])
	assert.Equal(t, "TypeError: Illegal constructor", got["illegal"])
	assert.Equal(t, "TypeError", got["badThis"])
}

func TestIframeIsASeparateRealm(t *testing.T) {
	var got map[string]any
	runJS(t, `
const f = document.createElement("iframe");
const before = f.contentWindow;
document.body.appendChild(f);
const w = f.contentWindow;
const e = new w.Error("x");
const r = {
  before: before, distinct: [w.Error !== Error, w.Object !== Object, w.Function !== Function, w.Array !== Array, w.console !== console, w !== window],
  instance: e instanceof w.Error, message: e.message, proto: Object.getPrototypeOf(e) === w.Error.prototype,
  foreign: e instanceof Error, typeErr: new w.TypeError("t") instanceof w.Error && !(new w.TypeError("t") instanceof TypeError),
  errString: String(new w.RangeError("r")) + "|" + Object.prototype.toString.call(e),
  native: Function.prototype.toString.call(w.Error) + " " + Function.prototype.toString.call(w.console.log),
  self: w.window === w && w.self === w && w.top === window && w.parent === window && w.frameElement === f,
  href: w.location.href, doc: f.contentDocument === w.document, objWorks: w.Object.keys({a: 1}).join(),
  frames: w.Function("return 7")(),
};
f.remove();
r.after = f.contentWindow;
return r;`, &got)
	assert.Nil(t, got["before"], "no window before the frame is attached")
	assert.Equal(t, []any{true, true, true, true, true, true}, got["distinct"])
	assert.Equal(t, true, got["instance"])
	assert.Equal(t, "x", got["message"])
	assert.Equal(t, true, got["proto"])
	assert.Equal(t, false, got["foreign"], "an error of the frame is not an instance of the window's Error")
	assert.Equal(t, true, got["typeErr"])
	assert.Equal(t, "RangeError: r|[object Error]", got["errString"])
	assert.Equal(t, "function Error() { [native code] } function log() { [native code] }", got["native"])
	assert.Equal(t, true, got["self"])
	assert.Equal(t, "about:blank", got["href"])
	assert.Equal(t, true, got["doc"])
	assert.Equal(t, "a", got["objWorks"])
	assert.Equal(t, float64(7), got["frames"])
	assert.Nil(t, got["after"], "a removed frame has no window")
}

// The DevTools probe: a getter on an Error passed to console must never run.
func TestConsoleNeverReadsItsArguments(t *testing.T) {
	var got []any
	runJS(t, `
const reads = [];
const probe = (W, tag) => {
  const e = new W.Error("");
  W.Object.defineProperty(e, "stack", { get() { reads.push(tag + ".stack"); return ""; } });
  const o = { get toString() { reads.push(tag + ".toString"); return () => ""; } };
  const p = new Proxy({}, { get(t, k) { reads.push(tag + ".proxy." + String(k)); } });
  for (const m of ["log", "debug", "info", "warn", "error", "dir", "table", "trace", "assert"]) W.console[m](e, o, p);
};
probe(window, "window");
const f = document.createElement("iframe");
document.body.appendChild(f);
probe(f.contentWindow, "iframe");
return reads;`, &got)
	assert.Empty(t, got)
}

func TestTimersAndMicrotasksRunInOrder(t *testing.T) {
	var got []any
	runJS(t, `
const order = [];
setTimeout(() => order.push("timeout 10"), 10);
setTimeout(() => { order.push("timeout 0"); Promise.resolve().then(() => order.push("micro in timeout")); }, 0);
const id = setTimeout(() => order.push("cancelled"), 1);
clearTimeout(id);
Promise.resolve().then(() => order.push("then"));
queueMicrotask(() => order.push("queueMicrotask"));
(async () => { order.push("async start"); await null; order.push("after await"); })();
order.push("sync");
let n = 0;
const iv = setInterval(() => { order.push("interval " + ++n); if (n === 2) clearInterval(iv); }, 4);
const t0 = performance.now();
await new Promise((r) => setTimeout(r, 20));
order.push(performance.now() - t0 >= 20 ? "clock advanced" : "clock stuck");
return order;`, &got)
	assert.Equal(t, []any{"async start", "sync", "then", "queueMicrotask", "after await",
		"timeout 0", "micro in timeout", "interval 1", "interval 2", "timeout 10", "clock advanced"}, got)
}

func TestIntlBasics(t *testing.T) {
	var got map[string]any
	runJS(t, `
const d = new Date(Date.UTC(2026, 0, 5, 15, 4, 5));
const ro = Intl.DateTimeFormat().resolvedOptions();
return {
  tz: ro.timeZone, locale: ro.locale, calendar: ro.calendar,
  us: new Intl.DateTimeFormat("en-US", {timeZone: "UTC"}).format(d),
  gb: new Intl.DateTimeFormat("en-GB", {timeZone: "Europe/London"}).format(d),
  de: new Intl.DateTimeFormat("de-DE", {timeZone: "Europe/Berlin"}).format(d),
  ny: new Intl.DateTimeFormat("en-US", {timeZone: "America/New_York", hour: "numeric", minute: "2-digit"}).format(d),
  tokyo: new Intl.DateTimeFormat("en-US", {timeZone: "Asia/Tokyo"}).resolvedOptions().timeZone,
  badTZ: (() => { try { new Intl.DateTimeFormat("en-US", {timeZone: "Mars/Base"}); return "ok"; } catch (e) { return e.name; } })(),
  badLocale: (() => { try { new Intl.NumberFormat("not a locale!"); return "ok"; } catch (e) { return e.name; } })(),
  num: new Intl.NumberFormat("en-US").format(1234567.891), numDE: new Intl.NumberFormat("de-DE").format(1234567.891),
  cur: new Intl.NumberFormat("en-US", {style: "currency", currency: "USD"}).format(1234.5),
  pct: new Intl.NumberFormat("en-US", {style: "percent"}).format(0.256),
  sorted: ["b", "a", "C", "ä"].sort(new Intl.Collator("en").compare),
  base: new Intl.Collator("en", {sensitivity: "base"}).compare("a", "A"),
  plural: [0, 1, 2, 5].map((n) => new Intl.PluralRules("en-US").select(n)),
  ordinal: [1, 2, 3, 4, 11, 22].map((n) => new Intl.PluralRules("en-US", {type: "ordinal"}).select(n)),
  pluralPL: [1, 2, 5].map((n) => new Intl.PluralRules("pl").select(n)),
  toLocale: (1234.5).toLocaleString("en-US"),
};`, &got)
	assert.Equal(t, DefaultBrowser.TimeZone, got["tz"])
	assert.Equal(t, "en-US", got["locale"])
	assert.Equal(t, "gregory", got["calendar"])
	assert.Equal(t, "1/5/2026", got["us"])
	assert.Equal(t, "05/01/2026", got["gb"])
	assert.Equal(t, "05.01.2026", got["de"])
	assert.Equal(t, "10:04 AM", got["ny"])
	assert.Equal(t, "Asia/Tokyo", got["tokyo"])
	assert.Equal(t, "RangeError", got["badTZ"])
	assert.Equal(t, "RangeError", got["badLocale"])
	assert.Equal(t, "1,234,567.891", got["num"])
	assert.Equal(t, "1.234.567,891", got["numDE"])
	assert.Equal(t, "$1,234.50", got["cur"])
	assert.Equal(t, "26%", got["pct"])
	assert.Equal(t, []any{"a", "ä", "b", "C"}, got["sorted"])
	assert.Equal(t, float64(0), got["base"])
	assert.Equal(t, []any{"other", "one", "other", "other"}, got["plural"])
	assert.Equal(t, []any{"one", "two", "few", "other", "other", "two"}, got["ordinal"])
	assert.Equal(t, []any{"one", "few", "many"}, got["pluralPL"])
	assert.Equal(t, "1,234.5", got["toLocale"])
}

func TestWebAPIs(t *testing.T) {
	var got map[string]any
	runJS(t, `
const u = new URL("/a/b?x=1&y=two%20words#frag", "https://cursor.com:443/base");
u.searchParams.append("z", "a b&c");
const p = new URLSearchParams("a=1&b=2&a=3");
p.set("a", "9");
const clone = structuredClone({d: new Date(0), m: new Map([[1, {n: [1, 2]}]]), s: new Set(["x"]), b: new Uint8Array([1, 2])});
const cyc = {}; cyc.self = cyc;
const c2 = structuredClone(cyc);
localStorage.setItem("k", 5);
document.cookie = "a=1; path=/";
document.cookie = "b=2";
const canvas = document.createElement("canvas");
const gl = canvas.getContext("webgl");
const ext = gl.getExtension("WEBGL_debug_renderer_info");
return {
  href: u.href, host: u.host, path: u.pathname, search: u.search, hash: u.hash, origin: u.origin, q: u.searchParams.get("y"),
  bad: (() => { try { new URL("not a url"); return "ok"; } catch (e) { return e.name; } })(),
  params: p.toString(), all: p.getAll("a"),
  enc: Array.from(new TextEncoder().encode("é€")), dec: new TextDecoder().decode(new Uint8Array([0xc3, 0xa9, 0xe2, 0x82, 0xac])),
  fatal: (() => { try { new TextDecoder("utf-8", {fatal: true}).decode(new Uint8Array([0xff])); return "ok"; } catch (e) { return e.name; } })(),
  b64: btoa("hi\u00ff"), unb64: atob(" aGn/ "),
  latin1: (() => { try { btoa("€"); return "ok"; } catch (e) { return e.name; } })(),
  badB64: (() => { try { atob("a"); return "ok"; } catch (e) { return e.name; } })(),
  clone: [clone.d instanceof Date, clone.d.getTime(), clone.m.get(1).n.join(), clone.s.has("x"), clone.b[1], c2.self === c2],
  cloneFn: (() => { try { structuredClone({f() {}}); return "ok"; } catch (e) { return e.name; } })(),
  perf: [typeof performance.now(), performance.timeOrigin > 1.7e12, performance.getEntriesByType("navigation").length,
    performance.getEntriesByType("resource")[0].name === document.currentScript?.src || performance.getEntriesByType("resource")[0].initiatorType],
  storage: [localStorage.getItem("k"), localStorage.length, sessionStorage.getItem("k")],
  cookie: document.cookie,
  doc: [document.readyState, document.visibilityState, document.documentElement.tagName, document.head.tagName, document.body.tagName,
    document.createElement("div").tagName, document.createElement("script") instanceof HTMLScriptElement],
  gl: [gl.getParameter(ext.UNMASKED_VENDOR_WEBGL), gl.getParameter(ext.UNMASKED_RENDERER_WEBGL)],
  second: canvas.getContext("2d"),
  nav: [navigator.userAgentData.platform, navigator.languages.join(), navigator.hardwareConcurrency, screen.width, location.hostname, history.length],
  hev: await navigator.userAgentData.getHighEntropyValues(["platformVersion", "architecture", "uaFullVersion"]),
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
};`, &got)
	// Changing searchParams re-serializes the query as a form, as Chrome does.
	assert.Equal(t, "https://cursor.com/a/b?x=1&y=two+words&z=a+b%26c#frag", got["href"])
	assert.Equal(t, "cursor.com", got["host"])
	assert.Equal(t, "/a/b", got["path"])
	assert.Equal(t, "?x=1&y=two+words&z=a+b%26c", got["search"])
	assert.Equal(t, "#frag", got["hash"])
	assert.Equal(t, "https://cursor.com", got["origin"])
	assert.Equal(t, "two words", got["q"])
	assert.Equal(t, "TypeError", got["bad"])
	assert.Equal(t, "a=9&b=2", got["params"])
	assert.Equal(t, []any{"9"}, got["all"])
	assert.Equal(t, []any{float64(0xc3), float64(0xa9), float64(0xe2), float64(0x82), float64(0xac)}, got["enc"])
	assert.Equal(t, "é€", got["dec"])
	assert.Equal(t, "TypeError", got["fatal"])
	assert.Equal(t, "aGn/", got["b64"])
	assert.Equal(t, "hi\u00ff", got["unb64"])
	assert.Equal(t, "InvalidCharacterError", got["latin1"])
	assert.Equal(t, "InvalidCharacterError", got["badB64"])
	assert.Equal(t, []any{true, float64(0), "1,2", true, float64(2), true}, got["clone"])
	assert.Equal(t, "DataCloneError", got["cloneFn"])
	assert.Equal(t, []any{"number", true, float64(1), "script"}, got["perf"])
	assert.Equal(t, []any{"5", float64(1), nil}, got["storage"])
	assert.Equal(t, "a=1; b=2", got["cookie"])
	assert.Equal(t, []any{"complete", "visible", "HTML", "HEAD", "BODY", "DIV", true}, got["doc"])
	assert.Equal(t, []any{DefaultBrowser.GLVendor, DefaultBrowser.GLRenderer}, got["gl"])
	assert.Nil(t, got["second"], "a canvas keeps the kind of its first context, as in Chrome")
	assert.Equal(t, []any{"Windows", "en-US,en", float64(DefaultBrowser.Cores), float64(1920), "cursor.com", float64(1)}, got["nav"])
	assert.Equal(t, map[string]any{"brands": []any{
		map[string]any{"brand": "Chromium", "version": "142"}, map[string]any{"brand": "Not-A.Brand", "version": "24"},
		map[string]any{"brand": "Google Chrome", "version": "142"}}, "mobile": false, "platform": "Windows",
		"platformVersion": "19.0.0", "architecture": "x86", "uaFullVersion": "142.0.7444.176"}, got["hev"])
	assert.Equal(t, true, got["uuid"])
}

func TestMissesAreRecorded(t *testing.T) {
	r := Run(context.Background(), `
var a = typeof OffscreenCanvas;               // a global Chrome has and the environment lacks
var b = window.SharedWorker;                  // read through window
var c = navigator.gpu;                        // a navigator property, recorded with Diagnose
var d = window.callPhantom || window.domAutomation; // automation probes: expected to be absent, not reported
var e = typeof process;                       // Node.js probe: absent in Chrome too
var f = window.laterDefined; window.laterDefined = 1; // the script's own global
window.V_C = [function () { return Promise.resolve(1); }];
`, scriptURL, DefaultBrowser, time.Minute, EvalOptions{Diagnose: true})
	require.NoError(t, r.Err)
	assert.Equal(t, []string{"OffscreenCanvas", "SharedWorker", "navigator.gpu"}, r.Misses)

	// Without Diagnose, only globals are recorded, and the prototype chain
	// of navigator is Chrome's.
	r = Run(context.Background(), `
var c = navigator.gpu;
var chain = Object.getPrototypeOf(Navigator.prototype) === Object.prototype;
var thrown = (function () { try { NoSuchThing; return "no"; } catch (e) { return e.name; } })();
window.V_C = [function () { return [chain, thrown]; }];
`, scriptURL, DefaultBrowser, time.Minute, EvalOptions{})
	require.NoError(t, r.Err)
	assert.Equal(t, `[true,"ReferenceError"]`, r.Value, "an undeclared global still throws a ReferenceError")
	assert.Equal(t, []string{"NoSuchThing"}, r.Misses)
}

func TestUnhandledRejectionExplainsAStuckPromise(t *testing.T) {
	r := Run(context.Background(), `window.V_C = [function () {
  return new Promise(function (resolve) { setTimeout(function () { Promise.resolve().then(function () { null.x; }).then(resolve); }, 1); });
}];`, scriptURL, DefaultBrowser, time.Minute, EvalOptions{})
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "never settled; a Promise was rejected unhandled with TypeError")
}
