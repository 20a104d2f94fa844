package anthropic

import (
	"strings"

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

// ErrorBodyOf renders a neutral error as Anthropic's error body. The
// field at fault, which Anthropic's object has no place for, leads the
// message as Anthropic's own messages do ("max_tokens: ...") unless the
// message already names it.
func ErrorBodyOf(e *models.Error) ErrorBody {
	msg := e.Message
	if e.Param != "" && !strings.HasPrefix(msg, e.Param) {
		msg = e.Param + ": " + msg
	}
	return ErrorBody{Type: "error", Error: ErrorObject{Type: errorType(e.Kind), Message: msg}}
}
