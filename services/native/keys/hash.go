package keys

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// Fingerprint names an API key in states, logs and errors: "key-" and the
// first 8 hex digits of the key's SHA-256. It tells keys apart without
// revealing them.
func Fingerprint(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return "key-" + hex.EncodeToString(sum[:4])
}

// SessionHash makes Acquire's session from what identifies a conversation
// without a session id (its system prompt and first message), each part
// length-prefixed. It is SHA-256 because the key is picked by its bits: a
// weak hash would pile conversations onto one key.
func SessionHash(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return "h-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// score is a key's weight for a session in rendezvous (highest random
// weight) hashing: the session goes to the usable key of highest score.
// Taking a key out moves only that key's sessions, each to its own second
// choice, so the others keep their key and their prompt cache. An empty
// session has no affinity and gets a random weight.
func score(session, name string) uint64 {
	if session == "" {
		return rand.Uint64()
	}
	h := sha256.New()
	h.Write([]byte(session))
	h.Write([]byte{0})
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}
