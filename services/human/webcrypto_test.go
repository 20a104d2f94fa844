package human

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runJS runs body as an async function in a fresh environment and returns
// its resolved value, decoded from JSON into out.
func runJS(t testing.TB, body string, out any) {
	t.Helper()
	script := "window.V_C = [async function () {\n" + jsHelpers + body + "\n}];"
	r := Run(context.Background(), script, scriptURL, DefaultBrowser, 60*time.Second, EvalOptions{})
	require.NoError(t, r.Err)
	require.NoError(t, json.Unmarshal([]byte(r.Value), out), r.Value)
}

const jsHelpers = `
const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s) => new Uint8Array((s || "").match(/../g)?.map((h) => parseInt(h, 16)) || []);
const utf8 = (s) => new TextEncoder().encode(s);
const S = crypto.subtle;
`

// Published test vectors, run through crypto.subtle.
func TestWebCryptoPublishedVectors(t *testing.T) {
	cases := []struct{ name, js, want string }{
		// RFC 6070: PBKDF2-HMAC-SHA1.
		{"RFC 6070 c=1", `pbkdf2(utf8("password"), utf8("salt"), 1, "SHA-1", 160)`, "0c60c80f961f0e71f3a9b524af6012062fe037a6"},
		{"RFC 6070 c=2", `pbkdf2(utf8("password"), utf8("salt"), 2, "SHA-1", 160)`, "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"},
		{"RFC 6070 c=4096", `pbkdf2(utf8("password"), utf8("salt"), 4096, "SHA-1", 160)`, "4b007901b765489abead49d926f721d065a429c1"},
		{"RFC 6070 long", `pbkdf2(utf8("passwordPASSWORDpassword"), utf8("saltSALTsaltSALTsaltSALTsaltSALTsalt"), 4096, "SHA-1", 200)`, "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038"},
		{"RFC 6070 NUL", `pbkdf2(utf8("pass\0word"), utf8("sa\0lt"), 4096, "sha-1", 128)`, "56fa6aa75548099dcc37d7f03425e0c3"},
		// RFC 8018's PBKDF2 with HMAC-SHA-256, vector from RFC 7914 §11.
		{"PBKDF2-SHA-256 (RFC 7914)", `pbkdf2(utf8("passwd"), utf8("salt"), 1, "SHA-256", 512)`,
			"55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"},
		// NIST SP 800-38D (GCM spec test cases 2, 4 and 6).
		{"GCM TC2", `gcm("00000000000000000000000000000000", "000000000000000000000000", "00000000000000000000000000000000")`,
			"0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf"},
		{"GCM TC4 with AAD", `gcm("feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
			"d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
			"feedfacedeadbeeffeedfacedeadbeefabaddad2")`,
			"42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091" + "5bc94fbc3221a5db94fae95ae7121a47"},
		{"GCM TC6 60-byte IV", `gcm("feffe9928665731c6d6a8f9467308308",
			"9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
			"d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
			"feedfacedeadbeeffeedfacedeadbeefabaddad2")`,
			"8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca701e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5" + "619cc5aefffe0bfa462af43c1699d050"},
		// RFC 4231: HMAC-SHA-256/384/512.
		{"RFC 4231 TC1 SHA-256", `hmac("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", utf8("Hi There"), "SHA-256")`, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"RFC 4231 TC1 SHA-384", `hmac("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", utf8("Hi There"), "SHA-384")`, "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6"},
		{"RFC 4231 TC1 SHA-512", `hmac("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", utf8("Hi There"), "SHA-512")`,
			"87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"},
		{"RFC 4231 TC2 SHA-256", `hmac(hex(utf8("Jefe")), utf8("what do ya want for nothing?"), "SHA-256")`, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		// RFC 5869: HKDF-SHA-256.
		{"RFC 5869 TC1", `hkdf("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9", 336)`,
			"3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"},
		{"RFC 5869 TC3 empty salt and info", `hkdf("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "", "", 336)`,
			"8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"},
		// FIPS 180 "abc".
		{"SHA-256 abc", `S.digest("SHA-256", utf8("abc"))`, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"SHA-1 abc via DataView", `S.digest({name: "sha-1"}, new DataView(utf8("xabcx").buffer, 1, 3))`, "a9993e364706816aba3e25717850c26c9cd0d89d"},
	}
	var js strings.Builder
	js.WriteString(`
const pbkdf2 = async (pw, salt, iterations, hash, bits) => S.deriveBits({name: "PBKDF2", salt, iterations, hash},
  await S.importKey("raw", pw, "PBKDF2", false, ["deriveBits"]), bits);
const gcm = async (k, iv, p, aad) => S.encrypt(aad ? {name: "AES-GCM", iv: unhex(iv), additionalData: unhex(aad)} : {name: "AES-GCM", iv: unhex(iv)},
  await S.importKey("raw", unhex(k), "AES-GCM", false, ["encrypt"]), unhex(p));
const hmac = async (k, data, hash) => S.sign("HMAC", await S.importKey("raw", unhex(k), {name: "HMAC", hash}, false, ["sign"]), data);
const hkdf = async (ikm, salt, info, bits) => S.deriveBits({name: "HKDF", hash: "SHA-256", salt: unhex(salt), info: unhex(info)},
  await S.importKey("raw", unhex(ikm), "HKDF", false, ["deriveBits"]), bits);
const out = [];
`)
	for _, c := range cases {
		fmt.Fprintf(&js, "out.push(hex(await %s));\n", c.js)
	}
	js.WriteString("return out;")
	var got []string
	runJS(t, js.String(), &got)
	require.Len(t, got, len(cases))
	for i, c := range cases {
		assert.Equal(t, c.want, got[i], c.name)
	}
}

type nodeCase struct {
	Op         string         `json:"op"`
	Hash       string         `json:"hash"`
	Key        string         `json:"key"`
	Salt       string         `json:"salt"`
	Info       string         `json:"info"`
	IV         string         `json:"iv"`
	AAD        string         `json:"aad"`
	Counter    string         `json:"counter"`
	Data       string         `json:"data"`
	Iterations int            `json:"iterations"`
	Length     int            `json:"length"`
	TagLength  int            `json:"tagLength"`
	Want       string         `json:"want"`
	JWK        map[string]any `json:"jwk"`
}

// Node's own WebCrypto computed these (testdata/gen/gen.js); each is
// replayed here, decrypted back where it is a cipher, and its JWK export
// compared with Node's.
func TestWebCryptoMatchesNode(t *testing.T) {
	raw, err := os.ReadFile("testdata/webcrypto_node.json")
	require.NoError(t, err)
	var file struct {
		Cases []nodeCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Cases)
	var got []struct {
		Out, Back string
		JWK       map[string]any
	}
	runJS(t, `
const cases = `+string(mustJSON(t, file.Cases))+`;
const res = [];
for (const c of cases) {
  let out, back = "", jwk = null, k;
  switch (c.op) {
  case "pbkdf2":
    k = await S.importKey("raw", unhex(c.key), "PBKDF2", false, ["deriveBits"]);
    out = await S.deriveBits({name: "PBKDF2", hash: c.hash, salt: unhex(c.salt), iterations: c.iterations}, k, c.length); break;
  case "hkdf":
    k = await S.importKey("raw", unhex(c.key), "HKDF", false, ["deriveBits"]);
    out = await S.deriveBits({name: "HKDF", hash: c.hash, salt: unhex(c.salt), info: unhex(c.info)}, k, c.length); break;
  case "hmac":
    k = await S.importKey("raw", unhex(c.key), {name: "HMAC", hash: c.hash}, true, ["sign", "verify"]);
    out = await S.sign("HMAC", k, unhex(c.data));
    back = String(await S.verify("HMAC", k, out, unhex(c.data))) + String(await S.verify("HMAC", k, out, unhex(c.data + "00")));
    jwk = await S.exportKey("jwk", k); break;
  case "digest":
    out = await S.digest(c.hash, unhex(c.data)); break;
  case "aes-gcm": {
    k = await S.importKey("jwk", c.jwk, "AES-GCM", true, ["encrypt", "decrypt"]);
    const p = {name: "AES-GCM", iv: unhex(c.iv), tagLength: c.tagLength};
    if (c.aad) p.additionalData = unhex(c.aad);
    out = await S.encrypt(p, k, unhex(c.data));
    back = hex(await S.decrypt(p, k, out));
    jwk = await S.exportKey("jwk", k); break;
  }
  case "aes-cbc":
    k = await S.importKey("raw", unhex(c.key), "AES-CBC", false, ["encrypt", "decrypt"]);
    out = await S.encrypt({name: "AES-CBC", iv: unhex(c.iv)}, k, unhex(c.data));
    back = hex(await S.decrypt({name: "AES-CBC", iv: unhex(c.iv)}, k, out)); break;
  case "aes-ctr":
    k = await S.importKey("raw", unhex(c.key), "AES-CTR", false, ["encrypt", "decrypt"]);
    out = await S.encrypt({name: "AES-CTR", counter: unhex(c.counter), length: c.length}, k, unhex(c.data));
    back = hex(await S.decrypt({name: "AES-CTR", counter: unhex(c.counter), length: c.length}, k, out)); break;
  case "derive-aes": {
    const base = await S.importKey("raw", unhex(c.key), "PBKDF2", false, ["deriveKey"]);
    k = await S.deriveKey({name: "PBKDF2", salt: unhex(c.salt), iterations: c.iterations, hash: c.hash}, base, {name: "aes-gcm", length: 256}, true, ["encrypt"]);
    out = await S.exportKey("raw", k);
    jwk = await S.exportKey("jwk", k); break;
  }
  }
  res.push({Out: hex(out), Back: back, JWK: jwk});
}
return res;`, &got)
	require.Len(t, got, len(file.Cases))
	for i, c := range file.Cases {
		name := fmt.Sprintf("%d %s %s", i, c.Op, c.Hash)
		assert.Equal(t, c.Want, got[i].Out, name)
		switch c.Op {
		case "aes-gcm", "aes-cbc", "aes-ctr":
			assert.Equal(t, c.Data, got[i].Back, name+": decrypts back")
		case "hmac":
			assert.Equal(t, "truefalse", got[i].Back, name+": verify")
		}
		if c.JWK != nil {
			assert.Equal(t, c.JWK, got[i].JWK, name+": JWK export")
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// Wrong calls reject with the error a browser gives; none panics.
func TestWebCryptoMisuse(t *testing.T) {
	cases := []struct{ name, js, want string }{
		{"unknown algorithm", `S.digest("SHA-3", utf8("x"))`, "NotSupportedError"},
		{"digest of a string", `S.digest("SHA-256", "abc")`, "TypeError"},
		{"digest of a plain array", `S.digest("SHA-256", [1, 2, 3])`, "TypeError"},
		{"unknown key format", `S.importKey("pem", utf8("k"), "PBKDF2", false, ["deriveBits"])`, "TypeError"},
		{"unknown usage", `S.importKey("raw", utf8("k"), "PBKDF2", false, ["Derivebits"])`, "TypeError"},
		{"usage not allowed for the algorithm", `S.importKey("raw", utf8("k"), "PBKDF2", false, ["encrypt"])`, "SyntaxError"},
		{"extractable PBKDF2 key", `S.importKey("raw", utf8("k"), "PBKDF2", true, ["deriveBits"])`, "SyntaxError"},
		{"empty usages", `S.importKey("raw", new Uint8Array(16), "AES-GCM", false, [])`, "SyntaxError"},
		{"PBKDF2 as jwk", `S.importKey("jwk", {kty: "oct", k: "AA"}, "PBKDF2", false, ["deriveBits"])`, "NotSupportedError"},
		{"192-bit AES key, which Chrome lacks", `S.importKey("raw", new Uint8Array(24), "AES-GCM", false, ["encrypt"])`, "OperationError"},
		{"generate 192-bit AES", `S.generateKey({name: "AES-CBC", length: 192}, false, ["encrypt"])`, "OperationError"},
		{"AES key of 10 bytes", `S.importKey("raw", new Uint8Array(10), "AES-GCM", false, ["encrypt"])`, "DataError"},
		{"HMAC without hash", `S.importKey("raw", new Uint8Array(10), "HMAC", false, ["sign"])`, "TypeError"},
		{"jwk with the wrong alg", `S.importKey("jwk", {kty: "oct", k: "AAAAAAAAAAAAAAAAAAAAAA", alg: "A256GCM"}, "AES-GCM", false, ["encrypt"])`, "DataError"},
		{"jwk of the wrong kty", `S.importKey("jwk", {kty: "RSA", k: "AAAAAAAAAAAAAAAAAAAAAA"}, "AES-GCM", false, ["encrypt"])`, "DataError"},
		{"encrypt without the usage", `S.encrypt({name: "AES-GCM", iv: new Uint8Array(12)}, await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["decrypt"]), utf8("x"))`, "InvalidAccessError"},
		{"key of another algorithm", `S.encrypt({name: "AES-CBC", iv: new Uint8Array(16)}, await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["encrypt"]), utf8("x"))`, "InvalidAccessError"},
		{"not a key", `S.encrypt({name: "AES-GCM", iv: new Uint8Array(12)}, {type: "secret"}, utf8("x"))`, "TypeError"},
		{"bad tag length", `S.encrypt({name: "AES-GCM", iv: new Uint8Array(12), tagLength: 100}, await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["encrypt"]), utf8("x"))`, "OperationError"},
		{"CBC IV of 8 bytes", `S.encrypt({name: "AES-CBC", iv: new Uint8Array(8)}, await S.importKey("raw", new Uint8Array(16), "AES-CBC", false, ["encrypt"]), utf8("x"))`, "OperationError"},
		{"CTR length 0", `S.encrypt({name: "AES-CTR", counter: new Uint8Array(16), length: 0}, await S.importKey("raw", new Uint8Array(16), "AES-CTR", false, ["encrypt"]), utf8("x"))`, "OperationError"},
		{"GCM tampered ciphertext", `(async () => { const k = await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["encrypt", "decrypt"]);
			const c = new Uint8Array(await S.encrypt({name: "AES-GCM", iv: new Uint8Array(12)}, k, utf8("hello"))); c[0] ^= 1;
			return S.decrypt({name: "AES-GCM", iv: new Uint8Array(12)}, k, c); })()`, "OperationError"},
		{"GCM tampered short tag", `(async () => { const k = await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["encrypt", "decrypt"]);
			const p = {name: "AES-GCM", iv: new Uint8Array(12), tagLength: 64};
			const c = new Uint8Array(await S.encrypt(p, k, utf8("hello"))); c[c.length - 1] ^= 1; return S.decrypt(p, k, c); })()`, "OperationError"},
		{"CBC bad padding", `(async () => { const k = await S.importKey("raw", new Uint8Array(16), "AES-CBC", false, ["decrypt"]);
			return S.decrypt({name: "AES-CBC", iv: new Uint8Array(16)}, k, new Uint8Array(16)); })()`, "OperationError"},
		{"deriveBits without the usage", `S.deriveBits({name: "PBKDF2", salt: new Uint8Array(8), iterations: 1, hash: "SHA-256"}, await S.importKey("raw", utf8("p"), "PBKDF2", false, ["deriveKey"]), 256)`, "InvalidAccessError"},
		{"deriveBits zero iterations", `S.deriveBits({name: "PBKDF2", salt: new Uint8Array(8), iterations: 0, hash: "SHA-256"}, await S.importKey("raw", utf8("p"), "PBKDF2", false, ["deriveBits"]), 256)`, "OperationError"},
		{"deriveBits length not a multiple of 8", `S.deriveBits({name: "PBKDF2", salt: new Uint8Array(8), iterations: 1, hash: "SHA-256"}, await S.importKey("raw", utf8("p"), "PBKDF2", false, ["deriveBits"]), 100)`, "OperationError"},
		{"HKDF too long", `S.deriveBits({name: "HKDF", salt: new Uint8Array(8), info: new Uint8Array(0), hash: "SHA-256"}, await S.importKey("raw", utf8("p"), "HKDF", false, ["deriveBits"]), 256 * 255 * 8)`, "OperationError"},
		{"deriveKey to an unknown algorithm", `S.deriveKey({name: "PBKDF2", salt: new Uint8Array(8), iterations: 1, hash: "SHA-256"}, await S.importKey("raw", utf8("p"), "PBKDF2", false, ["deriveKey"]), {name: "AES-XYZ", length: 256}, false, ["encrypt"])`, "NotSupportedError"},
		{"export a non-extractable key", `S.exportKey("raw", await S.importKey("raw", new Uint8Array(16), "AES-GCM", false, ["encrypt"]))`, "InvalidAccessError"},
		{"sign with a verify-only key", `S.sign("HMAC", await S.importKey("raw", new Uint8Array(16), {name: "HMAC", hash: "SHA-256"}, false, ["verify"]), utf8("x"))`, "InvalidAccessError"},
		{"generate AES of 100 bits", `S.generateKey({name: "AES-GCM", length: 100}, false, ["encrypt"])`, "OperationError"},
		{"missing arguments", `S.encrypt()`, "TypeError"},
	}
	var js strings.Builder
	js.WriteString("const out = [];\n")
	for _, c := range cases {
		fmt.Fprintf(&js, `try { await %s; out.push("resolved"); } catch (e) {
  out.push(e.name + (e instanceof Error ? "" : " (not an Error)") + (e.name !== "TypeError" && !(e instanceof DOMException) ? " (not a DOMException)" : ""));
}
`, c.js)
	}
	js.WriteString("return out;")
	var got []string
	runJS(t, js.String(), &got)
	require.Len(t, got, len(cases))
	for i, c := range cases {
		assert.Equal(t, c.want, got[i], c.name)
	}
}

// CryptoKey objects behave like Chrome's; their bytes are out of reach.
func TestWebCryptoKeys(t *testing.T) {
	var got map[string]any
	runJS(t, `
const k = await S.importKey("raw", new Uint8Array(32), {name: "aes-gcm"}, false, ["decrypt", "encrypt", "encrypt"]);
const h = await S.generateKey({name: "HMAC", hash: {name: "SHA-512"}}, true, ["sign"]);
const g = await S.generateKey({name: "AES-CTR", length: 128}, true, ["encrypt"]);
const j = await S.exportKey("jwk", g);
const back = await S.importKey("jwk", j, "AES-CTR", true, ["encrypt"]);
return {
  str: Object.prototype.toString.call(k), type: k.type, extractable: k.extractable, alg: k.algorithm, usages: k.usages,
  same: k.algorithm === k.algorithm, own: Object.getOwnPropertyNames(k).concat(Object.getOwnPropertySymbols(k).map(String)),
  json: JSON.stringify(k), inst: k instanceof CryptoKey, hmac: h.algorithm, hmacLen: (await S.exportKey("raw", h)).byteLength,
  jwk: [j.kty, j.alg, j.ext, j.key_ops.join(), j.k.length],
  roundTrip: hex(await S.exportKey("raw", back)) === hex(await S.exportKey("raw", g)),
  promise: S.digest("SHA-1", new Uint8Array(0)) instanceof Promise,
  result: Object.prototype.toString.call(await S.digest("SHA-1", new Uint8Array(0))),
};`, &got)
	assert.Equal(t, "[object CryptoKey]", got["str"])
	assert.Equal(t, "secret", got["type"])
	assert.Equal(t, false, got["extractable"])
	assert.Equal(t, map[string]any{"name": "AES-GCM", "length": float64(256)}, got["alg"])
	assert.Equal(t, []any{"encrypt", "decrypt"}, got["usages"])
	assert.Equal(t, true, got["same"])
	assert.Empty(t, got["own"], "a CryptoKey has no own properties: nothing to read the key from")
	assert.Equal(t, "{}", got["json"])
	assert.Equal(t, true, got["inst"])
	assert.Equal(t, map[string]any{"name": "HMAC", "hash": map[string]any{"name": "SHA-512"}, "length": float64(1024)}, got["hmac"])
	assert.Equal(t, float64(128), got["hmacLen"])
	assert.Equal(t, []any{"oct", "A128CTR", true, "encrypt", float64(22)}, got["jwk"])
	assert.Equal(t, true, got["roundTrip"])
	assert.Equal(t, true, got["promise"])
	assert.Equal(t, "[object ArrayBuffer]", got["result"])
}

func BenchmarkPBKDF2DeriveKey100k(b *testing.B) {
	for b.Loop() {
		var got string
		runJS(b, `
const base = await S.importKey("raw", utf8("secret"), "PBKDF2", false, ["deriveKey"]);
const k = await S.deriveKey({name: "PBKDF2", salt: new Uint8Array(16), iterations: 100000, hash: "SHA-256"}, base, {name: "AES-GCM", length: 256}, false, ["encrypt"]);
return k.type;`, &got)
	}
}
