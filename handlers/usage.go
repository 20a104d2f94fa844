package handlers

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"cursor2api/handlers/door"
	"cursor2api/models"
	"cursor2api/services/usage"
	"cursor2api/utils"
)

// recordUsage adds every request that asked for an answer to the usage
// ledger once it is answered: after its last byte, and with no I/O (the
// ledger writes in batches).
func (s *server) recordUsage(c *gin.Context) {
	c.Next()
	s.record(c)
}

// record adds an answered request (or WebSocket turn) to the ledger.
func (s *server) record(c *gin.Context) {
	if !c.GetBool(door.KeyAnswer) {
		return
	}
	status := c.Writer.Status()
	if v := c.GetInt(door.KeyStatus); v != 0 {
		status = v
	}
	counts := usage.Counts{Requests: 1}
	if u, ok := c.Value(door.KeyUsage).(models.Usage); ok {
		counts.InputTokens, counts.OutputTokens, counts.CachedTokens = int64(u.InputTokens), int64(u.OutputTokens), int64(u.CacheReadTokens)
	}
	if status >= 400 || c.GetString(door.KeyError) != "" {
		counts.Errors = 1
	}
	s.Usage.Add(usage.Record{Time: time.Now(), KeyID: c.GetString(door.KeyClient),
		KeyName: c.GetString(door.KeyClientName), Door: door.Of(c).Name,
		Model: s.kit.ModelLabel(c.GetString(door.KeyModel)), Backend: s.Backend, Usage: counts})
}

// Limits of the usage endpoint's buckets, as OpenAI's Usage API has them.
var bucketLimits = map[string]struct {
	width      usage.Width
	def, limit int
}{
	"1h": {usage.Hour, 24, 168},
	"1d": {usage.Day, 7, 31},
}

// usageCompletions is GET /v1/organization/usage/completions, in the
// shape of OpenAI's Usage API, for the holder of ADMIN_KEY.
func (s *server) usageCompletions(c *gin.Context) {
	bad := func(param, format string, args ...any) {
		door.WriteError(c, models.InvalidRequest(param, format, args...))
	}
	start, err := strconv.ParseInt(c.Query("start_time"), 10, 64)
	if err != nil || start < 0 {
		bad("start_time", "start_time is required: the start of the time range as a Unix time in seconds, e.g. start_time=%d", time.Now().Add(-24*time.Hour).Unix())
		return
	}
	width := c.DefaultQuery("bucket_width", "1d")
	bl, ok := bucketLimits[width]
	if !ok {
		bad("bucket_width", "bucket_width=%q: use 1h or 1d", utils.Clip(width, utils.QuoteLen))
		return
	}
	limit := bl.def
	if v := c.Query("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > bl.limit {
			bad("limit", "limit=%q: use a number of buckets from 1 to %d for bucket_width=%s", utils.Clip(v, utils.QuoteLen), bl.limit, width)
			return
		}
	}
	from := time.Unix(start, 0).UTC()
	if p := c.Query("page"); p != "" {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < start {
			bad("page", "page=%q is not a next_page this endpoint gave", utils.Clip(p, utils.QuoteLen))
			return
		}
		from = time.Unix(n, 0).UTC()
	}
	end := time.Now().UTC()
	if v := c.Query("end_time"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= start {
			bad("end_time", "end_time=%q: use a Unix time in seconds after start_time", utils.Clip(v, utils.QuoteLen))
			return
		}
		end = time.Unix(n, 0).UTC()
	}
	q := usage.Query{Start: from, End: end, Width: bl.width}
	for _, g := range c.QueryArray("group_by") {
		for g := range strings.SplitSeq(g, ",") {
			switch strings.TrimSpace(g) {
			case "model":
				q.ByModel = true
			case "api_key_id":
				q.ByKey = true
			default:
				bad("group_by", "group_by=%q: this gateway groups by model and api_key_id", utils.Clip(g, utils.QuoteLen))
				return
			}
		}
	}
	more := false
	if last := q.Start.Truncate(time.Hour).Add(time.Duration(limit) * time.Duration(bl.width)); last.Before(q.End) {
		q.End, more = last, true
	}
	buckets, err := s.Usage.Query(c.Request.Context(), q)
	if err != nil {
		door.WriteError(c, s.kit.StoreError(c, err))
		return
	}
	page := usagePage{Object: "page", Data: make([]usageBucket, 0, len(buckets)), HasMore: more}
	if more {
		next := strconv.FormatInt(q.End.Unix(), 10)
		page.NextPage = &next
	}
	for _, b := range buckets {
		ub := usageBucket{Object: "bucket", StartTime: b.Start.Unix(), EndTime: b.End.Unix(), Results: make([]usageResult, 0, len(b.Groups))}
		for _, g := range b.Groups {
			r := usageResult{Object: "organization.usage.completions.result", Counts: g.Counts}
			if q.ByModel {
				r.Model = &g.Model
			}
			if q.ByKey {
				// The name the records were written under; records older
				// than key names take the key's name now.
				id, name := g.KeyID, g.KeyName
				if name == "" {
					name = s.ClientKeys.NameOf(g.KeyID)
				}
				r.APIKeyID, r.APIKeyName = &id, &name
			}
			ub.Results = append(ub.Results, r)
		}
		page.Data = append(page.Data, ub)
	}
	c.JSON(http.StatusOK, page)
}

// The usage endpoint's wire types, as OpenAI's.
type usagePage struct {
	Object   string        `json:"object"`
	Data     []usageBucket `json:"data"`
	HasMore  bool          `json:"has_more"`
	NextPage *string       `json:"next_page"`
}

type usageBucket struct {
	Object    string        `json:"object"`
	StartTime int64         `json:"start_time"`
	EndTime   int64         `json:"end_time"`
	Results   []usageResult `json:"results"`
}

type usageResult struct {
	Object string `json:"object"`
	usage.Counts
	InputAudioTokens  int64   `json:"input_audio_tokens"`
	OutputAudioTokens int64   `json:"output_audio_tokens"`
	ProjectID         *string `json:"project_id"`
	UserID            *string `json:"user_id"`
	APIKeyID          *string `json:"api_key_id"`
	// APIKeyName is the name API_KEYS_FILE gave the key when it was used
	// (for records older than key names, its name now; "" for a key of
	// API_KEY); the gateway's own.
	APIKeyName *string `json:"api_key_name,omitempty"`
	Model      *string `json:"model"`
	Batch      *bool   `json:"batch"`
}

// adminAuth requires ADMIN_KEY as a bearer token, wrong ones counted per
// client address with the console's sign-ins (a guess is a guess on
// either door); with no ADMIN_KEY the admin routes are off.
func (s *server) adminAuth(c *gin.Context) {
	if s.AdminKey == "" {
		door.Abort(c, &models.Error{Status: http.StatusNotFound, Kind: models.KindNotFound, Code: "not_found",
			Message: "the usage endpoint is off: set ADMIN_KEY on the gateway and send it as Authorization: Bearer <ADMIN_KEY>"})
		return
	}
	ip := c.ClientIP()
	if wait := s.admins.Wait(ip, time.Now()); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		door.Abort(c, &models.Error{Status: http.StatusTooManyRequests, Kind: models.KindRateLimit, Code: "rate_limit_exceeded", RetryAfter: secs,
			Message: fmt.Sprintf("too many wrong ADMIN_KEYs from your address: wait %d seconds", secs)})
		return
	}
	given, authErr := bearerToken(c.GetHeader("Authorization"))
	if authErr != nil {
		door.Abort(c, authErr)
		return
	}
	if given == "" || subtle.ConstantTimeCompare([]byte(given), []byte(s.AdminKey)) != 1 {
		if s.admins.Fail(ip, time.Now()) {
			s.Logger.Warn("usage endpoint: too many wrong keys; refused for a while", "client", utils.Clip(ip, utils.QuoteLen))
		}
		door.Abort(c, &models.Error{Status: http.StatusUnauthorized, Kind: models.KindAuthentication, Code: "invalid_api_key",
			Message: "the usage endpoint takes the gateway's ADMIN_KEY: send Authorization: Bearer <ADMIN_KEY>"})
		return
	}
	s.admins.Succeed(ip)
	c.Next()
}
