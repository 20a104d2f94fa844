package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/services/state"
	"cursor2api/services/state/redistest"
)

// clock is a settable time for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestStore(max int, ttl time.Duration) (*Store, *clock) {
	return newTestStoreLimits(StoreLimits{Max: max, TTL: ttl})
}

func newTestStoreLimits(l StoreLimits) (*Store, *clock) {
	c := &clock{t: time.Unix(1700000000, 0)}
	return NewMemoryStore(l, c.now), c
}

func stored(id string) Stored {
	return Stored{Response: Response{ID: id}, Items: []json.RawMessage{json.RawMessage(`{"role":"user","content":"` + id + `"}`)}}
}

func idOf(t *testing.T, k Kept) string {
	t.Helper()
	var r struct{ ID string }
	require.NoError(t, json.Unmarshal(k.Response, &r))
	return r.ID
}

func has(t *testing.T, s *Store, id string) bool {
	t.Helper()
	_, ok, err := s.Get(context.Background(), id, "")
	require.NoError(t, err)
	return ok
}

func put(t *testing.T, s *Store, id string, st Stored) {
	t.Helper()
	require.NoError(t, s.Put(context.Background(), id, st))
}

func TestStoreKeepsTheLastN(t *testing.T) {
	s, c := newTestStore(3, time.Hour)
	for i := range 5 {
		put(t, s, fmt.Sprintf("r%d", i), stored(fmt.Sprintf("r%d", i)))
		c.add(time.Second)
	}
	for i, want := range []bool{false, false, true, true, true} {
		got, ok, err := s.Get(context.Background(), fmt.Sprintf("r%d", i), "")
		require.NoError(t, err)
		assert.Equal(t, want, ok, "r%d", i)
		if ok {
			assert.Equal(t, fmt.Sprintf("r%d", i), idOf(t, got))
			assert.Equal(t, stored(fmt.Sprintf("r%d", i)).Items, got.Items)
		}
	}
}

func TestStoreExpires(t *testing.T) {
	s, c := newTestStore(10, time.Minute)
	put(t, s, "old", stored("old"))
	c.add(40 * time.Second)
	put(t, s, "new", stored("new"))
	c.add(30 * time.Second) // old is 70s old, new 30s
	assert.False(t, has(t, s, "old"), "expired")
	assert.True(t, has(t, s, "new"))
	c.add(time.Minute)
	kept, err := s.Delete(context.Background(), "new", "")
	require.NoError(t, err)
	assert.False(t, kept, "an expired one is not deleted: it was gone")
}

func TestStoreDelete(t *testing.T) {
	s, _ := newTestStore(10, time.Minute)
	put(t, s, "a", stored("a"))
	kept, err := s.Delete(context.Background(), "a", "")
	require.NoError(t, err)
	assert.True(t, kept)
	kept, err = s.Delete(context.Background(), "a", "")
	require.NoError(t, err)
	assert.False(t, kept)
	assert.False(t, has(t, s, "a"))
}

func TestStoreOfNoneKeepsNothing(t *testing.T) {
	s, _ := newTestStore(0, time.Minute)
	put(t, s, "a", stored("a"))
	assert.False(t, has(t, s, "a"))
}

func TestStoreReplace(t *testing.T) {
	s, _ := newTestStore(2, time.Minute)
	put(t, s, "a", stored("a"))
	put(t, s, "a", Stored{Response: Response{ID: "a", Status: StatusCompleted}})
	put(t, s, "b", stored("b"))
	got, ok, err := s.Get(context.Background(), "a", "")
	require.NoError(t, err)
	require.True(t, ok, "a replaced response counts once")
	var r struct{ Status string }
	require.NoError(t, json.Unmarshal(got.Response, &r))
	assert.Equal(t, StatusCompleted, r.Status)
}

func TestStoreConcurrent(t *testing.T) {
	s, _ := newTestStore(50, time.Minute)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("g%d-%d", g, i)
				assert.NoError(t, s.Put(context.Background(), id, stored(id)))
				_, _, err := s.Get(context.Background(), id, "")
				assert.NoError(t, err)
				if i%3 == 0 {
					_, err := s.Delete(context.Background(), id, "")
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for g := range 8 {
		for i := range 200 {
			if has(t, s, fmt.Sprintf("g%d-%d", g, i)) {
				n++
			}
		}
	}
	assert.LessOrEqual(t, n, 50)
	assert.Positive(t, n)
}

func TestStoreByteBudget(t *testing.T) {
	big := func(id string, n int) Stored {
		return Stored{Response: Response{ID: id}, Items: []json.RawMessage{json.RawMessage(`"` + strings.Repeat("x", n) + `"`)}}
	}
	b, err := json.Marshal(big("r0", 10_000))
	require.NoError(t, err)
	one := int64(len(b))
	s, _ := newTestStoreLimits(StoreLimits{Max: 100, MaxBytes: 3 * one, TTL: time.Hour})
	for i := range 5 {
		put(t, s, fmt.Sprintf("r%d", i), big(fmt.Sprintf("r%d", i), 10_000))
	}
	for i, want := range []bool{false, false, true, true, true} {
		assert.Equal(t, want, has(t, s, fmt.Sprintf("r%d", i)), "the oldest go first to stay within the bytes: r%d", i)
	}
	put(t, s, "huge", big("huge", 40_000))
	assert.False(t, has(t, s, "huge"), "a response over the whole budget is not kept")
	assert.True(t, has(t, s, "r2"), "and evicts nothing")
}

// TestStoreSharedThroughRedis: two stores on one Redis are two replicas;
// what one keeps the other reads and deletes, within the same limits.
func TestStoreSharedThroughRedis(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *Store {
		st, err := state.Open(t.Context(), state.Options{URL: srv.URL()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return NewStore(state.NewQueue(st, 0, nil), StoreLimits{Max: 2, TTL: time.Hour})
	}
	a, b := open(), open()
	put(t, a, "r1", stored("r1"))
	got, ok, err := b.Get(t.Context(), "r1", "")
	require.NoError(t, err)
	require.True(t, ok)
	want, err := json.Marshal(stored("r1").Response)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got.Response))
	assert.Equal(t, stored("r1").Items, got.Items)
	put(t, b, "r2", stored("r2"))
	put(t, b, "r3", stored("r3"))
	assert.False(t, has(t, a, "r1"), "RESPONSES_STORE_MAX holds across replicas")
	kept, err := a.Delete(t.Context(), "r3", "")
	require.NoError(t, err)
	assert.True(t, kept)
	assert.False(t, has(t, b, "r3"))

	srv.Stop()
	_, _, err = a.Get(t.Context(), "r2", "")
	require.ErrorIs(t, err, ErrUnavailable, "a lost store is an error, not a missing response")
}

// TestEncodeKeptReusesTheStreamsItems checks that a streamed response is
// kept as the same JSON whether its output items are reused from the
// stream's events or encoded again, for a finished answer and for one cut
// at max_output_tokens (incomplete_details set).
func TestEncodeKeptReusesTheStreamsItems(t *testing.T) {
	for name, finish := range map[string]models.FinishReason{"stop": models.FinishStop, "tool calls": models.FinishToolCalls, "length": models.FinishLength} {
		t.Run(name, func(t *testing.T) {
			w, _ := newTestWriter(nil)
			require.NoError(t, w.Reasoning("thinking"))
			require.NoError(t, w.Text("héllo \"world\" <b>"))
			require.NoError(t, w.ToolCallStart("call_1", "read"))
			require.NoError(t, w.ToolCallArguments(`{"path":"a.go"}`))
			require.NoError(t, w.ToolCallEnd(true))
			require.NoError(t, w.Finish(finish, models.Usage{InputTokens: 3, OutputTokens: 5, TotalTokens: 8}))
			input := []json.RawMessage{json.RawMessage(`{"role":"user", "content":"hi"}`)}
			items := append(input, w.OutputItems()...)

			reused, err := encodeKept(Stored{Response: w.Response(), Items: items, Output: w.OutputItems()})
			require.NoError(t, err)
			again, err := encodeKept(Stored{Response: w.Response(), Items: items})
			require.NoError(t, err)
			require.True(t, json.Valid(reused), "%s", reused)
			assert.JSONEq(t, string(again), string(reused))

			var kept Kept
			require.NoError(t, json.Unmarshal(reused, &kept))
			assert.Len(t, kept.Items, len(items))
			assert.Equal(t, "resp_test", gjson.GetBytes(kept.Response, "id").String())
			assert.Len(t, gjson.GetBytes(kept.Response, "output").Array(), len(w.OutputItems()))
		})
	}
}

// TestStoreOwners: a response is found, and deleted, by its owner's key
// only; another key finds nothing and deletes nothing. A response kept
// by a gateway of before owners (none in its JSON) is found only without
// a key, as a gateway without API_KEY asks.
func TestStoreOwners(t *testing.T) {
	s, _ := newTestStore(10, time.Hour)
	keyA := Stored{Owner: "key_aaaaaaaa", Response: Response{ID: "a"}}
	put(t, s, "a", keyA)
	put(t, s, "open", stored("open"))
	// As a gateway of before owners wrote it: no owner field at all.
	old, err := json.Marshal(map[string]any{"response": map[string]any{"id": "old"}, "items": []any{}})
	require.NoError(t, err)
	require.NoError(t, s.q.Store().Put(t.Context(), table, "old", old, state.Limits{Max: 10, TTL: time.Hour}))

	for _, tc := range []struct {
		id, owner string
		found     bool
	}{
		{"a", "key_aaaaaaaa", true},
		{"a", "key_bbbbbbbb", false},
		{"a", "", false},
		{"open", "", true},
		{"open", "key_aaaaaaaa", false},
		{"old", "", true},
		{"old", "key_aaaaaaaa", false},
	} {
		got, ok, err := s.Get(t.Context(), tc.id, tc.owner)
		require.NoError(t, err)
		assert.Equal(t, tc.found, ok, "%s read by %q", tc.id, tc.owner)
		if ok {
			assert.Equal(t, tc.id, idOf(t, got))
			assert.Equal(t, tc.owner, got.Owner)
		}
		if !tc.found {
			kept, err := s.Delete(t.Context(), tc.id, tc.owner)
			require.NoError(t, err)
			assert.False(t, kept, "%s deleted by %q", tc.id, tc.owner)
		}
	}
	for id, owner := range map[string]string{"a": "key_aaaaaaaa", "open": "", "old": ""} {
		_, ok, err := s.Get(t.Context(), id, owner)
		require.NoError(t, err)
		assert.True(t, ok, "%s outlived the deletes of other keys", id)
	}
	kept, err := s.Delete(t.Context(), "a", "key_aaaaaaaa")
	require.NoError(t, err)
	assert.True(t, kept, "the owner deletes it")
	assert.False(t, has(t, s, "a"))
}
