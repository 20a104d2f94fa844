package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/services/state"
	"cursor2api/services/usage"
)

// benchLedger is a 90-day ledger of 100 keys × 10 models: every hour each
// key uses two of the models (a different pair each hour), so every key
// and model pair appears; 200 groups × 5 counters an hour.
func benchLedger(b *testing.B) *usage.Ledger {
	b.Helper()
	l := usage.New(state.NewQueue(state.NewMemory(nil), 0, nil), 0, nil)
	now := time.Now().Truncate(time.Hour)
	doors := []string{"openai", "anthropic", "responses", "gemini"}
	for h := range 90 * 24 {
		at := now.Add(-time.Duration(h) * time.Hour)
		for k := range 100 {
			for m := range 2 {
				model := (k + h + 5*m) % 10
				l.Add(usage.Record{Time: at, KeyID: fmt.Sprintf("key_%08x", k), Door: doors[(k+m)%4], Model: fmt.Sprintf("model-%d", model),
					Usage: usage.Counts{Requests: 3, InputTokens: 1000, OutputTokens: 200, CachedTokens: 100, Errors: int64(h % 2)}})
			}
		}
		l.Flush(b.Context())
	}
	return l
}

// benchKind is what a benchmark's page finds.
type benchKind int

const (
	warm     benchKind = iota // the settled hours cached by an earlier page
	afterRun                  // a replica's first page, after Run has read ahead
	coldRead                  // a replica's first page with nothing read ahead
)

func benchPage(b *testing.B, kind benchKind) {
	gin.SetMode(gin.TestMode)
	l := benchLedger(b)
	page := func() (*gin.Engine, *Console) {
		cs := New(Options{AdminKey: admin, Usage: l, Errors: &Errors{}})
		r := gin.New()
		cs.Routes(r.Group(Prefix))
		return r, cs
	}
	r, _ := page()
	get := func(h http.Handler) {
		req := httptest.NewRequest(http.MethodGet, "/console", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || w.Body.Len() < 10000 {
			b.Fatalf("status %d, %d bytes", w.Code, w.Body.Len())
		}
	}
	get(r) // fills the cache of settled hours
	b.ReportAllocs()
	var ran time.Duration
	b.ResetTimer()
	for range b.N {
		switch kind {
		case warm:
			get(r)
		case afterRun:
			b.StopTimer()
			h, cs := page()
			start := time.Now()
			cs.Run(b.Context())
			ran += time.Since(start)
			b.StartTimer()
			get(h)
		case coldRead:
			h, _ := page()
			get(h)
		}
	}
	if kind == afterRun {
		b.ReportMetric(float64(ran.Milliseconds())/float64(b.N), "run-ms/op")
	}
}

// BenchmarkPage: the page with the settled hours cached, as every load
// but a replica's first.
func BenchmarkPage(b *testing.B) { benchPage(b, warm) }

// BenchmarkPageFirst: a replica's first load once Run has read the
// settled hours ahead of it (Run's own time, in the background, is
// run-ms/op).
func BenchmarkPageFirst(b *testing.B) { benchPage(b, afterRun) }

// BenchmarkPageCold: a replica's first load with nothing read ahead (a
// page during Run's first moments): 30 days of hours read from the ledger.
func BenchmarkPageCold(b *testing.B) { benchPage(b, coldRead) }
