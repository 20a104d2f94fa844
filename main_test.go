package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
)

func TestOperationsSettingsAreValidated(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8,nginx"}, `TRUSTED_PROXIES: "nginx" is neither an IP address nor a CIDR`},
		{map[string]string{"LOG_FORMAT": "xml"}, `LOG_FORMAT="xml": use text or json`},
		{map[string]string{"PROXY_URL": "http://127.0.0.1:3128,ftp://user:pw@127.0.0.1:21"}, `PROXY_URL: "ftp://user:xxxxx@127.0.0.1:21"`},
		{map[string]string{"METRICS_ADDR": "9090"}, `METRICS_ADDR="9090": use host:port`},
		{map[string]string{"PROXY_COOLDOWN": "0"}, `PROXY_COOLDOWN=0s: must be a positive number of seconds`},
	}
	for _, c := range cases {
		_, err := config.FromMap(c.env)
		assert.ErrorContains(t, err, c.want)
	}
	cfg, err := config.FromMap(map[string]string{"TRUSTED_PROXIES": " 10.0.0.0/8 , 127.0.0.1 ", "PROXY_URL": "http://a:1, socks5://b:2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/8", "127.0.0.1"}, cfg.TrustedProxies)
	assert.Equal(t, []string{"http://a:1", "socks5://b:2"}, cfg.ProxyURLs())
}
