package webchat

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
	"cursor2api/services/cursortest"
)

func TestParseAllowedModels(t *testing.T) {
	cases := []struct {
		msg  string
		want []string
	}{
		{"Invalid model. Allowed models: google/gemini-3-flash", []string{"google/gemini-3-flash"}},
		{"Invalid model. Allowed models: anthropic/claude-sonnet-4.6, google/gemini-3-flash.", []string{"anthropic/claude-sonnet-4.6", "google/gemini-3-flash"}},
		{`Invalid model. Allowed models: ["a/b","c/d"]`, []string{"a/b", "c/d"}},
	}
	for _, tc := range cases {
		got, err := ParseAllowedModels(tc.msg)
		require.NoError(t, err, tc.msg)
		assert.Equal(t, tc.want, got, tc.msg)
	}
	for _, bad := range []string{"Access denied", "Allowed models: none"} {
		_, err := ParseAllowedModels(bad)
		assert.Error(t, err, bad)
	}
}

func TestWatchModelsWarnsAboutRejectedMappings(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Response{
		Status: http.StatusBadRequest, Body: `{"error":"Invalid model. Allowed models: google/gemini-3-flash"}`,
	}))
	logs := &cursortest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	client := &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: time.Second, Logger: logger}
	catalog, err := models.NewCatalog([]string{"claude-sonnet-4.6", "gemini-3-flash"}, nil)
	require.NoError(t, err)

	allowed, err := client.AllowedModels(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"google/gemini-3-flash"}, allowed)
	assert.Equal(t, probeModel, up.Requests()[0].Model)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { WatchModels(ctx, client, catalog, time.Hour, logger); close(done) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "model check:") }, 5*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchModels did not return after its context ended")
	}
	out := logs.String()
	assert.Contains(t, out, "fix MODEL_MAP")
	assert.Contains(t, out, "anthropic/claude-sonnet-4.6 (claude-sonnet-4.6, claude-sonnet-4.6-thinking)")
	assert.NotContains(t, out, "google/gemini-3-flash (gemini-3-flash")
}

func TestAllowedModelsWhenTheUpstreamAcceptsAnything(t *testing.T) {
	up := cursortest.NewServer(t, cursortest.Always(cursortest.Text(nil, "hello")))
	client := &Client{HTTP: up.Client(), URL: up.URL, IdleTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)}
	_, err := client.AllowedModels(context.Background())
	assert.ErrorContains(t, err, "does not restrict models")
}
