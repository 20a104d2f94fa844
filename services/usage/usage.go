// Package usage is the ledger of who used what, per hour, client key, door,
// model and back door, kept in the state store to survive restarts and add
// up across replicas. Counters are written in batches, off any answer's
// path; client keys are kept only as a short hash.
package usage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"cursor2api/services/state"
	"cursor2api/utils"
)

// DefaultRetention is how long records are kept (USAGE_RETENTION).
const DefaultRetention = 90 * 24 * time.Hour

// maxPending bounds the records waiting for a flush (distinct hours,
// keys, doors, models and back doors); past it new ones are dropped and
// counted.
const maxPending = 10_000

// table is the state table of the ledger: a key per hour, a counter per
// record and metric.
const table = "usage"

// Record is one finished request.
type Record struct {
	Time time.Time
	// KeyID is the client key's KeyID ("" with no API_KEY).
	KeyID string
	// KeyName is the name API_KEYS_FILE gives the key when the request
	// is made ("" for a key of API_KEY), kept so that a key renamed or
	// removed later keeps the name it was used under.
	KeyName string
	Door    string
	Model   string
	Backend string
	Usage   Counts
}

// Counts are what a record adds up.
type Counts struct {
	Requests     int64 `json:"num_model_requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"input_cached_tokens"`
	Errors       int64 `json:"num_errors"`
}

func (c *Counts) add(o Counts) {
	c.Requests += o.Requests
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.CachedTokens += o.CachedTokens
	c.Errors += o.Errors
}

// The metrics of a record, as counter names.
var metrics = []struct {
	name string
	of   func(*Counts) *int64
}{
	{"requests", func(c *Counts) *int64 { return &c.Requests }},
	{"input", func(c *Counts) *int64 { return &c.InputTokens }},
	{"output", func(c *Counts) *int64 { return &c.OutputTokens }},
	{"cached", func(c *Counts) *int64 { return &c.CachedTokens }},
	{"errors", func(c *Counts) *int64 { return &c.Errors }},
}

// KeyID is the id a client key is kept under: the first 8 hex digits of
// its SHA-256, enough to tell a team's keys apart and not to find them.
func KeyID(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return "key_" + hex.EncodeToString(sum[:4])
}

// dim is what a record is counted by.
type dim struct {
	hour                            int64 // unix seconds, on the hour
	key, door, model, backend, name string
}

// sep joins a record's dimensions and metric into a counter name; it is
// a control character no model name, door or key name holds (clientkeys
// refuses such names, and clean keeps it out of the rest).
const sep = "\x1f"

// field is the counter name of d's metric: key, door, model, back door,
// key name and metric. Records written before key names were kept have
// five parts, with no name (see parseField).
func (d dim) field(metric string) string {
	return strings.Join([]string{d.key, d.door, d.model, d.backend, d.name, metric}, sep)
}

// clean keeps the separator out of a dimension, so that no value can
// shift the others of its counter.
func clean(s string) string {
	if !strings.Contains(s, sep) {
		return s
	}
	return strings.ReplaceAll(s, sep, "_")
}

// parsed is a counter name taken apart; the strings share its memory.
type parsed struct {
	key, door, model, backend, name string
}

// parseField takes a counter name apart without allocating: the
// dimensions (five parts, as before key names were kept, or six) and
// the metric's index in metrics, or ok false for a name of neither shape.
func parseField(f string) (p parsed, metric int, ok bool) {
	var parts [6]string
	n, from := 0, 0
	// One pass over the bytes: the parts are short, so this beats a
	// call to strings.Index per part.
	for i := 0; i < len(f); i++ {
		if f[i] != sep[0] {
			continue
		}
		if n == len(parts)-1 {
			return p, 0, false // a seventh part
		}
		parts[n], from = f[from:i], i+1
		n++
	}
	parts[n] = f[from:]
	n++
	if n < 5 {
		return p, 0, false
	}
	if metric = metricIndex(parts[n-1]); metric < 0 {
		return p, 0, false
	}
	p = parsed{key: parts[0], door: parts[1], model: parts[2], backend: parts[3]}
	if n == 6 {
		p.name = parts[4]
	}
	return p, metric, true
}

func metricIndex(name string) int {
	for i, m := range metrics {
		if m.name == name {
			return i
		}
	}
	return -1
}

func hourKey(hour int64) string { return time.Unix(hour, 0).UTC().Format("2006010215") }

// Ledger gathers records and writes them to the state store.
type Ledger struct {
	q         *state.Queue
	retention time.Duration
	logger    *slog.Logger

	mu      sync.Mutex
	pending map[dim]Counts
	dropped uint64
}

// New returns a ledger on q's store that keeps records for retention
// (0: DefaultRetention).
func New(q *state.Queue, retention time.Duration, logger *slog.Logger) *Ledger {
	retention = utils.Default(retention, DefaultRetention)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Ledger{q: q, retention: retention, logger: logger, pending: map[dim]Counts{}}
}

// Add notes a finished request; it is written at the next Flush.
func (l *Ledger) Add(r Record) {
	d := dim{hour: r.Time.Unix() / 3600 * 3600, key: clean(r.KeyID), door: clean(r.Door), model: clean(r.Model),
		backend: clean(r.Backend), name: clean(r.KeyName)}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.pending[d]
	if !ok && len(l.pending) >= maxPending {
		l.dropped++
		return
	}
	c.add(r.Usage)
	l.pending[d] = c
}

// Dropped counts the records lost to a full batch.
func (l *Ledger) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Flush writes the records gathered since the last flush, one write per
// hour. A write that fails is queued by the state queue for a retry.
func (l *Ledger) Flush(ctx context.Context) {
	l.mu.Lock()
	batch := l.pending
	l.pending = map[dim]Counts{}
	l.mu.Unlock()
	byHour := map[int64]map[string]int64{}
	for d, c := range batch {
		fields := byHour[d.hour]
		if fields == nil {
			fields = map[string]int64{}
			byHour[d.hour] = fields
		}
		for _, m := range metrics {
			if n := *m.of(&c); n != 0 {
				fields[d.field(m.name)] += n
			}
		}
	}
	store := l.q.Store()
	for hour, fields := range byHour {
		// The hour's counters live until retention has passed since its end.
		ttl := time.Until(time.Unix(hour, 0).Add(time.Hour + l.retention))
		if ttl <= 0 {
			continue
		}
		key := hourKey(hour)
		_ = l.q.Write(ctx, "usage "+key, func(ctx context.Context) error { return store.Add(ctx, table, key, fields, ttl) })
	}
}

// Run flushes every interval until ctx ends, then once more.
func (l *Ledger) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.Flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			l.Flush(ctx)
		}
	}
}

// Width is a bucket's width: an hour or a day.
type Width time.Duration

// The widths of the usage endpoint's bucket_width.
const (
	Hour = Width(time.Hour)
	Day  = Width(24 * time.Hour)
)

// Query asks for the records of [Start, End) in buckets of Width, grouped
// by the model, the client key and/or the front door.
type Query struct {
	Start, End time.Time
	Width      Width
	ByModel    bool
	ByKey      bool
	ByDoor     bool
}

// Group is the usage of one group of one bucket.
type Group struct {
	Model string // set when grouped by model
	KeyID string // set when grouped by key
	// KeyName is the name the key's records were written under (set when
	// grouped by key; "" for records older than key names, or a key of
	// API_KEY). Were it renamed within the bucket: the name of its
	// latest hour.
	KeyName string
	Door    string // set when grouped by door
	Counts  Counts
}

// Bucket is the usage of one interval.
type Bucket struct {
	Start, End time.Time
	Groups     []Group
}

// groupKey is what a bucket's groups are told apart by.
type groupKey struct{ model, key, door string }

// readChunk is how many hours Query reads from the store at once: one
// round trip on Redis, and a bound on what is held before it is summed.
const readChunk = 24

// Query reads the records of q from the store. Buckets start at Start
// (on the hour) and follow each other by Width; each holds its groups,
// in a stable order.
func (l *Ledger) Query(ctx context.Context, q Query) ([]Bucket, error) {
	start := q.Start.Truncate(time.Hour)
	var out []Bucket
	// Every hour to read, with its bucket.
	type slot struct {
		bucket int
		hour   int64
	}
	var slots []slot
	for bs := start; bs.Before(q.End); bs = bs.Add(time.Duration(q.Width)) {
		be := bs.Add(time.Duration(q.Width))
		out = append(out, Bucket{Start: bs, End: be})
		for h := bs; h.Before(be) && h.Before(q.End); h = h.Add(time.Hour) {
			slots = append(slots, slot{len(out) - 1, h.Unix()})
		}
	}
	a := aggregate{q: q, index: map[groupKey]int{}}
	keys := make([]string, 0, readChunk)
	for i := 0; i < len(slots); i += readChunk {
		chunk := slots[i:min(i+readChunk, len(slots))]
		keys = keys[:0]
		for _, s := range chunk {
			keys = append(keys, hourKey(s.hour))
		}
		var read []map[string]int64
		err := l.q.Read(ctx, func(ctx context.Context) error {
			var err error
			read, err = state.CountersOf(ctx, l.q.Store(), table, keys)
			return err
		})
		if err != nil {
			return nil, err
		}
		for j, fields := range read {
			if b := &out[chunk[j].bucket]; b != a.b {
				a.start(b)
			}
			a.add(fields, chunk[j].hour)
		}
	}
	a.start(nil)
	return out, nil
}

// aggregate sums the hours of one bucket into its groups.
type aggregate struct {
	q        Query
	b        *Bucket
	index    map[groupKey]int
	nameHour []int64 // the hour each group's KeyName was taken from
}

// start ends the bucket summed so far, sorting its groups, and starts b.
func (a *aggregate) start(b *Bucket) {
	if a.b != nil {
		sortGroups(a.b.Groups)
	}
	a.b = b
	clear(a.index)
	a.nameHour = a.nameHour[:0]
}

// add sums an hour's counters into the bucket's groups.
func (a *aggregate) add(fields map[string]int64, hour int64) {
	for f, n := range fields {
		p, m, ok := parseField(f)
		if !ok {
			continue
		}
		var k groupKey
		if a.q.ByKey {
			k.key = p.key
		}
		if a.q.ByModel {
			k.model = p.model
		}
		if a.q.ByDoor {
			k.door = p.door
		}
		i, seen := a.index[k]
		if !seen {
			i = len(a.b.Groups)
			a.index[k] = i
			a.b.Groups = append(a.b.Groups, Group{Model: k.model, KeyID: k.key, Door: k.door})
			a.nameHour = append(a.nameHour, 0)
		}
		g := &a.b.Groups[i]
		*metrics[m].of(&g.Counts) += n
		// The latest hour's name; within an hour, any one the same way
		// each time.
		if a.q.ByKey && p.name != "" && (a.nameHour[i] < hour || (a.nameHour[i] == hour && p.name > g.KeyName)) {
			g.KeyName, a.nameHour[i] = p.name, hour
		}
	}
}

func sortGroups(gs []Group) {
	slices.SortFunc(gs, func(a, b Group) int {
		// Not cmp.Or: it would compare all three every time.
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		if c := strings.Compare(a.KeyID, b.KeyID); c != 0 {
			return c
		}
		return strings.Compare(a.Door, b.Door)
	})
}
