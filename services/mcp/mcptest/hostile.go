package mcptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GiB is the size of Hostile's huge answers.
const GiB = 1 << 30

// Hostile is a hand-written MCP server (the SDK would not misbehave) over
// streamable HTTP, one behaviour per path:
//
//   - /huge-init answers initialize with a body of Size bytes;
//   - /hang-init never answers initialize;
//   - /endless-pages lists one tool per page, each with a nextCursor;
//   - /many-tools lists Tools tools on one page;
//   - any other path has tools that misbehave: parts (Parts text parts),
//     huge (Size bytes), hang (no answer), drip (comments, never an answer).
//
// Huge bodies are generated as written, never held; handlers end with
// their client.
type Hostile struct {
	// Size is the size of a huge body (0: GiB).
	Size int64
	// Parts is the number of parts of the parts tool's result (0: 50 000).
	Parts int
	// Tools is the number of tools /many-tools lists (0: 10 000).
	Tools int
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name   string `json:"name"`
		Cursor string `json:"cursor"`
	} `json:"params"`
}

func (h *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var req rpcRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	mode := strings.TrimPrefix(r.URL.Path, "/")
	switch req.Method {
	case "initialize":
		switch mode {
		case "huge-init":
			h.huge(w, r, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"`)
		case "hang-init":
			<-r.Context().Done()
		default:
			reply(w, req.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`)
		}
	case "tools/list":
		switch mode {
		case "endless-pages":
			n, _ := strconv.Atoi(strings.TrimPrefix(req.Params.Cursor, "p"))
			reply(w, req.ID, fmt.Sprintf(`{"tools":[%s],"nextCursor":"p%d"}`, tool(fmt.Sprintf("t%d", n)), n+1))
		case "many-tools":
			var b strings.Builder
			for i := range orDefault(h.Tools, 10_000) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(tool(fmt.Sprintf("t%d", i)))
			}
			reply(w, req.ID, `{"tools":[`+b.String()+`]}`)
		default:
			reply(w, req.ID, `{"tools":[`+tool("parts")+","+tool("huge")+","+tool("hang")+","+tool("drip")+`]}`)
		}
	case "tools/call":
		h.call(w, r, req)
	default:
		reply(w, req.ID, `{}`)
	}
}

func (h *Hostile) call(w http.ResponseWriter, r *http.Request, req rpcRequest) {
	switch req.Params.Name {
	case "parts":
		// Written part by part: the server holds one at a time.
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[`, req.ID)
		for i := range orDefault(h.Parts, 50_000) {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"type":"text","text":"part %d"}`, i)
		}
		io.WriteString(w, `]}}`)
	case "huge":
		h.huge(w, r, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"content":[{"type":"text","text":"`)
	case "hang":
		<-r.Context().Done()
	case "drip":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
				if _, err := io.WriteString(w, ": still thinking\n\n"); err != nil {
					return
				}
				http.NewResponseController(w).Flush()
			}
		}
	default:
		reply(w, req.ID, `{"content":[{"type":"text","text":"no such tool"}],"isError":true}`)
	}
}

// huge writes prefix, then Size bytes of one JSON string's body, made as
// they are written; it stops when the client goes away.
func (h *Hostile) huge(w http.ResponseWriter, r *http.Request, prefix string) {
	w.Header().Set("Content-Type", "application/json")
	if _, err := io.WriteString(w, prefix); err != nil {
		return
	}
	chunk := []byte(strings.Repeat("x", 64<<10))
	size := h.Size
	if size <= 0 {
		size = GiB
	}
	for left := size; left > 0 && r.Context().Err() == nil; left -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			return
		}
	}
	io.WriteString(w, `"}}}`)
}

func reply(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func tool(name string) string {
	return `{"name":"` + name + `","description":"a tool","inputSchema":{"type":"object"}}`
}

func orDefault(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}
