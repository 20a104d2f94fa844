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

func benchPage(b *testing.B, warm bool) {
	gin.SetMode(gin.TestMode)
	l := benchLedger(b)
	page := func() *gin.Engine {
		cs := New(Options{AdminKey: admin, Usage: l, Errors: &Errors{}})
		r := gin.New()
		cs.Routes(r.Group(Prefix))
		return r
	}
	r := page()
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
	for b.Loop() {
		if warm {
			get(r)
		} else {
			get(page())
		}
	}
}

// BenchmarkPage: the page with the settled hours cached, as every load
// but a replica's first.
func BenchmarkPage(b *testing.B) { benchPage(b, true) }

// BenchmarkPageCold: a replica's first load, reading 30 days of hours.
func BenchmarkPageCold(b *testing.B) { benchPage(b, false) }
