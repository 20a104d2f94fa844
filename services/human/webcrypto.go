package human

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/dop251/goja"
)

// This file is crypto.subtle for the challenge environment: the part of
// the W3C Web Cryptography API that bot-check scripts use, backed by Go's
// crypto packages. It follows the spec's checks in the order browsers make
// them, so a script that probes with wrong calls sees the same rejections
// (DOMException names) as in Chrome.

// domError is a DOMException to be raised in JavaScript.
type domError struct{ name, msg string }

func (e *domError) Error() string { return e.name + ": " + e.msg }

// typeError is a TypeError to be raised in JavaScript (WebIDL conversion
// failures, such as an unknown KeyFormat or KeyUsage).
type typeError struct{ msg string }

func (e *typeError) Error() string { return "TypeError: " + e.msg }

func notSupported(f string, a ...any) error {
	return &domError{"NotSupportedError", fmt.Sprintf(f, a...)}
}
func invalidAccess(f string, a ...any) error {
	return &domError{"InvalidAccessError", fmt.Sprintf(f, a...)}
}
func operationErr(f string, a ...any) error { return &domError{"OperationError", fmt.Sprintf(f, a...)} }
func syntaxErr(f string, a ...any) error    { return &domError{"SyntaxError", fmt.Sprintf(f, a...)} }
func dataErr(f string, a ...any) error      { return &domError{"DataError", fmt.Sprintf(f, a...)} }
func typeErr(f string, a ...any) error      { return &typeError{fmt.Sprintf(f, a...)} }

// Canonical algorithm names; lookups are case-insensitive, as the spec's
// algorithm normalization is.
var algNames = map[string]string{}

func init() {
	for _, n := range []string{"AES-GCM", "AES-CBC", "AES-CTR", "AES-KW", "HMAC", "PBKDF2", "HKDF",
		"SHA-1", "SHA-256", "SHA-384", "SHA-512", "RSA-OAEP", "RSASSA-PKCS1-v1_5", "RSA-PSS", "ECDSA", "ECDH", "Ed25519", "X25519"} {
		algNames[strings.ToUpper(n)] = n
	}
}

// errAES192 is Chrome's answer to 192-bit AES keys, which it does not
// support (Firefox and Node do; the profiles are Chrome).
var errAES192 = &domError{"OperationError", "192-bit AES keys are not supported"}

// keyUsages in the order Chrome reports them.
var keyUsages = []string{"encrypt", "decrypt", "sign", "verify", "deriveKey", "deriveBits", "wrapKey", "unwrapKey"}

// cryptoKey is the Go side of a CryptoKey; its bytes never reach JS.
type cryptoKey struct {
	alg         string // canonical name
	hash        string // HMAC
	length      int    // AES and HMAC key length in bits
	extractable bool
	usages      []string
	raw         []byte
	// The objects the algorithm and usages getters return: the same
	// object on every read, as in Chrome.
	algObj, usagesObj *goja.Object
}

// subtleCrypto implements crypto.subtle for one runtime.
type subtleCrypto struct {
	vm        *goja.Runtime
	keys      map[*goja.Object]*cryptoKey
	keyProto  *goja.Object
	domExcept goja.Value // the DOMException constructor
	native    func(name string, length int, fn func(goja.FunctionCall) goja.Value) *goja.Object
	isView    goja.Callable // ArrayBuffer.isView, looked up once
}

// installSubtle builds crypto.subtle for vm. domException constructs
// DOMException(message, name); native builds a native-looking function.
func installSubtle(vm *goja.Runtime, domException goja.Value, native func(string, int, func(goja.FunctionCall) goja.Value) *goja.Object) (*goja.Object, *goja.Object, *goja.Object) {
	s := &subtleCrypto{vm: vm, keys: map[*goja.Object]*cryptoKey{}, domExcept: domException, native: native}
	s.keyProto = vm.NewObject()
	keyCtor := native("CryptoKey", 0, func(goja.FunctionCall) goja.Value { panic(vm.NewTypeError("Illegal constructor")) })
	_ = keyCtor.DefineDataProperty("prototype", s.keyProto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = s.keyProto.DefineDataProperty("constructor", keyCtor, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = s.keyProto.DefineDataPropertySymbol(goja.SymToStringTag, vm.ToValue("CryptoKey"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	getter := func(name string, get func(k *cryptoKey) goja.Value) {
		fn := native("get "+name, 0, func(c goja.FunctionCall) goja.Value {
			k := s.keyOf(c.This)
			if k == nil {
				panic(vm.NewTypeError("Illegal invocation"))
			}
			return get(k)
		})
		_ = s.keyProto.DefineAccessorProperty(name, fn, nil, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	getter("type", func(*cryptoKey) goja.Value { return vm.ToValue("secret") })
	getter("extractable", func(k *cryptoKey) goja.Value { return vm.ToValue(k.extractable) })
	getter("algorithm", func(k *cryptoKey) goja.Value { return k.algObj })
	getter("usages", func(k *cryptoKey) goja.Value { return k.usagesObj })

	proto := vm.NewObject()
	_ = proto.DefineDataPropertySymbol(goja.SymToStringTag, vm.ToValue("SubtleCrypto"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	methods := []struct {
		name string
		n    int
		fn   func(args []goja.Value) (goja.Value, error)
	}{
		{"encrypt", 3, func(a []goja.Value) (goja.Value, error) { return s.cipher(a, "encrypt") }},
		{"decrypt", 3, func(a []goja.Value) (goja.Value, error) { return s.cipher(a, "decrypt") }},
		{"sign", 3, s.sign},
		{"verify", 4, s.verify},
		{"digest", 2, s.digest},
		{"generateKey", 3, s.generateKey},
		{"deriveKey", 5, s.deriveKey},
		{"deriveBits", 3, s.deriveBits},
		{"importKey", 5, s.importKey},
		{"exportKey", 2, s.exportKey},
	}
	for _, m := range methods {
		m := m
		_ = proto.DefineDataProperty(m.name, native(m.name, m.n, func(c goja.FunctionCall) goja.Value {
			return s.promise(func() (goja.Value, error) { return m.fn(padArgs(c.Arguments, m.n)) })
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	subtleCtor := native("SubtleCrypto", 0, func(goja.FunctionCall) goja.Value { panic(vm.NewTypeError("Illegal constructor")) })
	_ = subtleCtor.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = proto.DefineDataProperty("constructor", subtleCtor, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	subtleObj := vm.NewObject()
	_ = subtleObj.SetPrototype(proto)
	return subtleObj, keyCtor, subtleCtor
}

func padArgs(a []goja.Value, n int) []goja.Value {
	for len(a) < n {
		a = append(a, goja.Undefined())
	}
	return a
}

// promise runs op now and returns a Promise settled with its outcome.
// Every failure, including a Go panic in op, becomes a rejection.
func (s *subtleCrypto) promise(op func() (goja.Value, error)) goja.Value {
	p, resolve, reject := s.vm.NewPromise()
	v, err := func() (v goja.Value, err error) {
		defer func() {
			if r := recover(); r != nil {
				if jsErr, ok := r.(*goja.Object); ok {
					v, err = nil, &thrown{jsErr}
					return
				}
				if ex, ok := r.(*goja.Exception); ok {
					v, err = nil, &thrown{ex.Value()}
					return
				}
				v, err = nil, operationErr("internal error: %v", r)
			}
		}()
		return op()
	}()
	if err != nil {
		_ = reject(s.errorValue(err))
	} else {
		_ = resolve(v)
	}
	return s.vm.ToValue(p)
}

// thrown carries a JS value raised while converting arguments.
type thrown struct{ v goja.Value }

func (t *thrown) Error() string { return t.v.String() }

func (s *subtleCrypto) errorValue(err error) goja.Value {
	switch e := err.(type) {
	case *domError:
		ctor, _ := goja.AssertConstructor(s.domExcept)
		obj, cerr := ctor(nil, s.vm.ToValue(e.msg), s.vm.ToValue(e.name))
		if cerr != nil {
			return s.vm.NewGoError(err)
		}
		return obj
	case *typeError:
		return s.vm.NewTypeError(e.msg)
	case *thrown:
		return e.v
	}
	return s.vm.NewGoError(err)
}

func (s *subtleCrypto) keyOf(v goja.Value) *cryptoKey {
	if o, ok := v.(*goja.Object); ok {
		return s.keys[o]
	}
	return nil
}

// bytes reads a BufferSource (ArrayBuffer, typed array or DataView) and
// copies it, so later changes by the script do not affect the operation.
func (s *subtleCrypto) bytes(v goja.Value, what string) ([]byte, error) {
	if o, ok := v.(*goja.Object); ok {
		if ab, ok := o.Export().(goja.ArrayBuffer); ok {
			return slices.Clone(ab.Bytes()), nil
		}
		if s.isView == nil {
			s.isView, _ = goja.AssertFunction(s.vm.Get("ArrayBuffer").ToObject(s.vm).Get("isView"))
		}
		if view, err := s.isView(goja.Undefined(), o); err == nil && view.ToBoolean() {
			var b []byte
			if err := s.vm.ExportTo(o, &b); err != nil {
				return nil, typeErr("%s: %v", what, err)
			}
			return slices.Clone(b), nil
		}
	}
	return nil, typeErr("Failed to execute on 'SubtleCrypto': %s is not of type '(ArrayBuffer or ArrayBufferView)'", what)
}

func (s *subtleCrypto) buffer(b []byte) goja.Value { return s.vm.ToValue(s.vm.NewArrayBuffer(b)) }

// algorithm normalizes an AlgorithmIdentifier: a string or an object
// with a name. It returns the canonical name and the object (nil for a
// string).
func (s *subtleCrypto) algorithm(v goja.Value) (string, *goja.Object, error) {
	var name string
	var obj *goja.Object
	switch {
	case v == nil || goja.IsUndefined(v) || goja.IsNull(v):
		return "", nil, typeErr("Algorithm: Not an object")
	default:
		if o, ok := v.(*goja.Object); ok {
			obj = o
			n := o.Get("name")
			if n == nil || goja.IsUndefined(n) {
				return "", nil, typeErr("Algorithm: name: Missing or not a string")
			}
			name = n.String()
		} else {
			name = v.String()
		}
	}
	canon, ok := algNames[strings.ToUpper(name)]
	if !ok {
		return "", nil, notSupported("Algorithm: Unrecognized name")
	}
	return canon, obj, nil
}

// member reads a dictionary member, nil when absent.
func member(o *goja.Object, name string) goja.Value {
	if o == nil {
		return nil
	}
	v := o.Get(name)
	if v == nil || goja.IsUndefined(v) {
		return nil
	}
	return v
}

func (s *subtleCrypto) hashMember(o *goja.Object, what string) (string, error) {
	v := member(o, "hash")
	if v == nil {
		return "", typeErr("%s: hash: Missing or not an AlgorithmIdentifier", what)
	}
	name, _, err := s.algorithm(v)
	if err != nil {
		return "", err
	}
	if newHash(name) == nil {
		return "", notSupported("%s: hash: %s is not a hash algorithm", what, name)
	}
	return name, nil
}

func newHash(name string) func() hash.Hash {
	switch name {
	case "SHA-1":
		return sha1.New
	case "SHA-256":
		return sha256.New
	case "SHA-384":
		return sha512.New384
	case "SHA-512":
		return sha512.New
	}
	return nil
}

func (s *subtleCrypto) bufferMember(o *goja.Object, name, what string, required bool) ([]byte, error) {
	v := member(o, name)
	if v == nil {
		if required {
			return nil, typeErr("%s: %s: Missing required property", what, name)
		}
		return nil, nil
	}
	return s.bytes(v, what+"."+name)
}

func (s *subtleCrypto) usages(v goja.Value) ([]string, error) {
	o, ok := v.(*goja.Object)
	if !ok || goja.IsUndefined(v) {
		return nil, typeErr("keyUsages: not a sequence")
	}
	var out []string
	n := int(o.Get("length").ToInteger())
	for i := 0; i < n; i++ {
		u := o.Get(fmt.Sprint(i)).String()
		if !slices.Contains(keyUsages, u) {
			return nil, typeErr("The provided value '%s' is not a valid enum value of type KeyUsage.", u)
		}
		out = append(out, u)
	}
	// Deduplicated, in Chrome's order.
	var sorted []string
	for _, u := range keyUsages {
		if slices.Contains(out, u) {
			sorted = append(sorted, u)
		}
	}
	return sorted, nil
}

// allowedUsages lists what each algorithm's keys may be used for.
func allowedUsages(alg string) []string {
	switch alg {
	case "AES-GCM", "AES-CBC", "AES-CTR":
		return []string{"encrypt", "decrypt", "wrapKey", "unwrapKey"}
	case "HMAC":
		return []string{"sign", "verify"}
	case "PBKDF2", "HKDF":
		return []string{"deriveKey", "deriveBits"}
	}
	return nil
}

func checkUsages(alg string, usages []string) error {
	allowed := allowedUsages(alg)
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return syntaxErr("Cannot create a key using the specified key usages.")
		}
	}
	return nil
}

// newKey wraps k into a CryptoKey object.
func (s *subtleCrypto) newKey(k *cryptoKey) goja.Value {
	vm := s.vm
	obj := vm.NewObject()
	_ = obj.SetPrototype(s.keyProto)
	alg := vm.NewObject()
	_ = alg.Set("name", k.alg)
	switch k.alg {
	case "AES-GCM", "AES-CBC", "AES-CTR":
		_ = alg.Set("length", k.length)
	case "HMAC":
		h := vm.NewObject()
		_ = h.Set("name", k.hash)
		_ = alg.Set("hash", h)
		_ = alg.Set("length", k.length)
	}
	us := make([]any, len(k.usages))
	for i, u := range k.usages {
		us[i] = u
	}
	s.keys[obj] = k
	k.algObj, k.usagesObj = alg, vm.NewArray(us...)
	return obj
}

func (s *subtleCrypto) digest(a []goja.Value) (goja.Value, error) {
	name, _, err := s.algorithm(a[0])
	if err != nil {
		return nil, err
	}
	h := newHash(name)
	if h == nil {
		return nil, notSupported("digest: %s is not a hash algorithm", name)
	}
	data, err := s.bytes(a[1], "data")
	if err != nil {
		return nil, err
	}
	d := h()
	d.Write(data)
	return s.buffer(d.Sum(nil)), nil
}

func (s *subtleCrypto) importKey(a []goja.Value) (goja.Value, error) {
	format := a[0].String()
	if !slices.Contains([]string{"raw", "jwk", "spki", "pkcs8"}, format) {
		return nil, typeErr("The provided value '%s' is not a valid enum value of type KeyFormat.", format)
	}
	alg, algObj, err := s.algorithm(a[2])
	if err != nil {
		return nil, err
	}
	extractable := a[3].ToBoolean()
	usages, err := s.usages(a[4])
	if err != nil {
		return nil, err
	}
	if allowedUsages(alg) == nil {
		return nil, notSupported("importKey: %s is not supported", alg)
	}
	if err := checkUsages(alg, usages); err != nil {
		return nil, err
	}
	k := &cryptoKey{alg: alg, extractable: extractable, usages: usages}
	if alg == "HMAC" {
		if k.hash, err = s.hashMember(algObj, "HmacImportParams"); err != nil {
			return nil, err
		}
	}
	switch format {
	case "raw":
		if k.raw, err = s.bytes(a[1], "keyData"); err != nil {
			return nil, err
		}
	case "jwk":
		if alg == "PBKDF2" || alg == "HKDF" {
			return nil, notSupported("importKey: %s keys are imported in raw format only", alg)
		}
		if err := s.readJWK(a[1], k); err != nil {
			return nil, err
		}
	default:
		return nil, notSupported("importKey: %s keys cannot be imported as %s", alg, format)
	}
	switch alg {
	case "AES-GCM", "AES-CBC", "AES-CTR":
		if n := len(k.raw); n == 24 {
			return nil, errAES192
		} else if n != 16 && n != 32 {
			return nil, dataErr("AES key data must be 128 or 256 bits")
		}
		k.length = len(k.raw) * 8
	case "HMAC":
		if len(k.raw) == 0 {
			return nil, dataErr("HMAC key data must not be empty")
		}
		k.length = len(k.raw) * 8
		if l := member(algObj, "length"); l != nil {
			n := int(l.ToInteger())
			if n > k.length || n <= k.length-8 {
				return nil, dataErr("The optional HMAC key length must be shorter than the key data, and by less than 8 bits.")
			}
			k.length = n
		}
	case "PBKDF2", "HKDF":
		if extractable {
			return nil, syntaxErr("%s keys cannot be extractable", alg)
		}
	}
	if len(usages) == 0 {
		return nil, syntaxErr("Usages cannot be empty when creating a key.")
	}
	return s.newKey(k), nil
}

// readJWK reads an "oct" JSON Web Key into k after the spec's checks.
func (s *subtleCrypto) readJWK(v goja.Value, k *cryptoKey) error {
	o, ok := v.(*goja.Object)
	if !ok {
		return typeErr("Key data must be an object for JWK import")
	}
	str := func(name string) (string, bool) {
		m := member(o, name)
		if m == nil {
			return "", false
		}
		return m.String(), true
	}
	if kty, _ := str("kty"); kty != "oct" {
		return dataErr("The JWK \"kty\" member was not \"oct\"")
	}
	kv, ok := str("k")
	if !ok {
		return dataErr("The required JWK member \"k\" was missing")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(kv, "="))
	if err != nil {
		return dataErr("The JWK member \"k\" could not be base64url decoded")
	}
	k.raw = raw
	if use, ok := str("use"); ok {
		want := "enc"
		if k.alg == "HMAC" {
			want = "sig"
		}
		if use != want {
			return dataErr("The JWK \"use\" member was not %q", want)
		}
	}
	if ext := member(o, "ext"); ext != nil && !ext.ToBoolean() && k.extractable {
		return dataErr("The JWK \"ext\" member was false but the key is requested extractable")
	}
	if ops := member(o, "key_ops"); ops != nil {
		have, err := s.usagesLoose(ops)
		if err != nil {
			return err
		}
		for _, u := range k.usages {
			if !slices.Contains(have, u) {
				return dataErr("The JWK \"key_ops\" member does not include %q", u)
			}
		}
	}
	if jalg, ok := str("alg"); ok {
		var want string
		switch k.alg {
		case "AES-GCM", "AES-CBC", "AES-CTR":
			want = fmt.Sprintf("A%d%s", len(raw)*8, strings.TrimPrefix(k.alg, "AES-"))
		case "HMAC":
			want = jwkName(k)
		}
		if jalg != want {
			return dataErr("The JWK \"alg\" member was inconsistent with that specified by the Web Crypto call")
		}
	}
	return nil
}

func (s *subtleCrypto) usagesLoose(v goja.Value) ([]string, error) {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil, dataErr("The JWK \"key_ops\" member was not an array")
	}
	var out []string
	for i := 0; i < int(o.Get("length").ToInteger()); i++ {
		out = append(out, o.Get(fmt.Sprint(i)).String())
	}
	return out, nil
}

// jwkName is the JWK "alg" of a key: HS256 for HMAC with SHA-256,
// A256GCM for a 256-bit AES-GCM key.
func jwkName(k *cryptoKey) string {
	if k.alg == "HMAC" {
		if k.hash == "SHA-1" {
			return "HS1"
		}
		return "HS" + strings.TrimPrefix(k.hash, "SHA-")
	}
	return fmt.Sprintf("A%d%s", max(k.length, len(k.raw)*8), strings.TrimPrefix(k.alg, "AES-"))
}

func (s *subtleCrypto) exportKey(a []goja.Value) (goja.Value, error) {
	format := a[0].String()
	if !slices.Contains([]string{"raw", "jwk", "spki", "pkcs8"}, format) {
		return nil, typeErr("The provided value '%s' is not a valid enum value of type KeyFormat.", format)
	}
	k := s.keyOf(a[1])
	if k == nil {
		return nil, typeErr("Failed to execute 'exportKey' on 'SubtleCrypto': parameter 2 is not of type 'CryptoKey'.")
	}
	if !k.extractable {
		return nil, invalidAccess("key is not extractable")
	}
	switch format {
	case "raw":
		return s.buffer(slices.Clone(k.raw)), nil
	case "jwk":
		o := s.vm.NewObject()
		_ = o.Set("alg", jwkName(k))
		_ = o.Set("ext", true)
		_ = o.Set("k", base64.RawURLEncoding.EncodeToString(k.raw))
		ops := make([]any, len(k.usages))
		for i, u := range k.usages {
			ops[i] = u
		}
		_ = o.Set("key_ops", s.vm.NewArray(ops...))
		_ = o.Set("kty", "oct")
		return o, nil
	}
	return nil, notSupported("%s keys cannot be exported as %s", k.alg, format)
}

func (s *subtleCrypto) generateKey(a []goja.Value) (goja.Value, error) {
	alg, algObj, err := s.algorithm(a[0])
	if err != nil {
		return nil, err
	}
	usages, err := s.usages(a[2])
	if err != nil {
		return nil, err
	}
	k := &cryptoKey{alg: alg, extractable: a[1].ToBoolean(), usages: usages}
	switch alg {
	case "AES-GCM", "AES-CBC", "AES-CTR":
		if err := checkUsages(alg, usages); err != nil {
			return nil, err
		}
		l := member(algObj, "length")
		if l == nil {
			return nil, typeErr("AesKeyGenParams: length: Missing required property")
		}
		n := int(l.ToInteger())
		if n == 192 {
			return nil, errAES192
		}
		if n != 128 && n != 256 {
			return nil, operationErr("AES key length must be 128 or 256 bits")
		}
		k.length = n
	case "HMAC":
		if err := checkUsages(alg, usages); err != nil {
			return nil, err
		}
		if k.hash, err = s.hashMember(algObj, "HmacKeyGenParams"); err != nil {
			return nil, err
		}
		k.length = newHash(k.hash)().BlockSize() * 8
		if l := member(algObj, "length"); l != nil {
			if k.length = int(l.ToInteger()); k.length <= 0 {
				return nil, operationErr("HMAC key length must be positive")
			}
		}
	default:
		return nil, notSupported("generateKey: %s is not supported", alg)
	}
	if len(usages) == 0 {
		return nil, syntaxErr("Usages cannot be empty when creating a key.")
	}
	k.raw = make([]byte, (k.length+7)/8)
	_, _ = rand.Read(k.raw)
	return s.newKey(k), nil
}

// useKey checks that key is a CryptoKey for alg allowing usage.
func (s *subtleCrypto) useKey(v goja.Value, alg, usage string) (*cryptoKey, error) {
	k := s.keyOf(v)
	if k == nil {
		return nil, typeErr("parameter is not of type 'CryptoKey'.")
	}
	if k.alg != alg {
		return nil, invalidAccess("The requested operation is not valid for the provided key")
	}
	if !slices.Contains(k.usages, usage) {
		return nil, invalidAccess("key.usages does not permit this operation")
	}
	return k, nil
}

func (s *subtleCrypto) cipher(a []goja.Value, op string) (goja.Value, error) {
	alg, algObj, err := s.algorithm(a[0])
	if err != nil {
		return nil, err
	}
	if alg != "AES-GCM" && alg != "AES-CBC" && alg != "AES-CTR" {
		return nil, notSupported("%s: %s is not supported", op, alg)
	}
	var iv, aad []byte
	tagBits := 128
	ctrLen := 0
	switch alg {
	case "AES-GCM":
		if iv, err = s.bufferMember(algObj, "iv", "AesGcmParams", true); err != nil {
			return nil, err
		}
		if aad, err = s.bufferMember(algObj, "additionalData", "AesGcmParams", false); err != nil {
			return nil, err
		}
		if t := member(algObj, "tagLength"); t != nil {
			tagBits = int(t.ToInteger())
		}
	case "AES-CBC":
		if iv, err = s.bufferMember(algObj, "iv", "AesCbcParams", true); err != nil {
			return nil, err
		}
	case "AES-CTR":
		if iv, err = s.bufferMember(algObj, "counter", "AesCtrParams", true); err != nil {
			return nil, err
		}
		l := member(algObj, "length")
		if l == nil {
			return nil, typeErr("AesCtrParams: length: Missing required property")
		}
		ctrLen = int(l.ToInteger())
	}
	k, err := s.useKey(a[1], alg, op)
	if err != nil {
		return nil, err
	}
	data, err := s.bytes(a[2], "data")
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k.raw)
	if err != nil {
		return nil, operationErr("%v", err)
	}
	var out []byte
	switch alg {
	case "AES-GCM":
		out, err = aesGCM(block, op == "encrypt", iv, data, aad, tagBits)
	case "AES-CBC":
		out, err = aesCBC(block, op == "encrypt", iv, data)
	case "AES-CTR":
		out, err = aesCTR(block, iv, ctrLen, data)
	}
	if err != nil {
		return nil, err
	}
	return s.buffer(out), nil
}

// aesGCM seals or opens with any IV length and the tag lengths WebCrypto
// allows. Go's GCM only makes 12- to 16-byte tags, so shorter tags are
// produced by truncating the full tag, and checked by recomputing it.
func aesGCM(block cipher.Block, encrypt bool, iv, data, aad []byte, tagBits int) ([]byte, error) {
	if !slices.Contains([]int{32, 64, 96, 104, 112, 120, 128}, tagBits) {
		return nil, operationErr("The tag length is invalid: Must be 32, 64, 96, 104, 112, 120, or 128 bits")
	}
	if len(iv) == 0 {
		return nil, operationErr("The iv must not be empty")
	}
	aead, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, operationErr("%v", err)
	}
	tagLen := tagBits / 8
	if encrypt {
		sealed := aead.Seal(nil, iv, data, aad)
		return sealed[:len(data)+tagLen], nil
	}
	if len(data) < tagLen {
		return nil, operationErr("The ciphertext is shorter than the tag")
	}
	ct, tag := data[:len(data)-tagLen], data[len(data)-tagLen:]
	if tagLen == aead.Overhead() {
		pt, err := aead.Open(nil, iv, data, aad)
		if err != nil {
			return nil, operationErr("The operation failed for an operation-specific reason")
		}
		return pt, nil
	}
	// GCM's keystream does not depend on the AAD, so sealing the
	// ciphertext decrypts it; sealing the plaintext again gives the tag.
	pt := aead.Seal(nil, iv, ct, nil)[:len(ct)]
	full := aead.Seal(nil, iv, pt, aad)
	if subtle.ConstantTimeCompare(full[len(pt):len(pt)+tagLen], tag) != 1 {
		return nil, operationErr("The operation failed for an operation-specific reason")
	}
	return pt, nil
}

func aesCBC(block cipher.Block, encrypt bool, iv, data []byte) ([]byte, error) {
	if len(iv) != aes.BlockSize {
		return nil, operationErr("The \"iv\" has an unexpected length -- must be 16 bytes")
	}
	if encrypt {
		pad := aes.BlockSize - len(data)%aes.BlockSize
		buf := append(slices.Clone(data), make([]byte, pad)...)
		for i := len(data); i < len(buf); i++ {
			buf[i] = byte(pad)
		}
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf, buf)
		return buf, nil
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, operationErr("The operation failed for an operation-specific reason")
	}
	buf := slices.Clone(data)
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(buf, buf)
	pad := int(buf[len(buf)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, operationErr("The operation failed for an operation-specific reason")
	}
	for _, b := range buf[len(buf)-pad:] {
		if int(b) != pad {
			return nil, operationErr("The operation failed for an operation-specific reason")
		}
	}
	return buf[:len(buf)-pad], nil
}

// aesCTR increments only the rightmost length bits of the counter block,
// wrapping within them, as the spec requires (Go's CTR increments all 128).
func aesCTR(block cipher.Block, counter []byte, length int, data []byte) ([]byte, error) {
	if len(counter) != aes.BlockSize {
		return nil, operationErr("The \"counter\" has an unexpected length -- must be 16 bytes")
	}
	if length <= 0 || length > 128 {
		return nil, operationErr("The \"length\" must be between 1 and 128 bits")
	}
	blocks := (len(data) + aes.BlockSize - 1) / aes.BlockSize
	if length < 64 && uint64(blocks) > uint64(1)<<length {
		return nil, operationErr("The counter would wrap around and repeat")
	}
	ctr := slices.Clone(counter)
	out := make([]byte, len(data))
	ks := make([]byte, aes.BlockSize)
	for off := 0; off < len(data); off += aes.BlockSize {
		block.Encrypt(ks, ctr)
		n := min(aes.BlockSize, len(data)-off)
		subtle.XORBytes(out[off:off+n], data[off:off+n], ks[:n])
		incrementLowBits(ctr, length)
	}
	return out, nil
}

func incrementLowBits(ctr []byte, bits int) {
	for i := len(ctr) - 1; i >= 0 && bits > 0; i-- {
		mask := byte(0xff)
		if bits < 8 {
			mask = byte(1<<bits - 1)
		}
		low := (ctr[i] & mask) + 1
		ctr[i] = ctr[i]&^mask | low&mask
		bits -= 8
		if low&mask != 0 {
			return // no carry
		}
	}
}

func (s *subtleCrypto) hmacKey(a []goja.Value, usage string) (*cryptoKey, []byte, error) {
	alg, _, err := s.algorithm(a[0])
	if err != nil {
		return nil, nil, err
	}
	if alg != "HMAC" {
		return nil, nil, notSupported("%s: %s is not supported", usage, alg)
	}
	k, err := s.useKey(a[1], alg, usage)
	if err != nil {
		return nil, nil, err
	}
	data, err := s.bytes(a[len(a)-1], "data")
	if err != nil {
		return nil, nil, err
	}
	m := hmac.New(newHash(k.hash), k.raw)
	m.Write(data)
	return k, m.Sum(nil), nil
}

func (s *subtleCrypto) sign(a []goja.Value) (goja.Value, error) {
	_, mac, err := s.hmacKey(a, "sign")
	if err != nil {
		return nil, err
	}
	return s.buffer(mac), nil
}

func (s *subtleCrypto) verify(a []goja.Value) (goja.Value, error) {
	sig, err := s.bytes(a[2], "signature")
	if err != nil {
		return nil, err
	}
	_, mac, err := s.hmacKey([]goja.Value{a[0], a[1], a[3]}, "verify")
	if err != nil {
		return nil, err
	}
	return s.vm.ToValue(hmac.Equal(mac, sig)), nil
}

// derive computes length bits with the PBKDF2 or HKDF key base.
func (s *subtleCrypto) derive(algV, baseV goja.Value, length int, usage string) ([]byte, error) {
	alg, algObj, err := s.algorithm(algV)
	if err != nil {
		return nil, err
	}
	if alg != "PBKDF2" && alg != "HKDF" {
		return nil, notSupported("%s: %s is not supported", usage, alg)
	}
	h, err := s.hashMember(algObj, alg+"Params")
	if err != nil {
		return nil, err
	}
	salt, err := s.bufferMember(algObj, "salt", alg+"Params", true)
	if err != nil {
		return nil, err
	}
	var info []byte
	iterations := 0
	if alg == "HKDF" {
		if info, err = s.bufferMember(algObj, "info", "HkdfParams", true); err != nil {
			return nil, err
		}
	} else {
		it := member(algObj, "iterations")
		if it == nil {
			return nil, typeErr("Pbkdf2Params: iterations: Missing required property")
		}
		iterations = int(it.ToInteger())
	}
	k, err := s.useKey(baseV, alg, usage)
	if err != nil {
		return nil, err
	}
	if length <= 0 || length%8 != 0 {
		return nil, operationErr("length must be a positive multiple of 8")
	}
	if alg == "PBKDF2" {
		if iterations <= 0 {
			return nil, operationErr("iterations must not be zero")
		}
		out, err := pbkdf2.Key(newHash(h), string(k.raw), salt, iterations, length/8)
		if err != nil {
			return nil, operationErr("%v", err)
		}
		return out, nil
	}
	out, err := hkdf.Key(newHash(h), k.raw, salt, string(info), length/8)
	if err != nil {
		return nil, operationErr("The length is too large for HKDF with %s", h)
	}
	return out, nil
}

func (s *subtleCrypto) deriveBits(a []goja.Value) (goja.Value, error) {
	if goja.IsUndefined(a[2]) || goja.IsNull(a[2]) {
		return nil, operationErr("length must be a positive multiple of 8")
	}
	out, err := s.derive(a[0], a[1], int(a[2].ToInteger()), "deriveBits")
	if err != nil {
		return nil, err
	}
	return s.buffer(out), nil
}

func (s *subtleCrypto) deriveKey(a []goja.Value) (goja.Value, error) {
	alg, algObj, err := s.algorithm(a[2])
	if err != nil {
		return nil, err
	}
	usages, err := s.usages(a[4])
	if err != nil {
		return nil, err
	}
	var length int
	k := &cryptoKey{alg: alg, extractable: a[3].ToBoolean(), usages: usages}
	switch alg {
	case "AES-GCM", "AES-CBC", "AES-CTR":
		l := member(algObj, "length")
		if l == nil {
			return nil, typeErr("AesDerivedKeyParams: length: Missing required property")
		}
		if length = int(l.ToInteger()); length == 192 {
			return nil, errAES192
		} else if length != 128 && length != 256 {
			return nil, operationErr("AES key length must be 128 or 256 bits")
		}
	case "HMAC":
		if k.hash, err = s.hashMember(algObj, "HmacImportParams"); err != nil {
			return nil, err
		}
		length = newHash(k.hash)().BlockSize() * 8
		if l := member(algObj, "length"); l != nil {
			length = int(l.ToInteger())
		}
	default:
		return nil, notSupported("deriveKey: cannot derive a %s key", alg)
	}
	if err := checkUsages(alg, usages); err != nil {
		return nil, err
	}
	raw, err := s.derive(a[0], a[1], length, "deriveKey")
	if err != nil {
		return nil, err
	}
	if len(usages) == 0 {
		return nil, syntaxErr("Usages cannot be empty when creating a key.")
	}
	k.raw, k.length = raw, length
	return s.newKey(k), nil
}
