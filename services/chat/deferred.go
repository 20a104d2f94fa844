package chat

import (
	"fmt"

	"cursor2api/models"
	"cursor2api/utils"
)

// OfferedTools returns the client's tools the model is given for req: all
// but a deferred one (models.Tool.Deferred) that no tool reference in the
// conversation, nor the tool choice, names yet. A client's placeholder
// that only holds its deferred list open is never named, so never offered.
// count_tokens counts these, as Prepare offers them.
func OfferedTools(req *models.Request) []models.Tool {
	var loaded map[string]bool
	for i, t := range req.Tools {
		if !t.Deferred {
			continue
		}
		if loaded == nil {
			loaded = referencedTools(req)
		}
		if loaded[t.Name] {
			continue
		}
		// The first held back tool: from here on, the tools are a copy.
		out := append([]models.Tool(nil), req.Tools[:i]...)
		for _, t := range req.Tools[i+1:] {
			if !t.Deferred || loaded[t.Name] {
				out = append(out, t)
			}
		}
		return out
	}
	return req.Tools
}

// referencedTools are the tools the conversation's tool references and
// the tool choice name.
func referencedTools(req *models.Request) map[string]bool {
	names := map[string]bool{}
	if req.Choice.Mode == models.ChoiceFunction && req.Choice.Server == "" {
		names[req.Choice.Name] = true
	}
	for _, m := range req.Messages {
		for _, b := range m.Blocks {
			if b.Kind == models.BlockToolReference {
				names[b.Name] = true
			}
		}
	}
	return names
}

// withDeferred returns req as its model is given it: the tools
// OfferedTools says, and each tool reference in words the model reads
// (no back door knows the block). req itself is left as it was: the copy
// shares what did not change.
func withDeferred(req *models.Request) *models.Request {
	tools := OfferedTools(req)
	msgs := req.Messages
	copied := false
	for i, m := range req.Messages {
		if !hasReference(m) {
			continue
		}
		if !copied {
			msgs = append([]models.Message(nil), req.Messages...)
			copied = true
		}
		blocks := make([]models.Block, len(m.Blocks))
		for j, b := range m.Blocks {
			if b.Kind == models.BlockToolReference {
				b = models.Block{Kind: models.BlockText, Text: referenceNote(b.Name, models.HasTool(tools, b.Name))}
			}
			blocks[j] = b
		}
		msgs[i].Blocks = blocks
	}
	if !copied && len(tools) == len(req.Tools) {
		return req
	}
	out := *req
	out.Tools, out.Messages = tools, msgs
	return &out
}

func hasReference(m models.Message) bool {
	for _, b := range m.Blocks {
		if b.Kind == models.BlockToolReference {
			return true
		}
	}
	return false
}

// referenceNote is a tool reference in words: the model learns that the
// tool it searched for is now among its tools (or that the client never
// sent it, so that it does not call it in vain).
func referenceNote(name string, offered bool) string {
	name = utils.Clip(name, utils.QuoteLen)
	if offered {
		return fmt.Sprintf("Tool %s is loaded: it is now in your list of tools with its full definition, and you can call it like any other tool.", name)
	}
	return fmt.Sprintf("Tool %s was found, but the client application did not send its definition: it cannot be called.", name)
}
