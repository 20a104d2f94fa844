package vercel

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publicToken is a real challenge token quoted in a public solver.
const publicToken = "2.1716714678.60.MDM3ODVlODI5ZWFiNDIxZDMwNWNmNmYxMWQyZDY1NDY7NDdkY2EyZDg7MTdlYzdlOGFiY2YyYWQzNWU3NTYyZDE3ODA0M2ViYzJkOWFkMzI0Yzs0.09be371cf4e973ce32715000f53ea2f8"

// checkSolution verifies a solution as the checkpoint does, step by step
// from the token's own fields.
func checkSolution(t *testing.T, token, solution string) {
	t.Helper()
	parts := strings.Split(token, ".")
	issued, _ := strconv.ParseInt(parts[1], 10, 64)
	window, _ := strconv.ParseInt(parts[2], 10, 64)
	payload, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil {
		payload, err = base64.RawStdEncoding.DecodeString(parts[3])
	}
	require.NoError(t, err)
	f := strings.Split(string(payload), ";")
	steps, _ := strconv.Atoi(f[3])
	nonces := strings.Split(solution, ";")
	require.Len(t, nonces, steps)
	mult := []int64{498787, 533737, 619763, 708403, 828071}
	at := issued * mult[issued%5] % int64(len(f[2])-4)
	prefix := f[2][at : at+4]
	for i, n := range nonces {
		sum := sha256.Sum256([]byte(f[1] + n))
		h := hex.EncodeToString(sum[:])
		require.True(t, strings.HasPrefix(h, prefix), "step %d: %s does not start with %s", i+1, h, prefix)
		at = issued * mult[i%5] % window
		prefix = h[at : at+4]
	}
}

// makeToken builds a token of the real shape.
func makeToken(issued int64, window int, id, salt, seed string, steps int, mac string) string {
	payload := base64.StdEncoding.EncodeToString([]byte(strings.Join([]string{id, salt, seed, strconv.Itoa(steps)}, ";")))
	return fmt.Sprintf("2.%d.%d.%s.%s", issued, window, payload, mac)
}

func TestParseToken(t *testing.T) {
	c, err := ParseToken(publicToken)
	require.NoError(t, err)
	assert.Equal(t, uint64(1716714678), c.Issued)
	assert.Equal(t, uint64(60), c.Window)
	assert.Equal(t, "03785e829eab421d305cf6f11d2d6546", c.ID)
	assert.Equal(t, "47dca2d8", c.Salt)
	assert.Equal(t, "17ec7e8abcf2ad35e7562d178043ebc2d9ad324c", c.Seed)
	assert.Equal(t, 4, c.Steps)
	assert.Equal(t, "09be371cf4e973ce32715000f53ea2f8", c.MAC)
	assert.Equal(t, publicToken, c.Token)
}

func TestParseTokenMalformed(t *testing.T) {
	seed := strings.Repeat("ab", 20)
	good := makeToken(1716714678, 60, "id", "salt", seed, 4, "mac")
	_, err := ParseToken(good)
	require.NoError(t, err, "the table's base token must parse")
	cases := map[string]string{
		"empty":              "",
		"four parts":         "2.1.60.eA==",
		"version 1":          "1" + good[1:],
		"timestamp":          strings.Replace(good, "2.1716714678.", "2.x.", 1),
		"window 0":           makeToken(1, 0, "id", "salt", seed, 4, "mac"),
		"window past hash":   makeToken(1, 61, "id", "salt", seed, 4, "mac"),
		"payload not base64": "2.1.60.!!!.mac",
		"three fields":       "2.1.60." + base64.StdEncoding.EncodeToString([]byte("id;salt;"+seed)) + ".mac",
		"empty salt":         makeToken(1, 60, "id", "", seed, 4, "mac"),
		"seed not hex":       makeToken(1, 60, "id", "salt", strings.Repeat("zz", 20), 4, "mac"),
		"seed upper case":    makeToken(1, 60, "id", "salt", strings.Repeat("AB", 20), 4, "mac"),
		"seed too short":     makeToken(1, 60, "id", "salt", "abcd", 4, "mac"),
		"no steps":           makeToken(1, 60, "id", "salt", seed, 0, "mac"),
		"too many steps":     makeToken(1, 60, "id", "salt", seed, maxSteps+1, "mac"),
		"empty mac":          makeToken(1, 60, "id", "salt", seed, 4, ""),
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseToken(token)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrMalformedToken), "%v", err)
			_, err = Solve(context.Background(), token)
			assert.ErrorIs(t, err, ErrMalformedToken)
		})
	}
}

// The public solvers read the payload's first four fields by position and
// ignore any after them; so does ParseToken, naming the layout in Drift.
func TestParseTokenExtraParts(t *testing.T) {
	seed := strings.Repeat("ab", 20)
	payload := func(fields ...string) string {
		return base64.StdEncoding.EncodeToString([]byte(strings.Join(fields, ";")))
	}
	cases := []struct {
		name, token, drift string
	}{
		{"known layout", makeToken(1716714678, 60, "id", "salt", seed, 4, "mac"), ""},
		{"fifth payload field", "2.1716714678.60." + payload("id", "salt", seed, "4", "1") + ".mac", "5 payload fields"},
		{"three extra fields", "2.1716714678.60." + payload("id", "salt", seed, "4", "x", "", "y;z") + ".mac", "8 payload fields"},
		{"empty fifth field", "2.1716714678.60." + payload("id", "salt", seed, "4", "") + ".mac", "5 payload fields"},
		{"part after the mac", makeToken(1716714678, 60, "id", "salt", seed, 4, "mac") + ".extra", "6 dot-separated parts"},
		{"both", "2.1716714678.60." + payload("id", "salt", seed, "4", "1") + ".mac.x.y", "5 payload fields, 7 dot-separated parts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseToken(tc.token)
			require.NoError(t, err)
			assert.Equal(t, "id", c.ID)
			assert.Equal(t, "salt", c.Salt)
			assert.Equal(t, seed, c.Seed)
			assert.Equal(t, 4, c.Steps)
			assert.Equal(t, "mac", c.MAC)
			assert.Equal(t, tc.token, c.Token, "the token goes back as it came")
			assert.Equal(t, tc.drift, c.Drift)
			sol, err := c.Solve(context.Background())
			require.NoError(t, err)
			checkSolution(t, tc.token, sol)
		})
	}
}

func TestSolve(t *testing.T) {
	tokens := map[string]string{
		"public token": publicToken,
		// Any issued time and window pick other prefix positions.
		"one step":            makeToken(1, 1, "x", "s", strings.Repeat("0123456789", 4), 1, "m"),
		"window 60":           makeToken(1788836897, 60, "x", "salt-of-any-text", strings.Repeat("fedcba9876", 4), 5, "m"),
		"short seed":          makeToken(42, 17, "x", "a", "0123a", 3, "m"),
		"unpadded b64":        strings.Replace(makeToken(7, 33, "x", "ab", strings.Repeat("1a", 20), 2, "m"), "=", "", -1),
		"another issued time": makeToken(1716714679, 59, "x", "47dca2d8", strings.Repeat("9f", 20), 4, "m"),
	}
	for name, token := range tokens {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			sol, err := Solve(context.Background(), token)
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 5*time.Second)
			checkSolution(t, token, sol)
		})
	}
}

// A hostile token (a huge salt makes every try hash a lot) is refused or
// stopped within its deadline: the solver never overruns it by much.
func TestSolveHostileToken(t *testing.T) {
	seed := strings.Repeat("ab", 20)
	huge := strings.Repeat("a", 700<<10) // a header of about a megabyte
	cases := map[string]string{
		"huge salt":       makeToken(1, 60, "id", huge, seed, maxSteps, "mac"),
		"huge seed":       makeToken(1, 60, "id", "salt", strings.Repeat("ab", 100<<10), maxSteps, "mac"),
		"huge id":         makeToken(1, 60, huge, "salt", seed, maxSteps, "mac"),
		"huge extra":      "2.1.60." + base64.StdEncoding.EncodeToString([]byte("id;salt;"+seed+";4;"+huge)) + ".mac",
		"many fields":     "2.1.60." + base64.StdEncoding.EncodeToString([]byte("id;salt;"+seed+";4"+strings.Repeat(";", 50<<10))) + ".mac",
		"huge mac":        makeToken(1, 60, "id", "salt", seed, maxSteps, huge),
		"many steps":      makeToken(1, 60, "id", "salt", seed, 1<<30, "mac"),
		"huge step count": "2.1.60." + base64.StdEncoding.EncodeToString([]byte("id;salt;"+seed+";"+strings.Repeat("9", 5000))) + ".mac",
	}
	for name, token := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := Solve(ctx, token)
			took := time.Since(start)
			require.Error(t, err)
			assert.Less(t, took, 3*time.Second, "the solver stops within (about) its deadline")
		})
	}
}

// The largest token ParseToken takes, asking for the most steps, stops
// at its deadline too: the solver looks at the context by the bytes it
// hashed, not only by tries.
func TestSolveLargestTokenStopsAtDeadline(t *testing.T) {
	salt := strings.Repeat("s", maxField)
	token := makeToken(1, 60, "id", salt, strings.Repeat("ab", maxField/2), maxSteps, "mac")
	c, err := ParseToken(token)
	require.NoError(t, err, "the largest token that parses")
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	start := time.Now()
	_, err = c.Solve(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.LessOrEqual(t, c.checkEvery()*(len(c.Salt)+16), hashPerCheck, "a check at least every %d hashed bytes", hashPerCheck)
}

func TestSolveStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Solve(ctx, publicToken)
	assert.ErrorIs(t, err, context.Canceled)
}

func BenchmarkSolve(b *testing.B) {
	c, err := ParseToken(publicToken)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := c.Solve(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseToken: any text either fails to parse or gives a challenge
// whose prefix positions all lie inside what they are read from.
func FuzzParseToken(f *testing.F) {
	f.Add(publicToken)
	f.Add(makeToken(1, 1, "x", "s", "0123a", 1, "m"))
	f.Add("2.1.60.!!!.m")
	f.Add("2.1.60." + base64.StdEncoding.EncodeToString([]byte("id;salt;0123a;2;extra;more")) + ".m.x")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ParseToken(token)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformedToken)
			return
		}
		require.LessOrEqual(t, len(token), maxToken, "a token past the bound is refused")
		require.LessOrEqual(t, len(c.Salt)+len(c.Seed)+len(c.ID), 3*maxField, "each field is bounded")
		off := c.offset(0)
		require.True(t, off >= 0 && off+prefixLen <= len(c.Seed), "first prefix at %d of a %d-digit seed", off, len(c.Seed))
		for i := 1; i <= c.Steps; i++ {
			off = c.offset(i)
			require.True(t, off >= 0 && off+prefixLen <= 2*sha256.Size, "step %d prefix at %d", i, off)
		}
	})
}
