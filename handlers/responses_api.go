package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/responses"
	"cursor2api/models"
	"cursor2api/services/cloud"
	"cursor2api/utils"
)

// responsesDoor is the Responses API door; its errors are OpenAI's.
var responsesDoor = &door{name: "responses", errorBody: func(e *models.Error) any { return responses.ErrorBodyOf(e) }}

// createResponse is POST /v1/responses.
func (s *server) createResponse(c *gin.Context) {
	var wire responses.Request
	if apiErr := s.readJSON(c, &wire); apiErr != nil {
		writeError(c, apiErr)
		return
	}
	c.Set(keyModel, wire.Model)
	if s.Cloud != nil {
		if model, ok := cloud.UpstreamModel(wire.Model); ok {
			s.createCloudResponse(c, &wire, model)
			return
		}
	}
	if wire.Background {
		writeError(c, models.InvalidRequest("background", "background: true is served for the cloud models only (cursor-cloud, with CLOUD_AGENTS=on); model %q answers in the request", utils.Clip(wire.Model, utils.QuoteLen)))
		return
	}
	requestID := c.GetString(keyRequestID)
	var history []json.RawMessage
	if wire.PreviousResponseID != "" {
		prev, ok, err := s.previousResponse(c, wire.PreviousResponseID)
		if err != nil {
			writeError(c, s.storeError(c, err))
			return
		}
		if !ok {
			writeError(c, models.InvalidRequest("previous_response_id",
				"previous_response_id %q is unknown or has expired: this gateway keeps the last RESPONSES_STORE_MAX responses for RESPONSES_STORE_TTL (with STATE_URL=memory: in this process only, lost on restart); send the whole conversation in input instead",
				utils.Clip(wire.PreviousResponseID, utils.QuoteLen)))
			return
		}
		history = prev.Items
	}
	dec, err := responses.ToRequest(&wire, history)
	if err != nil {
		writeError(c, asError(err))
		return
	}
	if len(dec.Ignored) > 0 {
		s.Logger.Debug("responses: ignored built-in tools and their items", "request_id", requestID, "ignored", utils.Clip(strings.Join(dec.Ignored, ", "), 500))
	}
	prepared, ok := s.prepare(c, dec.Request)
	if !ok {
		return
	}
	base := responses.NewResponse(responses.NewID(), time.Now().Unix(), &wire)
	// The request's own MCP servers are listed before the answer, as
	// the API does: one mcp_list_tools item each.
	lists := responses.ListTools(dec.Request.MCPServers, prepared.RemoteTools)
	if wire.Stream {
		w := responses.NewStreamWriter(s.eventStream(c, nil), base, dec.Names)
		if len(lists) > 0 {
			if err := w.ListTools(lists); err != nil {
				s.fail(c, err, w)
				return
			}
		}
		s.stream(c, prepared, w)
		if resp := w.Response(); resp.Status == responses.StatusCompleted || resp.Status == responses.StatusIncomplete {
			s.keepResponse(c, &wire, dec, resp, w.OutputItems())
		}
		return
	}
	s.complete(c, prepared, func(ans *models.Answer) any {
		resp := responses.FromAnswer(base, ans, dec.Names)
		resp.Output = append(lists, resp.Output...)
		s.keepResponse(c, &wire, dec, resp, nil)
		return resp
	})
}

// missRetries are the pauses before asking the store again for a previous
// response it does not have: a streamed response is written after its
// last event, so a client that continues at once on another replica can
// ask a moment before the write lands.
var missRetries = []time.Duration{50 * time.Millisecond, 150 * time.Millisecond}

// previousResponse reads the response previous_response_id names.
func (s *server) previousResponse(c *gin.Context, id string) (responses.Kept, bool, error) {
	for i := 0; ; i++ {
		prev, ok, err := s.Responses.Get(c.Request.Context(), id, tenantOf(c))
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

// keepResponse stores a completed (or incomplete) response with its
// conversation, unless
// the request said store: false. out are its output items as JSON when
// the stream writer has them already, nil to encode them here.
func (s *server) keepResponse(c *gin.Context, wire *responses.Request, dec *responses.Decoded, resp responses.Response, out []json.RawMessage) {
	if !wire.Stored() {
		return
	}
	items := out
	if items == nil {
		var err error
		if items, err = responses.OutputItems(resp); err != nil {
			s.Logger.Warn("responses: not stored", "request_id", c.GetString(keyRequestID), "error", err)
			return
		}
	}
	items = append(dec.Items[:len(dec.Items):len(dec.Items)], items...)
	// A failed write is queued for a retry; the answer stands.
	if err := s.Responses.Put(c.Request.Context(), resp.ID, responses.Stored{Owner: tenantOf(c), Response: resp, Items: items, Output: out}); err != nil {
		s.Logger.Warn("responses: not stored yet", "request_id", c.GetString(keyRequestID), "error", utils.Clip(err.Error(), 300))
	}
}

// getResponse is GET /v1/responses/{id}.
func (s *server) getResponse(c *gin.Context) {
	if cloud.IsID(c.Param("id")) {
		s.getCloudResponse(c, c.Param("id"))
		return
	}
	st, ok, err := s.Responses.Get(c.Request.Context(), c.Param("id"), tenantOf(c))
	if err != nil {
		writeError(c, s.storeError(c, err))
		return
	}
	if !ok {
		writeError(c, responseNotFound(c.Param("id")))
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", st.Response)
}

// deleteResponse is DELETE /v1/responses/{id}.
func (s *server) deleteResponse(c *gin.Context) {
	id := c.Param("id")
	kept, err := s.Responses.Delete(c.Request.Context(), id, tenantOf(c))
	if err != nil {
		writeError(c, s.storeError(c, err))
		return
	}
	if !kept {
		writeError(c, responseNotFound(id))
		return
	}
	c.JSON(http.StatusOK, responses.Deleted{ID: id, Object: "response", Deleted: true})
}

func responseNotFound(id string) *models.Error {
	return &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
		Message: fmt.Sprintf("no response with id %q: it was never stored (store: false), has expired (RESPONSES_STORE_TTL), was evicted (RESPONSES_STORE_MAX), was deleted, or, with STATE_URL=memory:, belongs to another gateway process", utils.Clip(id, utils.QuoteLen))}
}
