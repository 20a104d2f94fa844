// A browser-like global environment for the x-is-human challenge script:
// what Chrome offers and such scripts read, with behaviour, from one
// consistent profile (__env). Natives provided by Go are named __* and
// are removed from the global object at the end.
(function (g) {
  "use strict";
  var E = __env, markNative = __markNative, nativeNoop = __nativeNoop, now = __now, timer = __timer, clearTimer = __clearTimer;
  var fillRandom = __fillRandom, uuid = __uuid, utf8 = __utf8, fromUtf8 = __fromUtf8, b64 = __btoa, unb64 = __atob, hash = __hash;
  var parseURL = __parseURL, tzOffset = __tzOffset, validTZ = __validTZ, canonLocale = __locale;
  var formatNumber = __formatNumber, collate = __collate, pluralOf = __plural, installSubtle = __installSubtle;
  var defineProperty = Object.defineProperty, create = Object.create;
  // The engine's own globals, already native: markAll need not walk them.
  var builtins = new Set(Object.getOwnPropertyNames(g));
  var origin = "https://" + E.host;

  // An interface: a constructor that throws like Chrome's ("Illegal
  // constructor"), a prototype with getters and methods, a toStringTag.
  function iface(name, parent, members, ctor) {
    var C = ctor || { [name]: function () { throw new TypeError("Illegal constructor"); } }[name];
    var proto = create(parent ? parent.prototype : Object.prototype);
    defineProperty(C, "prototype", { value: proto, writable: false, enumerable: false, configurable: false });
    defineProperty(proto, "constructor", { value: C, writable: true, enumerable: false, configurable: true });
    defineProperty(proto, Symbol.toStringTag, { value: name, configurable: true });
    if (parent) Object.setPrototypeOf(C, parent);
    define(proto, members || {});
    g[name] = C;
    return C;
  }
  // define copies members as Chrome's WebIDL does: accessors and methods
  // enumerable and configurable.
  function define(target, members) {
    Object.getOwnPropertyNames(members).forEach(function (k) {
      var d = Object.getOwnPropertyDescriptor(members, k);
      d.enumerable = true;
      d.configurable = true;
      if ("value" in d) d.writable = true;
      defineProperty(target, k, d);
    });
    return target;
  }
  function hidden(o, k, v) { defineProperty(o, k, { value: v, writable: true, configurable: true, enumerable: false }); }
  // Internal slots live in a WeakMap, out of the script's sight, as
  // Chrome's do.
  var slotMap = new WeakMap();
  function S(o) { return slotMap.get(o); }
  function instance(C, slots) { var o = create(C.prototype); if (slots) slotMap.set(o, slots); return o; }
  function bytesOf(x) {
    if (x instanceof ArrayBuffer) return new Uint8Array(x);
    if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    throw new TypeError("The provided value is not of type '(ArrayBuffer or ArrayBufferView)'");
  }

  // ---- DOMException -------------------------------------------------
  var codes = { IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5, NotFoundError: 8,
    NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, InvalidAccessError: 15, TypeMismatchError: 17, SecurityError: 18,
    NetworkError: 19, AbortError: 20, QuotaExceededError: 22, TimeoutError: 23, DataCloneError: 25 };
  function DOMException(message, name) {
    if (!new.target) throw new TypeError("Failed to construct 'DOMException': Please use the 'new' operator");
    var e = Reflect.construct(Error, [message === undefined ? "" : String(message)], new.target);
    hidden(e, "name", name === undefined ? "Error" : String(name));
    hidden(e, "code", codes[e.name] || 0);
    return e;
  }
  DOMException.prototype = create(Error.prototype, { constructor: { value: DOMException, writable: true, configurable: true } });
  defineProperty(DOMException.prototype, Symbol.toStringTag, { value: "DOMException", configurable: true });
  g.DOMException = DOMException;

  // ---- window, timers, events ---------------------------------------
  var listenerMap = new WeakMap();
  function listeners(o) { var l = listenerMap.get(o); if (!l) listenerMap.set(o, l = {}); return l; }
  function EventTarget() {}
  define(EventTarget.prototype, {
    addEventListener: function addEventListener(type, fn) { var l = listeners(this); (l[type] = l[type] || []).push(fn); },
    removeEventListener: function removeEventListener(type, fn) { var l = listeners(this)[type]; if (l) { var i = l.indexOf(fn); if (i >= 0) l.splice(i, 1); } },
    dispatchEvent: function dispatchEvent(ev) {
      var l = listeners(this)[ev.type] || [], self = this;
      l.slice().forEach(function (fn) { typeof fn === "function" ? fn.call(self, ev) : fn.handleEvent(ev); });
      return !ev.defaultPrevented;
    }
  });
  g.EventTarget = EventTarget;
  iface("Event", null, {
    get type() { return S(this).type; }, get bubbles() { return !!S(this).bubbles; }, get defaultPrevented() { return !!S(this).prevented; },
    get timeStamp() { return S(this).t; }, get isTrusted() { return false; },
    preventDefault: function preventDefault() { S(this).prevented = true; }, stopPropagation: function stopPropagation() {}
  }, function Event(type, init) {
    if (!new.target) throw new TypeError("Failed to construct 'Event': Please use the 'new' operator");
    slotMap.set(this, { type: String(type), bubbles: init && init.bubbles, t: now() });
  });
  iface("CustomEvent", g.Event, { get detail() { return S(this).detail; } }, function CustomEvent(type, init) {
    slotMap.set(this, { type: String(type), detail: init ? init.detail : null, t: now() });
  });

  var Window = iface("Window", null, {});
  Object.setPrototypeOf(Window.prototype, EventTarget.prototype);
  Object.setPrototypeOf(g, Window.prototype);
  g.window = g; g.self = g; g.top = g; g.parent = g; g.frames = g; g.globalThis = g;
  g.frameElement = null; g.opener = null; g.closed = false; g.length = 0; g.name = ""; g.status = "";
  g.setTimeout = function setTimeout(fn, ms) { return timer(fn, +ms || 0, false, Array.prototype.slice.call(arguments, 2)); };
  g.setInterval = function setInterval(fn, ms) { return timer(fn, +ms || 0, true, Array.prototype.slice.call(arguments, 2)); };
  g.clearTimeout = function clearTimeout(id) { clearTimer(+id || 0); };
  g.clearInterval = function clearInterval(id) { clearTimer(+id || 0); };
  g.queueMicrotask = function queueMicrotask(fn) {
    if (typeof fn !== "function") throw new TypeError("Failed to execute 'queueMicrotask' on 'Window': parameter 1 is not of type 'Function'.");
    Promise.resolve().then(function () { fn(); });
  };
  g.requestAnimationFrame = function requestAnimationFrame(fn) { return timer(function () { fn(now()); }, 16, false, []); };
  g.cancelAnimationFrame = function cancelAnimationFrame(id) { clearTimer(+id || 0); };
  g.requestIdleCallback = function requestIdleCallback(fn) { return timer(function () { fn({ didTimeout: false, timeRemaining: function timeRemaining() { return 50; } }); }, 1, false, []); };
  g.cancelIdleCallback = function cancelIdleCallback(id) { clearTimer(+id || 0); };
  g.innerWidth = E.screenWidth; g.innerHeight = E.availHeight - 87; g.outerWidth = E.screenWidth; g.outerHeight = E.availHeight;
  g.devicePixelRatio = E.pixelRatio; g.screenX = 0; g.screenY = 0; g.screenLeft = 0; g.screenTop = 0;
  g.scrollX = 0; g.scrollY = 0; g.pageXOffset = 0; g.pageYOffset = 0;
  g.isSecureContext = true; g.crossOriginIsolated = false; g.origin = origin;
  g.matchMedia = function matchMedia(q) {
    q = String(q);
    var m = /prefers-color-scheme:\s*light|min-width|pointer:\s*fine|hover:\s*hover/.test(q);
    return { matches: m, media: q, onchange: null, addListener: function addListener() {}, removeListener: function removeListener() {},
      addEventListener: function addEventListener() {}, removeEventListener: function removeEventListener() {} };
  };
  g.getComputedStyle = function getComputedStyle() { return { getPropertyValue: function getPropertyValue() { return ""; } }; };
  g.postMessage = function postMessage() {};
  g.alert = function alert() {}; g.confirm = function confirm() { return false; }; g.prompt = function prompt() { return null; };
  g.focus = function focus() {}; g.blur = function blur() {}; g.close = function close() {}; g.print = function print() {};
  g.open = function open() { return null; }; g.stop = function stop() {};
  g.scroll = g.scrollTo = g.scrollBy = function scroll() {};

  // ---- console: never looks at its arguments ------------------------
  function makeConsole() {
    var c = {};
    ["debug", "error", "info", "log", "warn", "dir", "dirxml", "table", "trace", "group", "groupCollapsed", "groupEnd", "clear",
     "count", "countReset", "assert", "profile", "profileEnd", "time", "timeLog", "timeEnd", "timeStamp", "context"].forEach(function (m) {
      defineProperty(c, m, { value: nativeNoop(m), writable: true, enumerable: true, configurable: true });
    });
    defineProperty(c, Symbol.toStringTag, { value: "console", configurable: true });
    return c;
  }
  hidden(g, "console", makeConsole());

  // ---- navigator: getters on Navigator.prototype ---------------------
  var brands = E.brands.map(function (b) { return Object.freeze({ brand: b.brand, version: b.version }); });
  iface("NavigatorUAData", null, {
    get brands() { return brands.slice(); }, get mobile() { return false; }, get platform() { return E.uaPlatform; },
    getHighEntropyValues: function getHighEntropyValues(hints) {
      var all = { architecture: E.arch, bitness: E.bitness, model: "", platformVersion: E.platformVersion, uaFullVersion: E.fullVersion,
        fullVersionList: E.fullBrands, wow64: false, formFactors: ["Desktop"] };
      var out = { brands: brands.slice(), mobile: false, platform: E.uaPlatform };
      (hints || []).forEach(function (h) { if (h in all) out[h] = all[h]; });
      return Promise.resolve(out);
    },
    toJSON: function toJSON() { return { brands: brands.slice(), mobile: false, platform: E.uaPlatform }; }
  });
  var uaData = instance(g.NavigatorUAData);
  var pluginNames = ["PDF Viewer", "Chrome PDF Viewer", "Chromium PDF Viewer", "Microsoft Edge PDF Viewer", "WebKit built-in PDF"];
  iface("Plugin", null, { get name() { return S(this); }, get filename() { return "internal-pdf-viewer"; },
    get description() { return "Portable Document Format"; }, get length() { return 2; } });
  iface("PluginArray", null, {
    get length() { return S(this).length; },
    item: function item(i) { return S(this)[i] || null; },
    namedItem: function namedItem(n) { return S(this).filter(function (p) { return p.name === n; })[0] || null; },
    refresh: function refresh() {}
  });
  iface("MimeTypeArray", null, { get length() { return 2; }, item: function item() { return null; }, namedItem: function namedItem() { return null; } });
  var plugins = instance(g.PluginArray, pluginNames.map(function (n) { return instance(g.Plugin, n); }));
  S(plugins).forEach(function (p, i) { hidden(plugins, i, p); });
  var mimeTypes = instance(g.MimeTypeArray);
  iface("Permissions", null, { query: function query(d) {
    var state = d && d.name === "notifications" ? "default" : "prompt";
    return Promise.resolve({ name: d && d.name, state: state === "default" ? "prompt" : state, onchange: null });
  } });
  var permissions = instance(g.Permissions);
  var languages = Object.freeze(E.languages.slice());
  iface("Navigator", null, {
    get userAgent() { return E.userAgent; }, get appVersion() { return E.userAgent.replace(/^Mozilla\//, ""); },
    get appName() { return "Netscape"; }, get appCodeName() { return "Mozilla"; }, get product() { return "Gecko"; },
    get productSub() { return "20030107"; }, get vendor() { return "Google Inc."; }, get vendorSub() { return ""; },
    get platform() { return E.platform; }, get language() { return languages[0]; }, get languages() { return languages; },
    get hardwareConcurrency() { return E.cores; }, get deviceMemory() { return E.memory; }, get maxTouchPoints() { return 0; },
    get cookieEnabled() { return true; }, get onLine() { return true; }, get doNotTrack() { return null; },
    get webdriver() { return false; }, get pdfViewerEnabled() { return true; }, get plugins() { return plugins; },
    get mimeTypes() { return mimeTypes; }, get userAgentData() { return uaData; }, get permissions() { return permissions; },
    get connection() { return connection; },
    javaEnabled: function javaEnabled() { return false; }, sendBeacon: function sendBeacon() { return true; },
    vibrate: function vibrate() { return false; }
  });
  iface("NetworkInformation", null, { get effectiveType() { return "4g"; }, get rtt() { return 50; }, get downlink() { return 10; }, get saveData() { return false; } });
  var connection = instance(g.NetworkInformation);
  hidden(g, "navigator", instance(g.Navigator));
  defineProperty(g, "navigator", { enumerable: true });

  // ---- screen, location, history, storage ---------------------------
  iface("ScreenOrientation", null, { get type() { return "landscape-primary"; }, get angle() { return 0; } });
  var orientation = instance(g.ScreenOrientation);
  iface("Screen", null, {
    get width() { return E.screenWidth; }, get height() { return E.screenHeight; }, get availWidth() { return E.screenWidth; },
    get availHeight() { return E.availHeight; }, get availLeft() { return 0; }, get availTop() { return 0; },
    get colorDepth() { return E.colorDepth; }, get pixelDepth() { return E.colorDepth; }, get orientation() { return orientation; },
    get isExtended() { return false; }
  });
  hidden(g, "screen", instance(g.Screen));

  iface("Location", null, {});
  function makeLocation(href) {
    var u = parseURL(href) || { href: href, origin: "null", protocol: "about:", host: "", hostname: "", port: "", pathname: "blank", search: "", hash: "" };
    var loc = instance(g.Location);
    ["href", "origin", "protocol", "host", "hostname", "port", "pathname", "search", "hash"].forEach(function (k) {
      defineProperty(loc, k, { get: { ["get " + k]: function () { return u[k]; } }["get " + k], enumerable: true, configurable: false });
    });
    define(loc, { toString: function toString() { return u.href; }, assign: function assign() {}, replace: function replace() {}, reload: function reload() {} });
    defineProperty(loc, "ancestorOrigins", { value: { length: 0 }, enumerable: true });
    return loc;
  }
  // The page that loads the challenge: the site's root on the script's host.
  hidden(g, "location", makeLocation(origin + "/"));
  iface("History", null, {
    get length() { return 1; }, get state() { return S(this).state; }, get scrollRestoration() { return "auto"; },
    pushState: function pushState(s) { S(this).state = s; }, replaceState: function replaceState(s) { S(this).state = s; },
    back: function back() {}, forward: function forward() {}, go: function go() {}
  });
  hidden(g, "history", instance(g.History, { state: null }));
  iface("Storage", null, {
    get length() { return Object.keys(S(this)).length; },
    key: function key(i) { var k = Object.keys(S(this)); return i < k.length ? k[i] : null; },
    getItem: function getItem(k) { k = String(k); return Object.prototype.hasOwnProperty.call(S(this), k) ? S(this)[k] : null; },
    setItem: function setItem(k, v) { S(this)[String(k)] = String(v); },
    removeItem: function removeItem(k) { delete S(this)[String(k)]; },
    clear: function clear() { var s = S(this); Object.keys(s).forEach(function (k) { delete s[k]; }); }
  });
  hidden(g, "localStorage", instance(g.Storage, {}));
  hidden(g, "sessionStorage", instance(g.Storage, {}));

  // ---- performance ---------------------------------------------------
  var marks = [];
  var navEntry = { name: origin + "/", entryType: "navigation", startTime: 0, duration: 412.5, type: "navigate", redirectCount: 0,
    domInteractive: 230.1, domContentLoadedEventEnd: 260.4, loadEventEnd: 412.5, responseEnd: 120.3, transferSize: 21843,
    toJSON: function toJSON() { return this; } };
  var scriptEntry = { name: E.scriptURL, entryType: "resource", initiatorType: "script", startTime: 180.2, duration: 35.8,
    transferSize: 9120, toJSON: function toJSON() { return this; } };
  function entries() { return [navEntry, scriptEntry].concat(marks); }
  iface("Performance", null, {
    now: function now_() { return now(); }, get timeOrigin() { return E.timeOrigin; },
    getEntries: function getEntries() { return entries(); },
    getEntriesByType: function getEntriesByType(t) { return entries().filter(function (e) { return e.entryType === t; }); },
    getEntriesByName: function getEntriesByName(n, t) { return entries().filter(function (e) { return e.name === n && (!t || e.entryType === t); }); },
    mark: function mark(name) { var m = { name: String(name), entryType: "mark", startTime: now(), duration: 0 }; marks.push(m); return m; },
    measure: function measure(name) { var m = { name: String(name), entryType: "measure", startTime: 0, duration: now() }; marks.push(m); return m; },
    clearMarks: function clearMarks() { marks.length = 0; }, clearMeasures: function clearMeasures() {},
    get timing() { return { navigationStart: Math.round(E.timeOrigin) }; },
    get memory() { return { jsHeapSizeLimit: 4294705152, totalJSHeapSize: 19500000, usedJSHeapSize: 14200000 }; },
    toJSON: function toJSON() { return { timeOrigin: E.timeOrigin }; }
  });
  hidden(g, "performance", instance(g.Performance));

  // ---- crypto --------------------------------------------------------
  var subtleParts = installSubtle();
  g.CryptoKey = subtleParts.CryptoKey;
  g.SubtleCrypto = subtleParts.SubtleCrypto;
  iface("Crypto", null, {
    get subtle() { return subtleParts.subtle; },
    getRandomValues: function getRandomValues(arr) {
      if (!ArrayBuffer.isView(arr) || arr instanceof Float32Array || arr instanceof Float64Array || arr instanceof DataView)
        throw new DOMException("Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is of type '" + (arr && arr.constructor && arr.constructor.name) + "', which is not an integer array type.", "TypeMismatchError");
      fillRandom(arr.buffer, arr.byteOffset, arr.byteLength);
      return arr;
    },
    randomUUID: function randomUUID() { return uuid(); }
  });
  hidden(g, "crypto", instance(g.Crypto));

  // ---- encoding, base64, URL, structuredClone ------------------------
  g.TextEncoder = iface("TextEncoder", null, {
    get encoding() { return "utf-8"; },
    encode: function encode(s) { return new Uint8Array(utf8(String(s === undefined ? "" : s))); },
    encodeInto: function encodeInto(s, dst) { var b = new Uint8Array(utf8(String(s))); var n = Math.min(b.length, dst.length); dst.set(b.subarray(0, n)); return { read: String(s).length, written: n }; }
  }, function TextEncoder() { if (!new.target) throw new TypeError("Failed to construct 'TextEncoder': Please use the 'new' operator"); });
  iface("TextDecoder", null, {
    get encoding() { return "utf-8"; }, get fatal() { return !!(S(this) && S(this).fatal); }, get ignoreBOM() { return false; },
    decode: function decode(b) {
      if (b === undefined) return "";
      var s = fromUtf8(bytesOf(b).slice().buffer, this.fatal);
      return s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
    }
  }, function TextDecoder(label, opts) {
    if (!new.target) throw new TypeError("Failed to construct 'TextDecoder': Please use the 'new' operator");
    label = label === undefined ? "utf-8" : String(label).trim().toLowerCase();
    if (label !== "utf-8" && label !== "utf8" && label !== "unicode-1-1-utf-8")
      throw new RangeError("Failed to construct 'TextDecoder': The encoding label provided ('" + label + "') is invalid.");
    slotMap.set(this, { fatal: !!(opts && opts.fatal) });
  });
  g.btoa = function btoa(s) { return b64(String(s)); };
  g.atob = function atob(s) { return unb64(String(s)); };

  var updaters = new WeakMap();
  function changed(params) { var f = updaters.get(params); if (f) f(); }
  function formEncode(s) { return encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()~]/g, function (c) { return "%" + c.charCodeAt(0).toString(16).toUpperCase(); }); }
  function formDecode(s) { try { return decodeURIComponent(s.replace(/\+/g, " ")); } catch (e) { return s; } }
  iface("URLSearchParams", null, {
    append: function append(k, v) { S(this).push([String(k), String(v)]); changed(this); },
    delete: function delete_(k) { k = String(k); S(this).splice(0, S(this).length, ...S(this).filter(function (p) { return p[0] !== k; })); changed(this); },
    get: function get(k) { k = String(k); var p = S(this).filter(function (p) { return p[0] === k; })[0]; return p ? p[1] : null; },
    getAll: function getAll(k) { k = String(k); return S(this).filter(function (p) { return p[0] === k; }).map(function (p) { return p[1]; }); },
    has: function has(k) { k = String(k); return S(this).some(function (p) { return p[0] === k; }); },
    set: function set(k, v) {
      k = String(k); v = String(v); var done = false;
      var next = S(this).filter(function (p) { if (p[0] !== k) return true; if (done) return false; p[1] = v; done = true; return true; });
      if (!done) next.push([k, v]);
      S(this).splice(0, S(this).length, ...next); changed(this);
    },
    sort: function sort() { S(this).sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; }); changed(this); },
    forEach: function forEach(fn, that) { var self = this; S(this).slice().forEach(function (p) { fn.call(that, p[1], p[0], self); }); },
    keys: function keys() { return S(this).map(function (p) { return p[0]; })[Symbol.iterator](); },
    values: function values() { return S(this).map(function (p) { return p[1]; })[Symbol.iterator](); },
    entries: function entries() { return S(this).map(function (p) { return [p[0], p[1]]; })[Symbol.iterator](); },
    get size() { return S(this).length; },
    toString: function toString() { return S(this).map(function (p) { return formEncode(p[0]) + "=" + formEncode(p[1]); }).join("&"); }
  }, function URLSearchParams(init) {
    if (!new.target) throw new TypeError("Failed to construct 'URLSearchParams': Please use the 'new' operator");
    var list = [];
    if (init && typeof init === "object") {
      if (typeof init[Symbol.iterator] === "function") { for (var p of init) list.push([String(p[0]), String(p[1])]); }
      else Object.keys(init).forEach(function (k) { list.push([k, String(init[k])]); });
    } else if (init !== undefined) {
      String(init).replace(/^\?/, "").split("&").forEach(function (part) {
        if (!part) return;
        var i = part.indexOf("=");
        list.push(i < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]);
      });
    }
    slotMap.set(this, list);
  });
  g.URLSearchParams.prototype[Symbol.iterator] = g.URLSearchParams.prototype.entries;
  iface("URL", null, {
    get href() { return S(this).href; }, get origin() { return S(this).origin; }, get protocol() { return S(this).protocol; },
    get host() { return S(this).host; }, get hostname() { return S(this).hostname; }, get port() { return S(this).port; },
    get pathname() { return S(this).pathname; }, get search() { return S(this).search; }, get hash() { return S(this).hash; },
    get username() { return S(this).username; }, get password() { return S(this).password; },
    get searchParams() {
      var u = S(this);
      if (!u.params) {
        u.params = new g.URLSearchParams(u.search);
        // Changes to the params rewrite the URL's query, as in Chrome.
        updaters.set(u.params, function () {
          var q = u.params.toString(), next = parseURL(u.href.replace(/[?#].*$/, "") + (q ? "?" + q : "") + u.hash);
          Object.keys(next).forEach(function (k) { u[k] = next[k]; });
        });
      }
      return u.params;
    },
    toString: function toString() { return S(this).href; }, toJSON: function toJSON() { return S(this).href; }
  }, function URL(href, base) {
    if (!new.target) throw new TypeError("Failed to construct 'URL': Please use the 'new' operator");
    var u = parseURL(String(href), base === undefined ? undefined : String(base));
    if (!u) throw new TypeError("Failed to construct 'URL': Invalid URL");
    slotMap.set(this, Object.assign({}, u)); // a JS copy: Go's map cannot hold the params object
  });
  g.URL.canParse = function canParse(href, base) { return !!parseURL(String(href), base === undefined ? undefined : String(base)); };
  g.URL.createObjectURL = function createObjectURL() { return "blob:" + origin + "/" + uuid(); };
  g.URL.revokeObjectURL = function revokeObjectURL() {};

  g.structuredClone = function structuredClone(value) {
    var seen = new Map();
    function clone(v) {
      if (v === null || (typeof v !== "object" && typeof v !== "function")) {
        if (typeof v === "symbol") throw new DOMException("Failed to execute 'structuredClone' on 'Window': " + String(v) + " could not be cloned.", "DataCloneError");
        return v;
      }
      if (typeof v === "function") throw new DOMException("Failed to execute 'structuredClone' on 'Window': " + Function.prototype.toString.call(v) + " could not be cloned.", "DataCloneError");
      if (seen.has(v)) return seen.get(v);
      var out;
      if (v instanceof Date) out = new Date(v.getTime());
      else if (v instanceof RegExp) out = new RegExp(v.source, v.flags);
      else if (v instanceof ArrayBuffer) out = v.slice(0);
      else if (ArrayBuffer.isView(v)) out = new v.constructor(clone(v.buffer), v.byteOffset, v instanceof DataView ? v.byteLength : v.length);
      else if (v instanceof Map) { out = new Map(); seen.set(v, out); v.forEach(function (val, k) { out.set(clone(k), clone(val)); }); return out; }
      else if (v instanceof Set) { out = new Set(); seen.set(v, out); v.forEach(function (val) { out.add(clone(val)); }); return out; }
      else if (v instanceof Error) { out = new (g[v.name] || Error)(v.message); }
      else if (Array.isArray(v)) { out = new Array(v.length); seen.set(v, out); Object.keys(v).forEach(function (k) { out[k] = clone(v[k]); }); return out; }
      else if (Object.prototype.toString.call(v) === "[object Object]") { out = {}; seen.set(v, out); Object.keys(v).forEach(function (k) { out[k] = clone(v[k]); }); return out; }
      else throw new DOMException("Failed to execute 'structuredClone' on 'Window': " + Object.prototype.toString.call(v) + " could not be cloned.", "DataCloneError");
      seen.set(v, out);
      return out;
    }
    return clone(value);
  };

  // ---- Intl ----------------------------------------------------------
  var defaultLocale = languages[0];
  function locale(l) {
    if (Array.isArray(l)) l = l[0];
    if (l === undefined) return defaultLocale;
    var c = canonLocale(String(l));
    if (c === null) throw new RangeError("Incorrect locale information provided");
    return c;
  }
  var Intl = {};
  defineProperty(Intl, Symbol.toStringTag, { value: "Intl", configurable: true });
  var pad = function (n, w) { n = String(n); while (n.length < (w || 2)) n = "0" + n; return n; };
  function DateTimeFormat(loc, opts) {
    if (!(this instanceof DateTimeFormat)) return new DateTimeFormat(loc, opts);
    opts = opts || {};
    var tz = opts.timeZone === undefined ? E.timeZone : validTZ(String(opts.timeZone));
    if (tz === null) throw new RangeError("Invalid time zone specified: " + opts.timeZone);
    var ro = { locale: locale(loc), calendar: "gregory", numberingSystem: "latn", timeZone: tz };
    var fields = ["weekday", "era", "year", "month", "day", "hour", "minute", "second", "timeZoneName"];
    var any = fields.some(function (f) { return opts[f] !== undefined; }) || opts.dateStyle || opts.timeStyle;
    if (!any) { ro.year = "numeric"; ro.month = "numeric"; ro.day = "numeric"; }
    fields.forEach(function (f) { if (opts[f] !== undefined) ro[f] = String(opts[f]); });
    if (ro.hour) { ro.hourCycle = /^en-(US|CA|AU|IN)|^en$/.test(ro.locale) ? "h12" : "h23"; ro.hour12 = ro.hourCycle === "h12"; }
    slotMap.set(this, ro);
  }
  define(DateTimeFormat.prototype, {
    resolvedOptions: function resolvedOptions() { return Object.assign({}, S(this)); },
    formatToParts: function formatToParts(d) {
      var t = d === undefined ? Date.now() : +d;
      if (isNaN(t)) throw new RangeError("Invalid time value");
      var ro = S(this), off = tzOffset(ro.timeZone, t), x = new Date(t + off * 60000);
      var Y = x.getUTCFullYear(), M = x.getUTCMonth() + 1, D = x.getUTCDate(), h = x.getUTCHours(), mi = x.getUTCMinutes(), s = x.getUTCSeconds();
      var us = /^en-US|^en$/.test(ro.locale), parts = [];
      function lit(v) { parts.push({ type: "literal", value: v }); }
      if (ro.year || ro.month || ro.day) {
        var dsep = us || /^en-GB/.test(ro.locale) ? "/" : /^de|^ru|^pl|^fi|^nb/.test(ro.locale) ? "." : "/";
        var order = us ? ["month", "day", "year"] : /^(ja|zh|ko|sv|lt|hu)/.test(ro.locale) ? ["year", "month", "day"] : ["day", "month", "year"];
        var vals = { year: String(Y), month: ro.month === "2-digit" || !us ? pad(M) : String(M), day: ro.day === "2-digit" || !us ? pad(D) : String(D) };
        order.filter(function (f) { return ro[f]; }).forEach(function (f, i) { if (i) lit(dsep); parts.push({ type: f, value: vals[f] }); });
      }
      if (ro.hour) {
        if (parts.length) lit(", ");
        var hh = ro.hour12 ? (h % 12 || 12) : pad(h);
        parts.push({ type: "hour", value: String(hh) });
        if (ro.minute) { lit(":"); parts.push({ type: "minute", value: pad(mi) }); }
        if (ro.second) { lit(":"); parts.push({ type: "second", value: pad(s) }); }
        if (ro.hour12) { lit(" "); parts.push({ type: "dayPeriod", value: h < 12 ? "AM" : "PM" }); }
      }
      return parts;
    },
    format: function format(d) { return this.formatToParts(d).map(function (p) { return p.value; }).join(""); }
  });
  DateTimeFormat.supportedLocalesOf = function supportedLocalesOf(l) { return [].concat(l || []).map(locale); };
  Intl.DateTimeFormat = DateTimeFormat;
  function NumberFormat(loc, opts) {
    if (!(this instanceof NumberFormat)) return new NumberFormat(loc, opts);
    opts = opts || {};
    var style = opts.style || "decimal";
    if (["decimal", "percent", "currency", "unit"].indexOf(style) < 0) throw new RangeError("Value " + style + " out of range for Intl.NumberFormat options property style");
    if (style === "currency" && !opts.currency) throw new TypeError("Currency code is required with currency style.");
    var minF = opts.minimumFractionDigits !== undefined ? +opts.minimumFractionDigits : style === "currency" ? 2 : 0;
    var maxF = opts.maximumFractionDigits !== undefined ? +opts.maximumFractionDigits : Math.max(minF, style === "currency" ? 2 : style === "percent" ? 0 : 3);
    slotMap.set(this, { locale: locale(loc), numberingSystem: "latn", style: style, currency: opts.currency && String(opts.currency).toUpperCase(),
      minimumIntegerDigits: 1, minimumFractionDigits: minF, maximumFractionDigits: maxF, useGrouping: opts.useGrouping === false ? false : "auto",
      notation: "standard", signDisplay: "auto", roundingMode: "halfExpand" });
  }
  define(NumberFormat.prototype, {
    resolvedOptions: function resolvedOptions() { var o = Object.assign({}, S(this)); if (!o.currency) delete o.currency; return o; },
    format: function format(n) {
      var s = S(this), v = Number(n);
      if (s.style === "percent") v *= 100;
      var out = formatNumber(s.locale, v, s.minimumFractionDigits, s.maximumFractionDigits, s.useGrouping !== false);
      if (s.style === "percent") out += "%";
      if (s.style === "currency") { var sym = { USD: "$", EUR: "€", GBP: "£", JPY: "¥" }[s.currency] || s.currency + " "; out = out.charAt(0) === "-" ? "-" + sym + out.slice(1) : sym + out; }
      return out;
    },
    formatToParts: function formatToParts(n) { return [{ type: "integer", value: this.format(n) }]; }
  });
  NumberFormat.supportedLocalesOf = DateTimeFormat.supportedLocalesOf;
  Intl.NumberFormat = NumberFormat;
  function Collator(loc, opts) {
    if (!(this instanceof Collator)) return new Collator(loc, opts);
    opts = opts || {};
    slotMap.set(this, { locale: locale(loc), usage: opts.usage || "sort", sensitivity: opts.sensitivity || "variant", ignorePunctuation: false,
      collation: "default", numeric: !!opts.numeric, caseFirst: "false" });
    var self = this;
    hidden(this, "compare", function (a, b) { return collate(S(self).locale, String(a), String(b), S(self).sensitivity === "base"); });
  }
  define(Collator.prototype, { resolvedOptions: function resolvedOptions() { return Object.assign({}, S(this)); } });
  Collator.supportedLocalesOf = DateTimeFormat.supportedLocalesOf;
  Intl.Collator = Collator;
  function PluralRules(loc, opts) {
    if (!new.target) throw new TypeError("Constructor Intl.PluralRules requires 'new'");
    slotMap.set(this, { locale: locale(loc), type: (opts && opts.type) || "cardinal" });
  }
  define(PluralRules.prototype, {
    select: function select(n) { return pluralOf(S(this).locale, Number(n), S(this).type === "ordinal"); },
    resolvedOptions: function resolvedOptions() { return Object.assign({ minimumIntegerDigits: 1, minimumFractionDigits: 0, maximumFractionDigits: 3 }, S(this)); }
  });
  PluralRules.supportedLocalesOf = DateTimeFormat.supportedLocalesOf;
  Intl.PluralRules = PluralRules;
  Intl.getCanonicalLocales = function getCanonicalLocales(l) { return [].concat(l || []).map(locale); };
  Intl.supportedValuesOf = function supportedValuesOf() { return []; };
  hidden(g, "Intl", Intl);
  Date.prototype.toLocaleDateString = function toLocaleDateString(l, o) { return new DateTimeFormat(l, o).format(this); };
  Number.prototype.toLocaleString = function toLocaleString(l, o) { return new NumberFormat(l, o).format(this); };
  String.prototype.localeCompare = function localeCompare(that, l, o) { return new Collator(l, o).compare(this, that); };

  // ---- canvas and WebGL ----------------------------------------------
  var glParams = { 0x9245: E.glVendor, 0x9246: E.glRenderer, 0x1F00: "WebKit", 0x1F01: "WebKit WebGL",
    0x1F02: "WebGL 1.0 (OpenGL ES 2.0 Chromium)", 0x8B8C: "WebGL GLSL ES 1.0 (OpenGL ES GLSL ES 1.0 Chromium)",
    0x0D33: 16384, 0x8869: 16, 0x8DFB: 4096, 0x8DFC: 30, 0x8DFD: 1024, 0x84E8: 16384, 0x8872: 16, 0x8B4D: 32, 0x8B4C: 16,
    0x851C: 16384, 0x0D3A: new Int32Array([32767, 32767]), 0x846E: new Float32Array([1, 1]), 0x846D: new Float32Array([1, 1024]),
    0x0D55: 8, 0x0D52: 8, 0x0D53: 8, 0x0D54: 8, 0x0D56: 24, 0x0D57: 0 };
  var debugInfo = Object.freeze({ UNMASKED_VENDOR_WEBGL: 0x9245, UNMASKED_RENDERER_WEBGL: 0x9246 });
  var glExtensions = ["ANGLE_instanced_arrays", "EXT_blend_minmax", "EXT_color_buffer_half_float", "EXT_float_blend", "EXT_frag_depth",
    "EXT_shader_texture_lod", "EXT_texture_filter_anisotropic", "OES_element_index_uint", "OES_standard_derivatives", "OES_texture_float",
    "OES_texture_float_linear", "OES_texture_half_float", "OES_vertex_array_object", "WEBGL_color_buffer_float", "WEBGL_compressed_texture_s3tc",
    "WEBGL_debug_renderer_info", "WEBGL_debug_shaders", "WEBGL_depth_texture", "WEBGL_draw_buffers", "WEBGL_lose_context"];
  function glMembers(version) {
    return {
      get canvas() { return S(this).canvas; }, get drawingBufferWidth() { return S(this).canvas.width; }, get drawingBufferHeight() { return S(this).canvas.height; },
      getExtension: function getExtension(n) { return n === "WEBGL_debug_renderer_info" ? debugInfo : glExtensions.indexOf(n) >= 0 ? {} : null; },
      getParameter: function getParameter(p) {
        if (p === 0x1F02) return version === 2 ? "WebGL 2.0 (OpenGL ES 3.0 Chromium)" : glParams[p];
        if (p === 0x8B8C) return version === 2 ? "WebGL GLSL ES 3.00 (OpenGL ES GLSL ES 3.0 Chromium)" : glParams[p];
        return p in glParams ? glParams[p] : null;
      },
      getSupportedExtensions: function getSupportedExtensions() { return glExtensions.slice(); },
      getContextAttributes: function getContextAttributes() { return { alpha: true, antialias: true, depth: true, desynchronized: false, failIfMajorPerformanceCaveat: false,
        powerPreference: "default", premultipliedAlpha: true, preserveDrawingBuffer: false, stencil: false, xrCompatible: false }; },
      getShaderPrecisionFormat: function getShaderPrecisionFormat(s, t) { return t < 0x8DF3 ? { rangeMin: 127, rangeMax: 127, precision: 23 } : { rangeMin: 31, rangeMax: 30, precision: 0 }; },
      isContextLost: function isContextLost() { return false; },
      createBuffer: function createBuffer() { return {}; }, createProgram: function createProgram() { return {}; },
      createShader: function createShader() { return {}; }, shaderSource: function shaderSource() {}, compileShader: function compileShader() {},
      attachShader: function attachShader() {}, linkProgram: function linkProgram() {}, useProgram: function useProgram() {},
      bindBuffer: function bindBuffer() {}, bufferData: function bufferData() {}, getAttribLocation: function getAttribLocation() { return 0; },
      getUniformLocation: function getUniformLocation() { return {}; }, enableVertexAttribArray: function enableVertexAttribArray() {},
      vertexAttribPointer: function vertexAttribPointer() {}, uniform2f: function uniform2f() {}, drawArrays: function drawArrays() {},
      clearColor: function clearColor() {}, clear: function clear() {}, enable: function enable() {}, viewport: function viewport() {},
      getError: function getError() { return 0; }, getShaderParameter: function getShaderParameter() { return true; },
      getProgramParameter: function getProgramParameter() { return true; },
      readPixels: function readPixels(x, y, w, h, f, t, out) { if (out) for (var i = 0; i < out.length; i++) out[i] = (i * 31 + 7) & 0xff; }
    };
  }
  iface("WebGLRenderingContext", null, glMembers(1));
  iface("WebGL2RenderingContext", null, glMembers(2));
  iface("TextMetrics", null, { get width() { return S(this).w; }, get actualBoundingBoxAscent() { return 7; }, get actualBoundingBoxDescent() { return 2; },
    get actualBoundingBoxLeft() { return 0; }, get actualBoundingBoxRight() { return S(this).w; }, get fontBoundingBoxAscent() { return 9; }, get fontBoundingBoxDescent() { return 2; } });
  var ctx2dMembers = {
    get canvas() { return S(this).canvas; },
    measureText: function measureText(t) { return instance(g.TextMetrics, { w: String(t).length * 5.5615234375 }); },
    getImageData: function getImageData(x, y, w, h) {
      var data = new Uint8ClampedArray(w * h * 4), seed = hash(S(this).ops.join(";"));
      for (var i = 0; i < data.length; i++) data[i] = parseInt(seed.charAt(i % 64), 16) * 17;
      return { data: data, width: w, height: h, colorSpace: "srgb" };
    },
    createImageData: function createImageData(w, h) { return { data: new Uint8ClampedArray(w * h * 4), width: w, height: h }; },
    isPointInPath: function isPointInPath() { return false; }, isPointInStroke: function isPointInStroke() { return false; },
    createLinearGradient: function createLinearGradient() { return { addColorStop: function addColorStop() {} }; },
    createRadialGradient: function createRadialGradient() { return { addColorStop: function addColorStop() {} }; },
    createPattern: function createPattern() { return {}; },
    getLineDash: function getLineDash() { return []; }, setLineDash: function setLineDash() {},
    getTransform: function getTransform() { return { a: 1, b: 0, c: 0, d: 1, e: 0, f: 0 }; }
  };
  ["fillText", "strokeText", "fillRect", "strokeRect", "clearRect", "beginPath", "closePath", "arc", "arcTo", "ellipse", "rect", "moveTo",
   "lineTo", "fill", "stroke", "clip", "save", "restore", "translate", "rotate", "scale", "transform", "setTransform", "resetTransform",
   "drawImage", "putImageData", "bezierCurveTo", "quadraticCurveTo"].forEach(function (m) {
    ctx2dMembers[m] = { [m]: function () { S(this).ops.push(m + ":" + Array.prototype.join.call(arguments, ",")); } }[m];
  });
  iface("CanvasRenderingContext2D", null, ctx2dMembers);
  var ctx2dState = ["fillStyle", "strokeStyle", "font", "textBaseline", "textAlign", "globalAlpha", "globalCompositeOperation", "lineWidth",
    "lineCap", "lineJoin", "shadowBlur", "shadowColor", "filter", "direction", "imageSmoothingEnabled"];

  // ---- DOM -----------------------------------------------------------
  iface("Node", null, {
    get nodeName() { return S(this).tag.toUpperCase(); }, get nodeType() { return 1; },
    get parentNode() { return S(this).parent || null; }, get parentElement() { return S(this).parent || null; },
    get childNodes() { return S(this).children.slice(); }, get firstChild() { return S(this).children[0] || null; },
    get lastChild() { return S(this).children[S(this).children.length - 1] || null; },
    get ownerDocument() { return g.document; }, get isConnected() { var n = this; while (S(n).parent) n = S(n).parent; return n === g.document; },
    get textContent() { return S(this).text || ""; }, set textContent(v) { S(this).text = String(v); },
    appendChild: function appendChild(c) {
      if (!c || !S(c)) throw new TypeError("Failed to execute 'appendChild' on 'Node': parameter 1 is not of type 'Node'.");
      if (S(c).parent) S(c).parent.removeChild(c);
      S(this).children.push(c); S(c).parent = this;
      if (S(c).tag === "iframe" && c.isConnected) attachFrame(c);
      return c;
    },
    insertBefore: function insertBefore(c, ref) { this.appendChild(c); return c; },
    removeChild: function removeChild(c) {
      var i = S(this).children.indexOf(c);
      if (i < 0) throw new DOMException("Failed to execute 'removeChild' on 'Node': The node to be removed is not a child of this node.", "NotFoundError");
      S(this).children.splice(i, 1); S(c).parent = null;
      if (S(c).tag === "iframe") S(c).frame = null;
      return c;
    },
    contains: function contains(n) { while (n) { if (n === this) return true; n = S(n) && S(n).parent; } return false; },
    cloneNode: function cloneNode() { return g.document.createElement(S(this).tag); }
  });
  Object.setPrototypeOf(g.Node.prototype, EventTarget.prototype);
  iface("Element", g.Node, {
    get tagName() { return S(this).tag.toUpperCase(); }, get localName() { return S(this).tag; },
    get id() { return this.getAttribute("id") || ""; }, set id(v) { this.setAttribute("id", v); },
    get className() { return this.getAttribute("class") || ""; }, set className(v) { this.setAttribute("class", v); },
    get children() { return S(this).children.slice(); }, get childElementCount() { return S(this).children.length; },
    get innerHTML() { return S(this).html || ""; }, set innerHTML(v) { S(this).html = String(v); },
    get outerHTML() { return "<" + S(this).tag + ">" + (S(this).html || "") + "</" + S(this).tag + ">"; },
    get attributes() { var a = S(this).attrs; return Object.keys(a).map(function (k) { return { name: k, value: a[k] }; }); },
    setAttribute: function setAttribute(k, v) { S(this).attrs[String(k).toLowerCase()] = String(v); },
    getAttribute: function getAttribute(k) { k = String(k).toLowerCase(); return k in S(this).attrs ? S(this).attrs[k] : null; },
    hasAttribute: function hasAttribute(k) { return String(k).toLowerCase() in S(this).attrs; },
    removeAttribute: function removeAttribute(k) { delete S(this).attrs[String(k).toLowerCase()]; },
    remove: function remove() { if (S(this).parent) S(this).parent.removeChild(this); },
    getBoundingClientRect: function getBoundingClientRect() { return { x: 0, y: 0, top: 0, left: 0, right: 0, bottom: 0, width: 0, height: 0 }; },
    getElementsByTagName: function getElementsByTagName(t) { return findAll(this, String(t).toLowerCase()); },
    querySelector: function querySelector(s) { return findAll(this, String(s).toLowerCase())[0] || null; },
    querySelectorAll: function querySelectorAll(s) { return findAll(this, String(s).toLowerCase()); },
    attachShadow: function attachShadow() { return g.document.createElement("div"); }
  });
  function findAll(root, tag) {
    var out = [];
    (function walk(n) { S(n).children.forEach(function (c) { if (S(c) && (tag === "*" || S(c).tag === tag)) out.push(c); if (S(c)) walk(c); }); })(root);
    return out;
  }
  iface("HTMLElement", g.Element, {
    get style() { return S(this).style; }, get dataset() { return S(this).dataset; }, get hidden() { return false; },
    get offsetWidth() { return 0; }, get offsetHeight() { return 0; }, get innerText() { return S(this).text || ""; },
    set innerText(v) { S(this).text = String(v); },
    focus: function focus() {}, blur: function blur() {}, click: function click() {}
  });
  iface("HTMLHtmlElement", g.HTMLElement, {});
  iface("HTMLHeadElement", g.HTMLElement, {});
  iface("HTMLBodyElement", g.HTMLElement, {});
  iface("HTMLDivElement", g.HTMLElement, {});
  iface("HTMLSpanElement", g.HTMLElement, {});
  iface("HTMLImageElement", g.HTMLElement, { get src() { return this.getAttribute("src") || ""; }, set src(v) { this.setAttribute("src", v); },
    get complete() { return true; }, get naturalWidth() { return 0; } });
  iface("HTMLScriptElement", g.HTMLElement, {
    get src() { var s = this.getAttribute("src"); return s ? new g.URL(s, g.location.href).href : ""; }, set src(v) { this.setAttribute("src", v); },
    get async() { return !!S(this).async; }, set async(v) { S(this).async = !!v; }, get type() { return this.getAttribute("type") || ""; }
  });
  iface("HTMLCanvasElement", g.HTMLElement, {
    get width() { return S(this).w; }, set width(v) { S(this).w = v >>> 0; },
    get height() { return S(this).h; }, set height(v) { S(this).h = v >>> 0; },
    getContext: function getContext(kind) {
      var s = S(this);
      if (s.ctx) return s.ctxKind === kind ? s.ctx : null;
      if (kind === "2d") { s.ctx = instance(g.CanvasRenderingContext2D, { canvas: this, ops: [] }); var c = s.ctx;
        c.fillStyle = "#000000"; c.strokeStyle = "#000000"; c.font = "10px sans-serif"; c.textBaseline = "alphabetic"; c.textAlign = "start";
        c.globalAlpha = 1; c.globalCompositeOperation = "source-over"; c.lineWidth = 1; c.lineCap = "butt"; c.lineJoin = "miter";
        c.shadowBlur = 0; c.shadowColor = "rgba(0, 0, 0, 0)"; c.filter = "none"; c.direction = "ltr"; c.imageSmoothingEnabled = true; }
      else if (kind === "webgl" || kind === "experimental-webgl") s.ctx = instance(g.WebGLRenderingContext, { canvas: this });
      else if (kind === "webgl2") s.ctx = instance(g.WebGL2RenderingContext, { canvas: this });
      else return null;
      s.ctxKind = kind;
      return s.ctx;
    },
    toDataURL: function toDataURL(type) {
      var s = S(this), ops = s.ctx && s.ctxKind === "2d" ? S(s.ctx).ops.concat(ctx2dState.map(function (k) { return k + "=" + s.ctx[k]; })) : [];
      return "data:" + (type === "image/jpeg" ? "image/jpeg" : "image/png") + ";base64," + b64(hash(E.glRenderer + "|" + ops.join(";") + "|" + s.w + "x" + s.h) + hash(ops.join(",")));
    },
    toBlob: function toBlob(cb) { var self = this; timer(function () { cb({ size: self.toDataURL().length, type: "image/png" }); }, 0, false, []); }
  });
  iface("HTMLIFrameElement", g.HTMLElement, {
    get src() { return this.getAttribute("src") || ""; }, set src(v) { this.setAttribute("src", v); },
    get contentWindow() { return S(this).frame || null; },
    get contentDocument() { return S(this).frame ? S(this).frame.document : null; }
  });
  var tags = { html: g.HTMLHtmlElement, head: g.HTMLHeadElement, body: g.HTMLBodyElement, div: g.HTMLDivElement, span: g.HTMLSpanElement,
    img: g.HTMLImageElement, script: g.HTMLScriptElement, canvas: g.HTMLCanvasElement, iframe: g.HTMLIFrameElement };
  function element(tag) {
    tag = String(tag).toLowerCase();
    var el = instance(tags[tag] || g.HTMLElement, { tag: tag, attrs: {}, children: [], style: {}, dataset: {}, w: 300, h: 150 });
    return el;
  }
  g.Image = function Image(w, h) { var el = element("img"); if (w !== undefined) el.setAttribute("width", w); return el; };

  var html = element("html"), head = element("head"), body = element("body");
  html.appendChild(head); html.appendChild(body);
  var current = element("script");
  current.setAttribute("src", E.scriptURL);
  head.appendChild(current);
  var cookies = {};
  iface("Document", g.Node, {
    get documentElement() { return html; }, get head() { return head; }, get body() { return body; },
    get currentScript() { return S(this).executing ? current : null; },
    get readyState() { return "complete"; }, get visibilityState() { return "visible"; }, get hidden() { return false; },
    get referrer() { return ""; }, get title() { return "Cursor"; }, get URL() { return g.location.href; },
    get documentURI() { return g.location.href; }, get domain() { return E.hostname; }, get characterSet() { return "UTF-8"; },
    get charset() { return "UTF-8"; }, get compatMode() { return "CSS1Compat"; }, get contentType() { return "text/html"; },
    get location() { return g.location; }, get defaultView() { return g; }, get nodeType() { return 9; }, get nodeName() { return "#document"; },
    get cookie() { return Object.keys(cookies).map(function (k) { return k + "=" + cookies[k]; }).join("; "); },
    set cookie(v) {
      var first = String(v).split(";")[0], i = first.indexOf("=");
      var k = (i < 0 ? "" : first.slice(0, i)).trim(), val = (i < 0 ? first : first.slice(i + 1)).trim();
      if (/;\s*max-age=(-|0\b)|;\s*expires=thu, 01 jan 1970/i.test(String(v))) delete cookies[k]; else cookies[k] = val;
    },
    get scripts() { return [current]; }, get forms() { return []; }, get images() { return []; }, get links() { return []; },
    createElement: function createElement(t) { return element(t); },
    createElementNS: function createElementNS(ns, t) { return element(t); },
    createTextNode: function createTextNode(t) { var n = element("#text"); S(n).text = String(t); return n; },
    createEvent: function createEvent(t) { return new g.Event(""); },
    getElementById: function getElementById(id) { return findAll(html, "*").filter(function (e) { return e.id === String(id); })[0] || null; },
    getElementsByTagName: function getElementsByTagName(t) { t = String(t).toLowerCase(); return t === "html" ? [html] : findAll(html, t); },
    getElementsByClassName: function getElementsByClassName() { return []; },
    querySelector: function querySelector(s) { s = String(s).toLowerCase(); return s === "html" ? html : findAll(html, s)[0] || null; },
    querySelectorAll: function querySelectorAll(s) { return findAll(html, String(s).toLowerCase()); },
    hasFocus: function hasFocus() { return true; }
  });
  iface("HTMLDocument", g.Document, {});
  var doc = instance(g.HTMLDocument, { tag: "#document", attrs: {}, children: [html], executing: true });
  S(html).parent = doc;
  hidden(g, "document", doc);

  // ---- iframe realms -------------------------------------------------
  // goja gives one set of intrinsics per runtime and values cannot cross
  // runtimes, so a frame's realm is a second global set built here: its
  // own constructors (subclasses of the outer ones, as distinct objects),
  // console, navigator, location and document.
  var realmCtors = ["Object", "Function", "Array", "Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError",
    "URIError", "Promise", "RegExp", "Date", "Map", "Set", "WeakMap", "Symbol", "String", "Number", "Boolean", "ArrayBuffer", "Uint8Array"];
  var realmShared = ["JSON", "Math", "Reflect", "Intl", "parseInt", "parseFloat", "isNaN", "isFinite", "encodeURIComponent", "decodeURIComponent",
    "escape", "unescape", "setTimeout", "clearTimeout", "setInterval", "clearInterval", "queueMicrotask", "atob", "btoa", "crypto",
    "performance", "screen", "TextEncoder", "TextDecoder", "URL", "URLSearchParams", "Navigator", "HTMLElement", "undefined", "NaN", "Infinity"];
  function wrapCtor(Base, name) {
    var W = { [name]: function () {
      return new.target ? Reflect.construct(Base, arguments, new.target) : Base.apply(this, arguments);
    } }[name];
    defineProperty(W, "prototype", { value: create(Base.prototype), writable: name === "Function", configurable: false });
    hidden(W.prototype, "constructor", W);
    Object.setPrototypeOf(W, Base); // statics: Object.defineProperty and the like
    return W;
  }
  var errorCtors = ["Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError", "URIError"];
  // A frame's errors are real Error objects whose chain is the frame's own:
  // frame.Error.prototype -> frame.Object.prototype, so an error made there
  // is not an instance of the window's Error, as in Chrome.
  function wrapError(Base, name, parent, objectProto) {
    var W = { [name]: function () { return Reflect.construct(Base, arguments, new.target || W); } }[name];
    var proto = create(name === "Error" ? objectProto : parent.prototype);
    hidden(proto, "constructor", W);
    hidden(proto, "name", name);
    hidden(proto, "message", "");
    if (name === "Error") hidden(proto, "toString", Error.prototype.toString);
    defineProperty(W, "prototype", { value: proto, writable: false, configurable: false });
    if (name !== "Error") Object.setPrototypeOf(W, parent);
    return W;
  }
  function attachFrame(iframe) {
    var w = create(Window.prototype);
    realmCtors.forEach(function (n) { if (errorCtors.indexOf(n) < 0) hidden(w, n, wrapCtor(g[n], n)); });
    errorCtors.forEach(function (n) { hidden(w, n, wrapError(g[n], n, w.Error, w.Object.prototype)); });
    realmShared.forEach(function (n) { hidden(w, n, g[n]); });
    hidden(w, "console", makeConsole());
    hidden(w, "navigator", instance(g.Navigator));
    hidden(w, "location", makeLocation(iframe.getAttribute("src") ? new g.URL(iframe.getAttribute("src"), g.location.href).href : "about:blank"));
    var fdoc = instance(g.HTMLDocument, { tag: "#document", attrs: {}, children: [], executing: false });
    hidden(w, "document", fdoc);
    w.window = w; w.self = w; w.frames = w; w.globalThis = w; w.top = g; w.parent = g; w.frameElement = iframe; w.length = 0;
    markAll(w);
    S(iframe).frame = w;
  }

  // ---- make everything defined here look native -----------------------
  function markAll(root, skip) {
    var seen = new Set(skip || []), stack = [root];
    while (stack.length) {
      var o = stack.pop();
      if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
      seen.add(o);
      stack.push(Object.getPrototypeOf(o));
      Reflect.ownKeys(o).forEach(function (k) {
        if (typeof k !== "string" || k.slice(0, 2) === "__" || (o === g && builtins.has(k))) return;
        var d = Object.getOwnPropertyDescriptor(o, k);
        ["value", "get", "set"].forEach(function (p) {
          var v = d[p];
          if (typeof v === "function") {
            var name = p === "value" ? (v.name || k) : p + " " + k;
            var nd = Object.getOwnPropertyDescriptor(v, "name");
            if (!v.name && (!nd || nd.configurable)) defineProperty(v, "name", { value: name, configurable: true });
            markNative(v, name);
          }
          if (v && (typeof v === "object" || typeof v === "function")) stack.push(v);
        });
      });
    }
  }
  markAll(g);
  // Builtins the shim replaced.
  [[Date.prototype, "toLocaleDateString"], [Number.prototype, "toLocaleString"], [String.prototype, "localeCompare"]].forEach(function (p) {
    markNative(p[0][p[1]], p[1]);
  });
  ["__env", "__markNative", "__nativeNoop", "__now", "__timer", "__clearTimer", "__fillRandom", "__uuid", "__utf8", "__fromUtf8",
   "__btoa", "__atob", "__hash", "__parseURL", "__tzOffset", "__validTZ", "__locale", "__formatNumber", "__collate", "__plural",
   "__installSubtle"].forEach(function (k) { delete g[k]; });
  // For Go: document.currentScript is the script only while it runs.
  return { setExecuting: function (on) { S(doc).executing = on; }, EventTargetPrototype: EventTarget.prototype, WindowPrototype: Window.prototype };
})(this);
