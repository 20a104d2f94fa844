package webchat

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"

	"github.com/imroc/req/v3"
)

// Fingerprints of the upstream connection.
const (
	FingerprintChrome = "chrome" // Chrome's TLS ClientHello and HTTP/2 settings
	FingerprintOff    = "off"    // Go's own
)

// NewTransport returns the round tripper for upstream traffic. With
// FingerprintChrome the TLS handshake and HTTP/2 framing look like
// Chrome's (through imroc/req, which wraps uTLS), so that bot checks that
// fingerprint the connection see the browser the headers claim. proxy may
// be nil; tlsConfig, when not nil, adds to the TLS settings (tests use it
// to trust their own certificate).
func NewTransport(fingerprint string, proxy *url.URL, tlsConfig *tls.Config) (http.RoundTripper, error) {
	if proxy == nil {
		return NewTransportFunc(fingerprint, nil, tlsConfig)
	}
	return NewTransportFunc(fingerprint, http.ProxyURL(proxy), tlsConfig)
}

// NewTransportFunc is NewTransport with a proxy function (nil: no proxy),
// such as an EgressPool's Proxy.
func NewTransportFunc(fingerprint string, proxyFunc func(*http.Request) (*url.URL, error), tlsConfig *tls.Config) (http.RoundTripper, error) {
	switch fingerprint {
	case FingerprintOff:
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		if proxyFunc != nil {
			t.Proxy = proxyFunc
		}
		if tlsConfig != nil {
			t.TLSClientConfig = tlsConfig
		}
		return t, nil
	case FingerprintChrome:
		c := req.C().ImpersonateChrome()
		// The gateway sets its own browser profile on every request; the
		// library's defaults would contradict it.
		c.Headers = http.Header{}
		c.SetProxy(nil)
		if proxyFunc != nil {
			c.SetProxy(proxyFunc)
		}
		if tlsConfig != nil {
			c.SetTLSClientConfig(tlsConfig)
		}
		return c.GetTransport(), nil
	}
	return nil, fmt.Errorf("unknown TLS fingerprint %q: use %s or %s", fingerprint, FingerprintChrome, FingerprintOff)
}
