// Package cloudagents serves Cursor Cloud Agents behind the Responses door
// (responses.Cloud): a cloud model launches an agent, or a follow-up run
// after previous_response_id. The response id is the signed pair of agent
// and run ids (cloud.IDs), so any replica answers for it without shared
// storage. Unless background is true, a request follows the run to its end,
// within CLOUD_MAX_WAIT; a client that leaves cancels the run.
package cloudagents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/handlers/responses"
	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/services/cloud"
	"cursor2api/utils"
)

// Handler serves the cloud models' requests and Cursor's webhook.
type Handler struct {
	Kit   *door.Kit
	Cloud *cloud.Service
}

var _ responses.Cloud = (*Handler)(nil)

// Serves reports whether model is a cloud model.
func (h *Handler) Serves(model string) bool {
	_, ok := cloud.UpstreamModel(model)
	return ok
}

// Owns reports whether id is a cloud response's.
func (h *Handler) Owns(id string) bool { return cloud.IsID(id) }

// cloudResponse is a cloud response object: the Responses one with the
// background flag the API shows.
type cloudResponse struct {
	responses.Response
	Background bool `json:"background"`
}

// Metadata keys a cloud request may set.
const (
	metaRepository   = "repository"
	metaRef          = "ref"
	metaAutoCreatePR = "auto_create_pr"
	metaBranch       = "branch"
)

var (
	repoPath = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	badRef   = regexp.MustCompile(`[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//`)
)

// validRef reports whether ref may name a git branch or ref.
func validRef(ref string) bool {
	return ref != "" && len(ref) <= 255 && !badRef.MatchString(ref) && !strings.HasPrefix(ref, "-") &&
		!strings.HasPrefix(ref, "/") && !strings.HasSuffix(ref, "/") && !strings.HasSuffix(ref, ".lock") && !strings.HasSuffix(ref, ".")
}

// cloudRepo checks metadata.repository and returns its GitHub URL:
// "owner/name", "github.com/owner/name" or the https URL.
func cloudRepo(s string) (string, bool) {
	p := strings.TrimSuffix(strings.TrimSpace(s), "/")
	p = strings.TrimSuffix(p, ".git")
	for _, prefix := range []string{"https://github.com/", "http://github.com/", "github.com/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			p = rest
			break
		}
	}
	if !repoPath.MatchString(p) || strings.Contains(p, "..") {
		return "", false
	}
	return "https://github.com/" + p, true
}

// cloudLaunch is what a cloud request asks for, checked.
type cloudLaunch struct {
	prompt cloud.Prompt
	create cloud.CreateAgentRequest
	repo   string
}

// parseCloudRequest checks a cloud request's input and metadata.
func parseCloudRequest(wire *responses.Request, model string) (*cloudLaunch, *models.Error) {
	prompt, apiErr := cloudPrompt(wire)
	if apiErr != nil {
		return nil, apiErr
	}
	l := &cloudLaunch{prompt: prompt}
	l.create.Prompt = prompt
	if model != "" {
		l.create.Model = &cloud.ModelSelection{ID: model}
	}
	md := wire.Metadata
	var repo cloud.Repo
	if v, ok := md[metaRepository]; ok {
		u, ok := cloudRepo(v)
		if !ok {
			return nil, models.InvalidRequest("metadata.repository", "metadata.repository %q is not a GitHub repository: give owner/name or https://github.com/owner/name", utils.Clip(v, utils.QuoteLen))
		}
		repo.URL, l.repo = u, u
	}
	ref, hasRef := md[metaRef]
	branch, hasBranch := md[metaBranch]
	switch {
	case hasRef && !validRef(ref):
		return nil, models.InvalidRequest("metadata.ref", "metadata.ref %q is not a valid git ref name", utils.Clip(ref, utils.QuoteLen))
	case hasBranch && !validRef(branch):
		return nil, models.InvalidRequest("metadata.branch", "metadata.branch %q is not a valid git branch name", utils.Clip(branch, utils.QuoteLen))
	case hasRef && hasBranch:
		return nil, models.InvalidRequest("metadata.branch", "metadata.branch (work on that branch itself) and metadata.ref (start a new branch from that ref) exclude each other: give one")
	case (hasRef || hasBranch) && repo.URL == "":
		param := "metadata.ref"
		if hasBranch {
			param = "metadata.branch"
		}
		return nil, models.InvalidRequest("metadata.repository", "%s needs metadata.repository (owner/name)", param)
	}
	repo.StartingRef = ref
	if hasBranch {
		repo.StartingRef = branch
		l.create.WorkOnCurrentBranch = true
	}
	if v, ok := md[metaAutoCreatePR]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, models.InvalidRequest("metadata.auto_create_pr", "metadata.auto_create_pr %q is not a boolean: give \"true\" or \"false\"", utils.Clip(v, utils.QuoteLen))
		}
		l.create.AutoCreatePR = b
	}
	if repo.URL != "" {
		l.create.Repos = []cloud.Repo{repo}
	}
	for k, v := range md {
		switch k {
		case metaRepository, metaRef, metaBranch, metaAutoCreatePR:
		default:
			if l.create.Metadata == nil {
				l.create.Metadata = map[string]string{}
			}
			l.create.Metadata[k] = v
		}
	}
	return l, nil
}

// cloudPrompt is the prompt of a cloud request: the instructions, then the
// text of the input's messages, with their images.
func cloudPrompt(wire *responses.Request) (cloud.Prompt, *models.Error) {
	var p cloud.Prompt
	var texts []string
	if wire.Instructions != "" {
		texts = append(texts, wire.Instructions)
	}
	var s string
	if err := json.Unmarshal(wire.Input, &s); err == nil {
		texts = append(texts, s)
	} else {
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(wire.Input, &items); err != nil {
			return p, models.InvalidRequest("input", "input must be a string or an array of messages")
		}
		for i, it := range items {
			if it.Type != "" && it.Type != "message" {
				return p, models.InvalidRequest(fmt.Sprintf("input[%d].type", i), "a cloud agent takes messages only, not %q items", utils.Clip(it.Type, utils.QuoteLen))
			}
			if err := json.Unmarshal(it.Content, &s); err == nil {
				texts = append(texts, s)
				continue
			}
			var parts []struct {
				Type     string          `json:"type"`
				Text     string          `json:"text"`
				ImageURL json.RawMessage `json:"image_url"`
			}
			if err := json.Unmarshal(it.Content, &parts); err != nil {
				return p, models.InvalidRequest(fmt.Sprintf("input[%d].content", i), "content must be a string or an array of parts")
			}
			for j, part := range parts {
				switch part.Type {
				case "input_text", "output_text", "text":
					texts = append(texts, part.Text)
				case "input_image":
					img, ok := cloudImage(part.ImageURL)
					if !ok {
						return p, models.InvalidRequest(fmt.Sprintf("input[%d].content[%d].image_url", i, j), "image_url must be an https URL or a base64 data: URL")
					}
					p.Images = append(p.Images, img)
				default:
					return p, models.InvalidRequest(fmt.Sprintf("input[%d].content[%d].type", i, j), "a cloud agent takes input_text and input_image parts, not %q", utils.Clip(part.Type, utils.QuoteLen))
				}
			}
		}
	}
	p.Text = strings.TrimSpace(strings.Join(texts, "\n\n"))
	if p.Text == "" {
		return p, models.InvalidRequest("input", "input holds no text: a cloud agent needs a task")
	}
	return p, nil
}

func cloudImage(raw json.RawMessage) (cloud.Image, bool) {
	var u string
	if json.Unmarshal(raw, &u) != nil || u == "" {
		return cloud.Image{}, false
	}
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		mime, data, ok := strings.Cut(rest, ";base64,")
		if !ok || mime == "" || data == "" {
			return cloud.Image{}, false
		}
		return cloud.Image{Data: data, MimeType: mime}, true
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return cloud.Image{}, false
	}
	return cloud.Image{URL: u}, true
}

// Create is POST /v1/responses for a cloud model.
func (h *Handler) Create(c *gin.Context, wire *responses.Request) {
	model, _ := cloud.UpstreamModel(wire.Model)
	ctx := c.Request.Context()
	l, apiErr := parseCloudRequest(wire, model)
	if apiErr != nil {
		door.WriteError(c, apiErr)
		return
	}
	var ref cloud.Ref
	var run cloud.Run
	var err error
	if wire.PreviousResponseID != "" {
		prev, ok := h.Cloud.IDs.Decode(wire.PreviousResponseID, door.Tenant(c))
		if !ok {
			door.WriteError(c, models.InvalidRequest("previous_response_id", "previous_response_id %q is not a cloud response of this gateway", utils.Clip(wire.PreviousResponseID, utils.QuoteLen)))
			return
		}
		run, err = h.Cloud.CreateRun(ctx, prev.AgentID, l.prompt, l.create.Model)
		if err != nil {
			e := door.AsError(err)
			if e.Status == http.StatusConflict {
				e = &models.Error{Status: http.StatusConflict, Kind: models.KindInvalidRequest, Code: "agent_busy", Param: "previous_response_id", Err: e,
					Message: "the agent of previous_response_id is still running: wait for it (GET /v1/responses/{id}) or cancel it (POST /v1/responses/{id}/cancel) first"}
			}
			door.WriteError(c, e)
			return
		}
		ref = cloud.Ref{AgentID: prev.AgentID, RunID: run.ID, Model: wire.Model, Created: time.Now().Unix(), Owner: prev.Owner,
			PrevRunID: prev.RunID, PrevModel: prev.Model, PrevCreated: prev.Created}
	} else {
		var agent cloud.Agent
		agent, run, err = h.Cloud.CreateAgent(ctx, &l.create)
		if err != nil {
			e := door.AsError(err)
			if l.repo != "" && (e.Kind == models.KindPermission || e.Kind == models.KindNotFound) {
				e = &models.Error{Status: http.StatusForbidden, Kind: models.KindPermission, Code: "repository_not_accessible", Param: "metadata.repository", Err: e,
					Message: fmt.Sprintf("repository %s is not visible to the account of CURSOR_API_KEY (%s): connect it in Cursor's GitHub integration, or fix metadata.repository", l.repo, e.Message)}
			}
			door.WriteError(c, e)
			return
		}
		ref = cloud.Ref{AgentID: agent.ID, RunID: run.ID, Model: wire.Model, Created: time.Now().Unix(), Owner: door.Tenant(c)}
	}
	id := h.Cloud.IDs.Encode(ref)
	h.Kit.Logger.Info("cloud: run started", "request_id", door.RequestID(c), "agent_id", ref.AgentID, "run_id", ref.RunID, "background", wire.Background)
	if wire.Background && !wire.Stream {
		// The run as created: CREATING, which reads as queued.
		run.ID, run.AgentID = ref.RunID, ref.AgentID
		c.PureJSON(http.StatusOK, h.cloudSnapshot(id, ref, run, nil, ""))
		return
	}
	f := &cloudFollower{h: h, ref: ref, id: id, after: -1, foreground: !wire.Background}
	if wire.Stream {
		f.w = door.EventStream(c, nil)
	}
	final := f.follow(ctx)
	if wire.Stream {
		return
	}
	if final == nil {
		door.WriteError(c, door.AsError(f.err))
		return
	}
	final.Background = wire.Background
	c.PureJSON(http.StatusOK, final)
}

// cloudID decodes the id of a cloud route or answers 404.
func (h *Handler) cloudID(c *gin.Context, id string) (cloud.Ref, bool) {
	ref, ok := h.Cloud.IDs.Decode(id, door.Tenant(c))
	if !ok {
		door.WriteError(c, responses.NotFound(id))
		return cloud.Ref{}, false
	}
	return ref, true
}

// Get is GET /v1/responses/{id} for a cloud id: the run now,
// or with stream=true its events after starting_after.
func (h *Handler) Get(c *gin.Context, id string) {
	ref, ok := h.cloudID(c, id)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if wantsStream(c) {
		after := -1
		if v := c.Query("starting_after"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 {
				door.WriteError(c, models.InvalidRequest("starting_after", "starting_after %q is not a sequence number", utils.Clip(v, utils.QuoteLen)))
				return
			}
			after = n
		}
		f := &cloudFollower{h: h, ref: ref, id: id, after: after, w: door.EventStream(c, nil)}
		f.follow(ctx)
		return
	}
	resp, err := h.cloudNow(ctx, id, ref)
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	c.PureJSON(http.StatusOK, resp)
}

// wantsStream reports whether a GET asks for the event stream: stream=true
// in the query, or {"stream": true} in a body (openai-go sends it so).
func wantsStream(c *gin.Context) bool {
	if b, err := strconv.ParseBool(c.Query("stream")); err == nil {
		return b
	}
	if c.Request.Body == nil {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, 4<<10))
	if err != nil || len(body) == 0 {
		return false
	}
	var v struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &v) == nil && v.Stream
}

// cloudNow reads the run and its agent and answers the response object.
func (h *Handler) cloudNow(ctx context.Context, id string, ref cloud.Ref) (cloudResponse, error) {
	run, err := h.Cloud.GetRun(ctx, ref.AgentID, ref.RunID)
	if err != nil {
		return cloudResponse{}, cloudGone(err, id)
	}
	var agent *cloud.Agent
	if !run.Active() {
		if a, err := h.Cloud.GetAgent(ctx, ref.AgentID); err == nil {
			agent = &a
		}
	}
	return h.cloudSnapshot(id, ref, run, agent, ""), nil
}

// cloudGone turns the upstream's 404 for a run into the door's.
func cloudGone(err error, id string) error {
	var e *models.Error
	if errors.As(err, &e) && e.Kind == models.KindNotFound {
		return responses.NotFound(id)
	}
	return err
}

// Cancel is POST /v1/responses/{id}/cancel for a cloud id: it cancels
// the run (a finished one is answered as it is).
func (h *Handler) Cancel(c *gin.Context, id string) {
	ref, ok := h.cloudID(c, id)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	run, err := h.Cloud.GetRun(ctx, ref.AgentID, ref.RunID)
	if err != nil {
		door.WriteError(c, door.AsError(cloudGone(err, id)))
		return
	}
	if run.Active() {
		if err := h.Cloud.CancelRun(ctx, ref.AgentID, ref.RunID); err != nil {
			door.WriteError(c, door.AsError(err))
			return
		}
		h.Kit.Logger.Info("cloud: run cancelled", "request_id", door.RequestID(c), "agent_id", ref.AgentID, "run_id", ref.RunID)
	}
	resp, err := h.cloudNow(ctx, id, ref)
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	c.PureJSON(http.StatusOK, resp)
}

// cloudStatus maps a run's status to a response's; unknown statuses fail.
func cloudStatus(st string) string {
	switch st {
	case cloud.StatusCreating:
		return "queued"
	case cloud.StatusRunning:
		return responses.StatusInProgress
	case cloud.StatusFinished:
		return responses.StatusCompleted
	case cloud.StatusCancelled:
		return "cancelled"
	case cloud.StatusExpired:
		return responses.StatusIncomplete
	}
	return "failed"
}

// cloudItemID is the message item's id, the same for every reader of the
// run.
func cloudItemID(runID string) string {
	h := sha256.Sum256([]byte(runID))
	return "msg_" + hex.EncodeToString(h[:12])
}

// cloudFinalText is the output text of a finished run: the agent's last
// message (streamed when the run gave no result), then its branches and
// pull requests.
func cloudFinalText(run *cloud.Run, streamed string) string {
	text := run.Result
	if text == "" {
		text = streamed
	}
	var lines []string
	if run.Git != nil {
		for _, b := range run.Git.Branches {
			if b.Branch != "" {
				lines = append(lines, fmt.Sprintf("Branch: %s (%s)", b.Branch, b.RepoURL))
			}
			if b.PRURL != "" {
				lines = append(lines, "Pull request: "+b.PRURL)
			}
		}
	}
	if len(lines) > 0 {
		if text != "" {
			text += "\n\n"
		}
		text += strings.Join(lines, "\n")
	}
	return text
}

// cloudSnapshot is cloudSnapshot with the previous response's id, which
// the id's reference tells.
func (h *Handler) cloudSnapshot(id string, ref cloud.Ref, run cloud.Run, agent *cloud.Agent, streamed string) cloudResponse {
	r := cloudSnapshot(id, ref, run, agent, streamed)
	if prev, ok := ref.Prev(); ok {
		p := h.Cloud.IDs.Encode(prev)
		r.PreviousResponseID = &p
	}
	return r
}

// cloudSnapshot is the response object of a run as it stands. streamed
// is the text streamed so far (for a run still going).
func cloudSnapshot(id string, ref cloud.Ref, run cloud.Run, agent *cloud.Agent, streamed string) cloudResponse {
	r := cloudResponse{Background: true, Response: responses.Response{
		ID: id, Object: "response", CreatedAt: ref.Created, Status: cloudStatus(run.Status), Model: ref.Model,
		Output: []responses.OutputItem{}, ParallelToolCalls: true, Store: true,
		Text: responses.TextConfig{Format: &responses.TextFormat{Type: "text"}}, ToolChoice: json.RawMessage(`"auto"`),
		Tools: []json.RawMessage{}, Truncation: "disabled",
		Metadata: map[string]string{"agent_id": ref.AgentID, "run_id": ref.RunID, "cloud_status": run.Status},
	}}
	if agent != nil && agent.URL != "" {
		r.Metadata["agent_url"] = agent.URL
	}
	if agent != nil && len(agent.Repos) > 0 {
		r.Metadata["repository"] = agent.Repos[0].URL
	}
	if run.Git != nil {
		for _, b := range run.Git.Branches {
			if b.Branch != "" && r.Metadata["branch"] == "" {
				r.Metadata["branch"] = b.Branch
			}
			if b.PRURL != "" && r.Metadata["pr_url"] == "" {
				r.Metadata["pr_url"] = b.PRURL
			}
		}
	}
	switch r.Status {
	case "failed":
		msg := run.ErrorMessage()
		code := "cloud_agent_error"
		if run.Status != cloud.StatusError {
			code = "cloud_unknown_status"
			msg = fmt.Sprintf("the cloud run ended in status %s, which this gateway does not know", utils.Clip(run.Status, utils.QuoteLen))
		} else if msg == "" {
			msg = "the cloud agent failed without a message"
		}
		r.Error = &responses.ResponseError{Code: code, Message: msg}
	case responses.StatusIncomplete:
		d := json.RawMessage(`{"reason":"expired"}`)
		r.IncompleteDetails = &d
	}
	text := streamed
	if !run.Active() {
		text = cloudFinalText(&run, streamed)
	}
	if text != "" {
		st := responses.StatusCompleted
		if run.Active() {
			st = responses.StatusInProgress
		}
		r.Output = append(r.Output, responses.OutputItem{ID: cloudItemID(run.ID), Type: responses.ItemMessage, Status: st, Text: text})
	}
	return r
}

// cloudFollower follows one run and writes it as Responses events (when w
// is set): the same events, with the same sequence numbers, for every
// reader of the run, so that starting_after resumes any of them.
type cloudFollower struct {
	h     *Handler
	ref   cloud.Ref
	id    string
	w     *sse.Writer
	after int // write only the events numbered above this
	// foreground: the request owns the run; it cancels it when it leaves
	// or when CLOUD_MAX_WAIT is up.
	foreground bool

	seq      int
	open     bool
	streamed strings.Builder
	err      error
}

func (f *cloudFollower) emit(ev responses.Event) error {
	ev.SequenceNumber = f.seq
	f.seq++
	if f.w == nil || ev.SequenceNumber <= f.after {
		return nil
	}
	return f.w.Event(ev.Type, ev)
}

// keepAlive writes OpenAI's keepalive event when the stream has been
// silent for PING_INTERVAL: Codex's idle timer counts events, not SSE
// comments. It takes no number of its own but repeats the last one sent,
// so the numbers a resumed stream replays stay those of the run's events.
func (f *cloudFollower) keepAlive() {
	if f.w == nil || f.h.Kit.PingInterval <= 0 {
		return
	}
	seq := max(f.seq-1, f.after)
	_ = f.w.KeepAliveIfIdle(f.h.Kit.PingInterval, func(emit sse.Emit) error {
		return emit(responses.EventKeepalive, []byte(`{"type":"keepalive","sequence_number":`+strconv.Itoa(seq)+`}`))
	})
}

func (f *cloudFollower) snapshot(run cloud.Run, agent *cloud.Agent) *responses.Response {
	r := f.h.cloudSnapshot(f.id, f.ref, run, agent, f.streamed.String())
	return &r.Response
}

// delta writes a text delta, opening the message first.
func (f *cloudFollower) delta(text string) error {
	if text == "" {
		return nil
	}
	zero := 0
	itemID := cloudItemID(f.ref.RunID)
	if !f.open {
		f.open = true
		item := responses.OutputItem{ID: itemID, Type: responses.ItemMessage, Status: responses.StatusInProgress}
		if err := f.emit(responses.Event{Type: "response.output_item.added", OutputIndex: &zero, Item: &item}); err != nil {
			return err
		}
		part := responses.TextPart("")
		if err := f.emit(responses.Event{Type: "response.content_part.added", OutputIndex: &zero, ItemID: itemID, ContentIndex: &zero, Part: &part}); err != nil {
			return err
		}
	}
	f.streamed.WriteString(text)
	empty := json.RawMessage("[]")
	return f.emit(responses.Event{Type: "response.output_text.delta", OutputIndex: &zero, ItemID: itemID, ContentIndex: &zero, Delta: &text, Logprobs: &empty})
}

// follow streams the run to its end and returns the final response, or
// nil with f.err set.
func (f *cloudFollower) follow(ctx context.Context) *cloudResponse {
	h := f.h
	ctx, cancel := context.WithTimeout(ctx, h.Cloud.MaxWait)
	defer cancel()
	start := cloud.Run{ID: f.ref.RunID, AgentID: f.ref.AgentID, Status: cloud.StatusCreating}
	if f.emit(responses.Event{Type: "response.created", Response: f.snapshot(start, nil)}) != nil {
		return nil
	}
	start.Status = cloud.StatusRunning
	if f.emit(responses.Event{Type: "response.in_progress", Response: f.snapshot(start, nil)}) != nil {
		return nil
	}
	final, err := f.watch(ctx)
	if err != nil {
		if f.foreground {
			// The request owned the run: it does not outlive it.
			stop, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if cerr := h.Cloud.CancelRun(stop, f.ref.AgentID, f.ref.RunID); cerr != nil {
				h.Kit.Logger.Warn("cloud: cancelling the run of a request that ended failed", "agent_id", f.ref.AgentID, "run_id", f.ref.RunID, "error", cerr)
			}
			cancelStop()
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = &models.Error{Status: http.StatusGatewayTimeout, Kind: models.KindAPI, Code: "cloud_max_wait",
				Message: fmt.Sprintf("the cloud run did not end within CLOUD_MAX_WAIT (%s); use background: true and poll GET /v1/responses/{id}, or resume with ?stream=true&starting_after=%d", h.Cloud.MaxWait, f.seq-1)}
		}
		f.err = err
		if f.w != nil && !errors.Is(err, context.Canceled) {
			e := door.AsError(err)
			code := e.Code
			_ = f.w.Event("error", responses.ErrorEvent{Type: "error", SequenceNumber: f.seq, Code: &code, Message: e.Message})
		}
		return nil
	}
	var agent *cloud.Agent
	if a, err := h.Cloud.GetAgent(ctx, f.ref.AgentID); err == nil {
		agent = &a
	}
	resp := h.cloudSnapshot(f.id, f.ref, *final, agent, f.streamed.String())
	// The message: the rest of the final text, then its end.
	text := cloudFinalText(final, f.streamed.String())
	if rest, ok := strings.CutPrefix(text, f.streamed.String()); ok {
		if f.delta(rest) != nil {
			return &resp
		}
	}
	if f.open {
		zero := 0
		itemID := cloudItemID(f.ref.RunID)
		done := f.streamed.String()
		part := responses.TextPart(done)
		item := responses.OutputItem{ID: itemID, Type: responses.ItemMessage, Status: responses.StatusCompleted, Text: done}
		empty := json.RawMessage("[]")
		for _, ev := range []responses.Event{
			{Type: "response.output_text.done", OutputIndex: &zero, ItemID: itemID, ContentIndex: &zero, Text: &done, Logprobs: &empty},
			{Type: "response.content_part.done", OutputIndex: &zero, ItemID: itemID, ContentIndex: &zero, Part: &part},
			{Type: "response.output_item.done", OutputIndex: &zero, Item: &item},
		} {
			if f.emit(ev) != nil {
				return &resp
			}
		}
		resp.Output = []responses.OutputItem{item}
	}
	typ := "response." + resp.Status
	_ = f.emit(responses.Event{Type: typ, Response: &resp.Response})
	if f.w != nil {
		f.w.Close()
	}
	return &resp
}

// streamAttempts is how many times a cut stream is resumed before the
// follower falls back to polling.
const streamAttempts = 3

// watch follows the run's stream, resumed from its last event when it is
// cut, and polls when streaming fails, until the run ends.
func (f *cloudFollower) watch(ctx context.Context) (*cloud.Run, error) {
	h := f.h
	var final *cloud.Run
	lastID := ""
	for attempt := 0; attempt < streamAttempts && final == nil; attempt++ {
		err := h.Cloud.StreamRun(ctx, f.ref.AgentID, f.ref.RunID, lastID, func(ev cloud.Event) error {
			if ev.ID != "" {
				lastID = ev.ID
			}
			switch ev.Name {
			case "interaction_update":
				var u struct{ Type, Text string }
				if json.Unmarshal(ev.Data, &u) == nil && u.Type == "text-delta" {
					return f.delta(u.Text)
				}
			case "result":
				var r struct {
					cloud.Run
					Text string `json:"text"`
				}
				if err := json.Unmarshal(ev.Data, &r); err != nil {
					return nil // read by polling instead
				}
				if r.Result == "" {
					r.Result = r.Text
				}
				if r.Status == "" {
					r.Status = cloud.StatusFinished
				}
				r.ID, r.AgentID = f.ref.RunID, f.ref.AgentID
				final = &r.Run
			case "heartbeat":
				f.keepAlive()
			}
			return nil
		})
		if final != nil || ctx.Err() != nil || err == nil {
			// err nil: done came without a result; the run says how it ended.
			break
		}
		var apiErr *models.Error
		if err != nil && !errors.Is(err, cloud.ErrStreamEnded) && errors.As(err, &apiErr) {
			if apiErr.Kind == models.KindNotFound {
				return nil, responses.NotFound(f.id)
			}
			h.Kit.Logger.Warn("cloud: the run's stream failed; polling", "agent_id", f.ref.AgentID, "run_id", f.ref.RunID, "error", err)
			break
		}
		if err != nil && !errors.Is(err, cloud.ErrStreamEnded) {
			// A stream error of ours (the client left): stop.
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if final != nil && !final.Active() {
		return final, nil
	}
	// Polling: the fallback when the stream failed or ended without a
	// result.
	t := time.NewTicker(h.Cloud.PollInterval)
	defer t.Stop()
	for {
		// Waiting starts before the read, so that a delivery between the
		// two is not missed.
		var wake <-chan struct{}
		stopWaiting := func() {}
		if h.Cloud.Webhooks != nil {
			wake, stopWaiting = h.Cloud.Webhooks.Wait(f.ref.AgentID)
		}
		run, err := h.Cloud.GetRun(ctx, f.ref.AgentID, f.ref.RunID)
		if err != nil {
			stopWaiting()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, cloudGone(err, f.id)
		}
		if !run.Active() {
			stopWaiting()
			return &run, nil
		}
		f.keepAlive()
		select {
		case <-t.C:
		case <-wake:
			// A webhook named the agent: read the run now.
		case <-ctx.Done():
			stopWaiting()
			return nil, ctx.Err()
		}
		stopWaiting()
	}
}

// maxWebhookBody bounds a webhook delivery.
const maxWebhookBody = 64 << 10

// cloudWebhook is POST /v1/cloud/webhook: a delivery of Cursor's, signed
// with CLOUD_WEBHOOK_SECRET. A missing or bad signature is a 401, a
// replayed delivery id a 409; a good delivery wakes the requests waiting
// on its agent.
func (h *Handler) Webhook(c *gin.Context) {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxWebhookBody+1))
	if err != nil {
		door.WriteError(c, models.InvalidRequest("", "reading the webhook body: %v", err))
		return
	}
	if len(body) > maxWebhookBody {
		door.WriteError(c, &models.Error{Status: http.StatusRequestEntityTooLarge, Kind: models.KindTooLarge, Message: "a webhook body is at most 64 KiB"})
		return
	}
	wh := h.Cloud.Webhooks
	sig := c.GetHeader("X-Webhook-Signature")
	if sig == "" {
		door.WriteError(c, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "webhook_unsigned", Message: "the webhook has no X-Webhook-Signature"})
		return
	}
	if !wh.Verify(body, sig) {
		door.WriteError(c, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "webhook_bad_signature", Message: "the webhook's X-Webhook-Signature does not match its body and CLOUD_WEBHOOK_SECRET"})
		return
	}
	delivery := c.GetHeader("X-Webhook-ID")
	if delivery == "" {
		door.WriteError(c, models.InvalidRequest("X-Webhook-ID", "the webhook has no X-Webhook-ID: without it a replay cannot be told apart"))
		return
	}
	if !wh.FirstDelivery(delivery, time.Now()) {
		door.WriteError(c, &models.Error{Status: http.StatusConflict, Kind: models.KindInvalidRequest, Code: "webhook_replayed", Message: fmt.Sprintf("webhook delivery %q was received already", utils.Clip(delivery, utils.QuoteLen))})
		return
	}
	var ev struct {
		Event   string `json:"event"`
		ID      string `json:"id"`
		AgentID string `json:"agentId"`
		Status  string `json:"status"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		door.WriteError(c, models.InvalidRequest("", "the webhook body is not JSON: %v", err))
		return
	}
	agent := ev.AgentID
	if agent == "" {
		agent = ev.ID
	}
	woken := 0
	if agent != "" {
		woken = wh.Wake(agent)
	}
	h.Kit.Logger.Info("cloud: webhook", "event", utils.Clip(ev.Event, 64), "agent_id", utils.Clip(agent, 64), "status", utils.Clip(ev.Status, 64), "woken", woken)
	c.JSON(http.StatusOK, gin.H{"ok": true, "woken": woken})
}
