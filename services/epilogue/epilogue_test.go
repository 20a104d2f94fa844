package epilogue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEpilogue(t *testing.T) {
	assert.False(t, AfterAnswer(context.Background(), func() { t.Error("kept without an epilogue") }), "a context without an epilogue keeps nothing")

	ctx, e := With(context.Background())
	var ran []int
	assert.True(t, AfterAnswer(ctx, func() { ran = append(ran, 1) }))
	assert.True(t, AfterAnswer(context.WithValue(ctx, struct{}{}, 0), func() { ran = append(ran, 2) }), "a derived context carries the epilogue")
	assert.Empty(t, ran, "nothing runs before Run")
	e.Run()
	assert.Equal(t, []int{1, 2}, ran, "in order")
	e.Run()
	assert.Equal(t, []int{1, 2}, ran, "once")
	assert.False(t, AfterAnswer(ctx, func() { t.Error("kept after Run") }), "an epilogue that has run keeps nothing")
}
