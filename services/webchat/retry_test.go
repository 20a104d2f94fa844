package webchat

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/cursortest"
	"cursor2api/services/upstream"
)

// countingHuman hands out numbered values and counts invalidations.
type countingHuman struct {
	values      atomic.Int64
	invalidated atomic.Int64
}

func (h *countingHuman) Value(context.Context) (string, error) {
	return "human-" + string(rune('0'+h.values.Add(1))), nil
}
func (h *countingHuman) Invalidate() { h.invalidated.Add(1) }

func retryClient(t *testing.T, up *cursortest.Server, human HumanProvider) (*Client, *bytes.Buffer) {
	var logs bytes.Buffer
	return &Client{
		HTTP: up.Client(), URL: up.URL, UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/140.0.0.0 Safari/537.36",
		IdleTimeout: 2 * time.Second, Human: human, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}, &logs
}

func collectText(c *Client, ctx context.Context) (string, error) {
	var b strings.Builder
	_, err := c.Stream(ctx, upstream.Request{Model: "m/x", RequestID: "req_retry", Messages: hiRequest.Messages}, func(d upstream.Delta) error {
		b.WriteString(d.Text)
		return nil
	})
	return b.String(), err
}

func TestStreamRetries(t *testing.T) {
	ok := cursortest.Text(nil, "fine")
	forbidden := cursortest.Response{Status: 403, Body: `{"error":"Access denied"}`}
	cloudflare := cursortest.Response{Status: 403, Body: `<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head></html>`}
	unavailable := cursortest.Response{Status: 503, Body: "upstream connect error"}
	cases := []struct {
		name        string
		replies     []cursortest.Response
		requests    int
		status      int // 0: success
		code        string
		invalidated int64
	}{
		{"403 then ok: fresh x-is-human", []cursortest.Response{forbidden, ok}, 2, 0, "", 1},
		{"403 twice", []cursortest.Response{forbidden, forbidden}, 2, 502, "upstream_forbidden", 2},
		{"cloudflare page twice", []cursortest.Response{cloudflare}, 2, 502, "upstream_forbidden", 2},
		{"503 then ok", []cursortest.Response{unavailable, ok}, 2, 0, "", 0},
		{"503 twice", []cursortest.Response{unavailable}, 2, 502, "upstream_error", 0},
		{"429 is not retried", []cursortest.Response{{Status: 429, Body: "slow down"}}, 1, 429, "upstream_rate_limited", 0},
		{"checkpoint page on 403 is a 429", []cursortest.Response{{Status: 403, Body: "<html><title>Vercel Security Checkpoint</title></html>"}}, 1, 429, "upstream_rate_limited", 0},
		{"invalid model is not retried", []cursortest.Response{{Status: 400, Body: `{"error":"Invalid model. Allowed models: google/gemini-3-flash"}`}}, 1, 400, "model_not_supported", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := cursortest.NewServer(t, cursortest.Sequence(tc.replies...))
			human := &countingHuman{}
			c, logs := retryClient(t, up, human)
			text, err := collectText(c, context.Background())
			reqs := up.Requests()
			require.Len(t, reqs, tc.requests)
			assert.Equal(t, tc.invalidated, human.invalidated.Load())
			if tc.requests == 2 {
				assert.NotEqual(t, reqs[0].Header.Get("x-is-human"), reqs[1].Header.Get("x-is-human"), "each attempt asks for a value")
				assert.Contains(t, logs.String(), "retrying once")
				assert.Contains(t, logs.String(), "request_id=req_retry")
			}
			assert.Contains(t, logs.String(), "upstream_status=")
			if tc.status == 0 {
				require.NoError(t, err)
				assert.Equal(t, "fine", text)
				return
			}
			var apiErr *models.Error
			require.True(t, errors.As(err, &apiErr), "%v", err)
			assert.Equal(t, tc.status, apiErr.Status)
			assert.Equal(t, tc.code, apiErr.Code)
			assert.NotContains(t, apiErr.Message, "<")
			if tc.status == http.StatusTooManyRequests {
				assert.Equal(t, defaultRetryAfter, apiErr.RetryAfter)
			}
		})
	}
}

func TestNoRetryAfterOutput(t *testing.T) {
	// The connection drops after some text: a retry would repeat it.
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Events: []string{
		`{"type":"text-delta","id":"t","delta":"half"}`,
	}}))
	c, _ := retryClient(t, up, StaticHuman(""))
	text, err := collectText(c, context.Background())
	assert.Equal(t, "half", text)
	var apiErr *models.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "upstream_incomplete", apiErr.Code)
	assert.Len(t, up.Requests(), 1)
}

func TestMaxDuration(t *testing.T) {
	// A reply that keeps flowing is cut only by MAX_DURATION, not TIMEOUT.
	flowing := make([]string, 40)
	for i := range flowing {
		flowing[i] = "x"
	}
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{Events: cursortest.Frames(nil, nil, flowing), Delay: 25 * time.Millisecond}))
	c, _ := retryClient(t, up, nil)
	c.IdleTimeout = 200 * time.Millisecond
	text, err := collectText(c, context.Background())
	require.NoError(t, err, "25 ms gaps never trip a 200 ms idle timeout, over a second in all")
	assert.Len(t, text, 40)

	c.MaxDuration = 300 * time.Millisecond
	_, err = collectText(c, context.Background())
	var apiErr *models.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusGatewayTimeout, apiErr.Status)
	assert.Equal(t, "max_duration", apiErr.Code)
}
