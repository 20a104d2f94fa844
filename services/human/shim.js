// A small browser-like global environment for the x-is-human challenge
// script: only what such scripts read. Natives provided by Go are named __*.
(function (g) {
  "use strict";
  var UA = __env.userAgent, SRC = __env.scriptURL, PLATFORM = __env.platform;
  var host = __env.host, origin = "https://" + host;

  g.window = g; g.self = g; g.top = g; g.parent = g; g.frames = g;
  g.setTimeout = function (fn, ms) { return __timer(fn, ms || 0, false, Array.prototype.slice.call(arguments, 2)); };
  g.setInterval = function (fn, ms) { return __timer(fn, ms || 0, true, Array.prototype.slice.call(arguments, 2)); };
  g.clearTimeout = g.clearInterval = function (id) { __clearTimer(id || 0); };
  g.queueMicrotask = function (fn) { Promise.resolve().then(fn); };
  g.requestAnimationFrame = function (fn) { return g.setTimeout(function () { fn(__now()); }, 16); };
  g.cancelAnimationFrame = g.clearTimeout;

  function noop() {}
  function EventTarget() {}
  EventTarget.prototype.addEventListener = noop;
  EventTarget.prototype.removeEventListener = noop;
  EventTarget.prototype.dispatchEvent = function () { return true; };
  g.EventTarget = EventTarget;
  g.addEventListener = noop; g.removeEventListener = noop; g.dispatchEvent = function () { return true; };

  g.location = { href: origin + "/", origin: origin, protocol: "https:", host: host, hostname: host, port: "", pathname: "/", search: "", hash: "",
    toString: function () { return this.href; } };
  g.navigator = { userAgent: UA, appVersion: UA.replace(/^Mozilla\//, ""), appName: "Netscape", appCodeName: "Mozilla", product: "Gecko", productSub: "20030107",
    vendor: "Google Inc.", vendorSub: "", platform: PLATFORM, language: "en-US", languages: ["en-US", "en"], hardwareConcurrency: 8, deviceMemory: 8,
    maxTouchPoints: 0, cookieEnabled: true, onLine: true, doNotTrack: null, webdriver: false, pdfViewerEnabled: true,
    plugins: { length: 0, item: function () { return null; }, namedItem: function () { return null; } }, mimeTypes: { length: 0 },
    userAgentData: { brands: __env.brands, mobile: false, platform: __env.uaPlatform,
      getHighEntropyValues: function () { return Promise.resolve({ architecture: "x86", bitness: "64", platform: __env.uaPlatform, platformVersion: "15.0.0", brands: __env.brands, mobile: false }); } },
    permissions: { query: function () { return Promise.resolve({ state: "prompt" }); } },
    sendBeacon: function () { return true; } };
  g.screen = { width: 1920, height: 1080, availWidth: 1920, availHeight: 1040, colorDepth: 24, pixelDepth: 24, orientation: { type: "landscape-primary", angle: 0 } };
  g.innerWidth = 1920; g.innerHeight = 945; g.outerWidth = 1920; g.outerHeight = 1040; g.devicePixelRatio = 1;
  g.screenX = 0; g.screenY = 0; g.scrollX = 0; g.scrollY = 0; g.isSecureContext = true; g.origin = origin;
  g.performance = { now: function () { return __now(); }, timeOrigin: Date.now(), mark: noop, measure: noop,
    getEntriesByType: function () { return []; }, getEntries: function () { return []; } };

  function bytesOf(x) {
    if (x instanceof ArrayBuffer) return new Uint8Array(x);
    if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    return new Uint8Array(0);
  }
  g.crypto = {
    getRandomValues: function (arr) { var b = bytesOf(arr); __fillRandom(b.buffer, b.byteOffset, b.byteLength); return arr; },
    randomUUID: function () { return __uuid(); },
    subtle: { digest: function (alg, data) {
      var name = (typeof alg === "string" ? alg : alg.name || "").toUpperCase();
      try { return Promise.resolve(__digest(name, bytesOf(data).slice().buffer)); } catch (e) { return Promise.reject(e); }
    } }
  };

  function TextEncoder() {}
  TextEncoder.prototype.encode = function (s) { return new Uint8Array(__utf8(String(s === undefined ? "" : s))); };
  function TextDecoder() {}
  TextDecoder.prototype.decode = function (b) { return b === undefined ? "" : __fromUtf8(bytesOf(b).slice().buffer); };
  g.TextEncoder = TextEncoder; g.TextDecoder = TextDecoder;
  g.btoa = function (s) { return __btoa(String(s)); };
  g.atob = function (s) { return __atob(String(s)); };

  function webgl() {
    var ext = { UNMASKED_VENDOR_WEBGL: 0x9245, UNMASKED_RENDERER_WEBGL: 0x9246 };
    var params = { 0x9245: __env.glVendor, 0x9246: __env.glRenderer, 0x1F00: "WebKit", 0x1F01: "WebKit WebGL",
      0x1F02: "WebGL 1.0 (OpenGL ES 2.0 Chromium)", 0x8B8C: "WebGL GLSL ES 1.0 (OpenGL ES GLSL ES 1.0 Chromium)", 0x0D33: 16384, 0x8869: 16 };
    return { getExtension: function (n) { return n === "WEBGL_debug_renderer_info" ? ext : null; },
      getParameter: function (p) { return p in params ? params[p] : null; },
      getSupportedExtensions: function () { return ["WEBGL_debug_renderer_info", "OES_texture_float", "ANGLE_instanced_arrays"]; },
      getContextAttributes: function () { return { antialias: true }; },
      getShaderPrecisionFormat: function () { return { rangeMin: 127, rangeMax: 127, precision: 23 }; } };
  }
  function context2d() {
    var ops = [];
    var c = { fillStyle: "#000000", strokeStyle: "#000000", font: "10px sans-serif", textBaseline: "alphabetic", globalCompositeOperation: "source-over",
      measureText: function (t) { return { width: String(t).length * 6.5, actualBoundingBoxAscent: 7, actualBoundingBoxDescent: 2 }; },
      getImageData: function (x, y, w, h) { return { data: new Uint8ClampedArray(w * h * 4), width: w, height: h }; },
      isPointInPath: function () { return false; } };
    ["fillText", "strokeText", "fillRect", "strokeRect", "clearRect", "beginPath", "closePath", "arc", "rect", "moveTo", "lineTo", "fill", "stroke",
     "save", "restore", "translate", "rotate", "scale", "drawImage", "putImageData", "bezierCurveTo", "quadraticCurveTo"].forEach(function (m) {
      c[m] = function () { ops.push(m + ":" + Array.prototype.join.call(arguments, ",")); };
    });
    c.__ops = ops;
    return c;
  }
  function element(tag) {
    tag = String(tag).toLowerCase();
    var el = new EventTarget();
    el.tagName = tag.toUpperCase(); el.nodeName = el.tagName; el.style = {}; el.children = []; el.childNodes = el.children;
    el.attributes = {}; el.dataset = {};
    el.setAttribute = function (k, v) { this.attributes[k] = String(v); };
    el.getAttribute = function (k) { return k in this.attributes ? this.attributes[k] : null; };
    el.removeAttribute = function (k) { delete this.attributes[k]; };
    el.appendChild = function (c) { this.children.push(c); c.parentNode = this; if (c.tagName === "IFRAME") c.contentWindow = g; return c; };
    el.removeChild = function (c) { var i = this.children.indexOf(c); if (i >= 0) this.children.splice(i, 1); return c; };
    el.remove = noop;
    el.getBoundingClientRect = function () { return { x: 0, y: 0, top: 0, left: 0, right: 0, bottom: 0, width: 0, height: 0 }; };
    if (tag === "canvas") {
      el.width = 300; el.height = 150;
      var ctx2d = null;
      el.getContext = function (kind) {
        if (kind === "2d") return ctx2d || (ctx2d = context2d());
        if (kind === "webgl" || kind === "experimental-webgl" || kind === "webgl2") return webgl();
        return null;
      };
      el.toDataURL = function () { return "data:image/png;base64," + __btoa(__hash((ctx2d ? ctx2d.__ops.join(";") : "") + el.width + "x" + el.height)); };
    }
    if (tag === "iframe") { el.contentWindow = g; el.contentDocument = g.document; }
    return el;
  }
  var head = element("head"), body = element("body"), html = element("html");
  html.appendChild(head); html.appendChild(body);
  var current = element("script");
  current.src = SRC; current.setAttribute("src", SRC);
  g.document = new EventTarget();
  var d = g.document;
  d.currentScript = current; d.head = head; d.body = body; d.documentElement = html;
  d.readyState = "complete"; d.visibilityState = "visible"; d.hidden = false; d.referrer = ""; d.cookie = "";
  d.title = "Cursor"; d.URL = g.location.href; d.domain = host; d.characterSet = "UTF-8"; d.location = g.location;
  d.createElement = element;
  d.createElementNS = function (ns, tag) { return element(tag); };
  d.createTextNode = function (t) { return { nodeValue: String(t) }; };
  d.getElementById = function () { return null; };
  d.getElementsByTagName = function (t) { t = String(t).toLowerCase(); return t === "script" ? [current] : t === "head" ? [head] : t === "body" ? [body] : []; };
  d.querySelector = function () { return null; };
  d.querySelectorAll = function () { return []; };
  d.hasFocus = function () { return true; };
  g.HTMLCanvasElement = function HTMLCanvasElement() {};
  g.HTMLIFrameElement = function HTMLIFrameElement() {};
  g.Image = function Image() { return element("img"); };
})(this);
