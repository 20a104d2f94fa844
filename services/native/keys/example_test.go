package keys_test

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"cursor2api/models"
	"cursor2api/services/native/keys"
)

// errQuota stands for the upstream's usage-limit error.
var errQuota = errors.New("resource_exhausted: usage limit reached")

// run stands for one turn against Cursor's agent API with the lease's
// access token; sent says whether anything reached the client yet.
func run(ctx context.Context, accessToken string) (sent bool, err error) { return false, errQuota }

// A back door takes a lease per turn, reports how it went, and when the
// key is taken out of use before anything reached the client, retries on
// the conversation's next key.
func Example() {
	pool, err := keys.New(keys.Options{
		Keys:    []string{"crsr_first", "crsr_second"},
		BaseURL: models.CursorConnectURL, // CURSOR_BACKEND_URL
		Logger:  slog.Default(),
	})
	if err != nil {
		return // names CURSOR_API_KEY or CURSOR_BACKEND_URL
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session := keys.SessionHash("system prompt", "first user message") // or the client's session id
	for range pool.Len() + 1 {
		lease, err := pool.Acquire(ctx, session)
		if err != nil {
			return // a *models.Error (401, 429, 502/503) for the client
		}
		sent, err := run(ctx, lease.AccessToken())
		switch {
		case err == nil:
			lease.Done(keys.Outcome{})
			return
		case errors.Is(err, errQuota):
			lease.Done(keys.Outcome{Kind: keys.Quota, Err: err})
		default:
			lease.Done(keys.Outcome{Kind: keys.Transient, Err: err})
			return
		}
		if sent {
			return // too late to move the turn
		}
	}
}
