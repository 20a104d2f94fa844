// Package cloud is a client of Cursor's Cloud Agents API (/v1/agents):
// agents that run a coding task in a VM for minutes and end in a branch or
// pull request. Failures are *models.Error with the gateway's status.
//
// It is not a chat back door: a run is no turn the core could check, so the
// Responses door serves runs directly. It keeps no state: ids say it all.
package cloud

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"cursor2api/models"
	"cursor2api/utils"
)

// Client calls the Cloud Agents API with one API key.
type Client struct {
	base string
	key  string
	hc   *http.Client
	// Drift, when set (before the first call), is told of run statuses
	// and stream events this gateway does not know, which it passes over.
	Drift *utils.Drift
}

// NewClient returns a client of the API at base (models.CursorAPIURL when
// empty) with the key. hc must not have a total timeout (a run's stream
// lasts minutes); nil uses http.DefaultClient. Every call is bounded by its
// context.
func NewClient(base, key string, hc *http.Client) *Client {
	if base == "" {
		base = models.CursorAPIURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(base, "/"), key: key, hc: hc}
}

// Prompt is a run's prompt: text and images.
type Prompt struct {
	Text   string  `json:"text"`
	Images []Image `json:"images,omitempty"`
}

// Image is an image by URL, or inline as base64 data with its MIME type.
type Image struct {
	URL      string `json:"url,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// Repo is a repository an agent works on.
type Repo struct {
	URL         string `json:"url"`
	StartingRef string `json:"startingRef,omitempty"`
	PRURL       string `json:"prUrl,omitempty"`
}

// ModelSelection names a model.
type ModelSelection struct {
	ID string `json:"id"`
}

// CreateAgentRequest is the body of POST /v1/agents.
type CreateAgentRequest struct {
	Prompt              Prompt            `json:"prompt"`
	Model               *ModelSelection   `json:"model,omitempty"`
	Repos               []Repo            `json:"repos,omitempty"`
	AutoCreatePR        bool              `json:"autoCreatePR,omitempty"`
	WorkOnCurrentBranch bool              `json:"workOnCurrentBranch,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
}

// Agent is an agent as the API reports it.
type Agent struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	URL         string `json:"url"`
	Repos       []Repo `json:"repos"`
	LatestRunID string `json:"latestRunId"`
}

// Run statuses.
const (
	StatusCreating  = "CREATING"
	StatusRunning   = "RUNNING"
	StatusFinished  = "FINISHED"
	StatusError     = "ERROR"
	StatusCancelled = "CANCELLED"
	StatusExpired   = "EXPIRED"
)

// Run is one run of an agent.
type Run struct {
	ID         string          `json:"id"`
	AgentID    string          `json:"agentId"`
	Status     string          `json:"status"`
	CreatedAt  time.Time       `json:"createdAt"`
	DurationMs int64           `json:"durationMs"`
	Result     string          `json:"result"`
	Error      json.RawMessage `json:"error"`
	Git        *Git            `json:"git"`
}

// runStatuses are the statuses this gateway knows; a run of another is
// shown as it is said (handlers' cloudStatus decides what it means).
var runStatuses = []string{"", StatusCreating, StatusRunning, StatusFinished, StatusError, StatusCancelled, StatusExpired}

// streamEvents are the run stream's events this gateway knows; others are
// passed to the caller like them, who ignores them.
var streamEvents = []string{"status", "interaction_update", "result", "heartbeat", "done"}

// noteStatus notes a run status this gateway does not know.
func (c *Client) noteStatus(status string) {
	if !slices.Contains(runStatuses, status) {
		c.Drift.Note("cloud agents", fmt.Sprintf("run status %q", status))
	}
}

// Active reports whether the run is still going.
func (r *Run) Active() bool { return r.Status == StatusCreating || r.Status == StatusRunning }

// ErrorMessage is the message of the run's error: its message field, or
// the error itself when it is a string.
func (r *Run) ErrorMessage() string {
	if len(r.Error) == 0 || string(r.Error) == "null" {
		return ""
	}
	var e struct{ Message string }
	if json.Unmarshal(r.Error, &e) == nil && e.Message != "" {
		return e.Message
	}
	var s string
	if json.Unmarshal(r.Error, &s) == nil {
		return s
	}
	return string(r.Error)
}

// Git is what a run left in its repositories.
type Git struct {
	Branches []Branch `json:"branches"`
}

// Branch is a run's branch of one repository and its PR, if any.
type Branch struct {
	RepoURL string `json:"repoUrl"`
	Branch  string `json:"branch"`
	PRURL   string `json:"prUrl"`
}

// CreateAgent creates an agent and its first run.
func (c *Client) CreateAgent(ctx context.Context, req *CreateAgentRequest) (Agent, Run, error) {
	var out struct {
		Agent Agent `json:"agent"`
		Run   Run   `json:"run"`
	}
	err := c.do(ctx, http.MethodPost, "/v1/agents", req, &out)
	c.noteStatus(out.Run.Status)
	return out.Agent, out.Run, err
}

// CreateRun starts a follow-up run on an agent; a busy agent is a 409.
// model nil keeps the agent's.
func (c *Client) CreateRun(ctx context.Context, agentID string, p Prompt, model *ModelSelection) (Run, error) {
	var out struct {
		Run Run `json:"run"`
	}
	body := struct {
		Prompt Prompt          `json:"prompt"`
		Model  *ModelSelection `json:"model,omitempty"`
	}{p, model}
	err := c.do(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agentID)+"/runs", body, &out)
	c.noteStatus(out.Run.Status)
	return out.Run, err
}

// GetAgent reads an agent.
func (c *Client) GetAgent(ctx context.Context, agentID string) (Agent, error) {
	var a Agent
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agentID), nil, &a)
	return a, err
}

// GetRun reads a run.
func (c *Client) GetRun(ctx context.Context, agentID, runID string) (Run, error) {
	var r Run
	err := c.do(ctx, http.MethodGet, runPath(agentID, runID), nil, &r)
	c.noteStatus(r.Status)
	return r, err
}

// CancelRun cancels a run.
func (c *Client) CancelRun(ctx context.Context, agentID, runID string) error {
	return c.do(ctx, http.MethodPost, runPath(agentID, runID)+"/cancel", nil, nil)
}

// Models lists the ids of the models the account may use.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	var out struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/models", nil, &out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(out.Items))
	for _, m := range out.Items {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

func runPath(agentID, runID string) string {
	return "/v1/agents/" + url.PathEscape(agentID) + "/runs/" + url.PathEscape(runID)
}

// maxBody bounds a JSON answer.
const maxBody = 4 << 20

func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("x-cursor-client-type", "sdk")
	req.Header.Set("x-cursor-client-version", "cursor2api")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("cloud: encoding %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return fmt.Errorf("cloud: %s %s: %w", method, path, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportError(ctx, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return apiError(resp, method+" "+path)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return transportError(ctx, method, path, err)
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return models.Upstream(http.StatusBadGateway, "cloud_bad_answer", err, "Cursor's Cloud Agents API answered %s with JSON this gateway cannot read", method+" "+path)
	}
	return nil
}

func transportError(ctx context.Context, method, path string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return models.Upstream(http.StatusBadGateway, "cloud_unreachable", err, "Cursor's Cloud Agents API is unreachable (%s; CLOUD_API_URL)", method+" "+path)
}

// apiError turns an error answer ({"error":{"code","message"}}) into the
// gateway's error.
func apiError(resp *http.Response, endpoint string) *models.Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &body)
	code, msg := body.Error.Code, utils.Clip(body.Error.Message, 500)
	if msg == "" {
		msg = utils.Clip(strings.TrimSpace(string(b)), 200)
	}
	e := &models.Error{Status: resp.StatusCode, Code: code, Message: "Cursor Cloud Agents: " + msg}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Kind = models.KindRateLimit
		e.RetryAfter = 30
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = s
		}
		if e.Code == "" {
			e.Code = "rate_limit_exceeded"
		}
	case resp.StatusCode == http.StatusUnauthorized:
		// The gateway's own key was refused: not the client's fault.
		e.Status, e.Kind, e.Code = http.StatusBadGateway, models.KindAPI, "cloud_unauthorized"
		e.Message = "Cursor's Cloud Agents API refused CURSOR_API_KEY (" + endpoint + "): check the key"
	case resp.StatusCode == http.StatusForbidden:
		e.Kind = models.KindPermission
	case resp.StatusCode == http.StatusNotFound:
		e.Kind = models.KindNotFound
	case resp.StatusCode >= 500:
		e.Status, e.Kind = http.StatusBadGateway, models.KindAPI
	default:
		e.Kind = models.KindInvalidRequest
	}
	return e
}

// Event is one server-sent event of a run's stream.
type Event struct {
	ID   string
	Name string
	Data json.RawMessage
}

// ErrStreamEnded is returned by StreamRun when the stream ended before its
// done event: the caller reads the run and resumes from the last id.
var ErrStreamEnded = errors.New("cloud: the run's stream ended early")

// StreamRun follows a run's events after lastEventID ("" from the start),
// calling fn for each until done (then it returns nil), fn's error, the
// context's end, or the stream's early end (ErrStreamEnded). Heartbeats
// are passed to fn too: they prove the stream alive.
func (c *Client) StreamRun(ctx context.Context, agentID, runID, lastEventID string, fn func(Event) error) error {
	path := runPath(agentID, runID) + "/stream"
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return fmt.Errorf("cloud: %s: %w", path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("x-cursor-streaming", "true")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transportError(ctx, http.MethodGet, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return apiError(resp, "GET "+path)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev Event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.ID = value
			case "event":
				ev.Name = value
			case "data":
				data = append(data, value)
			}
			continue
		}
		if ev.Name == "" && len(data) == 0 {
			continue
		}
		ev.Data = json.RawMessage(strings.Join(data, "\n"))
		if !slices.Contains(streamEvents, ev.Name) {
			c.Drift.Note("cloud agents", fmt.Sprintf("stream event %q", ev.Name))
		}
		if err := fn(ev); err != nil {
			return err
		}
		if ev.Name == "done" {
			return nil
		}
		ev, data = Event{}, nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ErrStreamEnded
}
