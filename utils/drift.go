package utils

import (
	"log/slog"
	"sort"
	"sync"
)

// Drift notes what an upstream sent that its reader did not know and went
// on without, logging each kind once and listing it in Notices (for
// doctor), so a format change is seen before it is an outage. A kind names
// the shape, never content (no token, cookie or text). A nil Drift notes
// nothing.
type Drift struct {
	logger *slog.Logger

	mu   sync.Mutex
	seen map[driftKey]*DriftNotice
}

type driftKey struct{ component, kind string }

// DriftNotice is one kind of unknown thing a component met.
type DriftNotice struct {
	Component, Kind string
	// Count is how many times it was met.
	Count int64
}

// Bounds of what a Drift keeps: an upstream that sends a new kind with
// every message must not grow it.
const (
	maxDriftKinds = 64
	maxDriftKind  = 120
	// driftOther is where kinds past maxDriftKinds are counted.
	driftOther = "other kinds (too many to list)"
)

// NewDrift returns a Drift that logs to logger (nil: nowhere).
func NewDrift(logger *slog.Logger) *Drift {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Drift{logger: logger, seen: map[driftKey]*DriftNotice{}}
}

// Note records that component met kind; the first time, it logs it.
func (d *Drift) Note(component, kind string) {
	if d == nil {
		return
	}
	kind = Clip(kind, maxDriftKind)
	k := driftKey{component, kind}
	d.mu.Lock()
	n, ok := d.seen[k]
	if !ok && len(d.seen) >= maxDriftKinds {
		k.kind = driftOther
		n, ok = d.seen[k]
	}
	if !ok {
		n = &DriftNotice{Component: component, Kind: k.kind}
		d.seen[k] = n
	}
	n.Count++
	d.mu.Unlock()
	if !ok {
		d.logger.Warn("upstream format drift: ignored what this version does not know", "component", component, "kind", k.kind)
	}
}

// Notices lists what was noted, by component and kind.
func (d *Drift) Notices() []DriftNotice {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	out := make([]DriftNotice, 0, len(d.seen))
	for _, n := range d.seen {
		out = append(out, *n)
	}
	d.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Component != out[j].Component {
			return out[i].Component < out[j].Component
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
