package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorNamed(t *testing.T) {
	for _, tc := range []struct{ param, msg, want string }{
		{"max_tokens", "must be at least 1", "max_tokens: must be at least 1"},
		{"max_tokens", "max_tokens is 0", "max_tokens is 0"},
		{"tools[2]", "the schema of tools[2] is too deep", "the schema of tools[2] is too deep"},
		{"", "bad request", "bad request"},
	} {
		assert.Equal(t, tc.want, InvalidRequest(tc.param, "%s", tc.msg).Named())
	}
}
