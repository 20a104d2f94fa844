package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// Remote connects to the MCP servers a request names, on the hosts
// MCP_REMOTE_HOSTS allows, so a request cannot make the gateway fetch any
// URL. Resolved addresses outside the public internet are refused unless an
// entry lists them, and the connection is pinned to the address checked.
type Remote struct {
	// Hosts are MCP_REMOTE_HOSTS' entries (ParseHosts).
	Hosts []string
	// Options are the calls' settings (timeouts, caps, logger, Observe);
	// Servers and HTTPClient are ignored. ConnectTimeout bounds the whole
	// of Dial: every server's lookup, handshake and tool listing.
	Options Options
	// MaxServers caps the servers one request may name (0: 10).
	MaxServers int
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
// bridge to them; Close ends the sessions. The servers are connected
// side by side, all within Options.ConnectTimeout.
func (r *Remote) Dial(ctx context.Context, servers []models.MCPServer) (*Bridge, error) {
	maxServers := r.MaxServers
	maxServers = utils.Default(maxServers, 10)
	if len(servers) > maxServers {
		return nil, &RemoteError{Param: servers[maxServers].Param, Refused: true,
			Message: fmt.Sprintf("a request may name at most %d MCP servers (the gateway's MCP_MAX_REQUEST_SERVERS); this one names %d", maxServers, len(servers))}
	}
	hosts, err := parseHosts(r.Hosts)
	if err != nil {
		return nil, err
	}
	opts := r.Options
	opts.Servers, opts.Allowed, opts.HTTPClient = nil, nil, nil
	opts.ConnectTimeout = utils.Default(opts.ConnectTimeout, 30*time.Second)
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	configs := make(map[string]ServerConfig, len(servers))
	params := make(map[string]string, len(servers))
	for _, s := range servers {
		if !serverName.MatchString(s.Label) || strings.Contains(s.Label, "__") {
			return nil, &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf("the MCP server label %q must be letters, digits, '-' and single '_' (at most 64)", utils.CutRunes(s.Label, 64))}
		}
		if _, dup := configs[s.Label]; dup {
			return nil, &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf("two MCP servers are labelled %q", s.Label)}
		}
		client, err := r.check(ctx, hosts, s)
		if err != nil {
			return nil, err
		}
		configs[s.Label] = ServerConfig{URL: s.URL, Headers: s.Headers, client: client, only: s.AllowedTools, filtered: s.AllowedTools != nil}
		params[s.Label] = s.Param
	}
	opts.Servers = configs
	b := New(opts)
	b.remote = true
	errs := make([]error, len(b.servers))
	var wg sync.WaitGroup
	for i, s := range b.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, _, tools, err := b.connect(ctx, s)
			if err != nil {
				errs[i] = err
				return
			}
			s.set(StateReady, "", cs, tools)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		s := b.servers[i]
		b.Close()
		b.logger.Warn("a request's MCP server could not be connected", "mcp_server", s.name, "url", ShortURL(s.cfg.URL), "error", scrubErr(err))
		// Refused, unreachable, timed out, TLS, or not MCP: all look the
		// same to the client, so that the gateway is no port scanner.
		msg := fmt.Sprintf("the MCP server %q could not be connected: it did not answer as an MCP server within the gateway's limits", s.name)
		var pe *publicError
		if errors.As(err, &pe) {
			msg = fmt.Sprintf("the MCP server %q was refused: %s", s.name, pe.msg)
		}
		return nil, &RemoteError{Param: params[s.name], Message: msg}
	}
	return b, nil
}

// check refuses a server whose host is not allowed, and returns a client
// pinned to the address it checked.
func (r *Remote) check(ctx context.Context, hosts []hostEntry, s models.MCPServer) (*http.Client, error) {
	refuse := func(format string, args ...any) error {
		return &RemoteError{Param: s.Param, Refused: true, Message: fmt.Sprintf(format, args...)}
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, refuse("the MCP server URL %q must be an http:// or https:// URL", utils.CutRunes(s.URL, 200))
	}
	host := strings.ToLower(u.Hostname())
	port := defaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, refuse("the MCP server URL %q has no valid port", utils.CutRunes(s.URL, 200))
		}
	}
	if !matchHost(hosts, host, u.Scheme, port) {
		return nil, refuse("the gateway may not reach the MCP server %s: MCP_REMOTE_HOSTS does not list it", hostPort(host, port))
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		resolver := r.Resolver
		if resolver == nil {
			resolver = net.DefaultResolver
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		addrs, err := resolver.LookupNetIP(lctx, "ip", host)
		cancel()
		if err != nil || len(addrs) == 0 {
			r.logger().Warn("a request's MCP server host could not be resolved", "host", host, "error", err)
			return nil, &RemoteError{Param: s.Param, Message: fmt.Sprintf("the MCP server %q could not be connected: it did not answer as an MCP server within the gateway's limits", s.Label)}
		}
		ips = addrs
	}
	for _, ip := range ips {
		if !public(ip) && !listedAddr(hosts, ip) {
			return nil, refuse("the MCP server host %q resolves to an address that is not public (loopback, private, link-local and the like), which MCP_REMOTE_HOSTS does not list", host)
		}
	}
	pinned := net.JoinHostPort(ips[0].Unmap().String(), strconv.Itoa(port))
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, pinned)
		},
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  60 * time.Second,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	// No redirect may leave the host that was checked.
	return &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

func (r *Remote) logger() *slog.Logger {
	if r.Options.Logger != nil {
		return r.Options.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
