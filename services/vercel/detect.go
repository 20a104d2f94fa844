package vercel

import (
	"bytes"
	"net/http"
	"regexp"
)

// Kind says what a refused answer means for the checkpoint.
type Kind uint8

const (
	// NotCheckpoint is any other refusal.
	NotCheckpoint Kind = iota
	// Challenged is the checkpoint itself (429 or 403 with
	// x-vercel-mitigated: challenge, a challenge token, or the
	// "Vercel Security Checkpoint" page). Token is set when the answer
	// carried one.
	Challenged
	// Denied is a bare 403 {"error":"Access denied"}: the checkpoint may
	// be behind it (the challenge then comes with the site's page), or
	// the bot check (x-is-human) refused the request.
	Denied
)

func (k Kind) String() string {
	switch k {
	case Challenged:
		return "challenge"
	case Denied:
		return "denied"
	}
	return "not a checkpoint"
}

// Verdict is what Inspect made of an answer.
type Verdict struct {
	Kind  Kind
	Token string
}

// Header names of the checkpoint.
const (
	HeaderMitigated = "X-Vercel-Mitigated"
	HeaderToken     = "X-Vercel-Challenge-Token"
	HeaderSolution  = "X-Vercel-Challenge-Solution"
	HeaderVersion   = "X-Vercel-Challenge-Version"
	// CookieName is the cookie a passed checkpoint sets.
	CookieName = "_vcrcs"
)

var (
	checkpointTitleRE = regexp.MustCompile(`(?i)vercel security checkpoint`)
	// The checkpoint page also holds its token in a script, quoted
	// either way.
	bodyTokenRE  = regexp.MustCompile(`_vcrct\s*=\s*(?:"([^"]+)"|'([^']+)')`)
	accessDenied = regexp.MustCompile(`(?i)^\s*\{\s*"error"\s*:\s*"access denied"\s*\}\s*$`)
)

// Inspect reads a non-200 answer (its status, headers and the start of
// its body) for the checkpoint.
func Inspect(status int, h http.Header, body []byte) Verdict {
	token := h.Get(HeaderToken)
	if token == "" {
		if m := bodyTokenRE.FindSubmatch(body); m != nil {
			token = string(m[1]) + string(m[2])
		}
	}
	switch {
	case token != "" || h.Get(HeaderMitigated) == "challenge" || checkpointTitleRE.Match(body):
		return Verdict{Kind: Challenged, Token: token}
	case status == http.StatusForbidden && accessDenied.Match(bytes.TrimSpace(body)):
		return Verdict{Kind: Denied}
	}
	return Verdict{Kind: NotCheckpoint}
}

// IsChallenge reports whether resp, judged by its headers alone, is the
// checkpoint: a refusal the gateway can pass, not a fault of the egress
// proxy it went through.
func IsChallenge(resp *http.Response) bool {
	return resp.Header.Get(HeaderToken) != "" || resp.Header.Get(HeaderMitigated) == "challenge"
}
