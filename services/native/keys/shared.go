package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cursor2api/services/state"
)

// Sharing the keys' rests through the state store (Options.State).
//
// A rest or refusal is a record under the key's fingerprint in RestsTable,
// kept until it ends. A probe that finds the key working writes a short-lived
// "ok" record rather than deleting it: a deleted record looks like an
// expired rest, whose key still needs its probe. Pools read the records in
// the background, at most every SyncEvery, so a request never waits for the
// store. One writer writes a key's state as it is when the write runs, so
// retried or reordered writes cannot leave an older state than the pool's.

// RestsTable is the state store's table of the keys' rests.
const RestsTable = "key_rests"

// restsMax bounds RestsTable: far more keys than a deployment holds.
const restsMax = 4096

// okKeep is how long the record of a key found working again is kept:
// long enough for every replica's next read (SyncEvery), and more.
const okKeep = time.Minute

// A record's kind: a key Cursor refuses, or one found working again; the
// other kinds are the outcomes that begin a rest (quota, rate_limited).
const (
	kindBad = "bad"
	kindOK  = "ok"
)

// restRecord is a key's rest as the store keeps it. It holds the key's
// fingerprint's rest only: never the key, nor a token (Err is the key's
// last error, clipped and scrubbed of both).
type restRecord struct {
	Kind     string `json:"kind"`
	Until    int64  `json:"until"` // when the rest ends, Unix milliseconds
	At       int64  `json:"at"`    // when it began (ok: when the key worked), Unix milliseconds
	Failures int    `json:"failures,omitempty"`
	Err      string `json:"err,omitempty"`
}

// changed notes a change of k's health that the store should learn, and
// starts the writer if it is not running. p.mu is held.
func (p *Pool) changed(k *key) {
	k.ver++
	if p.state == nil {
		return
	}
	k.dirty = true
	if !p.flushing {
		p.flushing = true
		p.bg.Add(1)
		go p.flush()
	}
}

// flush writes the keys whose health changed, one after the other, until
// none is left. Each write is bounded by the queue's timeout; a failed
// one waits in the queue for its retry.
func (p *Pool) flush() {
	defer p.bg.Done()
	for {
		p.mu.Lock()
		var next *key
		for _, k := range p.keys {
			if k.dirty {
				next = k
				break
			}
		}
		if next == nil {
			p.flushing = false
			p.settledLocked()
			p.mu.Unlock()
			return
		}
		next.dirty = false
		p.mu.Unlock()
		_ = p.state.Write(context.Background(), "cursor key rest "+next.name, p.writeRest(next))
	}
}

// writeRest is the write of k's record: k's state when it runs.
func (p *Pool) writeRest(k *key) func(context.Context) error {
	return func(ctx context.Context) error {
		p.wmu.Lock()
		defer p.wmu.Unlock()
		p.mu.Lock()
		rec, ttl := p.record(k, p.now())
		p.mu.Unlock()
		if rec == nil {
			return nil // a rest already over: its record expires by itself
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return p.state.Store().Put(ctx, RestsTable, k.name, b, state.Limits{TTL: ttl, Max: restsMax})
	}
}

// record is what the store should hold of k at now, and for how long; nil
// when k's rest is over but no probe has settled it yet. p.mu is held.
func (p *Pool) record(k *key, now time.Time) (*restRecord, time.Duration) {
	switch {
	case k.bad != "":
		until := k.badAt.Add(p.opts.BadRecheck)
		if !now.Before(until) {
			return nil, 0
		}
		return &restRecord{Kind: kindBad, Until: until.UnixMilli(), At: k.badAt.UnixMilli(), Err: k.bad}, until.Sub(now)
	case now.Before(k.coolUntil):
		return &restRecord{Kind: k.restKind, Until: k.coolUntil.UnixMilli(), At: k.restAt.UnixMilli(), Failures: k.failures, Err: k.lastErr},
			k.coolUntil.Sub(now)
	case k.failures == 0 && !k.okAt.IsZero():
		keep := max(okKeep, 3*p.opts.SyncEvery)
		return &restRecord{Kind: kindOK, Until: now.Add(keep).UnixMilli(), At: k.okAt.UnixMilli()}, keep
	}
	return nil, 0
}

// syncDue starts a read of the shared rests in the background when the
// last began SyncEvery ago or more and none is under way. p.mu is held.
func (p *Pool) syncDue(now time.Time) {
	if p.state == nil || p.syncing || now.Sub(p.syncedAt) < p.opts.SyncEvery {
		return
	}
	p.syncing, p.syncedAt = true, now
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		_ = p.sync(context.Background())
		p.mu.Lock()
		p.syncing = false
		p.settledLocked()
		p.mu.Unlock()
	}()
}

// Wait waits until the pool's writes of the keys' rests to the store, and
// its read, are done, or ctx ends (its error then). A gateway that stops
// waits here before it closes the store: a rest that began just before
// the stop is on its way there, and would be lost with the process.
func (p *Pool) Wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		if !p.flushing && !p.syncing {
			p.mu.Unlock()
			return nil
		}
		if p.idle == nil {
			p.idle = make(chan struct{})
		}
		idle := p.idle
		p.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("the Cursor API keys' rests were still being written to the state store: %w", context.Cause(ctx))
		}
	}
}

// settledLocked wakes the waiters of Wait once neither the writer nor a
// read runs. p.mu is held.
func (p *Pool) settledLocked() {
	if !p.flushing && !p.syncing && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// sync reads the records of every key, within the queue's timeout, and
// takes in what they say. A key whose health changed here while the read
// ran keeps its state: it is newer, and on its way to the store. A read
// that fails changes nothing.
func (p *Pool) sync(ctx context.Context) error {
	p.mu.Lock()
	vers := make([]uint64, len(p.keys))
	for i, k := range p.keys {
		vers[i] = k.ver
	}
	p.mu.Unlock()

	recs := make([]*restRecord, len(p.keys))
	read := make([]bool, len(p.keys))
	store := p.state.Store()
	err := p.state.Read(ctx, func(ctx context.Context) error {
		for i, k := range p.keys {
			b, err := store.Get(ctx, RestsTable, k.name)
			switch {
			case errors.Is(err, state.ErrNotFound):
				read[i] = true
			case err != nil:
				return err
			default:
				var r restRecord
				if err := json.Unmarshal(b, &r); err != nil || r.Until <= 0 {
					p.log.Debug("a Cursor API key's shared rest is unreadable; ignored", "key", k.name)
					continue
				}
				recs[i], read[i] = &r, true
			}
		}
		return nil
	})

	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for i, k := range p.keys {
		if read[i] && k.ver == vers[i] {
			p.learn(k, recs[i], now)
		}
	}
	if err != nil {
		p.log.Debug("reading the Cursor API keys' shared rests failed; keeping this replica's view", "engine", store.Engine(), "err", err)
	}
	return err
}

// learn takes in k's record r (nil: none kept). p.mu is held.
func (p *Pool) learn(k *key, r *restRecord, now time.Time) {
	if r == nil {
		return // never rested, or its rest is over: the key's own state says which
	}
	until, at := time.UnixMilli(r.Until), time.UnixMilli(r.At)
	switch {
	case r.Kind == kindOK:
		// A replica found the key working after the rest (or the
		// refusal) this pool knows of: it is back here too.
		switch {
		case k.bad != "" && at.After(k.badAt):
			p.recheck(k)
			p.log.Info("another replica found that Cursor accepts a refused API key again", "key", k.name)
		case k.bad == "" && k.failures > 0 && at.After(k.restAt):
			k.failures, k.coolUntil, k.restKind = 0, time.Time{}, ""
			p.log.Info("another replica found that a Cursor API key works again after its rest", "key", k.name)
		}
	case !now.Before(until):
		// Expired (by this host's clock): ignored.
	case r.Kind == kindBad:
		if k.bad != "" {
			return // refused here too
		}
		reason := r.Err
		if reason == "" {
			reason = "Cursor refused the key (seen by another replica)"
		}
		k.bad, k.badAt, k.rechecking = reason, until.Add(-p.opts.BadRecheck), false
		k.lastErr, k.lastErrAt = reason, at
		k.epoch++
		k.probe = nil
		p.log.Warn("Cursor refuses an API key in CURSOR_API_KEY, as another replica (or this one before a restart) found; its conversations move to the other keys",
			"key", k.name, "reason", reason, "recheck_at", until)
	default:
		if k.bad != "" || !until.After(k.coolUntil) {
			return // refused here, or resting here as long already
		}
		k.coolUntil, k.restAt, k.failures, k.restKind = until, at, max(k.failures, r.Failures, 1), r.Kind
		if r.Err != "" {
			k.lastErr, k.lastErrAt = r.Err, at
		}
		k.epoch++
		k.probe = nil
		p.log.Info("a Cursor API key rests, as another replica (or this one before a restart) found; its conversations move to the other keys",
			"key", k.name, "until", until, "failures", k.failures)
	}
}
