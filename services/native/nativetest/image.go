package nativetest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
)

// PNG is a w×h red PNG, an image for tests to send.
func PNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // an in-memory encode of a valid image cannot fail
	}
	return b.Bytes()
}
