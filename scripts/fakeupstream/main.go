// Command fakeupstream is a stand-in for Cursor's web chat on loopback, in
// the real frame format (services/cursortest's frames), for the Docker
// smoke test: the gateway in the container is pointed at it. Every POST
// gets the same short streamed reply; GET /health answers 200 so that a
// script can wait for it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"

	"cursor2api/services/cursortest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	reply := flag.String("reply", "Hello from the fake upstream.", "the text of every reply, streamed word by word")
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
