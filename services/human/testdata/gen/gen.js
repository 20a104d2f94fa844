// Generates services/human/testdata: WebCrypto fixtures computed by Node's
// own WebCrypto (checked in Go without Node at test time) and the
// obfuscated challenge fixtures. Run once after changing it:
//   cd services/human/testdata/gen && npm install && node gen.js
"use strict";
const fs = require("fs");
const path = require("path");
const { webcrypto } = require("crypto");
const JavaScriptObfuscator = require("javascript-obfuscator");

const subtle = webcrypto.subtle;
const out = path.join(__dirname, "..");
const hex = (b) => Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b).toString("hex");
const bytes = (s) => Buffer.from(s, "utf8");
// Deterministic pseudo-random bytes, so regenerating gives the same file.
let seed = 12;
const prng = (n) => { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) { seed = (seed * 1103515245 + 12345) >>> 0; b[i] = seed >>> 24; } return b; };

async function webcryptoCases() {
  const cases = [];
  for (const hash of ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]) {
    for (const [n, iterations, length] of [[8, 1, 256], [20, 1000, 512], [13, 100000, 256]]) {
      const pw = prng(n), salt = prng(16);
      const k = await subtle.importKey("raw", pw, "PBKDF2", false, ["deriveBits"]);
      const bits = await subtle.deriveBits({ name: "PBKDF2", hash, salt, iterations }, k, length);
      cases.push({ op: "pbkdf2", hash, key: hex(pw), salt: hex(salt), iterations, length, want: hex(bits) });
    }
    for (const [n, length] of [[22, 336], [80, 256], [16, 8]]) {
      const ikm = prng(n), salt = prng(n % 13), info = prng(n % 7);
      const k = await subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
      const bits = await subtle.deriveBits({ name: "HKDF", hash, salt, info }, k, length);
      cases.push({ op: "hkdf", hash, key: hex(ikm), salt: hex(salt), info: hex(info), length, want: hex(bits) });
    }
    for (const n of [0, 5, 64, 200]) {
      const key = prng(hash === "SHA-1" ? 20 : 32), data = prng(n);
      const k = await subtle.importKey("raw", key, { name: "HMAC", hash }, true, ["sign", "verify"]);
      cases.push({ op: "hmac", hash, key: hex(key), data: hex(data), want: hex(await subtle.sign("HMAC", k, data)),
        jwk: await subtle.exportKey("jwk", k) });
      cases.push({ op: "digest", hash, data: hex(data), want: hex(await subtle.digest(hash, data)) });
    }
  }
  for (const keyLen of [16, 32]) { // Chrome has no 192-bit AES
    for (const [ivLen, tagLength, aadLen, n] of [[12, 128, 0, 0], [12, 128, 20, 33], [16, 96, 5, 64], [12, 32, 0, 17], [60, 120, 3, 1], [12, 64, 0, 48]]) {
      const key = prng(keyLen), iv = prng(ivLen), aad = prng(aadLen), data = prng(n);
      const k = await subtle.importKey("raw", key, "AES-GCM", true, ["encrypt", "decrypt"]);
      const params = { name: "AES-GCM", iv, tagLength };
      if (aadLen) params.additionalData = aad;
      cases.push({ op: "aes-gcm", key: hex(key), iv: hex(iv), aad: aadLen ? hex(aad) : undefined, tagLength, data: hex(data),
        want: hex(await subtle.encrypt(params, k, data)), jwk: await subtle.exportKey("jwk", k) });
    }
    for (const n of [0, 15, 16, 40]) {
      const key = prng(keyLen), iv = prng(16), data = prng(n);
      const k = await subtle.importKey("raw", key, "AES-CBC", false, ["encrypt"]);
      cases.push({ op: "aes-cbc", key: hex(key), iv: hex(iv), data: hex(data), want: hex(await subtle.encrypt({ name: "AES-CBC", iv }, k, data)) });
    }
    for (const [length, n] of [[128, 50], [64, 33], [8, 64]]) {
      const key = prng(keyLen), counter = prng(16), data = prng(n);
      counter[15] = 0xfe; // the counter wraps within its low bits during the message
      const k = await subtle.importKey("raw", key, "AES-CTR", false, ["encrypt"]);
      cases.push({ op: "aes-ctr", key: hex(key), counter: hex(counter), length, data: hex(data),
        want: hex(await subtle.encrypt({ name: "AES-CTR", counter, length }, k, data)) });
    }
  }
  // deriveKey as BotID uses it, with an extractable result to compare.
  const secret = bytes("node-fixture-secret"), salt = prng(16);
  const base = await subtle.importKey("raw", secret, "PBKDF2", false, ["deriveKey"]);
  const dk = await subtle.deriveKey({ name: "PBKDF2", salt, iterations: 100000, hash: "SHA-256" }, base, { name: "AES-GCM", length: 256 }, true, ["encrypt"]);
  cases.push({ op: "derive-aes", key: hex(secret), salt: hex(salt), iterations: 100000, hash: "SHA-256",
    want: hex(await subtle.exportKey("raw", dk)), jwk: await subtle.exportKey("jwk", dk) });
  return cases;
}

const SECRET = "c2a-fixture-secret-7f3e91";
const PROBE = /^\s*FAIL_PROBE$/m; // the line in challenge.src.js, not the comment

function obfuscate(src) {
  return JavaScriptObfuscator.obfuscate(src, {
    target: "browser",
    seed: 12,
    compact: true,
    stringArray: true,
    stringArrayEncoding: ["rc4"],
    stringArrayRotate: true,
    stringArrayShuffle: true,
    stringArrayThreshold: 1,
    stringArrayWrappersCount: 2,
    stringArrayWrappersType: "function",
    splitStrings: true,
    splitStringsChunkLength: 5,
    controlFlowFlattening: true,
    controlFlowFlatteningThreshold: 1,
    numbersToExpressions: true,
    transformObjectKeys: true,
    identifierNamesGenerator: "hexadecimal",
  }).getObfuscatedCode();
}

async function main() {
  const cases = await webcryptoCases();
  fs.writeFileSync(path.join(out, "webcrypto_node.json"), JSON.stringify({ node: process.version, cases }, null, 1) + "\n");
  const src = fs.readFileSync(path.join(__dirname, "challenge.src.js"), "utf8").replace("__SECRET__", SECRET);
  fs.writeFileSync(path.join(out, "challenge.js"), obfuscate(src.replace(PROBE, "")) + "\n");
  // The failing fixture constructs a BroadcastChannel, which Chrome has and
  // the environment does not: the run must name it.
  fs.writeFileSync(path.join(out, "challenge_missing.js"),
    obfuscate(src.replace(PROBE, 'var bc = new BroadcastChannel("v_c"); bc.close();')) + "\n");
  fs.writeFileSync(path.join(out, "challenge_secret.txt"), SECRET + "\n");
  console.log(cases.length, "webcrypto cases; challenge.js", fs.statSync(path.join(out, "challenge.js")).size, "bytes");
}
main().catch((e) => { console.error(e); process.exit(1); });
