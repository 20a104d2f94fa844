package door

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"cursor2api/models"
	"cursor2api/utils"
	"cursor2api/utils/jsondec"
)

// Wire is a door's request body that converts on its own into the core's
// request (Kit.Decode).
type Wire interface {
	// ModelName is the model the body asks for, as the client spelt it.
	ModelName() string
	// Request converts the body into the core's request.
	Request() (*models.Request, error)
}

// Decode reads the body into w, names its model for the log, and converts
// it. On false the error is answered.
func (k *Kit) Decode(c *gin.Context, w Wire) (*models.Request, bool) {
	if apiErr := k.ReadJSON(c, w); apiErr != nil {
		WriteError(c, apiErr)
		return nil, false
	}
	SetModel(c, w.ModelName())
	req, err := w.Request()
	if err != nil {
		WriteError(c, AsError(err))
		return nil, false
	}
	return req, true
}

// ReadJSON reads the body within the size limit and decodes it into v,
// leniently: unknown fields are ignored. Its errors speak JSON, not Go.
func (k *Kit) ReadJSON(c *gin.Context, v any) *models.Error {
	body, err := readAll(http.MaxBytesReader(c.Writer, c.Request.Body, k.MaxBodyBytes), c.Request.ContentLength, k.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &models.Error{Status: http.StatusRequestEntityTooLarge, Kind: models.KindTooLarge, Code: "request_too_large",
				Message: fmt.Sprintf("request body is over %d bytes (MAX_BODY_BYTES); send less history or raise the limit", k.MaxBodyBytes)}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &models.Error{Status: http.StatusRequestTimeout, Kind: models.KindInvalidRequest, Code: "request_timeout",
				Message: fmt.Sprintf("the request body did not arrive within %s (BODY_READ_TIMEOUT); send it at once", k.BodyReadTimeout)}
		}
		return models.InvalidRequest("", "could not read the request body: %v", err)
	}
	if err := jsondec.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return models.InvalidRequest("", "the request body must be a JSON object, not a JSON %s", typeErr.Value)
		case errors.As(err, &typeErr):
			path := errorPath(body, reflect.TypeOf(v), typeErr.Field)
			return models.InvalidRequest(path, "invalid type for %s: got a JSON %s, expected %s", path, typeErr.Value, jsonKind(typeErr.Type))
		case errors.As(err, &syntaxErr):
			return models.InvalidRequest("", "the request body is not valid JSON (at byte %d): %v", syntaxErr.Offset, err)
		default:
			if path := errorPath(body, reflect.TypeOf(v), ""); path != "" {
				return models.InvalidRequest(path, "invalid %s: %v", path, err)
			}
			return models.InvalidRequest("", "invalid request: %v", err)
		}
	}
	return nil
}

// jsonKind names the JSON value that decodes into t, for error messages
// that speak JSON rather than Go.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

// readAll is io.ReadAll into a buffer of the body's declared size, so a
// prompt is not copied through growing buffers. The size is the client's
// word, so at most maxPrealloc is set aside before the bytes come.
func readAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size <= 0 || size > limit {
		return io.ReadAll(r)
	}
	// One byte more, so that the read that meets the end needs no growth.
	b := make([]byte, 0, min(size+1, maxPrealloc))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // a body longer than declared: grow
		}
	}
}

// maxPrealloc bounds the buffer readAll sets aside for a body before its
// bytes arrive: a client that declares a large body and sends little
// cannot make every connection hold a large buffer.
const maxPrealloc = 64 << 10

// clientOf reads what the calling application says of itself.
func clientOf(r *http.Request) models.Client {
	referer := r.Header.Get("HTTP-Referer")
	if referer == "" {
		referer = r.Header.Get("Referer")
	}
	return models.Client{UserAgent: r.UserAgent(), Title: r.Header.Get("X-Title"), Referer: referer}
}

// maxSessionBytes bounds the client's session id: the ids agents send are
// UUIDs, and the back door keeps a conversation per id.
const maxSessionBytes = 200

// sessionHeaders name the client's session id, first first: Claude Code's
// (2.1.86 on), then Codex's, its thread id, spelt session-id by Codex
// 0.169 and session_id by earlier versions (Codex sends the same id as
// prompt_cache_key).
var sessionHeaders = [...]string{"X-Claude-Code-Session-Id", "Session-Id", "Session_id"}

// sessionOf is the client's conversation id: the first of sessionHeaders,
// else fromBody, clipped to maxSessionBytes of valid UTF-8. A header wins:
// it is the agent's own word, where a body field may be the user's.
func sessionOf(r *http.Request, fromBody string) string {
	s := fromBody
	for _, h := range sessionHeaders {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" {
			s = v
			break
		}
	}
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	return utils.CutRunes(s, maxSessionBytes)
}
