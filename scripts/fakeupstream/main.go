// Command fakeupstream stands in for Cursor's web chat, in the real frame
// format, for the Docker smoke test. An allowed model gets a short streamed
// reply, another the 2026 upstream's "Invalid model" refusal, from which
// the gateway learns its models; GET /health answers 200.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	reply := flag.String("reply", "Hello from the fake upstream.", "the text of every reply, streamed word by word")
	allowed := flag.String("allowed", "google/gemini-3-flash", "the upstream model ids accepted, comma-separated (empty: any)")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("fakeupstream: %v", err)
	}
	words := strings.SplitAfter(*reply, " ")
	frames := cursortest.Frames(&cursortest.Usage{Input: 10, Output: len(words)}, nil, words)
	fmt.Printf("listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		if ids := strings.Split(*allowed, ","); *allowed != "" {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if model := gjson.GetBytes(body, "model").String(); !slices.Contains(ids, model) {
				refusal := cursortest.InvalidModel(ids)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(refusal.Status)
				_, _ = io.WriteString(w, refusal.Body)
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		for _, f := range frames {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", f); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	})))
}
