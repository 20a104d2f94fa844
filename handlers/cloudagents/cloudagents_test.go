package cloudagents

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/responses"
	"cursor2api/services/cloud"
)

func TestCloudPrompt(t *testing.T) {
	for _, tc := range []struct {
		name, input, instructions string
		text                      string
		images                    []cloud.Image
		param                     string
	}{
		{name: "string", input: `"fix it"`, text: "fix it"},
		{name: "instructions first", input: `"fix it"`, instructions: "Be brief.", text: "Be brief.\n\nfix it"},
		{name: "messages and images", input: `[{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,iVBOR"},{"type":"input_image","image_url":"https://example.com/a.png"}]}]`,
			text: "look", images: []cloud.Image{{Data: "iVBOR", MimeType: "image/png"}, {URL: "https://example.com/a.png"}}},
		{name: "bad image", input: `[{"role":"user","content":[{"type":"input_text","text":"x"},{"type":"input_image","image_url":"file:///etc/passwd"}]}]`, param: "input[0].content[1].image_url"},
		{name: "tool output", input: `[{"type":"function_call_output","call_id":"c","output":"x"}]`, param: "input[0].type"},
		{name: "empty", input: `"  "`, param: "input"},
		{name: "not input", input: `42`, param: "input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := cloudPrompt(&responses.Request{Input: json.RawMessage(tc.input), Instructions: tc.instructions})
			if tc.param != "" {
				require.NotNil(t, err)
				assert.Equal(t, tc.param, err.Param)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.text, p.Text)
			assert.Equal(t, tc.images, p.Images)
		})
	}
}
