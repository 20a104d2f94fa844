package responses

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"cursor2api/models"
	"cursor2api/utils"
)

// SearchToolName is the core's name of the client's tool_search, which
// Codex CLI offers in place of the MCP tools it defers: the model calls
// it, the client searches its tools and answers with a
// tool_search_output item whose tools join the offered ones.
const SearchToolName = "tool_search"

// searchParameters is tool_search's schema when the request gives none.
var searchParameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Search query for deferred tools."},"limit":{"type":"number","description":"Maximum number of tools to return."}},"required":["query"],"additionalProperties":false}`)

// searchTool is the core's tool for the client's tool_search t.
func searchTool(t Tool) models.Tool {
	desc, params := t.Description, t.Parameters
	if strings.TrimSpace(desc) == "" {
		desc = "Searches the tools that were not given to you upfront and loads the matches, to be called from your next turn on."
	}
	if len(params) == 0 || string(params) == "null" {
		params = searchParameters
	}
	return models.Tool{Name: SearchToolName, Description: desc, Parameters: params}
}

// hasClientSearch reports whether raws offer a tool_search the client
// runs.
func hasClientSearch(raws []json.RawMessage) bool {
	for _, raw := range raws {
		if r := gjson.GetManyBytes(raw, "type", "execution"); r[0].Str == "tool_search" && r[1].Str == "client" {
			return true
		}
	}
	return false
}

// searchResult is the tool result a tool_search_output stands for: a
// reference to each tool it loaded, which the core turns into words and
// an offered tool.
func searchResult(tools []models.Tool) []models.Block {
	if len(tools) == 0 {
		return []models.Block{{Kind: models.BlockText, Text: "No tools matched the search."}}
	}
	blocks := make([]models.Block, len(tools))
	for i, t := range tools {
		blocks[i] = models.Block{Kind: models.BlockToolReference, Name: t.Name}
	}
	return blocks
}

// searchArguments are a tool_search_call's arguments as the item holds
// them: the JSON object the model wrote, compacted as json.Marshal would,
// or, for a call cut off before its object closed, the text so far as a
// string.
func searchArguments(args string) json.RawMessage {
	trimmed := strings.Trim(args, utils.JSONSpace)
	if trimmed == "" {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if trimmed[0] == '{' && json.Compact(&b, []byte(trimmed)) == nil {
		return b.Bytes()
	}
	s, _ := json.Marshal(args)
	return s
}
