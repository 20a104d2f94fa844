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
