// Package door is what every front door shares: the door's description
// (its name and error shape), the request's values in the gin context,
// reading a body, and an answer's lifecycle from the core's Prepare to the
// last byte, with one sink for every failure (Kit.Fail).
package door

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"cursor2api/models"
)

// Door is what the shared middleware needs to know of a front door.
type Door struct {
	// Name labels the door in the log, the metrics and the usage ledger.
	Name string
	// ErrorBody renders an error as the door's API does.
	ErrorBody func(*models.Error) any
}

// New returns the door called name, whose errors body renders in its API's shape.
func New[B any](name string, body func(*models.Error) B) *Door {
	return &Door{Name: name, ErrorBody: func(e *models.Error) any { return body(e) }}
}

// Keys of the gin context: set by the middleware and the doors, read by
// the access log, the metrics and the usage ledger.
const (
	KeyDoor      = "door"
	KeyRequestID = "request_id"
	KeyModel     = "model"
	KeyStatus    = "status" // overrides the HTTP status in the log (499: client gone)
	KeyError     = "error"
	KeyAnswer    = "answer" // the request asked for a model's answer
	KeyUsage     = "usage"  // its models.Usage, once finished
	KeyClient    = "client" // the client key's usage.KeyID
	// KeyClientName is the name API_KEYS_FILE gives the client key ("":
	// a key of API_KEY).
	KeyClientName = "client_name"
	KeyTurn       = "turn" // the number of a WebSocket turn, from 1
)

// Use marks the requests of a route group as d's, so that every error on
// them, auth and limits included, takes d's shape.
func Use(d *Door) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(KeyDoor, d)
		c.Next()
	}
}

// Of is the door of the request; nil when nothing marked one (the
// gateway's router marks every request with a default door first).
func Of(c *gin.Context) *Door {
	d, _ := c.Value(KeyDoor).(*Door)
	return d
}

// RequestID is the request's id (X-Request-Id).
func RequestID(c *gin.Context) string { return c.GetString(KeyRequestID) }

// Tenant is the fingerprint of the client key the request came with
// ("" with auth off). What a request creates belongs to it: a request of
// another key gets a 404.
func Tenant(c *gin.Context) string { return c.GetString(KeyClient) }

// SetModel names the model the client asked for, for the log and metrics.
func SetModel(c *gin.Context, name string) { c.Set(KeyModel, name) }

// WriteError writes e in the door's shape and notes it for the log.
func WriteError(c *gin.Context, e *models.Error) {
	c.Set(KeyError, e.Message)
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if d := Of(c); d != nil {
		c.JSON(e.Status, d.ErrorBody(e))
		return
	}
	c.JSON(e.Status, gin.H{"error": gin.H{"message": e.Message}})
}

// Abort writes e and stops the handler chain.
func Abort(c *gin.Context, e *models.Error) {
	WriteError(c, e)
	c.Abort()
}

// AsError turns any error into the neutral error to send.
func AsError(err error) *models.Error {
	var apiErr *models.Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &models.Error{Status: http.StatusInternalServerError, Kind: models.KindAPI, Message: "internal error: " + err.Error(), Err: err}
}
