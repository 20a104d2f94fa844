package models

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImageFromDataURL(t *testing.T) {
	cases := []struct {
		url, mediaType, data, err string
	}{
		{url: "data:image/png;base64,iVBORw0KGgo=", mediaType: "image/png", data: "iVBORw0KGgo="},
		{url: "DATA:Image/JPG;base64,/9j/4AAQ", mediaType: "image/jpeg", data: "/9j/4AAQ"},
		{url: "data:image/webp;name=a.webp;base64,UklGRg", mediaType: "image/webp", data: "UklGRg"},
		{url: "data:image/gif;BASE64,R0lGOD", mediaType: "image/gif", data: "R0lGOD"},
		{url: "https://example.com/a.png", err: "not a data: URL"},
		{url: "data:image/png;base64", err: "no comma"},
		{url: "data:image/png,rawbytes", err: "not base64"},
		{url: "data:image/svg+xml;base64,PHN2Zz4=", err: `"image/svg+xml" is not one a model takes: use image/png, image/jpeg, image/gif, image/webp`},
		{url: "data:application/pdf;base64,JVBER", err: "application/pdf"},
		{url: "data:image/png;base64,", err: "no data"},
		{url: "data:" + strings.Repeat("x", 100) + ";base64,AA", err: "…"},
	}
	for _, tc := range cases {
		t.Run(tc.url[:min(len(tc.url), 30)], func(t *testing.T) {
			b, err := ImageFromDataURL(tc.url)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Less(t, len(err.Error()), 160, "a client's string is clipped")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Block{Kind: BlockImage, MediaType: tc.mediaType, Data: tc.data}, b)
		})
	}
}

// TestImageData: an image's data must be standard base64, padded or not,
// line breaks ignored, as the native back door decodes it; the check is
// the same for every back door (ImageBlock), and DecodeImageData agrees.
func TestImageData(t *testing.T) {
	for _, tc := range []struct {
		name, data, err string
	}{
		{"padded", "iVBORw0KGgo=", ""},
		{"unpadded", "iVBORw0KGgo", ""},
		{"wrapped at 76 columns", strings.Repeat("QUFB", 19) + "\r\n" + strings.Repeat("QUFB", 19) + "\n", ""},
		{"not base64", "not base64!", "not base64"},
		{"URL-safe alphabet", "iVBO-_0KGgo=", "not base64"},
		{"a byte cut", "iVBORw0KGg=", "not base64"},
		{"line breaks only", "\r\n", "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ImageBlock("image/png", tc.data)
			_, decodeErr := DecodeImageData(tc.data)
			if tc.err == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.data, b.Data, "the data goes on as the client sent it")
				assert.NoError(t, decodeErr)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Error(t, decodeErr)
		})
	}
}
