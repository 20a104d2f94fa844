package models

import (
	"fmt"
	"net/http"
)

// Error types used in the OpenAI error object.
const (
	ErrInvalidRequest = "invalid_request_error"
	ErrAuthentication = "authentication_error"
	ErrRateLimit      = "rate_limit_error"
	ErrAPI            = "api_error"
)

// APIError is an error that knows its HTTP status and its OpenAI error
// object. Services return it; handlers write it unchanged.
type APIError struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
	// RetryAfter, when positive, is sent as a Retry-After header (seconds).
	RetryAfter int
	// Err is the underlying cause, kept for logs and errors.Is.
	Err error
}

func (e *APIError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Type, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

func (e *APIError) Unwrap() error { return e.Err }

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

// Body returns the OpenAI-shaped error body.
func (e *APIError) Body() ErrorBody {
	obj := ErrorObject{Message: e.Message, Type: e.Type}
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

// InvalidRequest is a 400 naming the offending parameter.
func InvalidRequest(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: ErrInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Upstream is an api_error with the given status, used for failures of the
// upstream service (502, 503, 504).
func Upstream(status int, code string, err error, format string, args ...any) *APIError {
	return &APIError{Status: status, Type: ErrAPI, Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}
