package mcp

import (
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"
)

// hostEntry is one entry of MCP_REMOTE_HOSTS: a name ("mcp.example.com"),
// a wildcard of its subdomains ("*.example.com"), an address or a CIDR
// prefix, each with an optional port (":8443", or ":*" for any). Without
// a port, only the default port of the URL's scheme is allowed.
type hostEntry struct {
	name   string       // a name or "*." wildcard; "" for an address
	prefix netip.Prefix // an address (a /32 or /128) or a prefix
	port   int          // 0: the scheme's default; -1: any
}

// ParseHosts checks MCP_REMOTE_HOSTS' entries, for a clear error at
// start rather than an entry that silently never matches.
func ParseHosts(hosts []string) error {
	_, err := parseHosts(hosts)
	return err
}

func parseHosts(hosts []string) ([]hostEntry, error) {
	out := make([]hostEntry, 0, len(hosts))
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		e, err := parseHost(h)
		if err != nil {
			return nil, fmt.Errorf("MCP_REMOTE_HOSTS: %q: %s; an entry is a host name, *.domain, an IP address or CIDR prefix, each with an optional :port or :*", h, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseHost(h string) (hostEntry, error) {
	host, port := h, ""
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return hostEntry{}, fmt.Errorf("no closing ']'")
		}
		host, port = h[1:end], h[end+1:]
		if port != "" {
			var ok bool
			if port, ok = strings.CutPrefix(port, ":"); !ok {
				return hostEntry{}, fmt.Errorf("what follows ']' is not a :port")
			}
		}
	case strings.Count(h, ":") == 1:
		host, port, _ = strings.Cut(h, ":")
	}
	var e hostEntry
	switch port {
	case "":
	case "*":
		e.port = -1
	default:
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return hostEntry{}, fmt.Errorf("port %q is not a number from 1 to 65535 or *", port)
		}
		e.port = n
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		e.prefix = p.Masked()
		return e, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		e.prefix = netip.PrefixFrom(a, a.BitLen())
		return e, nil
	}
	name := strings.TrimPrefix(host, "*.")
	if !validName(name) {
		return hostEntry{}, fmt.Errorf("%q is not a host name", host)
	}
	e.name = host
	return e, nil
}

// validName reports whether s is a DNS name (letters, digits, '-', '_'
// and dots between labels).
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// portOK reports whether e allows port on a URL of scheme.
func (e hostEntry) portOK(scheme string, port int) bool {
	switch e.port {
	case -1:
		return true
	case 0:
		return port == defaultPort(scheme)
	}
	return port == e.port
}

func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// matchHost reports whether an entry allows host (lower case; an address
// or a name) on port.
func matchHost(entries []hostEntry, host, scheme string, port int) bool {
	addr, err := netip.ParseAddr(host)
	isAddr := err == nil
	for _, e := range entries {
		if !e.portOK(scheme, port) {
			continue
		}
		switch {
		case isAddr:
			if e.name == "" && e.prefix.Contains(addr.Unmap()) {
				return true
			}
		case e.name == host:
			return true
		case strings.HasPrefix(e.name, "*."):
			if ok, _ := path.Match(e.name, host); ok && strings.Count(host, ".") >= strings.Count(e.name, ".") {
				return true
			}
		}
	}
	return false
}

// listedAddr reports whether an entry lists addr itself (an address or
// a prefix holding it): what a non-public address needs.
func listedAddr(entries []hostEntry, addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, e := range entries {
		if e.name == "" && e.prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// special are the addresses that are not the public internet's: a
// request's server may reach them only when MCP_REMOTE_HOSTS lists them.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",          // this network, unspecified
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // carrier-grade NAT
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local (cloud metadata)
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // documentation
		"192.88.99.0/24",     // 6to4 relay
		"192.168.0.0/16",     // private
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation
		"203.0.113.0/24",     // documentation
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved, and the broadcast address
		"255.255.255.255/32", // broadcast
		// IPv6 beyond global unicast (2000::/3) is refused as a whole;
		// these are the parts of it that lead elsewhere.
		"2001::/32",     // Teredo (embeds an IPv4 address)
		"2001:2::/48",   // benchmarking
		"2001:10::/28",  // ORCHID
		"2001:20::/28",  // ORCHIDv2
		"2001:db8::/32", // documentation
		"2002::/16",     // 6to4 (embeds an IPv4 address)
		"3fff::/20",     // documentation
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// public reports whether addr is an address of the public internet. An
// IPv4-mapped IPv6 address is judged by the IPv4 address it holds; the
// rest of IPv6 outside 2000::/3 (loopback, ULA fc00::/7, link-local,
// multicast, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, the discard prefix)
// is not public.
func public(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return false
	}
	for _, p := range special {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
