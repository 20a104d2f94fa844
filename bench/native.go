package main

// The native back door (BACKEND=cursor) against services/native/nativetest's
// fake of Cursor's agent API: a text answer asked straight from the fake
// over the bidi Run (h2c), as a minimal client does it, and through each
// door of a gateway on BACKEND=cursor; then the memory of a gateway
// process per turn parked at its tool calls.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"cursor2api/services/native/agentv1"
	"cursor2api/services/native/agentv1/agentv1connect"
	"cursor2api/services/native/nativetest"
)

// nativeModel is a model of the fake's account.
const nativeModel = "claude-4.5-sonnet"

// nativeEnv is the configuration of a gateway on the native back door,
// pointed at the fake: the defaults otherwise, the transport given (the
// bidi Run over h2c, as the direct client uses it, for the throughput),
// and room for parked turns.
func nativeEnv(backend, transport string, parkMax int) map[string]string {
	return map[string]string{
		"BACKEND": "cursor", "CURSOR_API_KEY": nativetest.DefaultAPIKey, "CURSOR_BACKEND_URL": backend,
		"CURSOR_TRANSPORT": transport, "CURSOR_PARK_MAX": strconv.Itoa(parkMax),
		"LOG_LEVEL": "warn", "MAX_CONNECTIONS": "10000",
		"STATE_URL": "memory:", // as gatewayEnv: the bench measures the back door, not the store
	}
}

// runNative measures the native back door: first byte and req/s for the
// 2 KB answer at concurrency 1 and 50, direct and through each door; then,
// unless parked is 0, a gateway process holding parked turns.
func runNative(client *http.Client, scale float64, parked int, heapProfile string) error {
	deltas := answers()[0].deltas // 2 KB in 200 deltas, as for the web chat
	up := nativetest.Start(nativetest.Options{Script: func(*agentv1.AgentRunRequest) nativetest.Script {
		return nativetest.Script{Steps: []nativetest.Step{nativetest.Text(deltas...)}, Usage: nativetest.Usage{Input: 10, Output: int64(len(deltas))}}
	}})
	defer up.Close()
	gwURL, stop, err := startGatewayEnv(nativeEnv(up.URL, "http2", 256))
	if err != nil {
		return err
	}
	defer stop()
	direct, err := newNativeDirect(up.URL)
	if err != nil {
		return err
	}
	fmt.Printf("\nThe native back door (BACKEND=cursor) against nativetest's fake, a request_context exec and a set_blob a turn:\n")
	for _, conc := range []int{1, 50} {
		n := max(conc, int(float64(map[int]int{1: 400, 50: 2000}[conc])*scale))
		if _, err := loadFunc(conc, conc, direct.once); err != nil {
			return fmt.Errorf("native direct: %w", err)
		}
		for _, dr := range doors {
			// The direct run goes right before each door's: the fake, in
			// this process, is the bottleneck at concurrency 50, and the
			// machine's load drifts between runs.
			d, err := loadFunc(conc, n, direct.once)
			if err != nil {
				return fmt.Errorf("native direct, concurrency %d: %w", conc, err)
			}
			via := target{url: gwURL + dr.path, body: dr.body(nativeModel), content: dr.content, done: dr.done}
			if _, err := load(client, via, conc, conc); err != nil {
				return err
			}
			g, err := load(client, via, conc, n)
			if err != nil {
				return fmt.Errorf("native, %s door, concurrency %d: %w", dr.name, conc, err)
			}
			printRow("native 2KB/200", dr.name, conc, n, d, g)
		}
	}
	if parked > 0 {
		for _, tr := range []string{"http2", "sse"} {
			if err := measureParked(parked, tr, heapProfile); err != nil {
				return fmt.Errorf("parked turns over %s: %w", tr, err)
			}
		}
	}
	return nil
}

// nativeDirect asks the fake for a turn as a minimal client does: the
// bidi Run over h2c with an access token, answering the request_context
// exec and the set_blob of the turn, until turn_ended.
type nativeDirect struct {
	svc   agentv1connect.AgentServiceClient
	token string
	seq   atomic.Int64
}

func newNativeDirect(base string) (*nativeDirect, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/auth/exchange_user_api_key", strings.NewReader("{}"))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+nativetest.DefaultAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tok); err != nil || tok.AccessToken == "" {
		return nil, fmt.Errorf("exchanging the fake's key: status %d, %v", resp.StatusCode, err)
	}
	// HTTP/2 without TLS, as the gateway speaks to an http:// backend.
	tr := &http.Transport{Protocols: new(http.Protocols), MaxIdleConnsPerHost: 100}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &nativeDirect{svc: agentv1connect.NewAgentServiceClient(&http.Client{Transport: tr}, base), token: tok.AccessToken}, nil
}

func (d *nativeDirect) once() (ttfb, total time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	stream := d.svc.Run(ctx)
	defer func() { _ = stream.CloseRequest(); _ = stream.CloseResponse() }()
	stream.RequestHeader().Set("Authorization", "Bearer "+d.token)
	stream.RequestHeader().Set("x-cursor-client-version", "sdk-1.0.32")
	n := d.seq.Add(1)
	run := &agentv1.AgentRunRequest{
		ConversationState: &agentv1.ConversationStateStructure{},
		Action: &agentv1.ConversationAction{Action: &agentv1.ConversationAction_UserMessageAction{UserMessageAction: &agentv1.UserMessageAction{
			UserMessage: &agentv1.UserMessage{Text: "hi", MessageId: fmt.Sprintf("m%d", n), Mode: agentv1.AgentMode_AGENT_MODE_AGENT}}}},
		ModelDetails:   &agentv1.ModelDetails{ModelId: nativeModel},
		RequestedModel: &agentv1.RequestedModel{ModelId: nativeModel},
		ConversationId: proto.String(fmt.Sprintf("c%d", n)),
		RunId:          proto.String(fmt.Sprintf("r%d", n)),
	}
	if err := stream.Send(&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_RunRequest{RunRequest: run}}); err != nil {
		return 0, 0, err
	}
	for {
		m, err := stream.Receive()
		if err != nil {
			return 0, 0, fmt.Errorf("the run ended before turn_ended: %w", err)
		}
		var reply []*agentv1.AgentClientMessage
		switch {
		case m.GetInteractionUpdate().GetTextDelta() != nil:
			if ttfb == 0 {
				ttfb = time.Since(start)
			}
		case m.GetInteractionUpdate().GetTurnEnded() != nil:
			if ttfb == 0 {
				return 0, 0, fmt.Errorf("no text before turn_ended")
			}
			return ttfb, time.Since(start), nil
		case m.GetExecServerMessage().GetRequestContextArgs() != nil:
			id := m.GetExecServerMessage().GetId()
			reply = append(reply,
				&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientMessage{ExecClientMessage: &agentv1.ExecClientMessage{
					Id: id, Message: &agentv1.ExecClientMessage_RequestContextResult{RequestContextResult: &agentv1.RequestContextResult{
						Result: &agentv1.RequestContextResult_Success{Success: &agentv1.RequestContextSuccess{RequestContext: &agentv1.RequestContext{}}}}}}}},
				&agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_ExecClientControlMessage{ExecClientControlMessage: &agentv1.ExecClientControlMessage{
					Message: &agentv1.ExecClientControlMessage_StreamClose{StreamClose: &agentv1.ExecClientStreamClose{Id: id}}}}})
		case m.GetKvServerMessage().GetSetBlobArgs() != nil:
			reply = append(reply, &agentv1.AgentClientMessage{Message: &agentv1.AgentClientMessage_KvClientMessage{KvClientMessage: &agentv1.KvClientMessage{
				Id: m.GetKvServerMessage().GetId(), Message: &agentv1.KvClientMessage_SetBlobResult{SetBlobResult: &agentv1.SetBlobResult{}}}}})
		case m.GetExecServerMessage() != nil || m.GetKvServerMessage() != nil:
			return 0, 0, fmt.Errorf("the fake asked for something the bench does not answer: %v", m)
		}
		for _, r := range reply {
			if err := stream.Send(r); err != nil {
				return 0, 0, err
			}
		}
	}
}

// parkBody is an OpenAI request with one tool, for the parked turns.
func parkBody(i int) []byte {
	return fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"user","content":"look up %d"}],`+
		`"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`, nativeModel, i)
}

// measureParked parks turns at their tool calls in a gateway process on
// the native back door (their runs stay open upstream) and reports the
// growth of RSS and live heap per parked turn; heapProfile, if set, gets
// the process's heap profile.
func measureParked(parked int, transport, heapProfile string) error {
	up := nativetest.Start(nativetest.Options{
		Wait: 10 * time.Minute, // the fake waits for the results as long as the turns stay parked
		Script: func(*agentv1.AgentRunRequest) nativetest.Script {
			return nativetest.Script{Steps: []nativetest.Step{
				nativetest.ToolCalls(nativetest.Call{Tool: "lookup", Args: map[string]any{"q": "x"}}),
				nativetest.Text("done"),
			}}
		},
	})
	defer up.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, stdin, out, gwURL, stop, err := startGatewayChild(ctx, "-native", "-park-max="+strconv.Itoa(parked+10), "-transport="+transport, "-upstream="+up.URL)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 100, DisableCompression: true}}
	defer client.CloseIdleConnections()
	park := func(i int) error {
		resp, err := client.Post(gwURL+"/v1/chat/completions", "application/json", bytes.NewReader(parkBody(i)))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"finish_reason":"tool_calls"`)) {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return nil
	}
	// Warm up: the key's token, the model list, the connections, the code.
	for i := range 20 {
		if err := park(-1 - i); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	memStat := func() (memory, int64, int64, error) {
		fmt.Fprintln(stdin, "mem")
		line, err := out.ReadString('\n')
		if err != nil {
			return memory{}, 0, 0, err
		}
		var heap, goroutines int64
		if _, err := fmt.Sscanf(line, "%d %d", &heap, &goroutines); err != nil {
			return memory{}, 0, 0, fmt.Errorf("mem: %q: %w", line, err)
		}
		m, err := rss(cmd.Process.Pid)
		return m, heap, goroutines, err
	}
	before, heapBefore, gBefore, err := memStat()
	if err != nil {
		return err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	for range 50 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(parked); i = next.Add(1) {
				if err := park(int(i)); err != nil {
					if failed.Add(1) == 1 {
						firstErr.Store(err)
					}
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	after, heapAfter, gAfter, err := memStat()
	if err != nil {
		return err
	}
	if heapProfile != "" {
		fmt.Fprintf(stdin, "heap %s\n", strings.TrimSuffix(heapProfile, ".prof")+"-parked-"+transport+".prof")
		if _, err := out.ReadString('\n'); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	if failed.Load() > 0 {
		return fmt.Errorf("%d of %d turns not parked, the first: %v", failed.Load(), parked, firstErr.Load())
	}
	fmt.Printf("A gateway process (CURSOR_TRANSPORT=%s) with %d turns parked at a tool call (in %.1fs at concurrency 50): RSS %s → %s, %s per parked turn; live heap %s → %s, %s per parked turn; %.1f goroutines per parked turn\n",
		transport, parked, took.Seconds(), mb(before.rss), mb(after.rss), kb((after.rss-before.rss)/int64(parked)),
		mb(heapBefore), mb(heapAfter), kb((heapAfter-heapBefore)/int64(parked)), float64(gAfter-gBefore)/float64(parked))
	return nil
}
