package cloud

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"cursor2api/utils"
)

// ModelPrefix names the cloud models: "cursor-cloud" runs on the
// account's default model, "cursor-cloud/<model>" on that model.
const ModelPrefix = "cursor-cloud"

// UpstreamModel reports whether name is a cloud model and which upstream
// model it names ("" for the default).
func UpstreamModel(name string) (model string, ok bool) {
	if name == ModelPrefix {
		return "", true
	}
	m, ok := strings.CutPrefix(name, ModelPrefix+"/")
	if !ok || m == "" {
		return "", false
	}
	return m, true
}

// Config configures the service.
type Config struct {
	// BaseURL is the API's (CLOUD_API_URL); APIKey the Cursor key.
	BaseURL, APIKey string
	// IDSecret derives the key that signs response ids.
	IDSecret string
	// MaxWait bounds a request that waits for its run (not background).
	MaxWait time.Duration
	// PollInterval is the pace of polling when a run's stream fails.
	PollInterval time.Duration
	// ModelsTTL is how long the account's model list is kept.
	ModelsTTL time.Duration
	// WebhookSecret, when set, turns on webhook deliveries
	// (CLOUD_WEBHOOK_SECRET).
	WebhookSecret string
	Logger        *slog.Logger
}

// Service is what the Responses door uses: the client, the id signer,
// the bounds, and the account's models, cached.
type Service struct {
	*Client
	IDs *IDs
	// Webhooks verifies deliveries and wakes waiting requests; nil
	// without CLOUD_WEBHOOK_SECRET.
	Webhooks     *Webhooks
	MaxWait      time.Duration
	PollInterval time.Duration
	modelsTTL    time.Duration
	logger       *slog.Logger

	mu      sync.Mutex
	models  []string
	fetched time.Time
}

// New returns the service cfg describes.
func New(cfg Config, client *Client) *Service {
	cfg.MaxWait = utils.Default(cfg.MaxWait, 30*time.Minute)
	cfg.PollInterval = utils.Default(cfg.PollInterval, 5*time.Second)
	cfg.ModelsTTL = utils.Default(cfg.ModelsTTL, 10*time.Minute)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{Client: client, IDs: NewIDs(cfg.IDSecret), MaxWait: cfg.MaxWait, PollInterval: cfg.PollInterval,
		modelsTTL: cfg.ModelsTTL, logger: cfg.Logger}
	if cfg.WebhookSecret != "" {
		// A day of delivery ids, at most 100 000 (a few MB).
		s.Webhooks = NewWebhooks(cfg.WebhookSecret, 24*time.Hour, 100_000)
	}
	return s
}

// modelsTimeout bounds the model list's fetch within a /v1/models request.
const modelsTimeout = 5 * time.Second

// ModelNames are the cloud models to publish: ModelPrefix, then one per
// model of the account (fetched at most once per ModelsTTL; a failed
// fetch publishes ModelPrefix alone and is retried at the next call).
func (s *Service) ModelNames(ctx context.Context) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.models == nil || time.Since(s.fetched) > s.modelsTTL {
		ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
		ids, err := s.Models(ctx)
		cancel()
		if err != nil {
			s.logger.Warn("cloud: listing the account's models failed; publishing "+ModelPrefix+" alone", "error", err)
			if s.models == nil {
				return []string{ModelPrefix}
			}
		} else {
			s.models, s.fetched = ids, time.Now()
		}
	}
	names := []string{ModelPrefix}
	for _, m := range s.models {
		names = append(names, ModelPrefix+"/"+m)
	}
	return names
}
