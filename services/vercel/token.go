// Package vercel passes Vercel's security checkpoint in-process: it solves
// the challenge's proof of work for the _vcrcs cookie and keeps one cookie
// per egress, since the cookie is bound to the IP and User-Agent that solved
// it. The token format and the work are as public solvers describe them.
package vercel

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TokenVersion is the challenge version this package solves; it is sent
// back as x-vercel-challenge-version.
const TokenVersion = "2"

// prefixLen is how many hex digits of a hash each step must match.
const prefixLen = 4

// maxSteps bounds the work a token may ask for (real tokens ask for a
// handful of steps).
const maxSteps = 64

// maxToken and maxField bound a token before any work is done on it: a
// real one is about 180 bytes, its fields 8 to 40, and a field's length
// is work per try (a huge salt made each try hash a megabyte).
const (
	maxToken = 2048
	maxField = 256
)

// hashPerCheck is how many bytes the solver hashes between two looks at
// its context (about a millisecond of work), whatever the salt's length.
const hashPerCheck = 1 << 20

// maxTries bounds the search of one step. A step needs 16^prefixLen
// tries on average; failing after 256 times that is as good as
// impossible for a real token and stops a malformed one from spinning.
const maxTries = 256 << (4 * prefixLen)

// offsetMultipliers pick where in the previous hash the next step's prefix
// is read, as the challenge's own solver does.
var offsetMultipliers = [5]uint64{498787, 533737, 619763, 708403, 828071}

// Challenge is a parsed challenge token,
// "2.<issued>.<window>.<base64 of id;salt;seed;steps>.<mac>". Like public
// solvers it reads fields by position and ignores extra ones; Drift names them.
type Challenge struct {
	// Token is the token as received, sent back with the solution.
	Token string
	// Issued is the token's timestamp (Unix seconds); it also seeds where
	// each step's prefix is read.
	Issued uint64
	// Window bounds where in a hash's hex the next prefix starts.
	Window uint64
	// ID names the challenge; the solver does not use it.
	ID string
	// Salt starts every hashed string: sha256(Salt + nonce).
	Salt string
	// Seed is the hex string the first step's prefix is read from.
	Seed string
	// Steps is how many nonces the solution chains.
	Steps int
	// MAC is the server's signature over the rest; only the server can
	// check it, so it is kept as is.
	MAC string
	// Drift is "" for a token of the known layout, else what it had
	// beyond it ("5 payload fields", "6 dot-separated parts"): the
	// layout, never the content, so that it can be logged.
	Drift string
}

// ErrMalformedToken is wrapped by ParseToken's errors.
var ErrMalformedToken = errors.New("malformed Vercel challenge token")

// payloadFields are the payload's fields the solver reads: id, salt,
// seed, steps.
const payloadFields = 4

// ParseToken parses a challenge token. It checks everything a client can:
// the version, the numbers, the fields and that the seed and window leave
// room for a prefix; the MAC only the server can check. Parts and fields
// after those it reads are ignored (and named in Drift); too few, or
// ones it cannot use, are an error.
func ParseToken(token string) (*Challenge, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformedToken, fmt.Sprintf(format, args...))
	}
	if len(token) > maxToken {
		return nil, bad("%d bytes, want at most %d", len(token), maxToken)
	}
	parts := strings.Split(token, ".")
	if len(parts) < 5 {
		return nil, bad("%d dot-separated parts, want at least 5", len(parts))
	}
	if parts[0] != TokenVersion {
		return nil, bad("version %q, want %q", parts[0], TokenVersion)
	}
	issued, err := strconv.ParseUint(parts[1], 10, 40)
	if err != nil {
		return nil, bad("timestamp %q", parts[1])
	}
	window, err := strconv.ParseUint(parts[2], 10, 16)
	if err != nil || window == 0 || window > 2*sha256.Size-prefixLen {
		return nil, bad("window %q: want 1..%d", parts[2], 2*sha256.Size-prefixLen)
	}
	payload, err := decodeBase64(parts[3])
	if err != nil {
		return nil, bad("payload is not base64")
	}
	fields := strings.SplitN(string(payload), ";", payloadFields+1)
	if len(fields) < payloadFields {
		return nil, bad("payload has %d fields, want at least %d (id;salt;seed;steps)", len(fields), payloadFields)
	}
	var drift []string
	if len(fields) > payloadFields {
		drift = append(drift, fmt.Sprintf("%d payload fields", payloadFields+1+strings.Count(fields[payloadFields], ";")))
	}
	if len(parts) > 5 {
		drift = append(drift, fmt.Sprintf("%d dot-separated parts", len(parts)))
	}
	c := &Challenge{Token: token, Issued: issued, Window: window, ID: fields[0], Salt: fields[1], Seed: fields[2], MAC: parts[4],
		Drift: strings.Join(drift, ", ")}
	for i, f := range fields[:payloadFields] {
		if len(f) > maxField {
			return nil, bad("payload field %d has %d bytes, want at most %d", i+1, len(f), maxField)
		}
	}
	if c.Salt == "" {
		return nil, bad("empty salt")
	}
	if len(c.Seed) <= prefixLen || !isHex(c.Seed) {
		return nil, bad("seed must be more than %d lowercase hex digits", prefixLen)
	}
	if c.Steps, err = strconv.Atoi(fields[3]); err != nil || c.Steps < 1 || c.Steps > maxSteps {
		return nil, bad("steps %q: want 1..%d", fields[3], maxSteps)
	}
	if c.MAC == "" {
		return nil, bad("empty MAC")
	}
	return c, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

func isHex(s string) bool {
	for i := range len(s) {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// offset is where step i (from 0) reads its prefix: in the seed for the
// first step, in the previous step's hash for the others.
func (c *Challenge) offset(i int) int {
	if i == 0 {
		m := offsetMultipliers[c.Issued%uint64(len(offsetMultipliers))]
		return int(c.Issued * m % uint64(len(c.Seed)-prefixLen))
	}
	m := offsetMultipliers[(i-1)%len(offsetMultipliers)]
	return int(c.Issued * m % c.Window)
}

// checkEvery is how many tries go between two looks at the context, so
// that each look comes after about hashPerCheck bytes hashed.
func (c *Challenge) checkEvery() int {
	return max(1, hashPerCheck/(len(c.Salt)+16))
}

// Solve does the proof of work: for each step, a nonce such that the hex
// SHA-256 of Salt+nonce starts with that step's prefix (read from the seed,
// then from the previous step's hash). The solution is the nonces joined
// by ";". It stops when ctx ends, at most about hashPerCheck bytes later.
func (c *Challenge) Solve(ctx context.Context) (string, error) {
	var start [8]byte
	if _, err := rand.Read(start[:]); err != nil {
		return "", fmt.Errorf("vercel: random nonce: %w", err)
	}
	counter := binary.BigEndian.Uint64(start[:])
	buf := make([]byte, len(c.Salt)+16)
	copy(buf, c.Salt)
	nonce := buf[len(c.Salt):]
	nonces := make([]string, 0, c.Steps)
	prefix := c.Seed[c.offset(0) : c.offset(0)+prefixLen]
	var raw [8]byte
	every := c.checkEvery()
	for i := range c.Steps {
		want, err := nibbles(prefix)
		if err != nil {
			return "", err
		}
		found := false
		for try := 0; try < maxTries; try++ {
			if try%every == 0 && ctx.Err() != nil {
				return "", ctx.Err()
			}
			counter++
			binary.BigEndian.PutUint64(raw[:], counter)
			hex.Encode(nonce, raw[:])
			sum := sha256.Sum256(buf)
			if hasPrefix(sum, want) {
				nonces = append(nonces, string(nonce))
				h := hex.EncodeToString(sum[:])
				off := c.offset(i + 1)
				prefix = h[off : off+prefixLen]
				found = true
				break
			}
		}
		if !found {
			return "", fmt.Errorf("vercel: no nonce found for step %d of %d in %d tries", i+1, c.Steps, maxTries)
		}
	}
	return strings.Join(nonces, ";"), nil
}

// nibbles turns a hex prefix into the half-bytes a hash must start with.
func nibbles(prefix string) ([prefixLen]byte, error) {
	var out [prefixLen]byte
	for i := range prefixLen {
		ch := prefix[i]
		switch {
		case '0' <= ch && ch <= '9':
			out[i] = ch - '0'
		case 'a' <= ch && ch <= 'f':
			out[i] = ch - 'a' + 10
		default:
			return out, fmt.Errorf("%w: prefix %q is not hex", ErrMalformedToken, prefix)
		}
	}
	return out, nil
}

// hasPrefix compares the hash's leading half-bytes without encoding it.
func hasPrefix(sum [sha256.Size]byte, want [prefixLen]byte) bool {
	for i := range prefixLen {
		n := sum[i/2]
		if i%2 == 0 {
			n >>= 4
		} else {
			n &= 0xf
		}
		if n != want[i] {
			return false
		}
	}
	return true
}

// Solve parses token and solves it.
func Solve(ctx context.Context, token string) (string, error) {
	c, err := ParseToken(token)
	if err != nil {
		return "", err
	}
	return c.Solve(ctx)
}
