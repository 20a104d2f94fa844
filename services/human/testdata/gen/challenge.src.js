// A test challenge built the way Vercel BotID's c.js is built (after the
// public analyses cited in issue 12): window.V_C is an array with an async
// .S; V_C[0]() resolves to {b, v, e, s, d, vr}, where s is
// base64(salt | iv | AES-256-GCM(JSON.stringify(signals))) under a key
// derived with PBKDF2-SHA-256 (100,000 rounds) from a secret literal.
// gen.js obfuscates this file with javascript-obfuscator; the Go test
// decrypts s and checks the signals. FAIL_PROBE is replaced by gen.js:
// empty for the passing fixture, a read of a global the environment lacks
// for the failing one.
(function () {
  var SECRET = "__SECRET__";
  // Like the real script: currentScript is only set while the script runs.
  var SRC = document.currentScript && document.currentScript.src;
  var B = "fixture-b", V = "fixture-v", E = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..fixture", D = "fixture-d", VR = "fixture-vr";

  function devtoolsProbe(W) {
    var read = false;
    var err = new W.Error("");
    W.Object.defineProperty(err, "stack", { get: function () { read = true; return ""; } });
    W.console.log(err);
    W.console.debug(err);
    return read;
  }

  function looksNative(fn) {
    return /^function [\w ]*\(\) \{ \[native code\] \}$/.test(Function.prototype.toString.call(fn));
  }

  async function collect() {
    var w = window;
    var leaks = ["domAutomation", "domAutomationController", "_WEBDRIVER_ELEM_CACHE", "callPhantom", "_phantom", "__nightmare",
      "cdc_adoQpoasnfa76pfcZLmcfl_Array", "cdc_adoQpoasnfa76pfcZLmcfl_Promise", "cdc_adoQpoasnfa76pfcZLmcfl_Symbol"]
      .filter(function (k) { return k in w || w[k] !== undefined; });
    var fts = Function.prototype.toString.toString();
    var canvas = document.createElement("canvas");
    var gl = canvas.getContext("webgl");
    var dbg = gl?.getExtension("WEBGL_debug_renderer_info");
    var frame = document.createElement("iframe");
    document.body.appendChild(frame);
    var W = frame.contentWindow;
    var order = [];
    setTimeout(function () { order.push("timeout"); }, 0);
    Promise.resolve().then(function () { order.push("micro"); });
    queueMicrotask(function () { order.push("queued"); });
    order.push("sync");
    await new Promise(function (r) { setTimeout(r, 5); });
    FAIL_PROBE
    var desc = Object.getOwnPropertyDescriptor(Navigator.prototype, "webdriver");
    var signals = {
      leaks: leaks,
      fnToString: fts,
      nativeFns: [setTimeout, document.createElement, crypto.subtle.encrypt, console.log, desc && desc.get, Function.prototype.toString].every(looksNative),
      webdriver: navigator.webdriver,
      selenium: ["seleniumWebdriver", "driver", "selenium"].filter(function (k) { return k in navigator || k in w; }),
      headless: /headless/i.test(navigator.userAgent),
      ua: navigator.userAgent,
      platform: navigator.platform,
      uaPlatform: navigator.userAgentData?.platform,
      brands: navigator.userAgentData?.brands.map(function (b) { return b.brand + "/" + b.version; }),
      webdriverOnProto: !!(desc && desc.get) && !Object.getOwnPropertyDescriptor(navigator, "webdriver"),
      hardwareConcurrency: navigator.hardwareConcurrency,
      deviceMemory: navigator.deviceMemory,
      languages: navigator.languages.slice(),
      screen: [screen.width, screen.height, screen.colorDepth],
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      glVendor: dbg ? gl.getParameter(dbg.UNMASKED_VENDOR_WEBGL) : null,
      glRenderer: dbg ? gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL) : null,
      devtools: devtoolsProbe(window),
      devtoolsFrame: devtoolsProbe(W),
      separateRealm: W.Error !== Error && W.Object !== Object && W.Function !== Function && W.console !== console,
      host: location.hostname,
      search: location.search,
      src: SRC,
      lateScript: document.currentScript,
      order: order,
      spread: String.fromCharCode(...[104, 105], ...[33])
    };
    frame.remove();
    var enc = new TextEncoder();
    var salt = crypto.getRandomValues(new Uint8Array(16));
    var iv = crypto.getRandomValues(new Uint8Array(12));
    var base = await crypto.subtle.importKey("raw", enc.encode(SECRET), "PBKDF2", false, ["deriveBits", "deriveKey"]);
    var key = await crypto.subtle.deriveKey({ name: "PBKDF2", salt: salt, iterations: 100000, hash: "SHA-256" }, base,
      { name: "AES-GCM", length: 256 }, false, ["encrypt"]);
    var ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv: iv }, key, enc.encode(JSON.stringify(signals)));
    var s = btoa(String.fromCharCode(...salt, ...iv, ...new Uint8Array(ct)));
    return { b: B, v: V, e: E, s: s, d: D, vr: VR };
  }

  var vc = window.V_C = window.V_C || [];
  vc.S = async function () { return collect(); };
  vc.push(function () { return vc.S(); });
})();
