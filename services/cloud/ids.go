package cloud

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// IDPrefix starts every cloud response id, so that the Responses door
// tells them from the ids of its own store without decoding.
const IDPrefix = "resp_cloud_"

// Ref is what a cloud response id says: the agent, the run, the model the
// client asked for and when the response was created (Unix seconds); for
// a follow-up, also the run, model and time of the response it followed
// (on the same agent), so that its previous_response_id can be told.
type Ref struct {
	AgentID, RunID, Model string
	Created               int64
	// Owner is the fingerprint of the client key that launched the run
	// ("" with auth off). It is not in the id: it keys the id's HMAC, so
	// that the id decodes for its owner only, and another key's request
	// finds no such response.
	Owner string

	PrevRunID, PrevModel string
	PrevCreated          int64
}

// Prev is the reference of the response r followed, if any.
func (r Ref) Prev() (Ref, bool) {
	if r.PrevRunID == "" {
		return Ref{}, false
	}
	return Ref{AgentID: r.AgentID, RunID: r.PrevRunID, Model: r.PrevModel, Created: r.PrevCreated, Owner: r.Owner}, true
}

// IDs signs and reads cloud response ids. An id carries its agent and run
// ids and an HMAC over them, so any replica with the same secret answers
// for it without shared storage, and a forged or foreign id reads as none.
type IDs struct {
	key []byte
}

// NewIDs derives the signing key from secret (the gateway's API keys and
// the Cursor key, or CLOUD_ID_SECRET): replicas of one deployment agree,
// another deployment's ids do not verify.
func NewIDs(secret string) *IDs {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("cursor2api cloud response ids v1"))
	return &IDs{key: m.Sum(nil)}
}

// macLen is how much of the HMAC an id keeps: 128 bits.
const macLen = 16

// Encode returns the response id of r.
func (k *IDs) Encode(r Ref) string {
	payload := r.AgentID + "\x00" + r.RunID + "\x00" + r.Model + "\x00" + strconv.FormatInt(r.Created, 10)
	if r.PrevRunID != "" {
		payload += "\x00" + r.PrevRunID + "\x00" + r.PrevModel + "\x00" + strconv.FormatInt(r.PrevCreated, 10)
	}
	return IDPrefix + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(k.mac(r.Owner, payload))
}

// mac signs payload for owner. Each owner has a key of its own, derived
// from the deployment's, so no payload of one owner's signs for another;
// the ids of no owner (auth off) are signed as ids were before owners.
func (k *IDs) mac(owner, payload string) []byte {
	key := k.key
	if owner != "" {
		m := hmac.New(sha256.New, k.key)
		m.Write([]byte("owner\x00" + owner))
		key = m.Sum(nil)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)[:macLen]
}

// Decode reads an id Encode made with the same key for the same owner
// (Ref.Owner); ok is false for anything else, another owner's id
// included.
func (k *IDs) Decode(id, owner string) (Ref, bool) {
	rest, ok := strings.CutPrefix(id, IDPrefix)
	if !ok || len(rest) > 1024 {
		return Ref{}, false
	}
	p64, m64, ok := strings.Cut(rest, ".")
	if !ok {
		return Ref{}, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, k.mac(owner, string(payload))) {
		return Ref{}, false
	}
	f := strings.Split(string(payload), "\x00")
	if (len(f) != 4 && len(f) != 7) || f[0] == "" || f[1] == "" {
		return Ref{}, false
	}
	created, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Ref{}, false
	}
	r := Ref{AgentID: f[0], RunID: f[1], Model: f[2], Created: created, Owner: owner}
	if len(f) == 7 {
		if r.PrevCreated, err = strconv.ParseInt(f[6], 10, 64); err != nil || f[4] == "" {
			return Ref{}, false
		}
		r.PrevRunID, r.PrevModel = f[4], f[5]
	}
	return r, true
}

// IsID reports whether id has the form of a cloud response id (signed or
// not).
func IsID(id string) bool { return strings.HasPrefix(id, IDPrefix) }
