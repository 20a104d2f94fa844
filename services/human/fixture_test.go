package human

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixtures in testdata are built by testdata/gen/gen.js from
// testdata/gen/challenge.src.js, obfuscated with javascript-obfuscator the
// way Vercel BotID's script is; see that source for the signals.

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// signals is what the fixture challenge collects and encrypts.
type signals struct {
	Leaks               []string `json:"leaks"`
	FnToString          string   `json:"fnToString"`
	NativeFns           bool     `json:"nativeFns"`
	Webdriver           any      `json:"webdriver"`
	Selenium            []string `json:"selenium"`
	Headless            bool     `json:"headless"`
	UA                  string   `json:"ua"`
	Platform            string   `json:"platform"`
	UAPlatform          string   `json:"uaPlatform"`
	Brands              []string `json:"brands"`
	WebdriverOnProto    bool     `json:"webdriverOnProto"`
	HardwareConcurrency int      `json:"hardwareConcurrency"`
	DeviceMemory        float64  `json:"deviceMemory"`
	Languages           []string `json:"languages"`
	Screen              []int    `json:"screen"`
	TimeZone            string   `json:"timeZone"`
	GLVendor            string   `json:"glVendor"`
	GLRenderer          string   `json:"glRenderer"`
	Devtools            bool     `json:"devtools"`
	DevtoolsFrame       bool     `json:"devtoolsFrame"`
	SeparateRealm       bool     `json:"separateRealm"`
	Host                string   `json:"host"`
	Search              string   `json:"search"`
	Src                 string   `json:"src"`
	LateScript          any      `json:"lateScript"`
	Order               []string `json:"order"`
	Spread              string   `json:"spread"`
}

// openEnvelope is the server side of the fixture: it decrypts
// s = base64(salt | iv | AES-256-GCM ciphertext) with the key PBKDF2
// derives from the shared secret.
func openEnvelope(secret, s string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("s is not base64: %w", err)
	}
	if len(raw) < 16+12+16 {
		return nil, fmt.Errorf("s is %d bytes, too short", len(raw))
	}
	salt, iv, ct := raw[:16], raw[16:28], raw[28:]
	key, err := pbkdf2.Key(sha256.New, secret, salt, 100000, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return gcm.Open(nil, iv, ct, nil)
}

// verify checks an answer the way a bot check would: every signal must be
// what a real Chrome of profile b shows. It returns the problems found.
func verify(t *testing.T, answer string, b Browser, scriptURL string) []string {
	t.Helper()
	var outer struct{ B, V, E, S, D, Vr string }
	require.NoError(t, json.Unmarshal([]byte(answer), &outer))
	assert.Equal(t, "fixture-b", outer.B)
	assert.Equal(t, "fixture-vr", outer.Vr)
	plain, err := openEnvelope(readFixture(t, "challenge_secret.txt"), outer.S)
	require.NoError(t, err, "the envelope must decrypt with the shared secret")
	var sig signals
	require.NoError(t, json.Unmarshal(plain, &sig), string(plain))
	var bad []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	check(len(sig.Leaks) == 0, "automation globals present: %v", sig.Leaks)
	check(sig.FnToString == "function toString() { [native code] }", "Function.prototype.toString.toString() = %q", sig.FnToString)
	check(sig.NativeFns, "provided functions do not look native")
	check(sig.Webdriver == false, "navigator.webdriver = %v", sig.Webdriver)
	check(len(sig.Selenium) == 0, "selenium properties: %v", sig.Selenium)
	check(!sig.Headless, "headless user agent")
	check(sig.UA == b.UserAgent, "userAgent %q", sig.UA)
	check(sig.Platform == b.Platform && sig.UAPlatform == b.UAPlatform, "platform %q / %q", sig.Platform, sig.UAPlatform)
	v := b.MajorVersion()
	check(strings.Join(sig.Brands, ",") == "Chromium/"+v+",Not-A.Brand/24,Google Chrome/"+v, "brands %v", sig.Brands)
	check(sig.WebdriverOnProto, "navigator.webdriver is not a getter on Navigator.prototype")
	check(sig.HardwareConcurrency == b.Cores && sig.DeviceMemory == b.MemoryGB, "cores %d memory %v", sig.HardwareConcurrency, sig.DeviceMemory)
	check(strings.Join(sig.Languages, ",") == strings.Join(b.Languages, ","), "languages %v", sig.Languages)
	check(len(sig.Screen) == 3 && sig.Screen[0] == b.ScreenWidth && sig.Screen[1] == b.ScreenHeight, "screen %v", sig.Screen)
	check(sig.TimeZone == b.TimeZone, "time zone %q", sig.TimeZone)
	check(sig.GLVendor == b.GLVendor && sig.GLRenderer == b.GLRenderer, "WebGL %q / %q", sig.GLVendor, sig.GLRenderer)
	for _, soft := range []string{"SwiftShader", "llvmpipe", "Mesa", "Software"} {
		check(!strings.Contains(sig.GLRenderer, soft), "software renderer %q", sig.GLRenderer)
	}
	check(!sig.Devtools, "DevTools probe: console.log read an Error's stack")
	check(!sig.DevtoolsFrame, "DevTools probe in the iframe: its console read an Error's stack")
	check(sig.SeparateRealm, "the iframe shares Error/Object/Function/console with the window")
	check(sig.Host == "cursor.com" && sig.Search == "", "location %q %q", sig.Host, sig.Search)
	check(sig.Src == scriptURL, "currentScript.src %q during the run", sig.Src)
	check(sig.LateScript == nil, "currentScript after the run is %v, want null", sig.LateScript)
	check(strings.Join(sig.Order, ",") == "sync,micro,queued,timeout", "task order %v", sig.Order)
	check(sig.Spread == "hi!", "spread call %q", sig.Spread)
	return bad
}

func TestFixtureChallengePasses(t *testing.T) {
	script := readFixture(t, "challenge.js")
	for _, b := range Profiles {
		t.Run(b.Name, func(t *testing.T) {
			r := Run(context.Background(), script, scriptURL, b, fixtureBudget, EvalOptions{})
			require.NoError(t, r.Err)
			assert.Empty(t, r.Misses)
			assert.Empty(t, verify(t, r.Value, b, scriptURL))
		})
	}
}

// The verifier is not a rubber stamp: an environment that shows a software
// renderer and a headless user agent is caught.
func TestFixtureVerifierCatchesABadEnvironment(t *testing.T) {
	b := DefaultBrowser
	b.UserAgent = strings.Replace(b.UserAgent, "Chrome/", "HeadlessChrome/", 1)
	b.GLRenderer = "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)"
	r := Run(context.Background(), readFixture(t, "challenge.js"), scriptURL, b, fixtureBudget, EvalOptions{})
	require.NoError(t, r.Err)
	bad := verify(t, r.Value, DefaultBrowser, scriptURL)
	joined := strings.Join(bad, "\n")
	assert.Contains(t, joined, "headless user agent")
	assert.Contains(t, joined, "software renderer")
}

func TestFixtureMissingGlobalIsNamed(t *testing.T) {
	r := Run(context.Background(), readFixture(t, "challenge_missing.js"), scriptURL, DefaultBrowser, fixtureBudget, EvalOptions{})
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "BroadcastChannel is not defined")
	assert.Equal(t, []string{"BroadcastChannel"}, r.Misses)

	// Evaluate, which the Provider uses, puts the list into its error.
	_, err := Evaluate(context.Background(), readFixture(t, "challenge_missing.js"), scriptURL, DefaultBrowser, fixtureBudget)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the script read undefined: BroadcastChannel")
}

func BenchmarkColdEvaluation(b *testing.B) {
	script := readFixture(b, "challenge.js")
	for b.Loop() {
		if _, err := Evaluate(context.Background(), script, scriptURL, DefaultBrowser, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvironmentSetup is the fixed cost of every evaluation: a fresh
// runtime with the browser environment, and a trivial script.
func BenchmarkEnvironmentSetup(b *testing.B) {
	for b.Loop() {
		if _, err := Evaluate(context.Background(), `window.V_C = [function () { return 1; }];`, scriptURL, DefaultBrowser, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// fixtureBudget bounds a run of the obfuscated fixture. It is a bound
// against a hang, not a speed target (the benchmarks measure that):
// under -race, on two shared cores, goja runs the fixture many times
// slower than the ~1 s it takes alone.
const fixtureBudget = 3 * time.Minute
