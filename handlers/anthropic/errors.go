package anthropic

import (
	"cursor2api/models"
)

// ErrorBody is the body of an error response and the data of a stream's
// error event: {"type":"error","error":{"type":...,"message":...}}.
type ErrorBody struct {
	Type  string      `json:"type"`
	Error ErrorObject `json:"error"`
}

// ErrorObject is Anthropic's error object.
type ErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// errorType names a kind of error as Anthropic does.
func errorType(k models.ErrorKind) string {
	switch k {
	case models.KindAuthentication:
		return "authentication_error"
	case models.KindPermission:
		return "permission_error"
	case models.KindNotFound:
		return "not_found_error"
	case models.KindTooLarge:
		return "request_too_large"
	case models.KindRateLimit:
		return "rate_limit_error"
	case models.KindAPI:
		return "api_error"
	case models.KindOverloaded:
		return "overloaded_error"
	}
	return "invalid_request_error"
}

// ErrorBodyOf renders a neutral error as Anthropic's error body, the
// field at fault leading the message as in Anthropic's own.
func ErrorBodyOf(e *models.Error) ErrorBody {
	return ErrorBody{Type: "error", Error: ErrorObject{Type: errorType(e.Kind), Message: e.Named()}}
}
