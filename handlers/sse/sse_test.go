package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriterFraming(t *testing.T) {
	var out bytes.Buffer
	starts, flushes := 0, 0
	w := NewWriter(&out, func() { flushes++ }, func() { starts++ }, nil)
	assert.False(t, w.Started())
	assert.Zero(t, starts, "nothing is committed before the first event")

	require.NoError(t, w.Event("", map[string]string{"text": "a <b> & c\n"}))
	require.NoError(t, w.Event("message_start", map[string]int{"n": 1}))
	require.NoError(t, w.EventJSON("delta", []byte(`{"pre":"encoded"}`)))
	require.NoError(t, w.EventJSON("", []byte(`{}`)))
	require.NoError(t, w.Data("[DONE]"))
	assert.True(t, w.Started())
	assert.Equal(t, 1, starts, "the start function runs once, before the first byte")
	assert.Equal(t, 5, flushes, "every event is flushed")
	assert.Equal(t, "data: {\"text\":\"a <b> & c\\n\"}\n\n"+
		"event: message_start\ndata: {\"n\":1}\n\n"+
		"event: delta\ndata: {\"pre\":\"encoded\"}\n\n"+
		"data: {}\n\n"+
		"data: [DONE]\n\n", out.String(), "one line of JSON per event, HTML not escaped")
	assert.Error(t, w.Event("", func() {}), "an unencodable value is an error, not a panic")
}

func TestWriterPings(t *testing.T) {
	var out bytes.Buffer
	committed := false
	w := NewWriter(&out, nil, func() { committed = true }, []byte("event: ping\ndata: {}\n\n"))
	require.NoError(t, w.PingIfIdle(time.Hour))
	assert.Empty(t, out.String(), "no ping while the stream is not idle")
	require.NoError(t, w.PingIfIdle(time.Nanosecond))
	assert.Equal(t, "event: ping\ndata: {}\n\n", out.String(), "the door's own ping")
	assert.True(t, committed, "a ping commits the response")
	w.Close()
	assert.True(t, w.Closed())
	require.NoError(t, w.PingIfIdle(time.Nanosecond))
	assert.Equal(t, "event: ping\ndata: {}\n\n", out.String(), "no ping after the end")
}

// failingWriter fails every write, as a connection whose client left.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriterReportsWriteErrors(t *testing.T) {
	w := NewWriter(failingWriter{}, nil, nil, nil)
	assert.Error(t, w.Event("", 1))
	assert.Error(t, w.PingIfIdle(time.Nanosecond))
}

func TestWriterSerialisesPingsWithEvents(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, nil, nil, nil)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 200 {
			_ = w.Event("", map[string]string{"k": "v"})
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			_ = w.PingIfIdle(time.Nanosecond)
		}
	}()
	wg.Wait()
	for _, ev := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n\n")), []byte("\n\n")) {
		s := string(ev)
		assert.True(t, s == `data: {"k":"v"}` || s == ": ping", "events never interleave: %q", s)
	}
}

// TestAppendStringMatchesEvent holds the appending escaper to the bytes
// Event's encoder writes for the same string, on every special case.
func TestAppendStringMatchesEvent(t *testing.T) {
	texts := []string{
		"", "plain", `quote " and backslash \`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f",
		"<html> & 'apostrophe'", "é ü 漢字 🎉", "\u2028\u2029 a\u2028b", "bad \xff utf-8 \xe2\x82", "\xed\xa0\x80 surrogate",
		"\xf4\x90\x80\x80 past U+10FFFF", "\xc0\xaf overlong", "end \xe2", strings.Repeat("long ", 2000),
	}
	for i := range 256 {
		texts = append(texts, string(rune(i)), string([]byte{byte(i)}))
	}
	for _, text := range texts {
		var out bytes.Buffer
		w := NewWriter(&out, nil, nil, nil)
		require.NoError(t, w.Event("", text))
		want := strings.TrimSuffix(strings.TrimPrefix(out.String(), "data: "), "\n\n")
		assert.Equal(t, want, string(AppendString(nil, text)), "%q", text)
		assert.Equal(t, "x"+want, string(AppendString([]byte("x"), text)), "appends")
	}
}

// TestAppendStringWordAtATime: the escaper skips plain ASCII eight bytes
// at a time; every byte value at every place of such a word, and random
// words of the bytes that matter, must still come out as Event's.
func TestAppendStringWordAtATime(t *testing.T) {
	check := func(s string) {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, NewWriter(&out, nil, nil, nil).Event("", s))
		require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(out.String(), "data: "), "\n\n"), string(AppendString(nil, s)), "%q", s)
	}
	for pos := range 20 {
		for c := range 256 {
			w := []byte("abcdefghijklmnopqrst")
			w[pos] = byte(c)
			check(string(w))
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	w := make([]byte, 24)
	for range 50000 {
		for i := range w {
			w[i] = []byte{byte(r.IntN(256)), 'a', 0x7f, 0x80, 0xbf, 0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0xff, 0x1f, 0x20, '"', '\\', 0x21, 0x5d, 0x00}[r.IntN(18)]
		}
		check(string(w[:r.IntN(len(w)+1)]))
	}
}

// FuzzAppendString holds the escaper to Event's encoder on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain text here", "a\"b\\c\n\x00\x1f", "é 漢字 🎉 \u2028", "bad \xff \xe2\x82 end"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var out bytes.Buffer
		require.NoError(t, NewWriter(&out, nil, nil, nil).Event("", s))
		want := strings.TrimSuffix(strings.TrimPrefix(out.String(), "data: "), "\n\n")
		if got := string(AppendString(nil, s)); got != want {
			t.Fatalf("%q:\nappend: %s\njson:   %s", s, got, want)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	for name, text := range map[string]string{
		"plain":   strings.Repeat("abcdefgh", 128),
		"english": strings.Repeat("The gateway reads every frame, and the \"door\" writes it again.\n", 16),
		"code":    strings.Repeat("\tif err := s.write(b); err != nil {\n\t\treturn fmt.Errorf(\"writing %q: %w\", name, err)\n\t}\n", 12),
		"dense":   strings.Repeat("Say \"héllo\"\n", 85), // a special byte every few
		"CJK":     strings.Repeat("漢字", 170),
	} {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 2048)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				buf = AppendString(buf[:0], text)
			}
		})
	}
}

// TestWriterEventInPieces: an event given in pieces is the event of their
// concatenation, flushed once, small or large (a large one is written
// without being copied).
func TestWriterEventInPieces(t *testing.T) {
	long := strings.Repeat("y", copyBelow)
	for _, pieces := range [][]string{
		{`{"a":`, `"b"`, `}`},
		{`{"text":"`, long, `","again":"`, long, `"}`},
		{`{"text":"` + long + `"}`},
	} {
		var out bytes.Buffer
		flushes := 0
		w := NewWriter(&out, func() { flushes++ }, nil, nil)
		var data [][]byte
		for _, p := range pieces {
			data = append(data, []byte(p))
		}
		require.NoError(t, w.EventJSON("name", data...))
		require.NoError(t, w.EventJSON("", data...))
		joined := strings.Join(pieces, "")
		assert.Equal(t, "event: name\ndata: "+joined+"\n\ndata: "+joined+"\n\n", out.String())
		assert.Equal(t, 2, flushes, "one flush an event")

		var viaEvent bytes.Buffer
		require.NoError(t, NewWriter(&viaEvent, nil, nil, nil).Event("name", json.RawMessage(joined)))
		assert.Equal(t, "event: name\ndata: "+joined+"\n\n", viaEvent.String(), "Event frames alike")
	}
	assert.Error(t, NewWriter(failingWriter{}, nil, nil, nil).EventJSON("", []byte(`{"a":"`+long+`"}`)), "a failed write of a large event")
}

// TestWriterHold checks that the events written under a Hold go out in
// one flush, at the last Release, and that everything else flushes as it
// is written.
func TestWriterHold(t *testing.T) {
	cases := []struct {
		name string
		run  func(w *Writer)
		// flushes after each step of run, as the client would see them.
		want int
	}{
		{"no hold", func(w *Writer) { _ = w.Data("a"); _ = w.Data("b") }, 2},
		{"one hold", func(w *Writer) { w.Hold(); _ = w.Data("a"); _ = w.Data("b"); w.Release() }, 1},
		{"nested", func(w *Writer) {
			w.Hold()
			_ = w.Data("a")
			w.Hold()
			_ = w.Data("b")
			w.Release()
			_ = w.Data("c")
			w.Release()
		}, 1},
		{"nothing held", func(w *Writer) { w.Hold(); w.Release() }, 0},
		{"release without hold", func(w *Writer) { w.Release(); _ = w.Data("a") }, 1},
		{"a step under a hold is not silent: no ping", func(w *Writer) {
			w.Hold()
			_ = w.PingIfIdle(0)
			_ = w.Data("a")
			w.Release()
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			flushes := 0
			var flushed []string
			w := NewWriter(&out, func() { flushes++; flushed = append(flushed, out.String()) }, nil, nil)
			tc.run(w)
			assert.Equal(t, tc.want, flushes)
			if flushes > 0 {
				assert.Equal(t, out.String(), flushed[len(flushed)-1], "everything written is flushed")
			}
		})
	}
}

// TestMessageWriter: in message mode each event is one message of its
// data alone, in pieces as written; there are no pings.
func TestMessageWriter(t *testing.T) {
	var msgs []string
	w := NewMessageWriter(func(data ...[]byte) error {
		var b strings.Builder
		for _, d := range data {
			b.Write(d)
		}
		msgs = append(msgs, b.String())
		return nil
	})
	assert.False(t, w.Started())
	require.NoError(t, w.PingIfIdle(0))
	assert.Empty(t, msgs, "no pings")
	require.NoError(t, w.EventJSON("response.created", []byte(`{"type":`), []byte(`"response.created"}`)))
	require.NoError(t, w.Event("error", map[string]string{"type": "error"}))
	w.Hold()
	require.NoError(t, w.Data("[DONE]"))
	w.Release()
	assert.Equal(t, []string{`{"type":"response.created"}`, `{"type":"error"}`, `[DONE]`}, msgs)
	assert.True(t, w.Started())
}

// TestWriterKeepalive: a door's keepalive takes the ping's place where the
// ping is on, and on a message transport; never under a hold, after the
// end, or before idle has passed.
func TestWriterKeepalive(t *testing.T) {
	keep := func(emit Emit) error { return emit("response.in_progress", []byte(`{"n":1}`)) }
	cases := []struct {
		name     string
		messages bool
		ping     []byte
		keep     Keepalive
		idle     time.Duration
		before   func(w *Writer)
		want     string
	}{
		{name: "the ping, without a keepalive", want: ": ping\n\n"},
		{name: "the keepalive in its place", keep: keep, want: "event: response.in_progress\ndata: {\"n\":1}\n\n"},
		{name: "none where the ping is off", ping: NoPing, keep: keep},
		{name: "a message transport sends the keepalive", messages: true, keep: keep, want: `{"n":1}`},
		{name: "and no ping of its own", messages: true},
		{name: "none under a hold", keep: keep, before: func(w *Writer) { w.Hold() }},
		{name: "none after the end", keep: keep, before: func(w *Writer) { w.Close() }},
		{name: "none before idle has passed", keep: keep, idle: time.Hour, before: func(w *Writer) { _ = w.Data("x") }, want: "data: x\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			w := NewWriter(&out, nil, nil, tc.ping)
			if tc.messages {
				w = NewMessageWriter(func(data ...[]byte) error {
					for _, d := range data {
						out.Write(d)
					}
					return nil
				})
			}
			if tc.before != nil {
				tc.before(w)
			}
			require.NoError(t, w.KeepAliveIfIdle(tc.idle, tc.keep))
			assert.Equal(t, tc.want, out.String())
		})
	}
}
