package responses

import (
	"encoding/json"

	"github.com/tidwall/gjson"

	"cursor2api/handlers/sse"
	"cursor2api/models"
)

// Compaction, as Codex asks for it: a request whose last input item is a
// compaction_trigger (or any POST /v1/responses/compact) is answered with
// one compaction item, whose encrypted_content is the model's summary of
// the conversation sealed by the gateway (Sealer). When the item comes
// back as input, the model reads the summary in its place.

// ItemCompactionTrigger is the input item that asks for a compaction.
const ItemCompactionTrigger = "compaction_trigger"

// CompactionPrompt is the instruction that closes a compaction request:
// what a coding agent needs to carry on from the summary alone.
const CompactionPrompt = `The conversation above is about to be replaced by a summary: the agent that carries on will see only your summary, not the messages. Write that handoff summary now, as plain text, without calling any tool. Keep what is needed to continue the work and nothing else:
1. Goals: what the user asked for, with their constraints and preferences (quote them where the wording matters).
2. Decisions: what was decided and why.
3. Files and commands: every file read, created or changed (with its path and what changed), and the commands run with their results that matter.
4. Failures: what failed or was tried and abandoned, with the error messages that matter.
5. State and next steps: where the work stands, and what to do next, step by step.
Keep exact names, paths, values, ids and snippets the next steps need. Leave out pleasantries and tool output that no longer matters. Write only the summary.`

// summaryHead introduces an opened compaction item to the model.
const summaryHead = "The earlier part of this conversation was compacted into the summary below (written when the history grew long; the messages it covers are gone):\n\n"

// SummaryMessage is the message that stands for a compaction item holding
// summary: a user turn, so that it keeps its place in the conversation.
func SummaryMessage(summary string) models.Message {
	return textMessage(models.RoleUser, summaryHead+summary)
}

// Compact makes d a compaction request: no tools may be called, no MCP
// server is connected, and the model is asked for the summary last.
func (d *Decoded) Compact() {
	d.Compaction = true
	r := d.Request
	r.Choice = models.ToolChoice{Mode: models.ChoiceNone}
	r.MCPServers, d.MCPServers = nil, nil
	r.ShowThinking, r.SingleCall = false, false
	r.Messages = append(r.Messages, textMessage(models.RoleUser, CompactionPrompt))
}

// openCompaction reads the summary of the compaction item at path.
func (c *conversation) openCompaction(content, path string) (string, error) {
	if c.open == nil {
		return "", models.InvalidRequest(path, "%s: compaction items are not read on this route", path)
	}
	summary, err := c.open(content)
	if err != nil {
		e := models.InvalidRequest(path+".encrypted_content",
			"%s.encrypted_content cannot be opened: %v. A compaction item opens only on the gateway deployment that made it (the same COMPACTION_SECRET on every replica) and for the API key that asked for it; send the conversation without it, or start a new session",
			path, err)
		e.Code = "invalid_encrypted_content"
		return "", e
	}
	return summary, nil
}

// compactionItem is the output item of a sealed summary.
func compactionItem(sealed string) OutputItem {
	return OutputItem{ID: itemID("cmp"), Type: ItemCompaction, Status: StatusCompleted, EncryptedContent: sealed}
}

// CompactionFromAnswer completes base with the one compaction item of a
// compaction request, sealed already, and the answer's usage.
func CompactionFromAnswer(base Response, sealed string, usage models.Usage) Response {
	out := base
	out.Output = []OutputItem{compactionItem(sealed)}
	out.Status = StatusCompleted
	u := toUsage(usage)
	out.Usage = &u
	return out
}

// Compacted is the body of POST /v1/responses/compact: the conversation's
// recent user messages, then the compaction item.
type Compacted struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Output    []json.RawMessage `json:"output"`
	Usage     *Usage            `json:"usage"`
}

// retainedUserBytes bounds the user messages /responses/compact hands
// back beside the summary (about Codex's own 20,000 tokens).
const retainedUserBytes = 80_000

// NewCompacted is the answer of POST /v1/responses/compact: the last user
// messages of items that fit retainedUserBytes, as they came, in order,
// then the compaction item of sealed.
func NewCompacted(id string, createdAt int64, items []json.RawMessage, sealed string, usage models.Usage) *Compacted {
	var kept []json.RawMessage
	size := 0
	for i := len(items) - 1; i >= 0; i-- {
		typ, role := gjson.GetBytes(items[i], "type").String(), gjson.GetBytes(items[i], "role").String()
		if (typ != "" && typ != "message") || role != "user" {
			continue
		}
		if size += len(items[i]); size > retainedUserBytes {
			break
		}
		kept = append(kept, items[i])
	}
	out := make([]json.RawMessage, 0, len(kept)+1)
	for i := len(kept) - 1; i >= 0; i-- {
		out = append(out, kept[i])
	}
	item, _ := json.Marshal(compactionItem(sealed)) // strings only: it cannot fail
	u := toUsage(usage)
	return &Compacted{ID: id, Object: "response.compaction", CreatedAt: createdAt, Output: append(out, item), Usage: &u}
}

// CompactionWriter streams the answer of a compaction request: the
// model's summary is kept, never streamed, and the response carries one
// compaction item with it sealed, as Codex requires (output_item.added and
// .done, then response.completed). Reasoning and calls are dropped.
type CompactionWriter struct {
	*StreamWriter
	seal    func(string) string
	summary textPieces
}

// NewCompactionWriter returns the writer of the compaction response base
// on w; seal seals the summary for the client.
func NewCompactionWriter(w *sse.Writer, base Response, seal func(string) string) *CompactionWriter {
	return &CompactionWriter{StreamWriter: NewStreamWriter(w, base, nil), seal: seal}
}

// Text keeps a piece of the summary; the response opens with the first.
func (w *CompactionWriter) Text(text string) error {
	if text == "" {
		return nil
	}
	w.summary.WriteString(text)
	return w.open()
}

// Reasoning is not part of the summary.
func (w *CompactionWriter) Reasoning(string) error { return nil }

// ToolCallStart, ToolCallArguments and ToolCallEnd drop a call: a
// compaction request offers no tool.
func (w *CompactionWriter) ToolCallStart(id, name string) error { return nil }

// ToolCallArguments drops a call's arguments (see ToolCallStart).
func (w *CompactionWriter) ToolCallArguments(string) error { return nil }

// ToolCallEnd drops a call's end (see ToolCallStart).
func (w *CompactionWriter) ToolCallEnd(bool) error { return nil }

// Finish seals the summary and writes the compaction item and
// response.completed. A summary cut at the length cap is still the
// summary: the session goes on with what the model wrote.
func (w *CompactionWriter) Finish(_ models.FinishReason, usage models.Usage) error {
	s := w.StreamWriter
	if err := s.open(); err != nil {
		return err
	}
	it := compactionItem(w.seal(w.summary.String()))
	w.summary.Reset()
	index := len(s.resp.Output)
	added := it
	added.Status = StatusInProgress
	if err := s.emit(Event{Type: EventItemAdded, OutputIndex: ptr(index), Item: &added}); err != nil {
		return err
	}
	if err := s.itemDone(&it, index, nil); err != nil {
		return err
	}
	s.resp.Status = StatusCompleted
	u := toUsage(usage)
	s.resp.Usage = &u
	defer s.Close()
	return s.completed(EventCompleted)
}
