package readiness

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// fakeUpstream answers each turn with the next error of errs (nil: success).
type fakeUpstream struct{ errs []error }

func (f *fakeUpstream) Stream(ctx context.Context, _ upstream.Request, _ func(upstream.Delta) error) (*models.Usage, error) {
	err := f.errs[0]
	f.errs = f.errs[1:]
	return &models.Usage{}, err
}

func TestReport(t *testing.T) {
	boom := &models.Error{Status: 502, Message: "upstream status 500"}
	cases := []struct {
		name   string
		turns  []error
		after  time.Duration // since the last turn
		egress []Proxy
		ready  bool
		reason string
	}{
		{name: "fresh", ready: true},
		{name: "two failures", turns: []error{boom, boom}, ready: true},
		{name: "three failures", turns: []error{boom, boom, boom}, ready: false, reason: "the last 3 upstream turns failed"},
		{name: "three failures, long ago", turns: []error{boom, boom, boom}, after: FailureWindow, ready: true},
		{name: "a success resets", turns: []error{boom, boom, boom, nil}, ready: true},
		{name: "client gone is no failure", turns: []error{boom, boom, context.Canceled}, ready: true},
		{name: "the request's own fault is no failure", turns: []error{boom, boom, &models.Error{Status: 400, Message: "model not allowed"}}, ready: true},
		{name: "blocked", turns: []error{boom, boom, &models.Error{Status: 403, Message: "forbidden"}}, ready: false, reason: "the last 3 upstream turns failed"},
		{name: "connection error", turns: []error{boom, boom, errors.New("dial tcp: connection refused")}, ready: false, reason: "connection refused"},
		{name: "one proxy left", egress: []Proxy{{Proxy: "http://a:1"}, {Proxy: "http://b:1", Available: true, Active: true}}, ready: true},
		{name: "every proxy cooling", egress: []Proxy{{Proxy: "http://a:1"}, {Proxy: "http://b:1"}}, ready: false, reason: "all 2 egress proxies are cooling down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			tr := &Tracker{Now: func() time.Time { return now }, Human: func() Human { return Human{Mode: "script", Evaluations: 4} }}
			if c.egress != nil {
				tr.Egress = func() []Proxy { return c.egress }
			}
			up := tr.Upstream(&fakeUpstream{errs: c.turns})
			for _, err := range c.turns {
				_, got := up.Stream(context.Background(), upstream.Request{}, nil)
				require.Equal(t, err, got, "the decorator passes the outcome on")
			}
			now = now.Add(c.after)
			r := tr.Report(context.Background())
			assert.Equal(t, c.ready, r.Ready, r.Reasons)
			if c.reason != "" {
				require.NotEmpty(t, r.Reasons)
				assert.Contains(t, r.Reasons[0], c.reason)
			} else {
				assert.Empty(t, r.Reasons)
			}
			assert.Equal(t, "valid", r.Config)
			assert.Equal(t, &Human{Mode: "script", Evaluations: 4}, r.XIsHuman)
			assert.Equal(t, c.egress, r.Egress)
		})
	}
}

func TestReportAges(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tr := &Tracker{Now: func() time.Time { return now }}
	tr.Succeeded()
	now = now.Add(90 * time.Second)
	tr.Failed(errors.New("dial tcp: connection refused"))
	now = now.Add(5 * time.Second)
	u := tr.Report(context.Background()).Upstream
	assert.Equal(t, "1m35s", u.LastSuccessAge)
	assert.Equal(t, "5s", u.LastFailureAge)
	assert.Equal(t, "dial tcp: connection refused", u.LastError)
	assert.Equal(t, 1, u.FailuresInRow)
}

func TestReportModels(t *testing.T) {
	cases := []struct {
		name      string
		models    Models
		wantReady bool
	}{
		{"learned", Models{Source: "upstream", Served: []string{"gemini-3-flash", "gemini-3-flash-thinking"}, Upstream: []string{"google/gemini-3-flash"}}, true},
		{"fallback with an error", Models{Source: "fallback", Served: []string{"gemini-3-flash"}, LastError: "status 429"}, true},
		{"nothing served", Models{Source: "upstream"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracker{Models: func() Models { return tc.models }}
			r := tr.Report(context.Background())
			require.NotNil(t, r.Models)
			assert.Equal(t, tc.models, *r.Models)
			assert.Equal(t, tc.wantReady, r.Ready, r.Reasons)
		})
	}
	assert.Nil(t, (&Tracker{}).Report(context.Background()).Models, "no models part without a source")
}

// The keys are read after the back door's check, which may have just
// found a key refused.
func TestReportKeys(t *testing.T) {
	state := "ok"
	tr := &Tracker{
		Check: func(context.Context) error { state = "bad"; return nil },
		Keys:  func() []Key { return []Key{{Key: "key-0000abcd", State: state, Requests: 3}} },
	}
	r := tr.Report(context.Background())
	assert.True(t, r.Ready)
	assert.Equal(t, []Key{{Key: "key-0000abcd", State: "bad", Requests: 3}}, r.Keys)

	assert.Nil(t, (&Tracker{}).Report(context.Background()).Keys, "no keys section without a native back door")
}

// TestReportState: a degraded state store shows in the report and leaves
// the gateway ready: answers never wait for it.
func TestReportState(t *testing.T) {
	for _, st := range []State{
		{Engine: "redis", Status: "ok"},
		{Engine: "redis", Status: "degraded", Queued: 3, FailedWrites: 7, LastError: "connection refused"},
	} {
		tr := &Tracker{State: func() State { return st }}
		r := tr.Report(context.Background())
		require.NotNil(t, r.State)
		assert.Equal(t, st, *r.State)
		assert.True(t, r.Ready, r.Reasons)
	}
	assert.Nil(t, (&Tracker{}).Report(context.Background()).State)
}
