package models

import (
	"fmt"
	"net/http"
	"strings"
)

// ErrorKind is the class of an Error; each door names it in its own terms.
type ErrorKind uint8

const (
	KindInvalidRequest ErrorKind = iota + 1 // the client must change the request
	KindAuthentication                      // missing or wrong API key
	KindPermission                          // the key may not do this
	KindNotFound                            // no such model or route
	KindTooLarge                            // the body is over the limit
	KindRateLimit                           // slow down; RetryAfter says how long
	KindAPI                                 // the gateway or the upstream failed
	KindOverloaded                          // the upstream is overloaded
)

// Error is a failure that knows its HTTP status and what to tell the
// client. The core and the back doors return it; each door renders it.
type Error struct {
	Status int
	Kind   ErrorKind
	// Code is a short machine-readable reason, such as model_not_found.
	Code string
	// Param names the request field at fault, in the door's own terms.
	Param   string
	Message string
	// RetryAfter, when positive, is sent as a Retry-After header (seconds).
	RetryAfter int
	// Err is the underlying cause, kept for logs and errors.Is.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d: %s: %v", e.Status, e.Message, e.Err)
	}
	return fmt.Sprintf("%d: %s", e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Named is the message led by the field at fault, for the doors whose
// error objects have no place for it ("max_tokens: must be at least 1"),
// unless the message already names it.
func (e *Error) Named() string {
	if e.Param == "" || strings.Contains(e.Message, e.Param) {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

// InvalidRequest is a 400 naming the offending parameter.
func InvalidRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Kind: KindInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Upstream is an api_error with the given status, used for failures of the
// upstream service (502, 503, 504).
func Upstream(status int, code string, err error, format string, args ...any) *Error {
	return &Error{Status: status, Kind: KindAPI, Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}
