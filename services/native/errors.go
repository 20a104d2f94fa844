package native

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"cursor2api/models"
	"cursor2api/services/native/aiserverv1"
	"cursor2api/services/native/keys"
	"cursor2api/utils"
)

// errorDetailsType is the type name of Cursor's error detail.
const errorDetailsType = "aiserver.v1.ErrorDetails"

// cursorError is what Cursor said when it refused a call.
type cursorError struct {
	code    connect.Code
	message string
	// kind, title and detail come from aiserver.v1.ErrorDetails when sent.
	kind          aiserverv1.ErrorDetails_Error
	title, detail string
	retryAfter    time.Duration
}

// readError reads a Connect error and its Cursor details; ok is false
// for an error that is not one (a network failure before any answer is
// still a connect error of code unavailable or unknown).
func readError(err error) (cursorError, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return cursorError{}, false
	}
	out := cursorError{code: ce.Code(), message: ce.Message()}
	for _, d := range ce.Details() {
		if d.Type() != errorDetailsType {
			continue
		}
		var det aiserverv1.ErrorDetails
		if proto.Unmarshal(d.Bytes(), &det) == nil {
			out.kind = det.GetError()
			out.title = det.GetDetails().GetTitle()
			out.detail = det.GetDetails().GetDetail()
		}
	}
	if s := ce.Meta().Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			out.retryAfter = time.Duration(n) * time.Second
		}
	}
	return out, true
}

// noteErrorDetails notes the details of a Connect error that readError
// passes over: of a type other than Cursor's own.
func noteErrorDetails(drift *utils.Drift, err error) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return
	}
	for _, d := range ce.Details() {
		if t := d.Type(); t != errorDetailsType {
			drift.Note("native", fmt.Sprintf("error detail type %q", t))
		}
	}
}

// said is Cursor's own words for the error, as its SDK shows them.
func (e cursorError) said() string {
	s := strings.TrimSpace(e.title + " " + e.detail)
	if s == "" {
		s = e.message
	}
	return utils.Clip(strings.Join(strings.Fields(s), " "), 300)
}

// versionGated reports whether Cursor refused the client version rather
// than the key: "Update Required" comes as resource_exhausted, and is not
// a quota.
func (e cursorError) versionGated() bool {
	return e.kind == aiserverv1.ErrorDetails_ERROR_OUTDATED_CLIENT ||
		strings.EqualFold(strings.TrimSpace(e.title), "Update Required") ||
		strings.Contains(strings.ToLower(e.message), "no longer supported")
}

// badModel reports an unknown or unusable model.
func (e cursorError) badModel() bool {
	switch e.kind {
	case aiserverv1.ErrorDetails_ERROR_BAD_MODEL_NAME, aiserverv1.ErrorDetails_ERROR_MODEL_NO_LONGER_SUPPORTED,
		aiserverv1.ErrorDetails_ERROR_MODEL_BLOCKED:
		return true
	}
	return false
}

// systemPromptRefused reports the refusal of custom_system_prompt by an
// account without access to it (the SDK documents an invalid_argument
// naming --system-prompt).
func (e cursorError) systemPromptRefused() bool {
	return e.code == connect.CodeInvalidArgument && strings.Contains(strings.ToLower(e.message+" "+e.said()), "system-prompt")
}

// rateLimited reports a resource_exhausted that asks to slow down rather
// than one whose usage limit is spent.
func (e cursorError) rateLimited() bool {
	switch e.kind {
	case aiserverv1.ErrorDetails_ERROR_RATE_LIMITED, aiserverv1.ErrorDetails_ERROR_RATE_LIMITED_CHANGEABLE,
		aiserverv1.ErrorDetails_ERROR_GENERIC_RATE_LIMIT_EXCEEDED, aiserverv1.ErrorDetails_ERROR_API_KEY_RATE_LIMIT,
		aiserverv1.ErrorDetails_ERROR_FREE_USER_RATE_LIMIT_EXCEEDED, aiserverv1.ErrorDetails_ERROR_PRO_USER_RATE_LIMIT_EXCEEDED,
		aiserverv1.ErrorDetails_ERROR_OPENAI_RATE_LIMIT_EXCEEDED:
		return true
	}
	return false
}

// codeVersionGate is the error code of Cursor's "Update Required".
const codeVersionGate = "cursor_version_gate"

// classify turns a failed call into the client's error and the key's
// outcome. model is the model asked for, version the client version sent.
func classify(err error, model, version string) (*models.Error, keys.Outcome) {
	var me *models.Error
	if errors.As(err, &me) {
		return me, keys.Outcome{Kind: keys.Transient}
	}
	ce, ok := readError(err)
	if !ok {
		return models.Upstream(http.StatusBadGateway, "cursor_unreachable", err, "the call to Cursor failed: %v", err), keys.Outcome{Kind: keys.Transient}
	}
	switch ce.code {
	case connect.CodeUnauthenticated:
		return &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "cursor_unauthenticated", Err: err,
				Message: "Cursor refused the credentials of CURSOR_API_KEY (unauthenticated): " + ce.said()},
			keys.Outcome{Kind: keys.Unauthorized}
	case connect.CodeResourceExhausted:
		if ce.versionGated() {
			return models.Upstream(http.StatusBadGateway, codeVersionGate, err,
					"Cursor no longer accepts client version %q (%s): set CURSOR_CLIENT_VERSION to a current version", version, ce.said()),
				keys.Outcome{Kind: keys.NotKeysFault}
		}
		e := &models.Error{Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "cursor_quota", Err: err,
			Message: "Cursor's usage limit for this key is reached: " + ce.said()}
		out := keys.Outcome{Kind: keys.Quota, RetryAfter: ce.retryAfter}
		if ce.rateLimited() {
			e.Code, e.Message = "cursor_rate_limited", "Cursor asks to slow down: "+ce.said()
			out.Kind = keys.RateLimited
		}
		if ce.retryAfter > 0 {
			e.RetryAfter = max(1, int(ce.retryAfter/time.Second))
		}
		return e, out
	case connect.CodePermissionDenied:
		return models.Upstream(http.StatusBadGateway, "cursor_permission_denied", err,
				"Cursor denied the request (%s): check the account of CURSOR_API_KEY and CURSOR_CLIENT_VERSION/CURSOR_CLIENT_TYPE", ce.said()),
			keys.Outcome{Kind: keys.NotKeysFault}
	case connect.CodeInvalidArgument, connect.CodeNotFound:
		if ce.badModel() || strings.Contains(strings.ToLower(ce.message), "model") {
			e := models.InvalidRequest("model", "Cursor does not offer the model %q to this account (%s); GET /v1/models lists the ones it does",
				utils.Clip(model, utils.QuoteLen), ce.said())
			e.Code, e.Err = "model_not_found", err
			return e, keys.Outcome{Kind: keys.NotKeysFault}
		}
		return models.Upstream(http.StatusBadGateway, "cursor_invalid_argument", err, "Cursor refused the request: %s", ce.said()),
			keys.Outcome{Kind: keys.NotKeysFault}
	case connect.CodeCanceled:
		return models.Upstream(http.StatusBadGateway, "cursor_canceled", err, "Cursor cancelled the run: %s", ce.said()), keys.Outcome{Kind: keys.Transient}
	case connect.CodeDeadlineExceeded:
		return models.Upstream(http.StatusGatewayTimeout, "upstream_timeout", err, "Cursor timed out: %s", ce.said()), keys.Outcome{Kind: keys.Transient}
	case connect.CodeUnavailable:
		return models.Upstream(http.StatusBadGateway, "cursor_unavailable", err, "Cursor is unavailable: %s", ce.said()), keys.Outcome{Kind: keys.Transient}
	}
	return models.Upstream(http.StatusBadGateway, "cursor_error", err, "Cursor failed (%s): %s", ce.code, ce.said()), keys.Outcome{Kind: keys.Transient}
}

// isContext reports an error that only says the caller left.
func isContext(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || connect.CodeOf(err) == connect.CodeCanceled)
}
