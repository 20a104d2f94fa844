package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// nginxConf is nginx as a streaming reverse proxy is usually set up:
// HTTP/1.1 to a keep-alive upstream pool, no buffering either way, no
// access log; worker processes as many as the cores, as the gateway's
// GOMAXPROCS.
const nginxConf = `daemon off;
worker_processes auto;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
{user}
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path {dir}/body;
	proxy_temp_path {dir}/proxy;
	fastcgi_temp_path {dir}/fastcgi;
	uwsgi_temp_path {dir}/uwsgi;
	scgi_temp_path {dir}/scgi;
	upstream fake {
		server {upstream};
		keepalive 1024;
	}
	server {
		listen 127.0.0.1:{port};
		location / {
			proxy_pass http://fake;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
			proxy_request_buffering off;
		}
	}
}
`

// startNginx starts nginx in front of upstream when it is installed (nil
// when it is not), and returns its base URL.
func startNginx(ctx context.Context, dir, upstream string) (*exec.Cmd, string, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			return nil, "", nil
		}
		bin = "/usr/sbin/nginx"
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	ndir := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		return nil, "", err
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // its workers would otherwise be nobody, locked out of ndir
	}
	conf := strings.NewReplacer("{dir}", ndir, "{user}", user, "{upstream}", strings.TrimPrefix(upstream, "http://"),
		"{port}", strconv.Itoa(port)).Replace(nginxConf)
	path := filepath.Join(ndir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, bin, "-p", ndir, "-c", path, "-e", filepath.Join(ndir, "error.log"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	// Any answer (the fake has no GET /) means nginx is up.
	if err := waitUp(base + "/conns"); err != nil {
		stop(cmd)
		return nil, "", fmt.Errorf("%w (its log: %s)", err, filepath.Join(ndir, "error.log"))
	}
	return cmd, base, nil
}
