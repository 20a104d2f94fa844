package handlers

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkChatCompletion measures a whole request through the gateway:
// decode, validate, prompt, a loopback round trip to the fake upstream,
// parse, and encode, for a streamed reply with a tool call.
func BenchmarkChatCompletion(b *testing.B) {
	g := newGateway(b, nil, paced([][]string{{"Checking the weather.\n", "TRIGGER\n<invoke name=\"get_weather\">", `{"city":"Paris"}`, "</invoke>"}}, 0))
	body := `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"system","content":"You are a helpful agent."},{"role":"user","content":"Weather in Paris?"}],` + weatherTools + `}`
	client := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(g.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(out), "get_weather") {
			b.Fatalf("no tool call in %s", out)
		}
	}
}
