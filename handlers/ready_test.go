package handlers

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/gjson"
)

func TestReadyWithoutACheck(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"unused"}))
	r := s.do(t, http.MethodGet, "/ready", "")
	assert.Equal(t, http.StatusOK, r.status, "the web backend is ready until its upstream fails")
	assert.True(t, gjson.Get(r.body, "ready").Bool(), r.body)
	assert.False(t, gjson.Get(r.body, "backend").Exists(), "the web backend has no check of its own: %s", r.body)
	assert.Empty(t, s.up.Requests(), "no upstream call")
}
