package upstream

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/models"
)

func TestRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		want int
	}{
		{"empty", Request{}, 0},
		{"text turns", Request{Messages: []models.Turn{{Role: models.RoleSystem, Text: "abc"}, {Role: models.RoleUser, Text: "héllo"}}}, 3 + 6},
		{"conversation and tools", Request{
			Conversation: []models.Message{{Role: models.RoleAssistant, Blocks: []models.Block{
				{Kind: models.BlockText, Text: "hi"}, {Kind: models.BlockToolCall, Name: "ls", Arguments: `{}`},
			}}},
			Tools: []models.Tool{{Name: "ls", Description: "list", Parameters: []byte(`{"type":"object"}`)}},
		}, 2 + 2 + 2 + 2 + 4 + 17},
		{"an image counts as a large one, not as its data", Request{Conversation: []models.Message{{Role: models.RoleUser, Blocks: []models.Block{
			{Kind: models.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
		}}}}, imageBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.req.Bytes())
		})
	}
}

type nativeFake struct{ calls int }

func (n *nativeFake) Stream(ctx context.Context, req Request, fn func(Delta) error) (*models.Usage, error) {
	n.calls++
	if err := fn(Delta{Kind: DeltaText, Text: "hi"}); err != nil {
		return nil, err
	}
	return &models.Usage{OutputTokens: 1}, nil
}

func (n *nativeFake) NativeTools() bool { return true }

func TestWrapKeepsTheBackDoorAndSeesItsTurns(t *testing.T) {
	inner := &nativeFake{}
	var seen []string
	watch := func(ctx context.Context, req Request, fn func(Delta) error, next StreamFunc) (*models.Usage, error) {
		seen = append(seen, "before "+req.Model)
		u, err := next(ctx, req, fn)
		seen = append(seen, "after")
		return u, err
	}
	up := Wrap(Wrap(inner, watch), watch)
	assert.True(t, IsNative(up), "two wrappers deep, still the native back door")
	assert.False(t, IsNative(Wrap(textFake{}, watch)))

	var got string
	u, err := up.Stream(t.Context(), Request{Model: "m"}, func(d Delta) error { got += d.Text; return nil })
	require.NoError(t, err)
	assert.Equal(t, "hi", got)
	assert.Equal(t, 1, u.OutputTokens)
	assert.Equal(t, 1, inner.calls)
	assert.Equal(t, []string{"before m", "before m", "after", "after"}, seen)
}

type textFake struct{}

func (textFake) Stream(context.Context, Request, func(Delta) error) (*models.Usage, error) {
	return nil, nil
}
