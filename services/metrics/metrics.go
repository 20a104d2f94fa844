// Package metrics keeps the gateway's Prometheus metrics on a registry of
// its own (no global state): requests, upstream attempts, the core's tool
// calls and retries (it implements chat.Observer), x-is-human and proxies.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"cursor2api/models"
	"cursor2api/services/readiness"
	"cursor2api/services/upstream"
)

const namespace = "cursor2api"

// latencyBuckets suit an upstream that takes from a fraction of a second
// to a minute to start answering.
var latencyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

// Metrics is the gateway's set of metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec
	clientReqs    *prometheus.CounterVec
	clientTokens  *prometheus.CounterVec
	clientLimited *prometheus.CounterVec
	firstToken    *prometheus.HistogramVec
	activeStreams prometheus.Gauge

	upstreamRequests *prometheus.CounterVec
	upstreamLatency  *prometheus.HistogramVec
	upstreamRetries  prometheus.Counter

	toolCalls *prometheus.CounterVec
	heldTurns prometheus.Counter
	retries   *prometheus.CounterVec
	badCalls  *prometheus.CounterVec

	humanFailures prometheus.Counter
	egressErrors  *prometheus.CounterVec

	mcp mcpMetrics
}

// New returns the metrics on a fresh registry that also holds the Go
// runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "requests_total",
		Help: "Requests answered, by front door, model (\"other\" for names not in the catalog) and HTTP status (499: client gone)."},
		[]string{"door", "model", "status"})
	// Labelled by the configured keys only (a request with an unknown key
	// is refused before it is counted here), so bounded by the keys file.
	m.clientReqs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "client_key_requests_total",
		Help: "Requests answered, by client key: its name in API_KEYS_FILE (\"\" for API_KEY's) and fingerprint."},
		[]string{"key_name", "key_id"})
	m.clientTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "client_key_tokens_total",
		Help: "Input plus output tokens of the answers, by client key."},
		[]string{"key_name", "key_id"})
	m.clientLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "client_key_limited_total",
		Help: "Requests refused by a client key's limit (rpm, tokens_per_day, concurrent)."},
		[]string{"key_name", "key_id", "limit"})
	m.firstToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "time_to_first_token_seconds",
		Help: "Time from the start of a streamed answer to its first text, reasoning or tool call.", Buckets: latencyBuckets},
		[]string{"door", "model"})
	m.activeStreams = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "active_streams",
		Help: "Streamed answers in progress."})
	m.upstreamRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_requests_total",
		Help: "HTTP attempts at the upstream chat, by status code (\"error\": no response)."}, []string{"status"})
	m.upstreamLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "upstream_latency_seconds",
		Help: "Time from sending an upstream attempt to its response headers, by status code.", Buckets: latencyBuckets},
		[]string{"status"})
	m.upstreamRetries = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_retries_total",
		Help: "Upstream attempts that repeated a failed attempt of the same turn."})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "tool_calls_total",
		Help: "Tool calls sent to clients."}, nil)
	m.heldTurns = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "held_turns_total",
		Help: "Turns held back until their outcome was known (strict mode or a whole answer)."})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "strict_retries_total",
		Help: "Turns asked a second time, by reason (bad_call, missing_call, refusal, empty)."}, []string{"reason"})
	m.badCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "bad_tool_calls_total",
		Help: "Tool calls the model wrote that could not be sent, by reason."}, []string{"reason"})
	m.humanFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "x_is_human_failures_total",
		Help: "Failures to fetch the x-is-human challenge script or to get a value."})
	m.egressErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "egress_proxy_failures_total",
		Help: "Failures (403, 429, connection errors) that put an egress proxy in cooldown, by proxy."}, []string{"proxy"})
	m.reg.MustRegister(m.clientReqs, m.clientTokens, m.clientLimited)
	m.reg.MustRegister(m.requests, m.firstToken, m.activeStreams, m.upstreamRequests, m.upstreamLatency, m.upstreamRetries,
		m.toolCalls, m.heldTurns, m.retries, m.badCalls, m.humanFailures, m.egressErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.mcp = newMCPMetrics(m.reg)
	return m
}

// Registry is the registry the metrics are on, for more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request counts one answered request.
func (m *Metrics) Request(door, model string, status int) {
	m.requests.WithLabelValues(door, model, strconv.Itoa(status)).Inc()
}

// ClientRequest counts one answered request of a client key and its tokens.
func (m *Metrics) ClientRequest(name, id string, tokens int64) {
	m.clientReqs.WithLabelValues(name, id).Inc()
	if tokens > 0 {
		m.clientTokens.WithLabelValues(name, id).Add(float64(tokens))
	}
}

// ClientLimited counts a request a client key's limit refused.
func (m *Metrics) ClientLimited(name, id, limit string) {
	m.clientLimited.WithLabelValues(name, id, limit).Inc()
}

// StreamStarted counts a stream in progress until done is called.
func (m *Metrics) StreamStarted() (done func()) {
	m.activeStreams.Inc()
	return m.activeStreams.Dec
}

// FirstToken records the time to a stream's first token.
func (m *Metrics) FirstToken(door, model string, d time.Duration) {
	m.firstToken.WithLabelValues(door, model).Observe(d.Seconds())
}

// ToolCall, HeldTurn, Retry and BadCall implement chat.Observer.
func (m *Metrics) ToolCalls(n int)       { m.toolCalls.WithLabelValues().Add(float64(n)) }
func (m *Metrics) HeldTurn()             { m.heldTurns.Inc() }
func (m *Metrics) Retry(reason string)   { m.retries.WithLabelValues(reason).Inc() }
func (m *Metrics) BadCall(reason string) { m.badCalls.WithLabelValues(reason).Inc() }

// HumanFailure counts an x-is-human failure.
func (m *Metrics) HumanFailure() { m.humanFailures.Inc() }

// Human publishes the count of challenge script evaluations and whether
// the provider is failing (using its fallback after a failed refresh), as
// the reporter /ready reads gives them.
func (m *Metrics) Human(report func() readiness.Human) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "x_is_human_evaluations_total",
			Help: "Evaluations of the x-is-human challenge script started."}, func() float64 { return float64(report().Evaluations) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "x_is_human_failing",
			Help: "1 while x-is-human uses its fallback after a failed refresh."}, func() float64 { return boolValue(report().Failing) }),
	)
}

// StateStats are what the metrics read of the state store's writes.
type StateStats struct {
	Failed, Dropped uint64
	Queued          int
	Degraded        bool
}

// State publishes the state store's failed and dropped writes, the
// writes waiting for a retry, and whether the store is degraded, as
// stats reports them.
func (m *Metrics) State(engine string, stats func() StateStats) {
	labels := prometheus.Labels{"engine": engine}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "state_write_failures_total", ConstLabels: labels,
			Help: "Writes to the state store (STATE_URL) that failed; each is retried from a bounded queue."}, func() float64 { return float64(stats().Failed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "state_writes_dropped_total", ConstLabels: labels,
			Help: "Failed writes to the state store given up because the retry queue was full."}, func() float64 { return float64(stats().Dropped) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "state_writes_queued", ConstLabels: labels,
			Help: "Failed writes to the state store waiting for a retry."}, func() float64 { return float64(stats().Queued) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "state_degraded", ConstLabels: labels,
			Help: "1 while the state store fails."}, func() float64 { return boolValue(stats().Degraded) }),
	)
}

// Egress publishes whether each egress proxy of labels is in use (1) or
// cooling down (0), as the reporter /ready reads gives them.
func (m *Metrics) Egress(labels []string, report func() []readiness.Proxy) {
	for _, label := range labels {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "egress_proxy_available",
			Help: "1 when the egress proxy may take requests, 0 while it cools down after a failure.", ConstLabels: prometheus.Labels{"proxy": label}},
			func() float64 {
				for _, p := range report() {
					if p.Proxy == label {
						return boolValue(p.Available)
					}
				}
				return 0
			}))
	}
}

// EgressFailure counts a failure that put the proxy named label in cooldown.
func (m *Metrics) EgressFailure(label string) { m.egressErrors.WithLabelValues(label).Inc() }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// attemptsKey marks the context of an upstream turn with its attempt count.
type attemptsKey struct{}

// Upstream counts the HTTP attempts of each turn of up, so that Transport
// can tell a retry from a first attempt.
func (m *Metrics) Upstream(up upstream.Upstream) upstream.Upstream {
	return upstream.Wrap(up, func(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, next upstream.StreamFunc) (*models.Usage, error) {
		return next(context.WithValue(ctx, attemptsKey{}, new(atomic.Int32)), req, fn)
	})
}

// Transport records the status and latency of every attempt of an
// upstream turn (requests made through Upstream) that goes through next,
// and counts the repeated ones as retries. Other requests (the challenge
// script, the model probe) pass unrecorded.
func (m *Metrics) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		attempts, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32)
		if !ok {
			return next.RoundTrip(req)
		}
		if attempts.Add(1) > 1 {
			m.upstreamRetries.Inc()
		}
		start := time.Now()
		resp, err := next.RoundTrip(req)
		status := "error"
		if err == nil {
			status = strconv.Itoa(resp.StatusCode)
		}
		m.upstreamRequests.WithLabelValues(status).Inc()
		m.upstreamLatency.WithLabelValues(status).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
