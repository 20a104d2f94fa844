// Command mkcl100k packs OpenAI's cl100k_base BPE ranks into
// handlers/anthropic/cl100k_base.bin.gz, which the Anthropic door embeds
// for count_tokens.
//
// The published file (SHA-256 223921b7…b2a7) has a "<base64> <rank>" line
// per token, ranks in order: 1.7 MB. Ranks being line numbers, the packed
// form keeps a length byte and the raw bytes per token, gzipped: ~450 KB.
// handlers/anthropic's tests rebuild the published text and check its hash.
//
// The source is OpenAI's
// (https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken),
// also in github.com/pkoukk/tiktoken-go-loader (assets/cl100k_base.tiktoken):
//
//	go run ./scripts/mkcl100k -in cl100k_base.tiktoken -out handlers/anthropic/cl100k_base.bin.gz
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "the cl100k_base.tiktoken file to pack")
	out := flag.String("out", "handlers/anthropic/cl100k_base.bin.gz", "where to write the packed ranks")
	flag.Parse()
	if *in == "" {
		flag.Usage()
		os.Exit(2)
	}
	src, err := os.ReadFile(*in)
	if err != nil {
		log.Fatal(err)
	}
	packed, n, err := pack(src)
	if err != nil {
		log.Fatalf("%s: %v", *in, err)
	}
	if err := os.WriteFile(*out, packed, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tokens, %d bytes to %s\n", n, len(packed), *out)
}

// pack turns tiktoken's text format into length-prefixed raw tokens in
// rank order, gzipped.
func pack(src []byte) ([]byte, int, error) {
	var raw bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(src))
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		b64, rankText, ok := strings.Cut(line, " ")
		if !ok {
			return nil, 0, fmt.Errorf("line %d: no rank", n+1)
		}
		rank, err := strconv.Atoi(rankText)
		if err != nil || rank != n {
			return nil, 0, fmt.Errorf("line %d: rank %q, want %d: the packed form needs ranks in order", n+1, rankText, n)
		}
		tok, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", n+1, err)
		}
		if len(tok) == 0 || len(tok) > 255 {
			return nil, 0, fmt.Errorf("line %d: a token of %d bytes does not fit a length byte", n+1, len(tok))
		}
		raw.WriteByte(byte(len(tok)))
		raw.Write(tok)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, 0, err
	}
	zw.Write(raw.Bytes())
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return gz.Bytes(), n, nil
}
