package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestMCPListTools: a request's own MCP server is listed as an
// mcp_list_tools item before the answer, streamed and whole, in the
// SDK's shapes, and the item comes back as history.
func TestMCPListTools(t *testing.T) {
	url, _ := remoteServer(t)
	tool := `{"type":"mcp","server_label":"calc","server_url":"` + url + `","require_approval":"never","allowed_tools":["add","echo"]}`
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(t *testing.T) {
			s := newStack(t, map[string]string{"MCP_REMOTE_HOSTS": "127.0.0.1:*"},
				script(t, []string{mcpInvoke("mcp__calc__add", `{"a":20,"b":22}`)}, []string{"42."}, []string{"again"}, []string{"and again"}))
			r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":"add","stream":`+map[bool]string{false: "false", true: "true"}[stream]+`,"tools":[`+tool+`]}`)
			require.Equal(t, http.StatusOK, r.status, r.body)
			body := r.body
			if stream {
				var names []string
				for _, ev := range respEvents(t, r) {
					names = append(names, ev.Name)
					var u responses.ResponseStreamEventUnion
					require.NoError(t, json.Unmarshal([]byte(ev.Data.Raw), &u), ev.Data.Raw)
					switch ev.Name {
					case "response.mcp_list_tools.in_progress":
						e := u.AsResponseMcpListToolsInProgress()
						assert.Empty(t, e.JSON.ExtraFields, ev.Data.Raw)
						assert.True(t, strings.HasPrefix(e.ItemID, "mcpl_"), ev.Data.Raw)
						assert.EqualValues(t, 0, e.OutputIndex)
					case "response.mcp_list_tools.completed":
						assert.Empty(t, u.AsResponseMcpListToolsCompleted().JSON.ExtraFields, ev.Data.Raw)
					case "response.output_item.added", "response.output_item.done":
						if ev.Data.Get("item.type").String() == "mcp_list_tools" {
							item := u.AsResponseOutputItemAdded().Item.AsMcpListTools()
							assert.Empty(t, item.JSON.ExtraFields, ev.Data.Raw)
							assert.Equal(t, "calc", item.ServerLabel)
							if ev.Name == "response.output_item.added" {
								assert.Empty(t, item.Tools, "tools come with the item's done")
							} else {
								assert.Len(t, item.Tools, 2, ev.Data.Raw)
							}
						}
					case "response.completed":
						body = ev.Data.Get("response").Raw
					}
				}
				require.GreaterOrEqual(t, len(names), 6)
				assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added",
					"response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.output_item.done"}, names[:6],
					"the listing comes first")
			}
			var resp responses.Response
			require.NoError(t, json.Unmarshal([]byte(body), &resp))
			require.NotEmpty(t, resp.Output)
			var types []string
			for _, it := range resp.Output {
				types = append(types, it.Type)
			}
			assert.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types)
			list := resp.Output[0].AsMcpListTools()
			assert.Empty(t, list.JSON.ExtraFields, list.RawJSON())
			assert.Equal(t, "calc", list.ServerLabel)
			assert.True(t, strings.HasPrefix(list.ID, "mcpl_"), list.ID)
			assert.False(t, list.JSON.Error.Valid(), "no error: %s", list.RawJSON())
			require.Len(t, list.Tools, 2, "allowed_tools filters the listing")
			byName := map[string]responses.ResponseOutputItemMcpListToolsTool{}
			for _, tl := range list.Tools {
				assert.Empty(t, tl.JSON.ExtraFields, tl.RawJSON())
				byName[tl.Name] = tl
			}
			require.Contains(t, byName, "add")
			require.Contains(t, byName, "echo")
			assert.Equal(t, "Add two integers.", byName["add"].Description)
			assert.Equal(t, "null", byName["add"].JSON.Annotations.Raw(), "a tool without annotations")
			assert.JSONEq(t, `{"readOnlyHint":true,"idempotentHint":false,"title":"Echo"}`, byName["echo"].JSON.Annotations.Raw(), "its server's annotations")
			schema, _ := json.Marshal(byName["add"].InputSchema)
			assert.Equal(t, "object", gjson.GetBytes(schema, "type").String(), string(schema))
			assert.True(t, gjson.GetBytes(schema, "properties.a").Exists(), string(schema))

			// Back as history: through previous_response_id and in input.
			r = s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","previous_response_id":"`+resp.ID+`","input":"again"}`)
			require.Equal(t, http.StatusOK, r.status, r.body)
			items, _ := json.Marshal(resp.Output)
			r = s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":[{"role":"user","content":"add"}`+","+strings.Trim(string(items), "[]")+`,{"role":"user","content":"and again"}]}`)
			require.Equal(t, http.StatusOK, r.status, r.body)
			reqs := s.up.Requests()
			require.Len(t, reqs, 4)
			for _, req := range reqs[2:] {
				prompt := upstreamText(req)
				assert.Contains(t, prompt, "42", "the mcp_call is history")
				assert.NotContains(t, prompt, "mcpl_", "the listing is not")
			}
		})
	}
}

// TestMCPListToolsWithoutServers: no mcp tool, no listing.
func TestMCPListToolsWithoutServers(t *testing.T) {
	s := newStack(t, nil, script(t, []string{"hi"}))
	r := s.do(t, http.MethodPost, "/v1/responses", `{"model":"claude-sonnet-4.6","input":"x"}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.False(t, gjson.Get(r.body, `output.#(type=="mcp_list_tools")`).Exists(), r.body)
}
