package mcp

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"cursor2api/models"
)

func TestPublicAddresses(t *testing.T) {
	cases := []struct {
		addr   string
		public bool
	}{
		{"93.184.215.14", true},
		{"8.8.8.8", true},
		{"2606:4700::1111", true},
		{"::ffff:93.184.215.14", true}, // mapped: its IPv4 address decides
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.1.2.3", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.8.8.8", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::10.0.0.1", false}, // IPv4-compatible
		{"64:ff9b::a00:1", false},
		{"64:ff9b::5db8:d70e", false}, // NAT64 of a public address too: it leads where the gateway's NAT64 says
		{"64:ff9b:1::1", false},
		{"100::1", false},
		{"2001::1", false}, // Teredo
		{"2001:0:4136:e378::1", false},
		{"2001:db8::1", false},
		{"2002:a00:1::1", false}, // 6to4 of 10.0.0.1
		{"2002:5db8:d70e::1", false},
		{"3fff::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			assert.Equal(t, tc.public, public(netip.MustParseAddr(tc.addr)))
		})
	}
}

func TestParseHosts(t *testing.T) {
	for _, ok := range [][]string{
		{"mcp.example.com", "*.example.com", "example.com:8443", "*.example.com:*", "10.0.0.5", "10.0.0.0/8:8080", "[fd00::1]:9000", "fd00::/8", "127.0.0.1:*", " spaced.example.com "},
		nil,
	} {
		assert.NoError(t, ParseHosts(ok), "%q", ok)
	}
	for _, bad := range []string{"example.com:0", "example.com:99999", "example.com:http", "exa mple.com", "https://example.com", "[fd00::1", "[fd00::1]8080", "*", "a..b"} {
		err := ParseHosts([]string{bad})
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "MCP_REMOTE_HOSTS")
	}
}

func TestMatchHost(t *testing.T) {
	entries, err := parseHosts([]string{"plain.example.com", "alt.example.com:8443", "any.example.com:*", "*.wild.example.com", "10.0.0.0/8:9000", "[fd00::1]:*"})
	require.NoError(t, err)
	cases := []struct {
		host, scheme string
		port         int
		ok           bool
	}{
		{"plain.example.com", "https", 443, true},
		{"plain.example.com", "http", 80, true},
		{"plain.example.com", "https", 80, false}, // a bare host: the scheme's default port only
		{"plain.example.com", "https", 8443, false},
		{"alt.example.com", "https", 8443, true},
		{"alt.example.com", "https", 443, false},
		{"any.example.com", "http", 1234, true},
		{"a.wild.example.com", "https", 443, true},
		{"wild.example.com", "https", 443, false},
		{"10.1.2.3", "http", 9000, true},
		{"10.1.2.3", "http", 80, false},
		{"11.1.2.3", "http", 9000, false},
		{"fd00::1", "https", 7, true},
		{"other.example.com", "https", 443, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.ok, matchHost(entries, tc.host, tc.scheme, tc.port), "%s %s:%d", tc.scheme, tc.host, tc.port)
	}
}

// fakeDNS is a resolver whose every name has the addresses addrs.
func fakeDNS(t *testing.T, addrs map[string][]netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			// A stream connection: each message after its 2-byte length.
			for {
				var n uint16
				if binary.Read(server, binary.BigEndian, &n) != nil {
					return
				}
				q := make([]byte, n)
				if _, err := io.ReadFull(server, q); err != nil {
					return
				}
				var msg dnsmessage.Message
				if msg.Unpack(q) != nil || len(msg.Questions) != 1 {
					return
				}
				question := msg.Questions[0]
				msg.Header.Response, msg.Header.Authoritative = true, true
				for _, a := range addrs[question.Name.String()] {
					h := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 60}
					switch {
					case question.Type == dnsmessage.TypeA && a.Is4():
						h.Type = dnsmessage.TypeA
						msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: a.As4()}})
					case question.Type == dnsmessage.TypeAAAA && a.Is6():
						h.Type = dnsmessage.TypeAAAA
						msg.Answers = append(msg.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: a.As16()}})
					}
				}
				out, err := msg.Pack()
				if err != nil {
					return
				}
				if binary.Write(server, binary.BigEndian, uint16(len(out))) != nil {
					return
				}
				if _, err := server.Write(out); err != nil {
					return
				}
			}
		}()
		return client, nil
	}}
}

// TestRemoteRefusesNonPublic: a listed name that resolves to an address
// outside the public internet is refused before any connection, unless
// MCP_REMOTE_HOSTS lists that address (or its prefix).
func TestRemoteRefusesNonPublic(t *testing.T) {
	names := map[string]string{
		"private.test.":   "10.1.2.3",
		"cgnat.test.":     "100.64.1.1",
		"ula.test.":       "fd00::1",
		"nat64.test.":     "64:ff9b::a00:1",
		"sixtofour.test.": "2002:a00:1::1",
		"mapped.test.":    "::ffff:10.0.0.1",
		"teredo.test.":    "2001:0:4136:e378::1",
		"doc.test.":       "192.0.2.1",
		"metadata.test.":  "169.254.169.254",
		"mixed.test.":     "192.0.2.1", // and a public one beside: every address is checked
	}
	addrs := map[string][]netip.Addr{}
	for name, a := range names {
		addrs[name] = []netip.Addr{netip.MustParseAddr(a)}
	}
	addrs["mixed.test."] = append([]netip.Addr{netip.MustParseAddr("93.184.215.14")}, addrs["mixed.test."]...)
	r := &Remote{Hosts: []string{"*.test:*"}, Resolver: fakeDNS(t, addrs), Options: Options{ConnectTimeout: 5e9}}
	for name := range names {
		t.Run(name, func(t *testing.T) {
			b, err := r.Dial(context.Background(), []models.MCPServer{{Label: "x", URL: "http://" + name[:len(name)-1] + ":8080/mcp", Param: "p"}})
			if err == nil {
				b.Close()
			}
			require.Error(t, err)
			var re *RemoteError
			require.True(t, errors.As(err, &re), "%v", err)
			assert.True(t, re.Refused, re.Message)
			assert.Contains(t, re.Message, "not public")
		})
	}
}
