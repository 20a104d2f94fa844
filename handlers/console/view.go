package console

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"cursor2api/services/readiness"
	"cursor2api/services/usage"
)

// settle is how long after its end an hour of the ledger can still grow
// (replicas flush their batches every few seconds); older hours are read
// once and kept.
const settle = 10 * time.Minute

// trafficCache keeps the settled hours of the last 30 days, grouped by
// key, model and door, so a page reads only the recent hours again. Names
// are interned: a page sums 30 days of groups by index, not by string.
type trafficCache struct {
	mu    sync.Mutex
	hours map[int64][]group
	ids   map[string]int32
	names []string
}

// group is a usage.Group with its names interned; name is the key's name
// as the ledger kept it.
type group struct {
	key, model, door, name int32
	c                      usage.Counts
}

func (tc *trafficCache) intern(name string) int32 {
	id, ok := tc.ids[name]
	if !ok {
		id = int32(len(tc.names))
		tc.ids[name] = id
		tc.names = append(tc.names, name)
	}
	return id
}

// window is the span of hours the traffic panels read at now: the 30
// days up to the end of the current hour.
func window(now time.Time) (from, to time.Time) {
	now = now.UTC()
	return now.Truncate(24*time.Hour).AddDate(0, 0, -29), now.Truncate(time.Hour).Add(time.Hour)
}

// warmChunk is how many hours are read from the ledger at a time (one
// round trip on Redis), and how many Run reads holding the cache: a page
// that comes meanwhile waits for that many at most.
const warmChunk = 24

// Run fills the cache of settled hours (the last 30 days) in the
// background, so a replica's first page does not read them all; it
// returns when they are read or ctx ends. A page that comes meanwhile
// reads the hours not cached yet itself, and Run then skips them: no
// hour is read twice.
func (cs *Console) Run(ctx context.Context) {
	if cs.o.Usage == nil {
		return
	}
	now := cs.o.Now()
	from, _ := window(now)
	// Up to the first hour not settled, as fill tells them: the later
	// ones a page reads anyway.
	to := from
	for to.Add(time.Hour + settle).Before(now) {
		to = to.Add(time.Hour)
	}
	start := time.Now()
	for h := from; h.Before(to); h = h.Add(warmChunk * time.Hour) {
		end := h.Add(warmChunk * time.Hour)
		if end.After(to) {
			end = to
		}
		if _, err := cs.fill(ctx, from, h, end, nil); err != nil {
			if ctx.Err() == nil {
				cs.o.Logger.Warn("console: reading the usage ledger ahead of the first page", "error", err)
			}
			return
		}
	}
	cs.o.Logger.Debug("console: traffic of 30 days read ahead of the first page", "took", time.Since(start).Round(time.Millisecond))
}

// hoursOf returns the groups of each hour in [from, to), from the cache
// or the ledger, and the names their indexes stand for.
func (cs *Console) hoursOf(ctx context.Context, from, to time.Time) (map[int64][]group, []string, error) {
	out := make(map[int64][]group, int(to.Sub(from)/time.Hour)+1)
	names, err := cs.fill(ctx, from, from, to, out)
	return out, names, err
}

// fill reads the hours of [from, to) not cached from the ledger, caching
// the settled ones, and puts each hour's groups in out (when not nil),
// returning the names their indexes stand for then. The cache keeps no
// hour before keep, and holds its lock throughout.
func (cs *Console) fill(ctx context.Context, keep, from, to time.Time, out map[int64][]group) ([]string, error) {
	tc := cs.traffic
	now := cs.o.Now()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for h := range tc.hours {
		if h < keep.Unix() {
			delete(tc.hours, h) // past the window: the map stays bounded
		}
	}
	if len(tc.names) > 100_000 {
		// names of keys and models long gone: start again
		clear(tc.hours)
		clear(tc.ids)
		tc.names = tc.names[:0]
	}
	// The hours not cached are read a run at a time, up to a day: one
	// round trip on Redis.
	var run []time.Time
	read := func() error {
		if len(run) == 0 {
			return nil
		}
		defer func() { run = run[:0] }()
		if err := ctx.Err(); err != nil {
			return err
		}
		first, last := run[0], run[len(run)-1]
		bs, err := cs.o.Usage.Query(ctx, usage.Query{Start: first, End: last.Add(time.Hour), Width: usage.Hour, ByKey: true, ByModel: true, ByDoor: true})
		if err != nil {
			return fmt.Errorf("usage of %s to %s: %w", first.Format(time.RFC3339), last.Add(time.Hour).Format(time.RFC3339), err)
		}
		for _, b := range bs {
			gs := make([]group, 0, len(b.Groups))
			for _, g := range b.Groups {
				gs = append(gs, group{tc.intern(g.KeyID), tc.intern(g.Model), tc.intern(g.Door), tc.intern(g.KeyName), g.Counts})
			}
			if out != nil {
				out[b.Start.Unix()] = gs
			}
			if b.End.Add(settle).Before(now) {
				tc.hours[b.Start.Unix()] = gs
			}
		}
		return nil
	}
	for h := from; h.Before(to); h = h.Add(time.Hour) {
		if gs, ok := tc.hours[h.Unix()]; ok {
			if err := read(); err != nil {
				return nil, err
			}
			if out != nil {
				out[h.Unix()] = gs
			}
			continue
		}
		if run = append(run, h); len(run) == warmChunk {
			if err := read(); err != nil {
				return nil, err
			}
		}
	}
	if err := read(); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	return slices.Clone(tc.names), nil
}

// Row is a line of a usage table.
type Row struct {
	Name   string
	Label  string // a key's name, when known: the keys file's, else the ledger's
	Day    usage.Counts
	Month  usage.Counts
	Limits []Limit
}

// Point is a bucket of a chart.
type Point struct {
	Start  time.Time
	Label  string
	Counts usage.Counts
}

// View is what the page shows.
type View struct {
	Now       time.Time
	Version   string
	Backend   string
	Uptime    string
	Health    *readiness.Report
	Hourly    []Point
	Daily     []Point
	HourChart Chart
	DayChart  Chart
	Day       usage.Counts
	Month     usage.Counts
	Keys      []Row
	Models    []Row
	Doors     []Row
	Errors    []ErrorEntry
	Settings  []Setting
	UsageErr  string
}

func (cs *Console) view(ctx context.Context) (View, error) {
	now := cs.o.Now().UTC()
	v := View{Now: now, Version: cs.o.Version, Backend: cs.o.Backend, Uptime: now.Sub(cs.o.Started).Round(time.Second).String(), Settings: cs.o.Settings}
	if cs.o.Ready != nil {
		r := cs.o.Ready(ctx)
		v.Health = &r
	}
	if cs.o.Errors != nil {
		v.Errors = cs.o.Errors.List()
	}
	var err error
	if cs.o.Usage != nil {
		err = cs.traffic24And30(ctx, now, &v)
		if err != nil {
			v.UsageErr = "the usage ledger could not be read; the gateway's log says why"
		}
	}
	cs.addKeys(&v)
	return v, err
}

func (cs *Console) traffic24And30(ctx context.Context, now time.Time, v *View) error {
	hourStart := now.Truncate(time.Hour).Add(-23 * time.Hour)
	dayStart, end := window(now)
	hours, names, err := cs.hoursOf(ctx, dayStart, end)
	if err != nil {
		return err
	}
	// Rows by interned name, one table per kind.
	keys, models, doors := make([]Row, len(names)), make([]Row, len(names)), make([]Row, len(names))
	for i := range 24 {
		h := hourStart.Add(time.Duration(i) * time.Hour)
		v.Hourly = append(v.Hourly, Point{Start: h, Label: h.Format("15:00")})
	}
	for i := range 30 {
		d := dayStart.AddDate(0, 0, i)
		v.Daily = append(v.Daily, Point{Start: d, Label: d.Format("01-02")})
	}
	// Each key's name in the ledger: that of its latest hour.
	named := make([]int64, len(names))
	for h, gs := range hours {
		t := time.Unix(h, 0).UTC()
		inDay := !t.Before(hourStart)
		di := int(t.Sub(dayStart) / (24 * time.Hour))
		for i := range gs {
			g := &gs[i]
			if di >= 0 && di < len(v.Daily) {
				addCounts(&v.Daily[di].Counts, g.c)
			}
			addCounts(&v.Month, g.c)
			addCounts(&keys[g.key].Month, g.c)
			if n := names[g.name]; n != "" && (h > named[g.key] || (h == named[g.key] && n > keys[g.key].Label)) {
				keys[g.key].Label, named[g.key] = names[g.name], h
			}
			addCounts(&models[g.model].Month, g.c)
			addCounts(&doors[g.door].Month, g.c)
			if inDay {
				addCounts(&v.Hourly[int(t.Sub(hourStart)/time.Hour)].Counts, g.c)
				addCounts(&v.Day, g.c)
				addCounts(&keys[g.key].Day, g.c)
				addCounts(&models[g.model].Day, g.c)
				addCounts(&doors[g.door].Day, g.c)
			}
		}
	}
	v.Keys, v.Models, v.Doors = sorted(keys, names), sorted(models, names), sorted(doors, names)
	v.HourChart = chartOf(v.Hourly, 3)
	v.DayChart = chartOf(v.Daily, 5)
	return nil
}

// addKeys lists the configured keys the ledger has not seen, and the
// names and limits the Keys hook tells.
func (cs *Console) addKeys(v *View) {
	byID := map[string]int{}
	for i, r := range v.Keys {
		byID[r.Name] = i
	}
	add := func(id string) int {
		if i, ok := byID[id]; ok {
			return i
		}
		v.Keys = append(v.Keys, Row{Name: id})
		byID[id] = len(v.Keys) - 1
		return len(v.Keys) - 1
	}
	for _, id := range cs.o.ClientKeys {
		add(id)
	}
	if cs.o.Keys != nil {
		for _, k := range cs.o.Keys() {
			i := add(k.ID)
			v.Keys[i].Limits = k.Limits
			if k.Name != "" {
				v.Keys[i].Label = k.Name // the name in force over the ledger's
			}
		}
	}
	for i := range v.Keys {
		if v.Keys[i].Name == "" {
			v.Keys[i].Name = "(no key)"
		}
	}
}

func addCounts(c *usage.Counts, o usage.Counts) {
	c.Requests += o.Requests
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.CachedTokens += o.CachedTokens
	c.Errors += o.Errors
}

// sorted lists the rows with traffic, named, by requests over 30 days,
// the busiest first.
func sorted(rows []Row, names []string) []Row {
	var out []Row
	for i, r := range rows {
		if r.Month.Requests == 0 && r.Month.Errors == 0 {
			continue
		}
		r.Name = names[i]
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(b.Month.Requests, a.Month.Requests), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// formatInt writes n with thin groups of three digits (12 345).
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := false
	if n < 0 {
		neg, s = true, s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

func percent(used, max int64) string {
	if max <= 0 {
		return ""
	}
	return strconv.FormatInt(used*100/max, 10) + "%"
}
