package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// The log's format: logMagic and a 4-byte little-endian version, then
// records of payload length and CRC-32C (Castagnoli), 4 bytes LE each, and
// the payload: a kind byte and its fields (varints; strings and values as a
// uvarint length and bytes). Writes carry the moment of the call, so replay
// evicts and expires as the live store did:
//
//	recPut:      now, table, key, TTL, Max, MaxBytes, value
//	recDelete:   now, table, key
//	recAdd:      now, table, key, ttl, n, n × (name, delta)
//
// A compaction writes the live state, values in eviction order:
//
//	recValue:    table, key, expires, value
//	recCounters: table, key, expires, n, n × (name, value)
//
// Moments are Unix nanoseconds.
const (
	logMagic   = "C2APILOG"
	logVersion = 1
	headerLen  = len(logMagic) + 4
	frameLen   = 8 // length and CRC before each payload
)

const (
	recPut byte = 1 + iota
	recDelete
	recAdd
	recValue
	recCounters
)

// maxRecord bounds a payload's length: a length beyond it is a torn or
// garbled frame, not a record.
const maxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendHeader(b []byte) []byte {
	b = append(b, logMagic...)
	return binary.LittleEndian.AppendUint32(b, logVersion)
}

// beginRecord starts a record in b (emptied): room for its frame, then
// its kind.
func beginRecord(b []byte, kind byte) []byte {
	return append(b[:0], 0, 0, 0, 0, 0, 0, 0, 0, kind)
}

// endRecord fills in the frame of the record b holds.
func endRecord(b []byte) []byte {
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(b)-frameLen))
	binary.LittleEndian.PutUint32(b[4:8], crc32.Checksum(b[frameLen:], castagnoli))
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendTime(b []byte, t time.Time) []byte { return binary.AppendVarint(b, t.UnixNano()) }

func appendCounts(b []byte, m map[string]int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for name, n := range m {
		b = appendString(b, name)
		b = binary.AppendVarint(b, n)
	}
	return b
}

func encodePut(b []byte, now time.Time, table, key string, value []byte, lim Limits) []byte {
	b = beginRecord(b, recPut)
	b = appendTime(b, now)
	b = appendString(b, table)
	b = appendString(b, key)
	b = binary.AppendVarint(b, int64(lim.TTL))
	b = binary.AppendVarint(b, int64(lim.Max))
	b = binary.AppendVarint(b, lim.MaxBytes)
	return endRecord(appendBytes(b, value))
}

func encodeDelete(b []byte, now time.Time, table, key string) []byte {
	b = beginRecord(b, recDelete)
	b = appendTime(b, now)
	b = appendString(b, table)
	return endRecord(appendString(b, key))
}

func encodeAdd(b []byte, now time.Time, table, key string, add map[string]int64, ttl time.Duration) []byte {
	b = beginRecord(b, recAdd)
	b = appendTime(b, now)
	b = appendString(b, table)
	b = appendString(b, key)
	b = binary.AppendVarint(b, int64(ttl))
	return endRecord(appendCounts(b, add))
}

func encodeValue(b []byte, table string, e *memEntry) []byte {
	b = beginRecord(b, recValue)
	b = appendString(b, table)
	b = appendString(b, e.key)
	b = appendTime(b, e.expires)
	return endRecord(appendBytes(b, e.value))
}

func encodeCounters(b []byte, table, key string, c *memCounters) []byte {
	b = beginRecord(b, recCounters)
	b = appendString(b, table)
	b = appendString(b, key)
	b = appendTime(b, c.expires)
	return endRecord(appendCounts(b, c.values))
}

// decoder reads a payload's fields; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

var errShortField = errors.New("a field runs past the record's end")

func (d *decoder) uvarint() uint64 { return number(d, binary.Uvarint) }
func (d *decoder) varint() int64   { return number(d, binary.Varint) }

// number is the next varint field, read by read (binary.Uvarint or
// binary.Varint): one body for both signs.
func number[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.err = errShortField
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes is the next length-prefixed field, a slice of the payload.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShortField
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }
func (d *decoder) time() time.Time {
	return time.Unix(0, d.varint())
}

func (d *decoder) counts() map[string]int64 {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) { // each count takes 2 bytes at least
		if d.err == nil {
			d.err = errShortField
		}
		return nil
	}
	m := make(map[string]int64, n)
	for range n {
		name := d.string()
		m[name] += d.varint()
	}
	return m
}

// errUnknownKind is the error of a sound record of a kind this gateway
// does not know.
type errUnknownKind byte

func (k errUnknownKind) Error() string {
	return fmt.Sprintf("a record of kind %d, which this gateway does not know (a newer gateway wrote it?)", byte(k))
}

// apply applies one record's payload to s.
func apply(s *memState, payload []byte) error {
	if len(payload) == 0 {
		return errShortField
	}
	d := &decoder{b: payload[1:]}
	switch kind := payload[0]; kind {
	case recPut:
		now, table, key := d.time(), d.string(), d.string()
		lim := Limits{TTL: time.Duration(d.varint()), Max: int(d.varint()), MaxBytes: d.varint()}
		value := d.bytes()
		if d.err == nil {
			s.put(now, table, key, value, lim)
		}
	case recDelete:
		now, table, key := d.time(), d.string(), d.string()
		if d.err == nil {
			s.del(now, table, key)
		}
	case recAdd:
		now, table, key, ttl := d.time(), d.string(), d.string(), time.Duration(d.varint())
		add := d.counts()
		if d.err == nil {
			s.add(now, table, key, add, ttl)
		}
	case recValue:
		table, key, expires, value := d.string(), d.string(), d.time(), d.bytes()
		if d.err == nil {
			s.table(table).set(key, value, expires)
		}
	case recCounters:
		table, key, expires, values := d.string(), d.string(), d.time(), d.counts()
		if d.err == nil {
			s.setCounters(table, key, values, expires)
		}
	default:
		return errUnknownKind(kind)
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes past the record's fields", len(d.b))
	}
	return d.err
}

// span is a range of a log's body, [from, to) in bytes after its header.
type span struct{ from, to int64 }

// replayed is what replay made of a log's body.
type replayed struct {
	// good is where the last sound record ends: past it the log is torn
	// (a record incomplete or failing its CRC, and nothing sound after).
	good int64
	// damaged are the ranges skipped in the middle of the log: bytes
	// that hold no sound record, each followed by sound records.
	damaged []span
	// after counts the sound records read after the first damaged range.
	after int
}

// replay applies the log's records (size bytes after the header) to s. A
// damaged record with no sound one after it is a torn tail, for the caller
// to cut; otherwise it is skipped, so a flipped bit loses only its record.
// A sound record that cannot be applied is an error.
func replay(r io.ReaderAt, size int64, s *memState) (replayed, error) {
	var res replayed
	w := &window{r: r, size: size, chunk: 1 << 20}
	for off := int64(0); off < size; {
		n, payload, err := w.record(off)
		if err != nil {
			return res, err
		}
		if payload == nil {
			next, err := w.resync(off, n)
			if err != nil {
				return res, err
			}
			if next < 0 {
				break // a torn tail
			}
			res.damaged = append(res.damaged, span{off, next})
			off = next
			continue
		}
		if err := apply(s, payload); err != nil {
			return res, fmt.Errorf("the record at byte %d: %w", int64(headerLen)+off, err)
		}
		off += frameLen + n
		res.good = off
		if len(res.damaged) > 0 {
			res.after++
		}
	}
	return res, nil
}

// window reads a log's body through a buffer of its bytes.
type window struct {
	r     io.ReaderAt
	size  int64
	chunk int   // what it reads at a time, at least
	base  int64 // the offset of buf[0]
	buf   []byte
}

// at returns the body's bytes [off, off+n), which must lie within it,
// valid until the next call.
func (w *window) at(off int64, n int) ([]byte, error) {
	if off >= w.base && off+int64(n) <= w.base+int64(len(w.buf)) {
		return w.buf[off-w.base : off-w.base+int64(n)], nil
	}
	want := int(min(max(int64(n), int64(w.chunk)), w.size-off))
	if cap(w.buf) < want || cap(w.buf) > w.chunk && want <= w.chunk {
		w.buf = make([]byte, want) // a large record does not keep its buffer
	}
	w.buf = w.buf[:want]
	if got, err := w.r.ReadAt(w.buf, off); got < want {
		w.buf, w.base = w.buf[:0], 0
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file shrank under us
		}
		return nil, err
	}
	w.base = off
	return w.buf[:n], nil
}

// record reads the record at off: its payload's length as its frame
// has it, and the payload when the record is sound (nil when it is cut
// short, its length garbled or its CRC wrong).
func (w *window) record(off int64) (int64, []byte, error) {
	if w.size-off < frameLen {
		return 0, nil, nil
	}
	frame, err := w.at(off, frameLen)
	if err != nil {
		return 0, nil, err
	}
	n := int64(binary.LittleEndian.Uint32(frame[0:4]))
	sum := binary.LittleEndian.Uint32(frame[4:8])
	if n == 0 || n > maxRecord || n > w.size-off-frameLen {
		return n, nil, nil // a garbled length: nothing is read for it
	}
	payload, err := w.at(off+frameLen, int(n))
	if err != nil {
		return n, nil, err
	}
	if crc32.Checksum(payload, castagnoli) != sum {
		return n, nil, nil
	}
	return n, payload, nil
}

// resync finds the first sound record after the damaged one at off (frame
// length n): at off+n when sound, else the first offset past off; -1 for a
// torn tail. Values are JSON, with no raw 0 byte, while a frame's length
// (under 16 MB) has one, so a value cannot pass for a record.
func (w *window) resync(off, n int64) (int64, error) {
	if next := off + frameLen + n; n > 0 && next < w.size {
		_, payload, err := w.record(next)
		if err != nil || payload != nil {
			return next, err
		}
	}
	// The fields of a candidate are read through a small window of their
	// own, so that the scan's stays where it is.
	probe := &window{r: w.r, size: w.size, chunk: 512}
	for p := off + 1; p+frameLen < w.size; p++ {
		ok, err := w.shaped(probe, p)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		if _, payload, err := w.record(p); err != nil || payload != nil {
			return p, err
		}
	}
	return -1, nil
}

// shaped reports whether the bytes at p look like a record: a length
// that fits, a known kind, and fields that end exactly where the length
// says. It reads a few bytes per field through probe, not the values,
// so scanning a damaged range costs little before the CRC decides.
func (w *window) shaped(probe *window, p int64) (bool, error) {
	head, err := w.at(p, frameLen+1)
	if err != nil {
		return false, err
	}
	n := int64(binary.LittleEndian.Uint32(head[0:4]))
	if n == 0 || n > maxRecord || n > w.size-p-frameLen {
		return false, nil
	}
	const (
		varint = iota
		field  // a uvarint length and its bytes
		counts // a uvarint count of (field, varint)
	)
	var fields []int
	switch head[frameLen] {
	case recPut:
		fields = []int{varint, field, field, varint, varint, varint, field}
	case recDelete:
		fields = []int{varint, field, field}
	case recAdd:
		fields = []int{varint, field, field, varint, counts}
	case recValue:
		fields = []int{field, field, varint, field}
	case recCounters:
		fields = []int{field, field, varint, counts}
	default:
		return false, nil
	}
	end := p + frameLen + n
	pos := p + frameLen + 1
	// next reads a uvarint at pos, within the record.
	next := func() (uint64, bool, error) {
		b, err := probe.at(pos, int(min(binary.MaxVarintLen64, end-pos)))
		if err != nil {
			return 0, false, err
		}
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false, nil
		}
		pos += int64(k)
		return v, true, nil
	}
	skip := func() (bool, error) { // a field
		l, ok, err := next()
		if !ok || err != nil || l > uint64(end-pos) {
			return false, err
		}
		pos += int64(l)
		return true, nil
	}
	for _, f := range fields {
		if pos >= end {
			return false, nil
		}
		var ok bool
		switch f {
		case varint:
			_, ok, err = next()
		case field:
			ok, err = skip()
		case counts:
			var c uint64
			c, ok, err = next()
			if ok && c > uint64(end-pos) { // each count takes 2 bytes at least
				ok = false
			}
			for i := uint64(0); ok && err == nil && i < c; i++ {
				if ok, err = skip(); ok && err == nil {
					if pos >= end {
						ok = false
					} else {
						_, ok, err = next()
					}
				}
			}
		}
		if !ok || err != nil {
			return false, err
		}
	}
	return pos == end, nil
}

// snapshot writes the records of the live state of s at now to w,
// what has expired left out. It returns the bytes written and the buffer
// it encoded in.
func snapshot(w io.Writer, s *memState, now time.Time, buf []byte) (int64, []byte, error) {
	var total int64
	for name, t := range s.tables {
		for el := t.order.Front(); el != nil; el = el.Next() {
			if e := el.Value.(*memEntry); now.Before(e.expires) {
				buf = encodeValue(buf, name, e)
				n, err := w.Write(buf)
				total += int64(n)
				if err != nil {
					return total, buf, err
				}
			}
		}
	}
	for name, byKey := range s.counters {
		for key, c := range byKey {
			if now.Before(c.expires) {
				buf = encodeCounters(buf, name, key, c)
				n, err := w.Write(buf)
				total += int64(n)
				if err != nil {
					return total, buf, err
				}
			}
		}
	}
	return total, buf, nil
}

// dropExpired forgets what has expired at now, as a snapshot at now
// leaves it out.
func (s *memState) dropExpired(now time.Time) {
	for name, t := range s.tables {
		for el := t.order.Front(); el != nil; {
			next := el.Next()
			if !now.Before(el.Value.(*memEntry).expires) {
				t.remove(el)
			}
			el = next
		}
		if t.order.Len() == 0 {
			delete(s.tables, name)
		}
	}
	for name, byKey := range s.counters {
		for key, c := range byKey {
			if !now.Before(c.expires) {
				delete(byKey, key)
			}
		}
		if len(byKey) == 0 {
			delete(s.counters, name)
		}
	}
}

func uvarintLen(v uint64) int64 {
	n := int64(1)
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int64) int64 {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

func fieldLen(n int) int64 { return uvarintLen(uint64(n)) + int64(n) }

// snapshotSize is the size snapshot would write for s at now (without
// the header), counted without encoding.
func snapshotSize(s *memState, now time.Time) int64 {
	var total int64
	for name, t := range s.tables {
		for el := t.order.Front(); el != nil; el = el.Next() {
			e := el.Value.(*memEntry)
			if now.Before(e.expires) {
				total += frameLen + 1 + fieldLen(len(name)) + fieldLen(len(e.key)) + varintLen(e.expires.UnixNano()) + fieldLen(len(e.value))
			}
		}
	}
	for name, byKey := range s.counters {
		for key, c := range byKey {
			if !now.Before(c.expires) {
				continue
			}
			total += frameLen + 1 + fieldLen(len(name)) + fieldLen(len(key)) + varintLen(c.expires.UnixNano()) + uvarintLen(uint64(len(c.values)))
			for f, n := range c.values {
				total += fieldLen(len(f)) + varintLen(n)
			}
		}
	}
	return total
}
