package mcp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"cursor2api/models"
)

// Remote connects to the MCP servers a request names for itself, on the
// hosts MCP_REMOTE_HOSTS allows. A request could otherwise make the
// gateway fetch any URL, so every host is checked by name, and its
// addresses after DNS resolution: a loopback, link-local or unspecified
// address is refused unless that address itself is listed. The
// connection is pinned to the address checked, so that a second lookup
// cannot lead elsewhere.
type Remote struct {
	// Hosts are the allowed host names or addresses; a name may start
	// with "*." for its subdomains.
	Hosts []string
	// Options are the calls' settings (timeout, result cap, logger,
	// Observe); Servers and HTTPClient are ignored.
	Options Options
	// Resolver looks host names up (nil: net.DefaultResolver).
	Resolver *net.Resolver
}

// RemoteError is a request's server refused or unreachable; Param names
// the request's field.
type RemoteError struct {
	Param, Message string
	// Refused: the host is not allowed (else: the connection failed).
	Refused bool
}

func (e *RemoteError) Error() string { return e.Message }

// Dial connects to servers, each once (no reconnection), and returns a
// bridge to them; Close ends the sessions.
func (r *Remote) Dial(ctx context.Context, servers []models.MCPServer) (*Bridge, error) {
	configs := make(map[string]ServerConfig, len(servers))
	var allowedTools []string
	for _, s := range servers {
		if !serverName.MatchString(s.Label) || strings.Contains(s.Label, "__") {
			return nil, &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf("the MCP server label %q must be letters, digits, '-' and single '_' (at most 64)", s.Label)}
		}
		if _, dup := configs[s.Label]; dup {
			return nil, &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf("two MCP servers are labelled %q", s.Label)}
		}
		client, err := r.check(ctx, s)
		if err != nil {
			return nil, err
		}
		configs[s.Label] = ServerConfig{URL: s.URL, Headers: s.Headers, client: client}
		if s.AllowedTools == nil {
			allowedTools = append(allowedTools, ToolName(s.Label, "*"))
		}
		for _, t := range s.AllowedTools {
			allowedTools = append(allowedTools, ToolName(s.Label, t))
		}
	}
	opts := r.Options
	opts.Servers, opts.Allowed, opts.HTTPClient = configs, allowedTools, nil
	b := New(opts)
	for _, s := range b.servers {
		cs, _, tools, err := b.connect(ctx, s)
		if err != nil {
			b.Close()
			param := ""
			for _, rs := range servers {
				if rs.Label == s.name {
					param = rs.Param
				}
			}
			return nil, &RemoteError{Param: param, Message: fmt.Sprintf("the MCP server %q could not be reached: %v", s.name, err)}
		}
		s.set(StateReady, "", cs, tools)
	}
	return b, nil
}

// check refuses a server whose host is not allowed, and returns a client
// pinned to the address it checked.
func (r *Remote) check(ctx context.Context, s models.MCPServer) (*http.Client, error) {
	refuse := func(format string, args ...any) error {
		return &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf(format, args...)}
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, refuse("the MCP server URL %q must be an http:// or https:// URL", clipURL(s.URL))
	}
	host := strings.ToLower(u.Hostname())
	if !r.listed(host) {
		return nil, refuse("the gateway may not reach the MCP server host %q: MCP_REMOTE_HOSTS does not list it", host)
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		resolver := r.Resolver
		if resolver == nil {
			resolver = net.DefaultResolver
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err := resolver.LookupIPAddr(lctx, host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return nil, &RemoteError{Param: s.Param, Message: fmt.Sprintf("the MCP server host %q could not be resolved: %v", host, err)}
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if (ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()) && !r.listed(ip.String()) {
			return nil, refuse("the MCP server host %q resolves to %s, a loopback or link-local address, which MCP_REMOTE_HOSTS does not list", host, ip)
		}
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	pinned := net.JoinHostPort(ips[0].String(), port)
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, pinned)
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       30 * time.Second,
	}
	// No redirect may leave the host that was checked.
	return &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// listed reports whether MCP_REMOTE_HOSTS names host.
func (r *Remote) listed(host string) bool {
	for _, h := range r.Hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == host {
			return true
		}
		if strings.HasPrefix(h, "*.") {
			if ok, _ := path.Match(h, host); ok && strings.Count(host, ".") >= strings.Count(h, ".") {
				return true
			}
		}
	}
	return false
}

func clipURL(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
