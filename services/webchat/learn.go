package webchat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"cursor2api/models"
	"cursor2api/services/upstream"
	"cursor2api/utils"
)

// FallbackModel is the upstream id published under MODELS=auto until the
// upstream has told which ids it accepts: the one it accepted when this
// was written (April 2026). It is only a start; the upstream's answer
// replaces it.
const FallbackModel = "google/gemini-3-flash"

// PublicName is the name an upstream id is published under: the id
// without its vendor ("google/gemini-3-flash" is "gemini-3-flash"), the
// names the built-in MODEL_MAP defaults and clients already use.
func PublicName(id string) string {
	if _, name, ok := strings.Cut(id, "/"); ok && name != "" {
		return name
	}
	return id
}

// CatalogOf is the catalog published for the upstream ids allowed: each
// under its PublicName with its -thinking twin. When two vendors' ids
// share a name, the second keeps its whole id as its name.
func CatalogOf(ids []string) (*models.Catalog, error) {
	byName := make(map[string]string, len(ids))
	var names []string
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		name := PublicName(id)
		if prev, taken := byName[name]; taken && prev != id {
			name = id
		}
		if _, taken := byName[name]; taken {
			continue
		}
		byName[name] = id
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, errors.New("the upstream allows no model")
	}
	return models.NewCatalog(names, byName)
}

// ModelsState is what the gateway knows of the upstream's models, for
// /ready and the logs.
type ModelsState struct {
	// Source is "upstream" once the upstream told its list, "fallback"
	// before that.
	Source string
	// Allowed are the upstream ids published.
	Allowed []string
	// LearnedAt is when the upstream last told its list (zero: never).
	LearnedAt time.Time
	// LastError is why the last check failed ("" when it did not).
	LastError string
}

// LearnedModels keeps a live catalog equal to what the upstream allows
// (MODELS=auto): it asks at start, every Interval, sooner (Retry) after a
// failed check, and at once when a request finds the list changed
// (Guard).
type LearnedModels struct {
	Client  *Client
	Catalog *models.Catalog
	// Interval is the pause between successful checks.
	Interval time.Duration
	// Retry is the pause after a failed check.
	Retry time.Duration
	// Timeout bounds one check.
	Timeout time.Duration
	Logger  *slog.Logger

	mu    sync.Mutex
	state ModelsState
}

// NewLearnedModels publishes FallbackModel in a fresh catalog until the
// upstream's list is learned.
func NewLearnedModels(c *Client, interval, retry, timeout time.Duration, logger *slog.Logger) (*LearnedModels, error) {
	catalog, err := CatalogOf([]string{FallbackModel})
	if err != nil {
		return nil, err
	}
	return &LearnedModels{
		Client: c, Catalog: catalog, Interval: interval, Retry: retry, Timeout: timeout, Logger: logger,
		state: ModelsState{Source: "fallback", Allowed: []string{FallbackModel}},
	}, nil
}

// State reports what is published and where it came from.
func (l *LearnedModels) State() ModelsState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.state
	s.Allowed = append([]string(nil), s.Allowed...)
	return s
}

// Run checks at once, then every Interval (Retry after a failure), until
// ctx ends.
func (l *LearnedModels) Run(ctx context.Context) {
	for {
		wait := l.Interval
		switch err := l.Learn(ctx); {
		case err == nil:
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrUnrestricted):
			// Any id works: what is published works too. Asking again
			// soon would only cost another real chat.
			l.Logger.Info("models: the upstream accepts any model id; keeping the published list", "published", strings.Join(l.Catalog.Names(), ", "))
		default:
			wait = l.Retry
			l.Logger.Warn("models: could not learn the upstream's models; keeping the published list and retrying soon",
				"error", err, "published", strings.Join(l.Catalog.Names(), ", "), "retry_in", wait,
				"hint", "run `cursor2api doctor` to see which step fails, or set MODELS to publish fixed models")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Learn asks the upstream for its list once and publishes it.
func (l *LearnedModels) Learn(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	allowed, err := l.Client.AllowedModels(ctx)
	if err != nil {
		l.mu.Lock()
		l.state.LastError = utils.Clip(err.Error(), 300)
		l.mu.Unlock()
		return err
	}
	return l.Learned(allowed)
}

// Learned publishes the upstream ids allowed, as the upstream just told.
func (l *LearnedModels) Learned(allowed []string) error {
	next, err := CatalogOf(allowed)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := strings.Join(l.state.Allowed, ",") != strings.Join(allowed, ",") || l.state.Source != "upstream"
	l.Catalog.Replace(next)
	l.state = ModelsState{Source: "upstream", Allowed: append([]string(nil), allowed...), LearnedAt: time.Now()}
	if changed {
		l.Logger.Info("models: publishing what the upstream accepts", "models", strings.Join(l.Catalog.Names(), ", "),
			"upstream", strings.Join(allowed, ", "))
	}
	return nil
}

// Guard wraps the back door so that an upstream refusing a published model
// refreshes the catalog at once and answers 400 with what is served now. It
// does not retry on another model: the client chose this one, and a family
// name reaches the new list through MODEL_ALIASES next time.
func (l *LearnedModels) Guard(up upstream.Upstream) upstream.Upstream {
	return upstream.Wrap(up, func(ctx context.Context, req upstream.Request, fn func(upstream.Delta) error, next upstream.StreamFunc) (*models.Usage, error) {
		usage, err := next(ctx, req, fn)
		var e *models.Error
		var cause *UpstreamStatusError
		if err == nil || !errors.As(err, &e) || e.Code != codeModelRefused || !errors.As(err, &cause) {
			return usage, err
		}
		allowed, perr := ParseAllowedModels(cause.Message)
		if perr == nil {
			perr = l.Learned(allowed)
		}
		if perr != nil {
			l.Logger.Warn("models: the upstream refused a published model without a usable list", "model", req.Model, "error", perr)
			return usage, err
		}
		return usage, &models.Error{
			Status: http.StatusBadRequest, Kind: models.KindInvalidRequest, Code: codeModelRefused, Param: "model", Err: err,
			Message: fmt.Sprintf("the upstream no longer accepts %s; the gateway refreshed its list and now serves: %s (try again: names that MODEL_ALIASES maps, such as claude-* and gpt-*, now reach it)",
				req.Model, strings.Join(l.Catalog.Names(), ", ")),
		}
	})
}

// codeModelRefused is the error code of an upstream "Invalid model".
const codeModelRefused = "model_not_supported"
