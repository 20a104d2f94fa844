package human

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Browser is the identity the environment presents: one real browser's
// values, kept together so that the User-Agent, the client hints, the
// navigator, the screen and the WebGL renderer never contradict each other.
// The request headers the gateway sends upstream come from the same value
// (see Headers).
type Browser struct {
	Name            string // the BROWSER_PROFILE name
	UserAgent       string
	FullVersion     string // Chrome's full version, for userAgentData
	Platform        string // navigator.platform: Win32, MacIntel
	UAPlatform      string // client-hint platform: Windows, macOS
	PlatformVersion string // client-hint platform version
	Arch            string // client-hint architecture: x86, arm
	Bitness         string
	GLVendor        string
	GLRenderer      string
	ScreenWidth     int
	ScreenHeight    int
	AvailHeight     int // the screen minus the taskbar or menu bar
	PixelRatio      float64
	ColorDepth      int
	Cores           int // navigator.hardwareConcurrency
	MemoryGB        float64
	Languages       []string
	TimeZone        string // IANA name
}

// Profiles are real Chrome installations (desktop Windows and macOS), as
// reported by the browsers themselves.
var Profiles = []Browser{
	{
		Name:      "chrome-windows",
		UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
		// Chrome freezes the UA's minor version; the full one is a hint.
		FullVersion: "142.0.7444.176", Platform: "Win32", UAPlatform: "Windows", PlatformVersion: "19.0.0", Arch: "x86", Bitness: "64",
		GLVendor:    "Google Inc. (NVIDIA)",
		GLRenderer:  "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
		ScreenWidth: 1920, ScreenHeight: 1080, AvailHeight: 1032, PixelRatio: 1, ColorDepth: 24,
		Cores: 16, MemoryGB: 8, Languages: []string{"en-US", "en"}, TimeZone: "America/New_York",
	},
	{
		Name:        "chrome-windows-intel",
		UserAgent:   "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36",
		FullVersion: "141.0.7390.123", Platform: "Win32", UAPlatform: "Windows", PlatformVersion: "10.0.0", Arch: "x86", Bitness: "64",
		GLVendor:    "Google Inc. (Intel)",
		GLRenderer:  "ANGLE (Intel, Intel(R) UHD Graphics 620 (0x00005917) Direct3D11 vs_5_0 ps_5_0, D3D11)",
		ScreenWidth: 1536, ScreenHeight: 864, AvailHeight: 816, PixelRatio: 1.25, ColorDepth: 24,
		Cores: 8, MemoryGB: 8, Languages: []string{"en-GB", "en"}, TimeZone: "Europe/London",
	},
	{
		Name:        "chrome-macos",
		UserAgent:   "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
		FullVersion: "142.0.7444.176", Platform: "MacIntel", UAPlatform: "macOS", PlatformVersion: "15.6.1", Arch: "arm", Bitness: "64",
		GLVendor:    "Google Inc. (Apple)",
		GLRenderer:  "ANGLE (Apple, ANGLE Metal Renderer: Apple M2, Unspecified Version)",
		ScreenWidth: 1512, ScreenHeight: 982, AvailHeight: 944, PixelRatio: 2, ColorDepth: 30,
		Cores: 8, MemoryGB: 8, Languages: []string{"en-US", "en"}, TimeZone: "America/Los_Angeles",
	},
}

// DefaultBrowser is the profile used when none is configured.
var DefaultBrowser = Profiles[0]

// ProfileNames lists the known BROWSER_PROFILE values.
func ProfileNames() []string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}

// ProfileByName returns the named profile ("" is the default).
func ProfileByName(name string) (Browser, error) {
	if name == "" {
		return DefaultBrowser, nil
	}
	for _, p := range Profiles {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
	}
	return Browser{}, fmt.Errorf("unknown browser profile %q: use one of %s", name, strings.Join(ProfileNames(), ", "))
}

var chromeRE = regexp.MustCompile(`Chrome/(\d+)`)

// MajorVersion is Chrome's major version from the User-Agent.
func (b Browser) MajorVersion() string {
	if m := chromeRE.FindStringSubmatch(b.UserAgent); m != nil {
		return m[1]
	}
	return "142"
}

// withDefaults fills what a hand-made Browser (only a User-Agent, say)
// leaves empty from the default profile of the same platform.
func (b Browser) withDefaults() Browser {
	base := DefaultBrowser
	if strings.Contains(b.UserAgent, "Macintosh") {
		base = Profiles[2]
	}
	if b.UserAgent == "" {
		b.UserAgent = base.UserAgent
	}
	fill := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	fill(&b.Name, base.Name)
	fill(&b.FullVersion, b.MajorVersion()+".0.0.0")
	fill(&b.Platform, base.Platform)
	fill(&b.UAPlatform, base.UAPlatform)
	fill(&b.PlatformVersion, base.PlatformVersion)
	fill(&b.Arch, base.Arch)
	fill(&b.Bitness, base.Bitness)
	fill(&b.GLVendor, base.GLVendor)
	fill(&b.GLRenderer, base.GLRenderer)
	fill(&b.TimeZone, base.TimeZone)
	if b.ScreenWidth == 0 {
		b.ScreenWidth, b.ScreenHeight, b.AvailHeight, b.PixelRatio, b.ColorDepth = base.ScreenWidth, base.ScreenHeight, base.AvailHeight, base.PixelRatio, base.ColorDepth
	}
	if b.Cores == 0 {
		b.Cores, b.MemoryGB = base.Cores, base.MemoryGB
	}
	if len(b.Languages) == 0 {
		b.Languages = base.Languages
	}
	return b
}

// Brands is the userAgentData brand list Chrome sends for its version.
func (b Browser) Brands() [][2]string {
	v := b.MajorVersion()
	return [][2]string{{"Chromium", v}, {"Not-A.Brand", "24"}, {"Google Chrome", v}}
}

// Headers are the request headers of this profile that identify the
// browser: the User-Agent, the low-entropy client hints Chrome always
// sends, and Accept-Language. They are meant to be laid over the rest of a
// request's browser headers.
func (b Browser) Headers() http.Header {
	b = b.withDefaults()
	var brands []string
	for _, br := range b.Brands() {
		brands = append(brands, fmt.Sprintf("%q;v=%q", br[0], br[1]))
	}
	h := http.Header{}
	h.Set("User-Agent", b.UserAgent)
	h.Set("Sec-Ch-Ua", strings.Join(brands, ", "))
	h.Set("Sec-Ch-Ua-Mobile", "?0")
	h.Set("Sec-Ch-Ua-Platform", fmt.Sprintf("%q", b.UAPlatform))
	h.Set("Accept-Language", acceptLanguage(b.Languages))
	return h
}

// acceptLanguage is Chrome's Accept-Language for navigator.languages.
func acceptLanguage(langs []string) string {
	var parts []string
	for i, l := range langs {
		if i == 0 {
			parts = append(parts, l)
			continue
		}
		parts = append(parts, fmt.Sprintf("%s;q=%.1f", l, max(0.1, 1-0.1*float64(i))))
	}
	return strings.Join(parts, ",")
}

// ZoneAgrees reports whether the host's local time zone (which the
// engine's Date uses) has the same UTC offset at now as the profile's
// TimeZone (which Intl reports). A script that compares the two would see
// a mismatch otherwise; running the gateway with TZ set to the profile's
// zone fixes it.
func (b Browser) ZoneAgrees(now time.Time) (bool, error) {
	loc, err := time.LoadLocation(b.withDefaults().TimeZone)
	if err != nil {
		return false, fmt.Errorf("profile time zone: %w", err)
	}
	_, local := now.Zone()
	_, profile := now.In(loc).Zone()
	return local == profile, nil
}
