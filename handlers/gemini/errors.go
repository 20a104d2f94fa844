package gemini

import (
	"net/http"

	"cursor2api/models"
)

// ErrorBody is Google's error body, the answer of a failed request and
// the data of the event that ends a stream that fails after its start.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is Google's error object: the HTTP status as a number, the
// message, and the canonical status name.
type ErrorObject struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// statusName names an error as Google's canonical codes do.
func statusName(e *models.Error) string {
	switch e.Kind {
	case models.KindAuthentication:
		return "UNAUTHENTICATED"
	case models.KindPermission:
		return "PERMISSION_DENIED"
	case models.KindNotFound:
		return "NOT_FOUND"
	case models.KindRateLimit:
		return "RESOURCE_EXHAUSTED"
	case models.KindOverloaded:
		return "UNAVAILABLE"
	case models.KindAPI:
		switch e.Status {
		case http.StatusServiceUnavailable, http.StatusBadGateway:
			return "UNAVAILABLE"
		case http.StatusGatewayTimeout:
			return "DEADLINE_EXCEEDED"
		}
		return "INTERNAL"
	}
	if e.Status == http.StatusMethodNotAllowed {
		return "UNIMPLEMENTED"
	}
	return "INVALID_ARGUMENT"
}

// ErrorBodyOf renders a neutral error as Google's error body, the field
// at fault leading the message.
func ErrorBodyOf(e *models.Error) ErrorBody {
	return ErrorBody{Error: ErrorObject{Code: e.Status, Message: e.Named(), Status: statusName(e)}}
}
