package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cursor2api/services/state"
	"cursor2api/utils"
)

// Stored is a kept response: the response object, and the conversation it
// ends (its input items, those of the responses before it, and its own
// output items), which previous_response_id continues.
type Stored struct {
	// Owner is the fingerprint of the client key that made the response
	// (usage.KeyID; "" with auth off). Get and Delete find it for that
	// owner only.
	Owner    string
	Response Response
	Items    []json.RawMessage
	// Output, when set, is Response.Output encoded already (a stream's
	// items, as its events carried them), which Put then reuses.
	Output []json.RawMessage
}

// Kept is a stored response as the store gives it back: the response
// object as the API shows it, and the conversation.
type Kept struct {
	// Owner is Stored.Owner; "" for a response kept by a gateway of
	// before owners, which only a gateway without API_KEY finds.
	Owner    string            `json:"owner,omitempty"`
	Response json.RawMessage   `json:"response"`
	Items    []json.RawMessage `json:"items"`
}

// StoreLimits bound a Store.
type StoreLimits struct {
	// Max is the number of responses kept (0 keeps none).
	Max int
	// MaxBytes caps the total size of the kept responses, as stored
	// (their JSON) (0: no cap).
	MaxBytes int64
	// TTL is how long a response is kept.
	TTL time.Duration
}

// Defaults of the store's limits, as config has them.
const (
	DefaultStoreMax      = 1000
	DefaultStoreMaxBytes = 256 << 20
	DefaultStoreTTL      = time.Hour
)

// DefaultStoreLimits are the limits config defaults to.
var DefaultStoreLimits = StoreLimits{Max: DefaultStoreMax, MaxBytes: DefaultStoreMaxBytes, TTL: DefaultStoreTTL}

// table is the state table of kept responses.
const table = "responses"

// Store keeps the last responses within its limits for
// previous_response_id, GET and DELETE, in the gateway's state store
// (memory, a file or a shared Redis). It is safe for concurrent use.
type Store struct {
	limits StoreLimits
	q      *state.Queue
}

// NewStore returns a store of responses on the state q writes to.
func NewStore(q *state.Queue, limits StoreLimits) *Store {
	return &Store{limits: limits, q: q}
}

// NewMemoryStore returns a store of responses in this process's memory
// on the clock now (nil: time.Now).
func NewMemoryStore(limits StoreLimits, now func() time.Time) *Store {
	return NewStore(state.NewQueue(state.NewMemory(now), 0, nil), limits)
}

// ErrUnavailable wraps the failures of the state store itself (as
// opposed to a response that is not kept).
var ErrUnavailable = errors.New("the state store (STATE_URL) did not answer")

func unavailable(err error) error { return fmt.Errorf("%w: %w", ErrUnavailable, err) }

// Put keeps a response, evicting the expired ones and then the oldest
// until the store is within its limits. A response larger than MaxBytes
// alone is not kept. When the store fails the write is queued for a
// retry and the error returned.
func (s *Store) Put(ctx context.Context, id string, st Stored) error {
	if s.limits.Max <= 0 {
		return nil
	}
	b, err := encodeKept(st)
	if err != nil {
		return fmt.Errorf("encoding response %s: %w", id, err)
	}
	if s.limits.MaxBytes > 0 && int64(len(b)) > s.limits.MaxBytes {
		return nil
	}
	lim := state.Limits{TTL: s.limits.TTL, Max: s.limits.Max, MaxBytes: s.limits.MaxBytes}
	store := s.q.Store()
	if err := s.q.Write(ctx, "response "+id, func(ctx context.Context) error { return store.Put(ctx, table, id, b, lim) }); err != nil {
		return unavailable(err)
	}
	return nil
}

// encodeKept encodes a response to keep as Kept, putting together what
// is encoded already rather than encoding it again: a stream's output
// items, and the conversation's items, which are JSON as they came (each
// checked by its decoder) and not compacted again.
func encodeKept(st Stored) ([]byte, error) {
	var resp [][]byte // the response object, in pieces
	if st.Output != nil && st.Response.IncompleteDetails == nil {
		shell := st.Response
		shell.Output = nil
		pieces, ok, err := withOutput(shell, st.Output)
		if err != nil {
			return nil, err
		}
		if ok {
			resp = pieces
		}
	}
	if resp == nil {
		whole, err := json.Marshal(st.Response)
		if err != nil {
			return nil, err
		}
		resp = [][]byte{whole}
	}
	size := 32
	for _, p := range resp {
		size += len(p)
	}
	for _, it := range st.Items {
		size += len(it) + 1
	}
	b := make([]byte, 0, size+len(st.Owner)+16)
	b = append(b, '{')
	if st.Owner != "" {
		b = append(b, `"owner":`...)
		b = utils.AppendJSONString(b, st.Owner)
		b = append(b, ',')
	}
	b = append(b, `"response":`...)
	for _, p := range resp {
		b = append(b, p...)
	}
	b = append(b, `,"items":[`...)
	for i, it := range st.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, "]}"...), nil
}

// Get returns a kept response of owner that has not expired; ok is false
// when there is none, or it is another owner's (as if there were none),
// and err is set (wrapping ErrUnavailable) when the state store failed.
func (s *Store) Get(ctx context.Context, id, owner string) (st Kept, ok bool, err error) {
	var b []byte
	err = s.q.Read(ctx, func(ctx context.Context) error {
		var err error
		b, err = s.q.Store().Get(ctx, table, id)
		return err
	})
	if errors.Is(err, state.ErrNotFound) {
		return Kept{}, false, nil
	}
	if err != nil {
		return Kept{}, false, unavailable(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return Kept{}, false, fmt.Errorf("decoding kept response %s: %w", id, err)
	}
	if st.Owner != owner {
		return Kept{}, false, nil
	}
	return st, true, nil
}

// Delete forgets a response of owner; it reports whether one was kept
// (an expired one, or another owner's, was not, and is left alone).
func (s *Store) Delete(ctx context.Context, id, owner string) (bool, error) {
	// Response ids are random and never reused, so the owner read here
	// is still the owner when the delete lands.
	if _, ok, err := s.Get(ctx, id, owner); err != nil || !ok {
		return false, err
	}
	var kept bool
	err := s.q.Read(ctx, func(ctx context.Context) error {
		var err error
		kept, err = s.q.Store().Delete(ctx, table, id)
		return err
	})
	if err != nil {
		return false, unavailable(err)
	}
	return kept, nil
}
