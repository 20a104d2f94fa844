package webchat

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestIdleTimer(t *testing.T) {
	t.Parallel()
	// Wide margins: the test must hold on a loaded machine.
	const d = 200 * time.Millisecond
	cases := []struct {
		name     string
		run      func(it *idleTimer) // about 4d of activity, or silence
		wantFire bool
	}{
		{"silent", func(*idleTimer) { time.Sleep(4 * d) }, true},
		{"steady progress", func(it *idleTimer) {
			for range 20 {
				time.Sleep(d / 5)
				it.touch()
			}
		}, false},
		{"progress then silence", func(it *idleTimer) {
			for range 5 {
				time.Sleep(d / 5)
				it.touch()
			}
			time.Sleep(3 * d)
		}, true},
		{"stopped", func(it *idleTimer) { it.stop(); time.Sleep(4 * d) }, false},
		{"reset to a longer wait", func(it *idleTimer) { it.reset(time.Hour); time.Sleep(4 * d) }, false},
		{"reset to a shorter wait", func(it *idleTimer) { it.reset(d / 4); time.Sleep(2 * d) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fired atomic.Int32
			it := newIdleTimer(d, func() { fired.Add(1) })
			defer it.stop()
			tc.run(it)
			if tc.wantFire {
				assert.Equal(t, int32(1), fired.Load(), "onIdle fires once")
			} else {
				assert.Zero(t, fired.Load(), "onIdle must not fire")
			}
		})
	}
}
