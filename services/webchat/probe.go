package webchat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/services/upstream"
)

// probeModel is an upstream id that cannot exist: asking for it makes the
// upstream answer with the list of the ids it accepts.
const probeModel = "cursor2api/model-probe"

var allowedModelsRE = regexp.MustCompile(`(?i)allowed models?:?\s*(.+)`)

// AllowedModels asks the upstream which model ids it accepts today, from
// its "Invalid model. Allowed models: ..." answer.
func (c *Client) AllowedModels(ctx context.Context) ([]string, error) {
	_, err := c.Stream(ctx, upstream.Request{Model: probeModel, RequestID: "model-probe",
		Messages: []models.Turn{{Role: models.RoleUser, Text: "hi"}}}, func(upstream.Delta) error {
		return errProbeAnswered
	})
	var upErr *UpstreamStatusError
	switch {
	case err == nil || errors.Is(err, errProbeAnswered):
		return nil, ErrUnrestricted
	case errors.As(err, &upErr) && upErr.Status == http.StatusBadRequest:
		return ParseAllowedModels(upErr.Message)
	default:
		return nil, err
	}
}

var errProbeAnswered = errors.New("probe answered")

// ErrUnrestricted is AllowedModels' answer when the upstream accepted the
// probe's made-up model id: it has no list to tell.
var ErrUnrestricted = errors.New("the upstream accepted an unknown model id; it does not restrict models")

// ParseAllowedModels reads the model ids out of an "Allowed models: a, b"
// message.
func ParseAllowedModels(msg string) ([]string, error) {
	m := allowedModelsRE.FindStringSubmatch(msg)
	if m == nil {
		return nil, fmt.Errorf("no model list in %q", msg)
	}
	var ids []string
	for _, f := range strings.FieldsFunc(m[1], func(r rune) bool {
		return r == ',' || r == ' ' || r == '[' || r == ']' || r == '"' || r == '\'' || r == ')' || r == '('
	}) {
		f = strings.TrimRight(f, ".;")
		if strings.Contains(f, "/") {
			ids = append(ids, f)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no model id in %q", msg)
	}
	return ids, nil
}

// WatchModels checks at once and then every interval that the upstream
// still accepts every upstream id the catalog maps to, and logs a warning
// naming the public models that would fail. It returns when ctx ends.
func WatchModels(ctx context.Context, c *Client, catalog *models.Catalog, interval time.Duration, logger *slog.Logger) {
	for {
		check(ctx, c, catalog, logger)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func check(ctx context.Context, c *Client, catalog *models.Catalog, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, c.IdleTimeout)
	defer cancel()
	allowed, err := c.AllowedModels(ctx)
	if err != nil {
		if ctx.Err() == nil {
			logger.Info("model check: could not learn the upstream's models", "error", err)
		}
		return
	}
	ok := make(map[string]bool, len(allowed))
	for _, id := range allowed {
		ok[id] = true
	}
	var missing []string
	for id, names := range catalog.Upstreams() {
		if !ok[id] {
			missing = append(missing, fmt.Sprintf("%s (%s)", id, strings.Join(names, ", ")))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		logger.Warn("model check: the upstream no longer accepts some mapped models; fix MODEL_MAP",
			"rejected", strings.Join(missing, "; "), "allowed", strings.Join(allowed, ", "))
		return
	}
	logger.Info("model check: every mapped model is accepted", "allowed", strings.Join(allowed, ", "))
}
