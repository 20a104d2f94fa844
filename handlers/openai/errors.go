package openai

import "cursor2api/models"

// ErrorBody is the JSON body of an error response (and of an error chunk in
// a stream that has already started).
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the OpenAI error object. Param and Code are null when
// unknown, as in OpenAI's own answers.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Error types of the OpenAI error object.
const (
	ErrInvalidRequest = "invalid_request_error"
	ErrAuthentication = "authentication_error"
	ErrPermission     = "permission_error"
	ErrRateLimit      = "rate_limit_error"
	ErrAPI            = "api_error"
)

// errorType names a kind of error as OpenAI does: everything the client
// must change is an invalid_request_error.
func errorType(k models.ErrorKind) string {
	switch k {
	case models.KindAuthentication:
		return ErrAuthentication
	case models.KindPermission:
		return ErrPermission
	case models.KindRateLimit:
		return ErrRateLimit
	case models.KindAPI, models.KindOverloaded:
		return ErrAPI
	}
	return ErrInvalidRequest
}

// ErrorBodyOf renders a neutral error as OpenAI's error body.
func ErrorBodyOf(e *models.Error) ErrorBody {
	obj := ErrorObject{Message: e.Message, Type: errorType(e.Kind)}
	if e.Param != "" {
		p := e.Param
		obj.Param = &p
	}
	if e.Code != "" {
		c := e.Code
		obj.Code = &c
	}
	return ErrorBody{Error: obj}
}
