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
	assert.Equal(t, http.StatusOK, r.status, "the web backend has no readiness check: ready when up")
	assert.Equal(t, "ready", gjson.Get(r.body, "status").String())
	assert.Empty(t, s.up.Requests(), "no upstream call")
}
