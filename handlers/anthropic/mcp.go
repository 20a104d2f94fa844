package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
)

// MCPToolUseID gives a core call id the prefix of Anthropic's MCP calls.
func MCPToolUseID(id string) string { return utils.CallIDAs("mcptoolu_", id) }

// MCPToolUseBlock is the mcp_tool_use block of a call the gateway ran.
func MCPToolUseBlock(run models.ToolRun) ResponseBlock {
	server, tool := run.Label()
	input := json.RawMessage(run.Arguments)
	if !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	return ResponseBlock{"type": "mcp_tool_use", "id": MCPToolUseID(run.ID), "name": tool, "server_name": server, "input": input}
}

// MCPToolResultBlock is the mcp_tool_result block of a call the gateway ran.
func MCPToolResultBlock(run models.ToolRun) ResponseBlock {
	return ResponseBlock{"type": "mcp_tool_result", "tool_use_id": MCPToolUseID(run.ID), "is_error": run.IsError,
		"content": []ResponseBlock{TextBlock(run.Output)}}
}

// ToolRunStart sends the mcp_tool_use block of a call the gateway is about
// to run: its input in one input_json_delta, as a tool_use's.
func (s *StreamWriter) ToolRunStart(run models.ToolRun) error {
	block := MCPToolUseBlock(run)
	input := string(block["input"].(json.RawMessage))
	block["input"] = json.RawMessage("{}")
	if err := s.openBlock(blockToolUse, block); err != nil {
		return err
	}
	if err := s.delta("input_json_delta", "partial_json", input); err != nil {
		return err
	}
	return s.closeBlock()
}

// ToolRunEnd sends the call's mcp_tool_result block, whole.
func (s *StreamWriter) ToolRunEnd(run models.ToolRun) error {
	if err := s.openBlock(blockToolUse, MCPToolResultBlock(run)); err != nil {
		return err
	}
	return s.closeBlock()
}

// mcpCall is the call of an mcp_tool_use block sent back in history.
func mcpCall(b Block) models.Block {
	args := strings.TrimSpace(string(b.Input))
	if args == "" || args == "null" {
		args = "{}"
	}
	return models.Block{Kind: models.BlockToolCall, ID: b.ID, Name: "mcp__" + b.ServerName + "__" + b.Name, Arguments: args}
}

// assistantMessages converts an assistant turn whose content may hold the
// results of MCP calls (mcp_tool_result blocks, from the MCP connector):
// each ends the assistant message before it and becomes the call's
// result, as the core keeps results.
func assistantMessages(i int, c Content) ([]models.Message, error) {
	var out []models.Message
	start := 0
	for j, b := range c {
		if b.Type != "mcp_tool_result" {
			continue
		}
		if j > start {
			msg, err := assistantMessage(i, start, c[start:j])
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		}
		blocks, err := contentBlocks(b.Content, func() string { return fmt.Sprintf("messages.%d.content.%d.content", i, j) }, 0)
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			blocks = []models.Block{{Kind: models.BlockText}}
		}
		out = append(out, models.Message{Role: models.RoleTool, ToolCallID: b.ToolUseID, IsError: b.IsError, Blocks: blocks})
		start = j + 1
	}
	if start < len(c) || len(out) == 0 {
		msg, err := assistantMessage(i, start, c[start:])
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// MCPServerParam is an entry of mcp_servers (the MCP connector).
type MCPServerParam struct {
	Type               string `json:"type"`
	URL                string `json:"url"`
	Name               string `json:"name"`
	AuthorizationToken string `json:"authorization_token,omitempty"`
	ToolConfiguration  *struct {
		Enabled      *bool    `json:"enabled,omitempty"`
		AllowedTools []string `json:"allowed_tools,omitempty"`
	} `json:"tool_configuration,omitempty"`
}

// mcpServers reads mcp_servers.
func mcpServers(params []MCPServerParam) ([]models.MCPServer, error) {
	var out []models.MCPServer
	for i, p := range params {
		path := fmt.Sprintf("mcp_servers.%d", i)
		if p.Type != "" && p.Type != "url" {
			return nil, models.InvalidRequest(path+".type", "%s.type must be \"url\"", path)
		}
		if p.Name == "" || p.URL == "" {
			return nil, models.InvalidRequest(path, "%s: an MCP server needs a name and a url", path)
		}
		s := models.MCPServer{Label: p.Name, URL: p.URL, Param: path + ".url"}
		if p.AuthorizationToken != "" {
			s.Headers = map[string]string{"Authorization": "Bearer " + p.AuthorizationToken}
		}
		if c := p.ToolConfiguration; c != nil {
			if c.Enabled != nil && !*c.Enabled {
				continue
			}
			if c.AllowedTools != nil {
				s.AllowedTools = append([]string{}, c.AllowedTools...)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
