package responses

import (
	"encoding/json"
	"strings"

	"cursor2api/models"
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
	it := OutputItem{ID: "mcp_" + strings.TrimPrefix(run.ID, "call_"), Type: ItemMCPCall, ServerLabel: server, Name: tool, Arguments: run.Arguments, Status: StatusCompleted}
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
	s.space = ""
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
		id = "call_" + strings.TrimPrefix(it.ID, "mcp_")
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
