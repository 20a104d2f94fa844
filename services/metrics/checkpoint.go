package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cursor2api/services/readiness"
)

// Checkpoint publishes the Vercel checkpoint's state: a gauge per egress
// (each of egresses) that is 1 while the reporter /ready reads says it
// holds a valid cookie, and the returned function, to be told each
// solve's outcome, counts solves by outcome and times them.
func (m *Metrics) Checkpoint(egresses []string, report func() readiness.Checkpoint) (onSolve func(egress, outcome string, took time.Duration)) {
	solves := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "checkpoint_solves_total",
		Help: "Passes of Vercel's security checkpoint tried, by outcome (ok, refused, no_checkpoint, error)."}, []string{"outcome"})
	took := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "checkpoint_solve_seconds",
		Help: "Time to pass Vercel's security checkpoint (fetching a challenge, the proof of work, the cookie).", Buckets: latencyBuckets})
	m.reg.MustRegister(solves, took)
	for _, label := range egresses {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "checkpoint_cookie_valid",
			Help: "1 while the egress holds a valid Vercel checkpoint cookie.", ConstLabels: prometheus.Labels{"egress": label}},
			func() float64 {
				for _, e := range report().Egress {
					if e.Egress == label {
						return boolValue(e.HasCookie)
					}
				}
				return 0
			}))
	}
	return func(_, outcome string, d time.Duration) {
		solves.WithLabelValues(outcome).Inc()
		took.Observe(d.Seconds())
	}
}
