package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOutputBound(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		v    *int
		want int
		err  bool
	}{{nil, 0, false}, {n(1), 1, false}, {n(4096), 4096, false}, {n(0), 0, true}, {n(-3), 0, true}} {
		got, err := OutputBound("max_tokens", tc.v)
		assert.Equal(t, tc.want, got)
		if tc.err {
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "max_tokens", e.Param)
			assert.Contains(t, e.Message, "at least 1")
		} else {
			assert.NoError(t, err)
		}
	}
}
