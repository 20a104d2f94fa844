package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/tidwall/gjson"

	"cursor2api/handlers/door"
	"cursor2api/handlers/socket"
	"cursor2api/handlers/sse"
	"cursor2api/models"
	"cursor2api/utils"
)

// SocketLimits bound a connection of the door's WebSocket.
type SocketLimits struct {
	// Idle closes a connection that sent nothing for this long between
	// turns (RESPONSES_WS_IDLE_TIMEOUT).
	Idle time.Duration
	// MaxTurns is the number of response.create a connection may send
	// (RESPONSES_WS_MAX_TURNS); the next one is told to reconnect.
	MaxTurns int
	// MaxBytes bounds the conversations a connection keeps for
	// previous_response_id (RESPONSES_WS_MAX_BYTES).
	MaxBytes int64
	// PingInterval is how often the server pings (PING_INTERVAL).
	PingInterval time.Duration
	// Group holds the connections for the server's shutdown (nil: none).
	Group *socket.Group
}

// Defaults of the WebSocket's limits, as config has them.
const (
	DefaultSocketIdle     = time.Hour
	DefaultSocketMaxTurns = 1000
	DefaultSocketMaxBytes = 64 << 20
)

// Message types of the WebSocket, from the client.
const (
	msgCreate    = "response.create"
	msgProcessed = "response.processed" // Codex's acknowledgement: nothing to answer
)

// codeReconnect is the error code OpenAI's WebSocket ends a connection
// with at its limit; Codex opens a new connection on it.
const codeReconnect = "websocket_connection_limit_reached"

// socketTurn is what a turn of the WebSocket adds to the path of POST
// /v1/responses: where its events go, and the connection's memory of its
// responses.
type socketTurn struct {
	conn *socket.Conn
	mem  *memory
}

// Socket is GET /v1/responses with Upgrade: websocket, the Responses API
// over a WebSocket as OpenAI serves it and Codex opens it (OpenAI-Beta:
// responses_websockets=…; the header is not needed). Each {"type":
// "response.create", …} message carries the body of POST /v1/responses
// and is answered through the same path (create), its events one per
// text message; one connection carries many turns, one at a time, and
// keeps its responses for previous_response_id, even with store: false.
// Auth and the guard ran before the upgrade, in the door's shape.
func (h Handler) Socket(c *gin.Context) {
	if !socket.IsUpgrade(c.Request) {
		door.WriteError(c, &models.Error{Status: http.StatusMethodNotAllowed, Kind: models.KindInvalidRequest, Code: "method_not_allowed",
			Message: "GET /v1/responses is the Responses API's WebSocket: open it with Upgrade: websocket, or POST /v1/responses"})
		return
	}
	lim := h.SocketLimits
	conn, err := socket.Accept(c.Writer, c.Request, socket.Options{MaxMessageBytes: h.Kit.MaxBodyBytes, Idle: lim.Idle, PingInterval: lim.PingInterval, Group: lim.Group})
	if errors.Is(err, socket.ErrShuttingDown) {
		door.WriteError(c, &models.Error{Status: http.StatusServiceUnavailable, Kind: models.KindOverloaded, Code: "shutting_down", RetryAfter: 1,
			Message: "the gateway is shutting down; open the WebSocket again"})
		return
	}
	if err != nil {
		c.Set(door.KeyError, err.Error()) // Accept answered the status
		return
	}
	h.Kit.Logger.Debug("responses: websocket open", "request_id", door.RequestID(c),
		"compression", c.Writer.Header().Get("Sec-WebSocket-Extensions"), "beta", utils.Clip(c.GetHeader("OpenAI-Beta"), utils.QuoteLen))
	code, reason := h.serveSocket(c, conn)
	conn.Close(code, reason)
}

// serveSocket serves the connection's messages until it ends, and says
// how to close it.
func (h Handler) serveSocket(c *gin.Context, conn *socket.Conn) (socket.StatusCode, string) {
	lim := h.SocketLimits
	st := &socketTurn{conn: conn, mem: &memory{maxBytes: lim.MaxBytes}}
	for turns := 0; ; {
		m, err := conn.Next()
		switch {
		case errors.Is(err, socket.ErrGoingAway):
			return socket.StatusGoingAway, "the gateway is shutting down"
		case errors.Is(err, socket.ErrIdle):
			return socket.StatusNormal, fmt.Sprintf("idle for %s (RESPONSES_WS_IDLE_TIMEOUT)", lim.Idle)
		case errors.Is(err, socket.ErrTooBig):
			h.socketError(conn, &models.Error{Status: http.StatusRequestEntityTooLarge, Kind: models.KindTooLarge, Code: "request_too_large",
				Message: fmt.Sprintf("message over %d bytes (MAX_BODY_BYTES); send less history or raise the limit", h.Kit.MaxBodyBytes)})
			return socket.StatusTooBig, "message over MAX_BODY_BYTES"
		case err != nil:
			return socket.StatusNormal, "" // the client left
		}
		typ := gjson.GetBytes(m.Data, "type")
		switch {
		case !m.Text || !gjson.ValidBytes(m.Data) || !gjson.ParseBytes(m.Data).IsObject():
			h.socketError(conn, models.InvalidRequest("", `each message is a JSON object in a text message, {"type": "response.create", …} with the body of POST /v1/responses`))
			continue
		case typ.String() == msgProcessed:
			continue
		case typ.String() != msgCreate:
			h.socketError(conn, models.InvalidRequest("type", `unknown message type %q: this WebSocket takes {"type": "response.create", …} with the body of POST /v1/responses`, utils.Clip(typ.String(), utils.QuoteLen)))
			continue
		}
		if turns++; lim.MaxTurns > 0 && turns > lim.MaxTurns {
			h.socketError(conn, &models.Error{Status: http.StatusBadRequest, Kind: models.KindInvalidRequest, Code: codeReconnect,
				Message: fmt.Sprintf("this connection has served its %d responses (RESPONSES_WS_MAX_TURNS); open a new WebSocket to continue", lim.MaxTurns)})
			return socket.StatusNormal, "turn limit reached (RESPONSES_WS_MAX_TURNS)"
		}
		tc, answer := conn.Turn(c, turns, m.Data)
		h.Kit.Logger.Debug("responses: websocket turn", "request_id", door.RequestID(tc), "bytes", len(m.Data),
			"continues", gjson.GetBytes(m.Data, "previous_response_id").String() != "", "generate", gjson.GetBytes(m.Data, "generate").Raw)
		serve := func() {
			var wire Request
			var refused *models.Error
			if h.Kit.Admit != nil {
				var release func()
				if release, refused = h.Kit.Admit(tc); refused == nil {
					defer release() // the turn's slot, until its last event
				}
			}
			if refused != nil {
				door.WriteError(tc, refused)
			} else if apiErr := h.Kit.ReadJSON(tc, &wire); apiErr != nil {
				door.WriteError(tc, apiErr)
			} else {
				h.create(tc, &wire, st)
			}
			if answer.Status() >= http.StatusBadRequest {
				h.socketAnswer(conn, answer.Status(), answer.Body())
			}
		}
		if h.Kit.Turn != nil {
			h.Kit.Turn(tc, serve)
		} else {
			serve()
		}
		if conn.Context().Err() != nil {
			return socket.StatusNormal, ""
		}
	}
}

// socketError sends e as the WebSocket's error event.
func (h Handler) socketError(conn *socket.Conn, e *models.Error) {
	body, err := json.Marshal(ErrorBodyOf(e))
	if err != nil {
		return
	}
	h.socketAnswer(conn, e.Status, body)
}

// socketAnswer sends an error answer of the door (status, and its body
// {"error": {…}}) as the WebSocket's error event, which OpenAI's carries
// with the status: {"type": "error", "status": 400, "error": {…}}.
func (h Handler) socketAnswer(conn *socket.Conn, status int, body []byte) {
	inner := gjson.GetBytes(body, "error")
	if !inner.IsObject() {
		return
	}
	b := fmt.Appendf(nil, `{"type":"error","status":%d,"error":%s}`, status, inner.Raw)
	_ = conn.Send(b)
}

// maxRemembered is how many of its last responses a connection keeps for
// previous_response_id (Codex names the last one).
const maxRemembered = 8

// memory is a connection's responses, kept for previous_response_id
// whatever store says: an agent on a WebSocket sends only the new items
// and names the response before them. It is bounded by turns and by the
// bytes of the conversations it holds, counted whole for each even where
// they share items; the last response is always kept when it fits.
type memory struct {
	maxBytes int64
	kept     []remembered // oldest first
	bytes    int64
}

type remembered struct {
	id    string
	items []json.RawMessage
	bytes int64
}

func (m *memory) get(id string) ([]json.RawMessage, bool) {
	for _, r := range m.kept {
		if r.id == id {
			return r.items, true
		}
	}
	return nil, false
}

// put keeps the conversation items ending response id. The items are
// copied, but for those the last response kept already holds: a new item
// is a slice of its message, which would otherwise be kept whole (tools
// and all) for as long as the conversation is.
func (m *memory) put(id string, items []json.RawMessage) {
	var n int64
	for _, it := range items {
		n += int64(len(it))
	}
	if m.maxBytes > 0 && n > m.maxBytes {
		return
	}
	var last []json.RawMessage
	if len(m.kept) > 0 {
		last = m.kept[len(m.kept)-1].items
	}
	own := make([]json.RawMessage, len(items))
	for i, it := range items {
		if i < len(last) && len(it) > 0 && len(last[i]) == len(it) && &last[i][0] == &it[0] {
			own[i] = last[i]
		} else {
			own[i] = bytes.Clone(it)
		}
	}
	m.kept = append(m.kept, remembered{id: id, items: own, bytes: n})
	m.bytes += n
	for len(m.kept) > 1 && (len(m.kept) > maxRemembered || (m.maxBytes > 0 && m.bytes > m.maxBytes)) {
		m.bytes -= m.kept[0].bytes
		m.kept[0] = remembered{}
		m.kept = m.kept[1:]
	}
}

// events is where a streamed answer goes: the connection's messages on
// the WebSocket, else the request's event stream.
func (ws *socketTurn) events(c *gin.Context) *sse.Writer {
	if ws == nil {
		return door.EventStream(c, nil)
	}
	return ws.conn.Events()
}

// warmUp answers a request with generate: false without asking the
// model: a completed response with no output, which a later request can
// name as its previous response (Codex sends its instructions and tools
// so, before the first turn).
func (h Handler) warmUp(c *gin.Context, wire *Request, dec *Decoded, ws *socketTurn) {
	if _, err := h.Kit.ResolveModel(wire.Model); err != nil {
		door.WriteError(c, door.AsError(err))
		return
	}
	base := NewResponse(NewID(), time.Now().Unix(), wire)
	if !wire.Stream && ws == nil {
		resp := base
		resp.Status = StatusCompleted
		u := toUsage(models.Usage{})
		resp.Usage = &u
		h.keep(c, wire, dec, resp, nil, nil)
		door.WriteWhole(c, resp)
		return
	}
	w := NewStreamWriter(ws.events(c), base, dec.Names)
	if err := w.Finish(models.FinishStop, models.Usage{}); err != nil {
		h.Kit.Fail(c, err, w)
		return
	}
	h.keep(c, wire, dec, w.Response(), w.OutputItems(), ws)
}
