package handlers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"

	"cursor2api/services/cursortest"
)

// BenchmarkCodexSession runs a Codex-shaped session of codexTurns turns,
// each a tool call and its output, with the instructions and tools Codex
// sends (about 30 KB), over the Responses WebSocket with incremental
// input (previous_response_id, only the new items; permessage-deflate as
// Codex offers it) and over HTTP with the whole history every turn. It
// reports the bytes the gateway received per turn, on the wire, and the
// process's CPU per turn (gateway, client and fake upstream together:
// the same harness both ways).
func BenchmarkCodexSession(b *testing.B) {
	for _, transport := range []string{"websocket", "websocket-nodeflate", "http"} {
		b.Run(transport, func(b *testing.B) {
			s := newStack(b, map[string]string{"LOG_LEVEL": "error"}, codexBenchUpstream(b))
			var rx atomic.Int64
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{Conn: c, n: &rx}, nil
			}}}
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				if mode, ok := wsModes[transport]; ok {
					codexSessionWS(b, s, client, mode)
				} else {
					codexSessionHTTP(b, s, client)
				}
			}
			turns := float64(b.N * codexTurns)
			b.ReportMetric(float64(rx.Load())/turns, "rx-bytes/turn")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/turns, "cpu-ms/turn")
		})
	}
}

const codexTurns = 30

// codexBenchUpstream answers every turn with one exec_command call, its
// arguments new each time (the same call thrice is a loop the core stops).
func codexBenchUpstream(b *testing.B) func(int, cursortest.Request) cursortest.Response {
	return func(n int, req cursortest.Request) cursortest.Response {
		return script(b, []string{"Running it.\nTRIGGER\n", fmt.Sprintf(`<invoke name="exec_command">{"cmd": "ls step%d"}</invoke>`, n)})(n, req)
	}
}

// codexPrelude is the instructions and the tools of every request, about
// the size of Codex's, in prose that compresses as prose does (about 3 to
// 1), not as a repeated sentence would.
var codexPrelude = func() string {
	tools := make([]string, 0, 13)
	for i := range 12 {
		tools = append(tools, fmt.Sprintf(`{"type":"function","name":"tool_%d","description":%q,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`,
			i, benchProse(int64(i), 1700)))
	}
	tools = append(tools, `{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}`)
	return fmt.Sprintf(`"model":"claude-sonnet-4.6","store":false,"stream":true,"instructions":%q,"tools":[%s]`, benchProse(99, 10000), strings.Join(tools, ","))
}()

// benchProse is n bytes of words drawn from a vocabulary of made-up ones.
func benchProse(seed int64, n int) string {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	vocab := make([]string, 2000)
	v := rand.New(rand.NewPCG(1, 2))
	for i := range vocab {
		w := make([]byte, 2+v.IntN(9))
		for j := range w {
			w[j] = byte('a' + v.IntN(26))
		}
		vocab[i] = string(w)
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocab[r.IntN(len(vocab))])
		b.WriteByte(' ')
	}
	return b.String()
}

// codexOutput is a tool's output, as big as a short listing.
var codexOutput = benchProse(5, 2000)

func codexUser() string {
	return `{"type":"message","role":"user","content":[{"type":"input_text","text":"List the files, step by step."}]}`
}

func codexCallOutput(call gjson.Result) string {
	return fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%q}`, call.Get("call_id").String(), codexOutput)
}

// wsModes are the WebSocket variants: permessage-deflate as Codex offers
// it, and none, which tells compression's share apart.
var wsModes = map[string]websocket.CompressionMode{"websocket": websocket.CompressionContextTakeover, "websocket-nodeflate": websocket.CompressionDisabled}

func codexSessionWS(b *testing.B, s *stack, client *http.Client, mode websocket.CompressionMode) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/v1/responses",
		&websocket.DialOptions{HTTPClient: client, CompressionMode: mode})
	if err != nil {
		b.Fatal(err)
	}
	conn.SetReadLimit(-1)
	defer conn.CloseNow()
	prev := wsDone(b, ctx, conn, `{"type":"response.create",`+codexPrelude+`,"generate":false,"input":[]}`)
	input := codexUser()
	for range codexTurns {
		done := wsDone(b, ctx, conn, fmt.Sprintf(`{"type":"response.create",%s,"previous_response_id":%q,"input":[%s]}`, codexPrelude, prev.Get("id").String(), input))
		call := done.Get(`output.#(type=="function_call")`)
		if !call.Exists() {
			b.Fatalf("no call: %s", done.Raw)
		}
		input = codexCallOutput(call)
		prev = done
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
}

func wsDone(b *testing.B, ctx context.Context, conn *websocket.Conn, msg string) gjson.Result {
	if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		b.Fatal(err)
	}
	for {
		_, ev, err := conn.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		switch gjson.GetBytes(ev, "type").String() {
		case "response.completed":
			return gjson.GetBytes(ev, "response")
		case "error", "response.failed":
			b.Fatalf("%s", ev)
		}
	}
}

func codexSessionHTTP(b *testing.B, s *stack, client *http.Client) {
	history := []string{codexUser()}
	for range codexTurns {
		body := fmt.Sprintf(`{%s,"input":[%s]}`, codexPrelude, strings.Join(history, ","))
		resp, err := client.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		i := bytes.LastIndex(raw, []byte("data: {\"type\":\"response.completed\""))
		if resp.StatusCode != http.StatusOK || i < 0 {
			b.Fatalf("%d %s", resp.StatusCode, raw)
		}
		done := gjson.GetBytes(bytes.TrimSpace(raw[i+len("data: "):]), "response")
		call := done.Get(`output.#(type=="function_call")`)
		if !call.Exists() {
			b.Fatalf("no call: %s", raw)
		}
		history = append(history, call.Raw, codexCallOutput(call))
	}
}

// countingConn counts the bytes written to the gateway.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
