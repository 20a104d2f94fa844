package models

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ImageMediaTypes are the media types of the images a model takes: what
// Anthropic and OpenAI accept, and what a door checks an inline image
// against.
var ImageMediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// ImageBlock is the block of an inline image of the given media type
// (image/jpg is taken as image/jpeg, and case is ignored) and base64
// data, which is not decoded here. The error says what is wrong, for the
// door to place.
func ImageBlock(mediaType, data string) (Block, error) {
	mt := strings.ToLower(strings.TrimSpace(mediaType))
	if mt == "image/jpg" {
		mt = "image/jpeg"
	}
	known := false
	for _, t := range ImageMediaTypes {
		known = known || t == mt
	}
	switch {
	case !known:
		return Block{}, fmt.Errorf("the image's media type %q is not one a model takes: use %s", clip(mediaType), strings.Join(ImageMediaTypes, ", "))
	case data == "":
		return Block{}, errors.New("the image has no data")
	}
	if err := checkImageData(data); err != nil {
		return Block{}, err
	}
	return Block{Kind: BlockImage, MediaType: mt, Data: data}, nil
}

// imageEncoding is how an image's data is read: standard base64, with
// its padding or without (line breaks are ignored either way, as
// clients, and encoders wrapping at 76 columns, send them).
func imageEncoding(data string) *base64.Encoding {
	if strings.HasSuffix(strings.TrimRight(data, "\r\n"), "=") {
		return base64.StdEncoding
	}
	return base64.RawStdEncoding
}

// DecodeImageData decodes an image's data as ImageBlock checked it: a
// back door that sends an image's bytes.
func DecodeImageData(data string) ([]byte, error) {
	b, err := imageEncoding(data).DecodeString(data)
	if err == nil && len(b) == 0 {
		err = errors.New("it is empty")
	}
	return b, err
}

// checkImageData is DecodeImageData's check without keeping the bytes
// (a few kilobytes of memory, whatever the image's size), so that every
// back door refuses the same data: the text ones, which send none of it,
// as well as the native one.
func checkImageData(data string) error {
	n, err := io.Copy(io.Discard, base64.NewDecoder(imageEncoding(data), strings.NewReader(data)))
	if err == nil && n == 0 {
		err = errors.New("it is empty")
	}
	if err != nil {
		return fmt.Errorf("the image's data is not base64 (%v): send the image's bytes in standard base64", err)
	}
	return nil
}

// IsDataURL reports whether url is a data: URL, which ImageFromDataURL
// reads; any other URL names an image the gateway does not fetch.
func IsDataURL(url string) bool {
	return len(url) >= 5 && strings.EqualFold(url[:5], "data:")
}

// ImageFromDataURL is the block of an image given as a data: URL,
// data:<media type>[;<parameter>…];base64,<data>.
func ImageFromDataURL(url string) (Block, error) {
	const form = "data:<media type>;base64,<data>"
	if !IsDataURL(url) {
		return Block{}, fmt.Errorf("the image URL is not a data: URL (%s)", form)
	}
	head, data, ok := strings.Cut(url[5:], ",")
	if !ok {
		return Block{}, fmt.Errorf("the data: URL has no comma before its data (%s)", form)
	}
	params := strings.Split(head, ";")
	if !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") {
		return Block{}, fmt.Errorf("the data: URL is not base64 (%s)", form)
	}
	return ImageBlock(params[0], data)
}

// clip shortens a client's string for an error message. It cuts as
// utils.CutRunes does, written here because models imports nothing of
// the project.
func clip(s string) string {
	n := 40
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
