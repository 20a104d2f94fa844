package responses

import (
	"bytes"
	"encoding/json"
	"strings"

	"cursor2api/models"
	"cursor2api/utils"
)

// Events of an mcp_call item.
const (
	EventMCPArgumentsDelta = "response.mcp_call_arguments.delta"
	EventMCPArgumentsDone  = "response.mcp_call_arguments.done"
	EventMCPInProgress     = "response.mcp_call.in_progress"
	EventMCPCompleted      = "response.mcp_call.completed"
	EventMCPFailed         = "response.mcp_call.failed"
)

// mcpError is an mcp_call's error as the API writes it: the tool's
// failure, with its text as content.
type mcpError struct {
	Type    string `json:"type"`
	Content []Part `json:"content"`
}

// mcpCallItem is the JSON of an mcp_call item.
func mcpCallItem(it *OutputItem) any {
	item := struct {
		ID                string    `json:"id"`
		Type              string    `json:"type"`
		Status            string    `json:"status"`
		ServerLabel       string    `json:"server_label"`
		Name              string    `json:"name"`
		Arguments         string    `json:"arguments"`
		Output            *string   `json:"output"`
		Error             *mcpError `json:"error"`
		ApprovalRequestID *string   `json:"approval_request_id"`
	}{ID: it.ID, Type: it.Type, Status: it.Status, ServerLabel: it.ServerLabel, Name: it.Name, Arguments: it.Arguments}
	switch {
	case it.Status == StatusInProgress:
	case it.Error != "":
		item.Error = &mcpError{Type: "mcp_tool_execution_error", Content: []Part{{Type: "input_text", Text: it.Error}}}
	default:
		item.Output = &it.Output
	}
	return item
}

// mcpItem is the mcp_call item of a run the gateway made.
func mcpItem(run models.ToolRun) OutputItem {
	server, tool := run.Label()
	it := OutputItem{ID: utils.CallIDAs("mcp_", run.ID), Type: ItemMCPCall, ServerLabel: server, Name: tool, Arguments: run.Arguments, Status: StatusCompleted}
	if run.IsError {
		it.Status, it.Error = StatusFailed, run.Output
		if it.Error == "" {
			it.Error = "the tool failed"
		}
	} else {
		it.Output = run.Output
	}
	return it
}

// ToolRunStart adds the mcp_call item of a call the gateway is about to
// run, with its arguments, and says it is in progress.
func (s *StreamWriter) ToolRunStart(run models.ToolRun) error {
	s.space = s.space[:0]
	it := mcpItem(run)
	it.Status, it.Output, it.Error = StatusInProgress, "", ""
	if err := s.start(it); err != nil {
		return err
	}
	index := len(s.resp.Output)
	if err := s.emit(Event{Type: EventMCPInProgress, ItemID: it.ID, OutputIndex: ptr(index)}); err != nil {
		return err
	}
	if err := s.emit(Event{Type: EventMCPArgumentsDelta, ItemID: it.ID, OutputIndex: ptr(index), Delta: ptr(it.Arguments)}); err != nil {
		return err
	}
	return s.emit(Event{Type: EventMCPArgumentsDone, ItemID: it.ID, OutputIndex: ptr(index), Arguments: ptr(it.Arguments)})
}

// ToolRunEnd completes the mcp_call item in progress with the call's
// output, or fails it with its error.
func (s *StreamWriter) ToolRunEnd(run models.ToolRun) error {
	if s.cur == nil || s.cur.Type != ItemMCPCall {
		if err := s.ToolRunStart(run); err != nil {
			return err
		}
	}
	it := mcpItem(run)
	it.ID = s.cur.ID
	s.cur = nil
	index := len(s.resp.Output)
	typ := EventMCPCompleted
	if it.Status == StatusFailed {
		typ = EventMCPFailed
	}
	if err := s.emit(Event{Type: typ, ItemID: it.ID, OutputIndex: ptr(index)}); err != nil {
		return err
	}
	return s.itemDone(&it, index, nil)
}

// mcpHistory is the conversation of an mcp_call item sent back as input:
// the call, and its output or error as the call's result.
func mcpHistory(it InputItem) (call models.Block, result models.Message) {
	name := "mcp__" + it.ServerLabel + "__" + it.Name
	id := it.CallID
	if id == "" {
		id = utils.CallIDPrefix + strings.TrimPrefix(it.ID, "mcp_")
	}
	call = models.Block{Kind: models.BlockToolCall, ID: id, Name: name, Arguments: string(it.Arguments)}
	result = models.Message{Role: models.RoleTool, ToolCallID: id, ToolName: name, Blocks: blocks(it.Output)}
	if e := it.Error; len(e) > 0 && string(e) != "null" {
		result.IsError = true
		var er struct {
			Message string `json:"message"`
			Content []Part `json:"content"`
		}
		text := string(e)
		if json.Unmarshal(e, &er) == nil {
			var parts []string
			if er.Message != "" {
				parts = append(parts, er.Message)
			}
			for _, p := range er.Content {
				parts = append(parts, p.Text)
			}
			if len(parts) > 0 {
				text = strings.Join(parts, "\n")
			}
		} else if json.Unmarshal(e, &text) != nil {
			text = string(e)
		}
		result.Blocks = []models.Block{{Kind: models.BlockText, Text: text}}
	}
	return call, result
}

// mcpServer reads an mcp tool: a server for this request. Approval is not
// supported: require_approval must be "never" (or absent).
func mcpServer(t Tool, path string) (models.MCPServer, error) {
	if t.ConnectorID != "" && t.ServerURL == "" {
		return models.MCPServer{}, models.InvalidRequest(path+".connector_id", "%s: connectors are OpenAI's; give the server's server_url instead", path)
	}
	if t.ServerLabel == "" || t.ServerURL == "" {
		return models.MCPServer{}, models.InvalidRequest(path, "%s: an mcp tool needs a server_label and a server_url", path)
	}
	if a := bytes.TrimSpace(t.RequireApproval); len(a) > 0 && string(a) != "null" && string(a) != `"never"` {
		var all struct {
			Never struct {
				ToolNames []string `json:"tool_names"`
			} `json:"never"`
			Always *json.RawMessage `json:"always"`
		}
		if json.Unmarshal(a, &all) != nil || all.Always != nil || all.Never.ToolNames != nil {
			return models.MCPServer{}, models.InvalidRequest(path+".require_approval", "%s.require_approval: the gateway cannot ask for approval; set it to \"never\"", path)
		}
	}
	server := models.MCPServer{Label: t.ServerLabel, URL: t.ServerURL, Headers: t.Headers, Param: path + ".server_url"}
	if a := bytes.TrimSpace(t.AllowedTools); len(a) > 0 && string(a) != "null" {
		var names []string
		if err := json.Unmarshal(a, &names); err != nil {
			var filter struct {
				ToolNames []string `json:"tool_names"`
			}
			if err := json.Unmarshal(a, &filter); err != nil {
				return models.MCPServer{}, models.InvalidRequest(path+".allowed_tools", "%s.allowed_tools must be a list of tool names or {\"tool_names\": [...]}", path)
			}
			names = filter.ToolNames
		}
		server.AllowedTools = append([]string{}, names...)
	}
	return server, nil
}

// Events of an mcp_list_tools item.
const (
	EventMCPListInProgress = "response.mcp_list_tools.in_progress"
	EventMCPListCompleted  = "response.mcp_list_tools.completed"
	EventMCPListFailed     = "response.mcp_list_tools.failed"
)

// mcpListedTool is one tool of an mcp_list_tools item: its annotations
// are its server's, null when it gave none.
type mcpListedTool struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations json.RawMessage `json:"annotations"`
}

// mcpListItem is the JSON of an mcp_list_tools item: empty while in
// progress, its server's tools once listed.
func mcpListItem(it *OutputItem) any {
	item := struct {
		ID          string          `json:"id"`
		Type        string          `json:"type"`
		ServerLabel string          `json:"server_label"`
		Tools       []mcpListedTool `json:"tools"`
		Error       *string         `json:"error"`
	}{ID: it.ID, Type: it.Type, ServerLabel: it.ServerLabel, Tools: []mcpListedTool{}}
	if it.Error != "" {
		item.Error = &it.Error
	}
	if it.Status == StatusInProgress {
		return item
	}
	for _, t := range it.Tools {
		_, name := models.ToolRun{Name: t.Name}.Label()
		lt := mcpListedTool{Name: name, InputSchema: t.Parameters, Annotations: t.Annotations}
		if len(lt.Annotations) == 0 {
			lt.Annotations = json.RawMessage("null")
		}
		if t.Description != "" {
			lt.Description = &t.Description
		}
		if len(lt.InputSchema) == 0 {
			lt.InputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		item.Tools = append(item.Tools, lt)
	}
	return item
}

// ListTools are the mcp_list_tools items of the servers a request named,
// in its order: each with its tools among tools (named by the gateway's
// convention, mcp__<server>__<tool>).
func ListTools(servers []models.MCPServer, tools []models.Tool) []OutputItem {
	out := make([]OutputItem, 0, len(servers))
	for _, server := range servers {
		it := OutputItem{ID: itemID("mcpl"), Type: ItemMCPListTools, ServerLabel: server.Label, Status: StatusCompleted, Tools: []models.Tool{}}
		for _, t := range tools {
			if label, _ := (models.ToolRun{Name: t.Name}).Label(); label == server.Label {
				it.Tools = append(it.Tools, t)
			}
		}
		out = append(out, it)
	}
	return out
}

// ListTools streams the listings of the request's MCP servers, each as
// an item added, in progress, completed (or failed) and done.
func (s *StreamWriter) ListTools(items []OutputItem) error {
	for _, it := range items {
		if err := s.start(it); err != nil {
			return err
		}
		s.cur = nil
		index := len(s.resp.Output)
		if err := s.emit(Event{Type: EventMCPListInProgress, ItemID: it.ID, OutputIndex: ptr(index)}); err != nil {
			return err
		}
		typ := EventMCPListCompleted
		if it.Error != "" {
			typ = EventMCPListFailed
		}
		if err := s.emit(Event{Type: typ, ItemID: it.ID, OutputIndex: ptr(index)}); err != nil {
			return err
		}
		if err := s.itemDone(&it, index, nil); err != nil {
			return err
		}
	}
	return nil
}
