package toolproto

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusTools are the tools of a Kilo Code / Roo Code session.
var corpusTools = []string{"read_file", "write_to_file", "execute_command", "list_files", "attempt_completion", "ask_followup_question"}

// corpusCase is one file of testdata/corpus: a realistic model reply (with
// TRIGGER standing for the request's trigger) and what the client must see.
type corpusCase struct {
	thinking bool
	input    string
	want     []Event
}

func loadCorpusCase(t *testing.T, path string) corpusCase {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(raw)
	head, rest, ok := strings.Cut(s, "--- input\n")
	require.True(t, ok, "no input section")
	input, expect, ok := strings.Cut(rest, "\n--- expect\n")
	require.True(t, ok, "no expect section")
	c := corpusCase{thinking: strings.Contains(head, "thinking: on"), input: strings.ReplaceAll(input, "TRIGGER", trig)}
	for _, line := range strings.Split(strings.TrimSpace(expect), "\n") {
		var e struct {
			Text     *string         `json:"text"`
			Thinking *string         `json:"thinking"`
			Call     string          `json:"call"`
			Args     json.RawMessage `json:"args"`
			Bad      string          `json:"bad"`
			Reason   string          `json:"reason"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		switch {
		case e.Text != nil:
			c.want = append(c.want, txt(strings.ReplaceAll(*e.Text, "TRIGGER", trig)))
		case e.Thinking != nil:
			c.want = append(c.want, think(strings.ReplaceAll(*e.Thinking, "TRIGGER", trig)))
		case e.Call != "":
			c.want = append(c.want, tcall(e.Call, string(e.Args)))
		case e.Bad != "":
			c.want = append(c.want, Event{Kind: EventBadCall, Name: e.Bad, Reason: e.Reason})
		}
	}
	return c
}

func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.txt")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 60)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c := loadCorpusCase(t, path)
			opts := ParserOptions{Trigger: trig, Thinking: c.thinking, ToolNames: corpusTools, EndTurnAtCall: true}
			streaming := opts
			streaming.StreamArgs = true
			for i, chunks := range splits(c.input, rng) {
				got := merged(feed(opts, chunks))
				require.Equal(t, got, unstreamed(t, feed(streaming, chunks)), "split #%d: StreamArgs changes only how calls arrive", i)
				require.Len(t, got, len(c.want), "split #%d: got %+v", i, got)
				for j, w := range c.want {
					g := got[j]
					require.Equal(t, w.Kind, g.Kind, "split #%d event %d: %+v", i, j, g)
					switch w.Kind {
					case EventToolCall:
						assert.Equal(t, w.Name, g.Name)
						assert.JSONEq(t, w.Arguments, g.Arguments, "split #%d", i)
					case EventBadCall:
						assert.Equal(t, w.Name, g.Name)
						assert.Equal(t, w.Reason, g.Reason)
					default:
						assert.Equal(t, w.Text, g.Text, "split #%d", i)
					}
					if g.Kind == EventText && !strings.Contains(w.Text, "<invoke") {
						assert.NotContains(t, g.Text, trig, "the trigger never reaches the client")
						assert.NotContains(t, g.Text, "</invoke>")
						assert.NotContains(t, g.Text, "<thinking>")
					}
				}
			}
		})
	}
}
