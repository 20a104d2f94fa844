package handlers

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"cursor2api/handlers/anthropic"
	"cursor2api/handlers/gemini"
	"cursor2api/handlers/openai"
	"cursor2api/handlers/responses"
	"cursor2api/models"
	"cursor2api/utils/jsondec"
)

// TestImageDataCopiedOnce proves each door copies an image's data once
// from body to request (Responses twice: it keeps its input for the store).
// It takes a decode's least allocations of a few runs, to ignore other tests.
func TestImageDataCopiedOnce(t *testing.T) {
	for _, tc := range imageBodies() {
		t.Run(tc.door, func(t *testing.T) {
			body := []byte(tc.body)
			req, err := tc.decode(body)
			require.NoError(t, err)
			blocks := req.Messages[len(req.Messages)-1].Blocks
			require.Len(t, blocks, 2)
			assert.Equal(t, models.Block{Kind: models.BlockImage, MediaType: "image/png", Data: strings.Repeat(imageChunk, imageSize/len(imageChunk))}, blocks[1])

			least := ^uint64(0)
			var before, after runtime.MemStats
			for range 5 {
				runtime.ReadMemStats(&before)
				_, _ = tc.decode(body)
				runtime.ReadMemStats(&after)
				least = min(least, after.TotalAlloc-before.TotalAlloc)
			}
			assert.Less(t, least, uint64(tc.copies*imageSize+imageSize/4), "a decode allocates %d bytes for a %d-byte image", least, imageSize)
		})
	}
}

// BenchmarkDecodeImage decodes a request of a 1 MiB image through each
// door, as the handler does (jsondec, then ToRequest).
func BenchmarkDecodeImage(b *testing.B) {
	for _, tc := range imageBodies() {
		b.Run(tc.door, func(b *testing.B) {
			body := []byte(tc.body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const (
	imageSize  = 1 << 20
	imageChunk = "iVBORw0KGgo+/AAA" // valid base64 however often repeated
)

// imageBody is a request of one image of imageSize bytes of base64 after
// a text, to a door: its body, how many copies of the image a decode may
// make, and the decode.
type imageBody struct {
	door   string
	body   string
	copies int
	decode func(body []byte) (*models.Request, error)
}

func imageBodies() []imageBody {
	data := strings.Repeat(imageChunk, imageSize/len(imageChunk))
	return []imageBody{
		{"openai", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + data + `","detail":"auto"}}]}]}`, 1,
			func(body []byte) (*models.Request, error) {
				var r openai.ChatRequest
				if err := jsondec.Unmarshal(body, &r); err != nil {
					return nil, err
				}
				return openai.ToRequest(&r)
			}},
		{"responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,` + data + `"}]}]}`, 2,
			func(body []byte) (*models.Request, error) {
				var r responses.Request
				if err := jsondec.Unmarshal(body, &r); err != nil {
					return nil, err
				}
				d, err := responses.ToRequest(&r, nil)
				if err != nil {
					return nil, err
				}
				return d.Request, nil
			}},
		{"anthropic", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}}]}]}`, 1,
			func(body []byte) (*models.Request, error) {
				var r anthropic.MessagesRequest
				if err := jsondec.Unmarshal(body, &r); err != nil {
					return nil, err
				}
				return anthropic.ToRequest(&r)
			}},
		{"gemini", `{"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"` + data + `"}}]}]}`, 1,
			func(body []byte) (*models.Request, error) {
				var r gemini.GenerateContentRequest
				if err := jsondec.Unmarshal(body, &r); err != nil {
					return nil, err
				}
				return gemini.ToRequest(&r, "m", false)
			}},
	}
}
