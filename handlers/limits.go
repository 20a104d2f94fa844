package handlers

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/services/clientkeys"
)

// keyClientKey holds the request's clientkeys.Key (set by auth).
const keyClientKey = "client_key"

// limit holds a request to its key's limits before the door reads it: a
// request over one is a 429 in the door's shape and never reaches the
// upstream. The slot it takes is freed after the last byte. A WebSocket's
// upgrade is not a request: each of its turns is (admit, through Kit.Admit).
func (s *server) limit(c *gin.Context) {
	if c.IsWebsocket() {
		c.Next()
		return
	}
	release, e := s.admit(c)
	if e != nil {
		door.Abort(c, e)
		return
	}
	defer release()
	c.Next()
	s.countTokens(c)
}

// admit checks the request's key against its limits and takes a slot.
func (s *server) admit(c *gin.Context) (release func(), e *models.Error) {
	key, ok := c.Value(keyClientKey).(clientkeys.Key)
	if !ok || key.Limits.None() {
		return func() {}, nil
	}
	release, refused, err := s.Limits.Admit(c.Request.Context(), key.Fingerprint, key.Limits, time.Now())
	if err != nil {
		// The store is down: the limits are not enforced rather than the
		// gateway stopped; the store's own health is on /ready.
		s.Logger.Warn("client keys: the limits' store failed; request let through", "request_id", door.RequestID(c), "key_id", key.Fingerprint, "error", err)
		return func() {}, nil
	}
	if refused == nil {
		return release, nil
	}
	refused.Key = key.Name
	if refused.Key == "" {
		refused.Key = key.Fingerprint
	}
	if s.Metrics != nil {
		s.Metrics.ClientLimited(key.Name, key.Fingerprint, refused.Limit)
	}
	return nil, &models.Error{Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "rate_limit_exceeded",
		Message: refused.Error(), RetryAfter: max(1, int(math.Ceil(refused.RetryAfter.Seconds())))}
}

// countTokens adds an answer's input and output tokens to its key's day.
func (s *server) countTokens(c *gin.Context) {
	key, ok := c.Value(keyClientKey).(clientkeys.Key)
	if !ok || key.Limits.TokensPerDay == 0 {
		return
	}
	u, ok := c.Value(door.KeyUsage).(models.Usage)
	if !ok || u.InputTokens+u.OutputTokens == 0 {
		return
	}
	// On a context of its own: a client that leaves as its answer ends
	// must not take its tokens off the day's count.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 5*time.Second)
	defer cancel()
	if err := s.Limits.AddTokens(ctx, key.Fingerprint, int64(u.InputTokens)+int64(u.OutputTokens), time.Now()); err != nil {
		s.Logger.Warn("client keys: an answer's tokens were not counted", "request_id", door.RequestID(c), "key_id", key.Fingerprint, "error", err)
	}
}
