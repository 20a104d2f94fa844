package handlers

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"cursor2api/config"
	"cursor2api/services"
	"cursor2api/services/cursortest"
)

func init() { gin.SetMode(gin.TestMode) }

// gateway is the whole handler stack, wired as main.go wires it, in front
// of a fake upstream.
type gateway struct {
	*httptest.Server
	upstream *cursortest.Server
}

// newGateway starts the gateway with env on top of CURSOR_API_URL pointing
// at a fake upstream answering with reply.
func newGateway(t testing.TB, env map[string]string, reply func(int, cursortest.Request) cursortest.Response) *gateway {
	t.Helper()
	up := cursortest.NewServer(t, reply)
	vars := map[string]string{"CURSOR_API_URL": up.URL, "MODELS": "claude-sonnet-4.6,gemini-3-flash"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromMap(vars)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	client := &services.CursorClient{
		HTTP: up.Client(), URL: cfg.CursorAPIURL, UserAgent: cfg.UserAgent,
		IdleTimeout: cfg.Timeout.Duration(), Human: services.StaticHuman("test-human"), Logger: logger,
	}
	chat := services.NewChatService(services.ChatSettings{
		Catalog: cfg.Catalog, MaxInputLength: cfg.MaxInputLength, MaxToolCallBytes: cfg.MaxToolCallBytes,
		KiloToolStrict: cfg.KiloToolStrict, ToolLoopMaxRepeat: cfg.ToolLoopMax, ExposeThinking: cfg.ExposeThinking,
	}, client, logger)
	srv := httptest.NewServer(New(Options{
		Chat: chat, Catalog: cfg.Catalog, APIKeys: cfg.APIKeys, MaxBodyBytes: cfg.MaxBodyBytes,
		PingInterval: cfg.PingInterval.Duration(), Version: "test", Logger: logger,
	}))
	t.Cleanup(srv.Close)
	return &gateway{Server: srv, upstream: up}
}

var triggerRE = regexp.MustCompile(`<<CALL_[A-Za-z0-9]{8}>>`)

// replyWith answers with the given text deltas, with TRIGGER replaced by the
// trigger the gateway put in its system prompt, as a compliant model would.
func replyWith(deltas ...string) func(int, cursortest.Request) cursortest.Response {
	return replySeq([][]string{deltas})
}

// replySeq answers the n-th request with the n-th list of deltas.
func replySeq(turns [][]string) func(int, cursortest.Request) cursortest.Response {
	return paced(turns, time.Millisecond)
}

// paced is replySeq with delay before each frame.
func paced(turns [][]string, delay time.Duration) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		trigger := ""
		if len(req.Messages) > 0 {
			trigger = triggerRE.FindString(req.Messages[0].Text)
		}
		deltas := turns[min(n, len(turns)-1)]
		out := make([]string, len(deltas))
		for i, d := range deltas {
			out[i] = strings.ReplaceAll(d, "TRIGGER", trigger)
		}
		return cursortest.Response{Events: cursortest.Frames(&cursortest.Usage{Input: 120, Output: 30}, nil, out), Delay: delay}
	}
}
