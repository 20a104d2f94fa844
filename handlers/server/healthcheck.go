package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Healthcheck asks the gateway listening on host:port for /health and
// fails unless it answers 200 within a few seconds. The Docker image runs
// it as its HEALTHCHECK (`cursor2api healthcheck`), since a scratch image
// has no shell or curl. A
// wildcard or empty host means the gateway answers on loopback.
func Healthcheck(host, port string) error {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	if port == "" {
		port = "8002"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
