package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"cursor2api/models"
	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/keys"
	"cursor2api/utils"
)

// ListModels returns the account's usable models with their display
// names: GET /v1/models (REST, with the raw API key), else
// AgentService/GetUsableModels.
func (c *Client) ListModels(ctx context.Context) ([]models.NamedModel, error) {
	if c.keys == nil {
		_, err := c.acquire(ctx, "")
		return nil, err
	}
	// A key's rest does not stop the model list: a gateway started
	// while its keys rest still learns its models.
	lease, err := c.keys.AcquireAny(ctx)
	if err != nil {
		return nil, err
	}
	list, err := c.restModels(ctx, lease)
	if err == nil {
		lease.Done(keys.Outcome{Kind: keys.OK})
		return list, nil
	}
	var me *models.Error
	if errors.As(err, &me) && me.Status == http.StatusUnauthorized {
		lease.Done(keys.Outcome{Kind: keys.Unauthorized})
		return nil, err
	}
	list, err2 := c.usableModels(ctx, lease)
	if err2 != nil {
		e, o := classify(err2, "", c.opts.ClientVersion)
		lease.Done(o)
		return nil, fmt.Errorf("%v; GetUsableModels: %w", err, e)
	}
	lease.Done(keys.Outcome{Kind: keys.OK})
	return list, nil
}

// restModels is GET /v1/models.
func (c *Client) restModels(ctx context.Context, lease *keys.Lease) ([]models.NamedModel, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.opts.RESTURL+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	c.clientHeaders(req.Header)
	req.Header.Set("Authorization", "Bearer "+lease.APIKey())
	resp, err := c.opts.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "cursor_bad_key",
			Message: fmt.Sprintf("Cursor refused the API key %s listing its models: check CURSOR_API_KEY", lease.Name())}
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET /v1/models: HTTP %d: %s", resp.StatusCode, utils.Clip(strings.TrimSpace(string(body)), 200))
	}
	var out struct {
		Items []struct {
			ID          string `json:"id"`
			DisplayName string `json:"displayName"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	list := make([]models.NamedModel, 0, len(out.Items))
	for _, it := range out.Items {
		list = append(list, models.NamedModel{ID: it.ID, Display: it.DisplayName})
	}
	if len(list) == 0 {
		return nil, errors.New("GET /v1/models listed no model")
	}
	return list, nil
}

// usableModels is AgentService/GetUsableModels.
func (c *Client) usableModels(ctx context.Context, lease *keys.Lease) ([]models.NamedModel, error) {
	req := connect.NewRequest(&agentv1.GetUsableModelsRequest{})
	c.callHeaders(lease, uuid(), false)(req.Header())
	resp, err := c.agent.GetUsableModels(ctx, req)
	if err != nil {
		return nil, err
	}
	var list []models.NamedModel
	for _, m := range resp.Msg.GetModels() {
		list = append(list, models.NamedModel{ID: m.GetModelId(), Display: m.GetDisplayName()})
	}
	if len(list) == 0 {
		return nil, errors.New("GetUsableModels listed no model")
	}
	return list, nil
}

// Catalog builds the public catalog from the account's models, restricted
// to allowed (MODELS) when it is not empty.
func (c *Client) Catalog(ctx context.Context, allowed []string) (*models.Catalog, error) {
	list, err := c.ListModels(ctx)
	c.modelsMu.Lock()
	c.modelErr = err
	c.modelsMu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(allowed) > 0 {
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[strings.TrimSpace(a)] = true
		}
		var kept []models.NamedModel
		var ids []string
		for _, m := range list {
			ids = append(ids, m.ID)
			if ok[m.ID] {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			return nil, fmt.Errorf("the account offers none of MODELS (%s); it offers: %s", strings.Join(allowed, ", "), strings.Join(ids, ", "))
		}
		list = kept
	}
	return models.NewNamedCatalog(list)
}

// WatchModels refreshes catalog every interval until ctx ends. A failed
// refresh keeps the list the catalog has, and is tried again sooner
// (retryFailed), so that a gateway started while Cursor or its key was
// failing picks the real list up soon after they work.
func (c *Client) WatchModels(ctx context.Context, catalog *models.Catalog, allowed []string, interval time.Duration) {
	wait := interval
	c.modelsMu.Lock()
	if c.modelErr != nil {
		wait = min(interval, retryFailed)
	}
	c.modelsMu.Unlock()
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, min(interval, time.Minute))
		next, err := c.Catalog(rctx, allowed)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("native: could not refresh the model list; keeping the last one", "error", err)
			}
			wait = min(interval, retryFailed)
			continue
		}
		wait = interval
		catalog.Replace(next)
		c.log.Debug("native: model list refreshed", "models", next.Names())
	}
}

// retryFailed is how soon a failed model listing is tried again.
const retryFailed = 30 * time.Second

// Ready reports what stops the back door from answering: no key, or the
// last model listing's failure (a refused key, an unreachable Cursor).
func (c *Client) Ready(ctx context.Context) error {
	if c.keys == nil {
		if c.keyErr != nil {
			return c.keyErr
		}
		return errNoKey
	}
	if err := c.keys.Check(ctx); err != nil {
		return err
	}
	c.modelsMu.Lock()
	err := c.modelErr
	c.modelsMu.Unlock()
	if err != nil {
		return fmt.Errorf("listing the account's models failed: %w", err)
	}
	return c.versionGate(ctx)
}

// gateCheckEvery is how long Ready trusts its last look at the version
// gate.
const gateCheckEvery = time.Minute

// versionGate asks Cursor one Connect call the version gate guards
// (GetServerConfig), at most once a gateCheckEvery, so that /ready names
// a gate before a request meets it: the key exchange and the model list
// are REST calls, which the gate lets through. It reports only a gate;
// other failures are the key pool's and the runs' to report.
func (c *Client) versionGate(ctx context.Context) error {
	c.gateMu.Lock()
	defer c.gateMu.Unlock()
	if !c.gateAt.IsZero() && time.Since(c.gateAt) < gateCheckEvery {
		return c.gateErr
	}
	lease, err := c.acquire(ctx, "")
	if err != nil {
		return err
	}
	req := connect.NewRequest(&aiserverv1.GetServerConfigRequest{})
	c.callHeaders(lease, uuid(), false)(req.Header())
	_, err = c.config.GetServerConfig(ctx, req)
	if err == nil {
		lease.Done(keys.Outcome{Kind: keys.OK})
		c.gateAt, c.gateErr = time.Now(), nil
		return nil
	}
	me, outcome := classify(err, "", c.opts.ClientVersion)
	lease.Done(outcome)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.gateAt, c.gateErr = time.Now(), nil
	if me.Code == codeVersionGate {
		c.gateErr = me
	}
	return c.gateErr
}
