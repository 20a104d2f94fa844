package services

import (
	"context"
	"net/http"

	"cursor2api/services/state"
	"cursor2api/services/webchat"
)

// Start runs the parts' background work: the model list's refresh until
// ctx ends (the native back door then aborts its parked runs), and the
// MCP servers' sessions until Close, so that the answers still draining
// after ctx keep their tools.
func (gw *Gateway) Start(ctx context.Context) {
	if gw.background != nil {
		go gw.background(ctx)
	}
	gw.StartMCP(context.WithoutCancel(ctx))
}

// Close ends what the parts hold open: the MCP servers' sessions and
// processes, and the native back door's parked runs.
func (gw *Gateway) Close() {
	gw.StopMCP()
	if gw.native != nil {
		gw.native.Close()
	}
}

// Shutdown waits, within one write's bound (state.DefaultWriteTimeout)
// and ctx, for the native back door's key rests being written to the
// state store, so that a rest recorded just before the stop is kept; the
// store may close after it. It aborts the parked runs first.
func (gw *Gateway) Shutdown(ctx context.Context) error {
	if gw.native == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, state.DefaultWriteTimeout)
	defer cancel()
	return gw.native.Shutdown(ctx)
}

// Running is the number of the back door's processes still running (the
// Agent CLI's); 0 on the other back doors.
func (gw *Gateway) Running() int {
	if gw.agent == nil {
		return 0
	}
	return gw.agent.Running()
}

// An Option replaces a part FromConfig would build, for tests and
// benchmarks that run without the challenge script or the network.
type Option func(*options)

type options struct {
	human        string
	webTransport http.RoundTripper
}

// StaticHuman has the web chat send value as x-is-human instead of the
// provider's; /ready and the metrics still show the provider's.
func StaticHuman(value string) Option { return func(o *options) { o.human = value } }

// WebTransport sends the web chat's requests through rt alone (no cookie
// jar, egress pool or upstream metrics): an upstream in memory.
func WebTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.webTransport = rt }
}

// apply puts the options' parts in the web chat's place.
func (o *options) apply(web *webchat.Client) {
	if o.human != "" {
		web.Human = webchat.StaticHuman(o.human)
	}
	if o.webTransport != nil {
		web.HTTP = &http.Client{Transport: o.webTransport}
	}
}
