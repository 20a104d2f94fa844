package responses

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/utils"
)

// Door is the Responses API door; its errors are OpenAI's.
var Door = door.New("responses", ErrorBodyOf)

// Prefix is where the door's routes live.
const Prefix = "/v1/responses"

// Cloud serves the requests of the models that run as Cursor Cloud Agents
// (handlers/cloudagents), whose response ids are their own.
type Cloud interface {
	Serves(model string) bool
	Owns(id string) bool
	Create(c *gin.Context, wire *Request)
	Get(c *gin.Context, id string)
	Cancel(c *gin.Context, id string)
}

// Handler serves the Responses API.
type Handler struct {
	Kit   *door.Kit
	Store *Store
	// Cloud, when not nil, serves the cloud models (CLOUD_AGENTS=on).
	Cloud Cloud
	// Sealer seals and opens compaction items (nil: compaction is off).
	Sealer *Sealer
	// SocketLimits bound the connections of the door's WebSocket.
	SocketLimits SocketLimits
}

// Routes adds the door's routes to g (at Prefix).
func (h Handler) Routes(g gin.IRoutes) {
	g.POST("", h.Create)
	g.GET("", h.Socket)
	g.POST("/compact", h.Compact)
	g.GET("/:id", h.Get)
	g.DELETE("/:id", h.Delete)
	g.POST("/:id/cancel", h.Cancel)
}

// Create is POST /v1/responses.
func (h Handler) Create(c *gin.Context) {
	var wire Request
	if apiErr := h.Kit.ReadJSON(c, &wire); apiErr != nil {
		door.WriteError(c, apiErr)
		return
	}
	h.create(c, &wire, nil)
}

// create answers a decoded request. It is the one path of POST
// /v1/responses and of each response.create on the door's WebSocket, so
// that what the door learns (continuation, compaction) serves both.
// ws is the WebSocket's turn, nil over HTTP.
func (h Handler) create(c *gin.Context, wire *Request, ws *socketTurn) {
	door.SetModel(c, wire.Model)
	if h.Cloud != nil && h.Cloud.Serves(wire.Model) {
		if ws != nil {
			door.WriteError(c, models.InvalidRequest("model", "the cloud models (%s) are served over HTTP: POST /v1/responses", utils.Clip(wire.Model, utils.QuoteLen)))
			return
		}
		h.Cloud.Create(c, wire)
		return
	}
	if wire.Background {
		door.WriteError(c, models.InvalidRequest("background", "background: true is served for the cloud models only (cursor-cloud, with CLOUD_AGENTS=on); model %q answers in the request", utils.Clip(wire.Model, utils.QuoteLen)))
		return
	}
	requestID := door.RequestID(c)
	var history []json.RawMessage
	if id := wire.PreviousResponseID; id != "" && ws != nil {
		history, _ = ws.mem.get(id)
	}
	if wire.PreviousResponseID != "" && history == nil {
		prev, ok, err := h.previous(c, wire.PreviousResponseID)
		if err != nil {
			door.WriteError(c, h.Kit.StoreError(c, err))
			return
		}
		if !ok {
			door.WriteError(c, models.InvalidRequest("previous_response_id",
				"previous_response_id %q is unknown or has expired: this gateway keeps the last RESPONSES_STORE_MAX responses for RESPONSES_STORE_TTL (with STATE_URL=memory: in this process only, lost on restart); send the whole conversation in input instead",
				utils.Clip(wire.PreviousResponseID, utils.QuoteLen)))
			return
		}
		history = prev.Items
	}
	dec, err := ToRequestWith(wire, history, h.opener(c))
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	if len(dec.Ignored) > 0 {
		h.Kit.Logger.Debug("responses: ignored built-in tools and their items", "request_id", requestID, "ignored", utils.Clip(strings.Join(dec.Ignored, ", "), 500))
	}
	if wire.Generate != nil && !*wire.Generate {
		h.warmUp(c, wire, dec, ws)
		return
	}
	prepared, ok := h.Kit.Prepare(c, dec.Request)
	if !ok {
		return
	}
	base := NewResponse(NewID(), time.Now().Unix(), wire)
	if dec.Compaction {
		h.compaction(c, wire, dec, prepared, base, ws)
		return
	}
	// The request's own MCP servers are listed before the answer, as
	// the API does: one mcp_list_tools item each.
	lists := ListTools(dec.Request.MCPServers, prepared.RemoteTools)
	if wire.Stream || ws != nil {
		w := NewStreamWriter(ws.events(c), base, dec.Names)
		if len(lists) > 0 {
			if err := w.ListTools(lists); err != nil {
				h.Kit.Fail(c, err, w)
				return
			}
		}
		h.Kit.Stream(c, prepared, w)
		if resp := w.Response(); resp.Status == StatusCompleted || resp.Status == StatusIncomplete {
			h.keep(c, wire, dec, resp, w.OutputItems(), ws)
		}
		return
	}
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any {
		resp := FromAnswer(base, ans, dec.Names)
		resp.Output = append(lists, resp.Output...)
		h.keep(c, wire, dec, resp, nil, nil)
		return resp
	})
}

// missRetries are the pauses before asking the store again for a previous
// response it does not have: a streamed response is written after its
// last event, so a client that continues at once on another replica can
// ask a moment before the write lands.
var missRetries = []time.Duration{50 * time.Millisecond, 150 * time.Millisecond}

// previous reads the response previous_response_id names.
func (h Handler) previous(c *gin.Context, id string) (Kept, bool, error) {
	for i := 0; ; i++ {
		prev, ok, err := h.Store.Get(c.Request.Context(), id, door.Tenant(c))
		if ok || err != nil || i == len(missRetries) {
			return prev, ok, err
		}
		select {
		case <-c.Request.Context().Done():
			return prev, false, nil // the client left; nobody reads the answer
		case <-time.After(missRetries[i]):
		}
	}
}

// keep stores a completed (or incomplete) response with its
// conversation, unless the request said store: false. out are its output items as JSON when
// the stream writer has them already, nil to encode them here. A
// WebSocket's turn is remembered by its connection, whatever store says.
func (h Handler) keep(c *gin.Context, wire *Request, dec *Decoded, resp Response, out []json.RawMessage, ws *socketTurn) {
	if !wire.Stored() && ws == nil {
		return
	}
	items := out
	if items == nil {
		var err error
		if items, err = OutputItems(resp); err != nil {
			h.Kit.Logger.Warn("responses: not stored", "request_id", door.RequestID(c), "error", err)
			return
		}
	}
	items = append(dec.Items[:len(dec.Items):len(dec.Items)], items...)
	if ws != nil {
		ws.mem.put(resp.ID, items)
		if !wire.Stored() {
			return
		}
	}
	// A failed write is queued for a retry; the answer stands.
	if err := h.Store.Put(c.Request.Context(), resp.ID, Stored{Owner: door.Tenant(c), Response: resp, Items: items, Output: out}); err != nil {
		h.Kit.Logger.Warn("responses: not stored yet", "request_id", door.RequestID(c), "error", utils.Clip(err.Error(), 300))
	}
}

// Get is GET /v1/responses/{id}.
func (h Handler) Get(c *gin.Context) {
	if h.Cloud != nil && h.Cloud.Owns(c.Param("id")) {
		h.Cloud.Get(c, c.Param("id"))
		return
	}
	st, ok, err := h.Store.Get(c.Request.Context(), c.Param("id"), door.Tenant(c))
	if err != nil {
		door.WriteError(c, h.Kit.StoreError(c, err))
		return
	}
	if !ok {
		door.WriteError(c, NotFound(c.Param("id")))
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", st.Response)
}

// Delete is DELETE /v1/responses/{id}.
func (h Handler) Delete(c *gin.Context) {
	id := c.Param("id")
	kept, err := h.Store.Delete(c.Request.Context(), id, door.Tenant(c))
	if err != nil {
		door.WriteError(c, h.Kit.StoreError(c, err))
		return
	}
	if !kept {
		door.WriteError(c, NotFound(id))
		return
	}
	c.JSON(http.StatusOK, Deleted{ID: id, Object: "response", Deleted: true})
}

// NotFound is the answer for an id no stored response has.
func NotFound(id string) *models.Error {
	return &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
		Message: fmt.Sprintf("no response with id %q: it was never stored (store: false), has expired (RESPONSES_STORE_TTL), was evicted (RESPONSES_STORE_MAX), was deleted, or, with STATE_URL=memory:, belongs to another gateway process", utils.Clip(id, utils.QuoteLen))}
}

// Cancel is POST /v1/responses/{id}/cancel: it cancels a background cloud
// run; any other response is complete already.
func (h Handler) Cancel(c *gin.Context) {
	id := c.Param("id")
	if h.Cloud != nil && h.Cloud.Owns(id) {
		h.Cloud.Cancel(c, id)
		return
	}
	if _, ok, err := h.Store.Get(c.Request.Context(), id, door.Tenant(c)); err != nil {
		door.WriteError(c, h.Kit.StoreError(c, err))
		return
	} else if ok {
		door.WriteError(c, models.InvalidRequest("response_id", "only background cloud responses can be cancelled; response %q is already complete", utils.Clip(id, utils.QuoteLen)))
		return
	}
	door.WriteError(c, NotFound(id))
}
