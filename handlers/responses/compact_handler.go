package responses

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/services/chat"
	"cursor2api/utils"
)

// errCompactionOff answers a compaction when the handler has no Sealer.
var errCompactionOff = &models.Error{Status: http.StatusNotImplemented, Kind: models.KindInvalidRequest, Code: "compaction_unavailable",
	Message: "compaction is not available on this gateway: it has no key to seal compaction items with"}

// opener reads the compaction items of the client's key, nil when
// compaction is off.
func (h Handler) opener(c *gin.Context) func(string) (string, error) {
	if h.Sealer == nil {
		return nil
	}
	return h.Sealer.For(door.Tenant(c))
}

// sealer seals a summary for the client's key.
func (h Handler) sealer(c *gin.Context) func(string) string {
	tenant := door.Tenant(c)
	return func(summary string) string { return h.Sealer.Seal(tenant, summary) }
}

// compaction answers a POST /v1/responses whose input ends with a
// compaction_trigger: one compaction item, streamed or whole, kept like
// any response unless store is false.
func (h Handler) compaction(c *gin.Context, wire *Request, dec *Decoded, prepared *chat.Prepared, base Response, ws *socketTurn) {
	if h.Sealer == nil {
		door.WriteError(c, errCompactionOff)
		return
	}
	seal := h.sealer(c)
	if wire.Stream || ws != nil {
		w := NewCompactionWriter(ws.events(c), base, seal)
		h.Kit.Stream(c, prepared, w)
		if resp := w.Response(); resp.Status == StatusCompleted {
			h.keep(c, wire, dec, resp, w.OutputItems(), ws)
		}
		return
	}
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any {
		resp := CompactionFromAnswer(base, seal(ans.Text), ans.Usage)
		h.keep(c, wire, dec, resp, nil, nil)
		return resp
	})
}

// Compact is POST /v1/responses/compact, which Codex before the
// compaction_trigger item calls: the body of POST /v1/responses (its
// stream ignored), answered whole with the conversation's last user
// messages and one compaction item.
func (h Handler) Compact(c *gin.Context) {
	var wire Request
	if apiErr := h.Kit.ReadJSON(c, &wire); apiErr != nil {
		door.WriteError(c, apiErr)
		return
	}
	door.SetModel(c, wire.Model)
	if h.Sealer == nil {
		door.WriteError(c, errCompactionOff)
		return
	}
	if h.Cloud != nil && h.Cloud.Serves(wire.Model) {
		door.WriteError(c, models.InvalidRequest("model", "model %q runs as a Cursor Cloud Agent, which keeps its own history: it has nothing to compact", utils.Clip(wire.Model, utils.QuoteLen)))
		return
	}
	if wire.PreviousResponseID != "" {
		door.WriteError(c, models.InvalidRequest("previous_response_id", "previous_response_id is not read by /v1/responses/compact: send the whole conversation in input"))
		return
	}
	wire.Stream = false
	dec, err := ToRequestWith(&wire, nil, h.opener(c))
	if err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	if !dec.Compaction {
		dec.Compact()
	}
	prepared, ok := h.Kit.Prepare(c, dec.Request)
	if !ok {
		return
	}
	seal := h.sealer(c)
	h.Kit.Complete(c, prepared, func(ans *models.Answer) any {
		return NewCompacted(NewID(), time.Now().Unix(), dec.Items, seal(ans.Text), ans.Usage)
	})
}
