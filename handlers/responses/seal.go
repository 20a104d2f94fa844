package responses

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// sealPrefix marks a compaction item's encrypted_content made by this
// gateway, and its format's version.
const sealPrefix = "c2a1."

// MaxSealed bounds the encrypted_content the gateway tries to open: a
// summary is bounded by the core's reply cap, so anything far longer is
// not ours.
const MaxSealed = 8 << 20

// ErrSealBroken is the error of an encrypted_content that does not open:
// not made by this deployment, made for another client key, or changed.
var ErrSealBroken = errors.New("encrypted_content was not made by this gateway for this API key, or it was changed")

// Sealer seals the summary of a compaction item (AES-256-GCM) so that the
// client holds it opaque and only this deployment reads it back. The key
// comes from the deployment's secret alone, so every replica and restart
// opens what another sealed; the client key's fingerprint is bound in as
// additional data, so one key's item does not open for another.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer derives the sealing key from secret (COMPACTION_SECRET, or
// the deployment's other secrets: see handlers/server).
func NewSealer(secret string) *Sealer {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("cursor2api compaction key v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(fmt.Sprintf("compaction key: %v", err)) // a 32-byte key always makes a cipher
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(fmt.Sprintf("compaction key: %v", err))
	}
	return &Sealer{aead: aead}
}

// sealAD is the additional data of tenant's items.
func sealAD(tenant string) []byte { return []byte("cursor2api compaction v1\x00" + tenant) }

// Seal returns the encrypted_content of summary for tenant (the client
// key's fingerprint; "" with auth off).
func (s *Sealer) Seal(tenant, summary string) string {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(summary)+s.aead.Overhead())
	rand.Read(nonce) // never fails (crypto/rand)
	sealed := s.aead.Seal(nonce, nonce, []byte(summary), sealAD(tenant))
	return sealPrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// Open returns the summary content holds for tenant, or ErrSealBroken.
func (s *Sealer) Open(tenant, content string) (string, error) {
	rest, ok := strings.CutPrefix(content, sealPrefix)
	if !ok || len(content) > MaxSealed {
		return "", ErrSealBroken
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", ErrSealBroken
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], sealAD(tenant))
	if err != nil {
		return "", ErrSealBroken
	}
	return string(plain), nil
}

// For binds s to tenant: the opener ToRequestWith takes.
func (s *Sealer) For(tenant string) func(string) (string, error) {
	return func(content string) (string, error) { return s.Open(tenant, content) }
}
