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
// FingerprintChrome, TLS and HTTP/2 look like Chrome's (imroc/req, uTLS) so
// bot checks see the browser the headers claim. proxy may be nil; tlsConfig
// adds to the TLS settings. Plain http:// uses Go's transport: there is
// nothing to fingerprint, and impersonation costs about 1ms a request.
func NewTransport(fingerprint string, proxy *url.URL, tlsConfig *tls.Config) (http.RoundTripper, error) {
	if proxy == nil {
		return NewTransportFunc(fingerprint, nil, tlsConfig)
	}
	return NewTransportFunc(fingerprint, http.ProxyURL(proxy), tlsConfig)
}

// NewTransportFunc is NewTransport with a proxy function (nil: no proxy),
// such as an egress.Pool's Proxy.
func NewTransportFunc(fingerprint string, proxyFunc func(*http.Request) (*url.URL, error), tlsConfig *tls.Config) (http.RoundTripper, error) {
	plain := http.DefaultTransport.(*http.Transport).Clone()
	plain.Proxy = proxyFunc
	if tlsConfig != nil {
		plain.TLSClientConfig = tlsConfig
	}
	// Every request goes to one host: keep as many idle connections as
	// requests run at once, instead of dialling anew past two.
	plain.MaxIdleConns = maxIdleConns
	plain.MaxIdleConnsPerHost = maxIdleConns
	// Read what the upstream has sent in large pieces (the default is 4 KB).
	plain.ReadBufferSize = readBufferSize
	switch fingerprint {
	case FingerprintOff:
		return plain, nil
	case FingerprintChrome:
		c := req.C().ImpersonateChrome()
		// The event stream is read as it is; sniffing its charset would
		// wrap it in an HTML tokenizer.
		c.DisableAutoDecode()
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
		return byScheme{plain: plain, tls: c.GetTransport()}, nil
	}
	return nil, fmt.Errorf("unknown TLS fingerprint %q: use %s or %s", fingerprint, FingerprintChrome, FingerprintOff)
}

// Sizes of the upstream connection pool and read buffer.
const (
	maxIdleConns   = 512
	readBufferSize = 16 << 10
)

// byScheme sends https requests through the fingerprinting transport and
// the rest through Go's own.
type byScheme struct {
	plain, tls http.RoundTripper
}

func (t byScheme) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		return t.tls.RoundTrip(r)
	}
	return t.plain.RoundTrip(r)
}
