package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cursor2api/services/readiness"
)

// KeyStates are the states a key's state gauge has a series for.
var KeyStates = []string{"ok", "bad", "cooling", "probing"}

var (
	keyStateDesc = prometheus.NewDesc(namespace+"_cursor_key_state",
		"1 for the state each Cursor API key (by fingerprint) is in: ok, bad (refused), cooling (resting after a quota or rate limit), probing (its next conversation tries it).",
		[]string{"key", "state"}, nil)
	keyRequestsDesc = prometheus.NewDesc(namespace+"_cursor_key_requests_total",
		"Turns handed to each Cursor API key (by fingerprint).", []string{"key"}, nil)
	keyCooldownsDesc = prometheus.NewDesc(namespace+"_cursor_key_cooldowns_total",
		"Rests this replica put each Cursor API key (by fingerprint) in after a quota or rate limit; a rest learned from another replica (through the state store) counts on that one.", []string{"key"}, nil)
	keyCoolingDesc = prometheus.NewDesc(namespace+"_cursor_key_cooling_seconds",
		"How long each Cursor API key (by fingerprint) still rests; 0 when it is not cooling.", []string{"key"}, nil)
)

// Keys publishes the native back door's keys, by fingerprint, as the
// reporter /ready reads gives them: one call per scrape, so the series
// agree with each other.
func (m *Metrics) Keys(report func() []readiness.Key) {
	m.reg.MustRegister(keyCollector(report))
}

type keyCollector func() []readiness.Key

func (c keyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- keyStateDesc
	ch <- keyRequestsDesc
	ch <- keyCooldownsDesc
	ch <- keyCoolingDesc
}

func (c keyCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, k := range c() {
		for _, s := range KeyStates {
			ch <- prometheus.MustNewConstMetric(keyStateDesc, prometheus.GaugeValue, boolValue(k.State == s), k.Key, s)
		}
		ch <- prometheus.MustNewConstMetric(keyRequestsDesc, prometheus.CounterValue, float64(k.Requests), k.Key)
		ch <- prometheus.MustNewConstMetric(keyCooldownsDesc, prometheus.CounterValue, float64(k.Cooldowns), k.Key)
		cooling := 0.0
		if k.State == "cooling" && k.CoolingUntil != nil && k.CoolingUntil.After(now) {
			cooling = k.CoolingUntil.Sub(now).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(keyCoolingDesc, prometheus.GaugeValue, cooling, k.Key)
	}
}
