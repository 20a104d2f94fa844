package native

import (
	"strings"

	"cursor2api/models"
)

// family is a kind of client model name and the account models that can
// stand for it, best first.
type family struct {
	patterns []string
	// want are substrings a standing-in model's id has, tried in order;
	// ids holding one of avoid only when no other fits.
	want, avoid []string
}

var families = []family{
	{[]string{"claude-opus-*", "claude-*-opus*", "opus*"}, []string{"opus", "sonnet"}, nil},
	{[]string{"claude-haiku-*", "claude-*-haiku*", "haiku*"}, []string{"haiku", "sonnet"}, nil},
	{[]string{"claude-*", "sonnet*"}, []string{"sonnet", "opus"}, nil},
	{[]string{"*codex*"}, []string{"codex", "gpt-5", "gpt"}, nil},
	{[]string{"gpt-*", "o[0-9]*", "chatgpt-*"}, []string{"gpt-5", "gpt"}, []string{"codex", "mini", "nano"}},
	{[]string{"gemini-*"}, []string{"gemini"}, nil},
	{[]string{"grok-*"}, []string{"grok"}, nil},
}

// DefaultAliases maps the names Claude Code and Codex send to the account's
// models (ids), as Cursor names them (claude-4.5-sonnet, not
// claude-sonnet-4-5), preferring non-thinking models: a client asks for
// thinking by name. A family the account lacks gets no alias.
func DefaultAliases(ids []string) models.Aliases {
	var out models.Aliases
	for _, f := range families {
		target := pick(without(ids, f.avoid), f.want)
		if target == "" {
			target = pick(ids, f.want)
		}
		if target == "" {
			continue
		}
		for _, p := range f.patterns {
			out = append(out, models.Alias{Pattern: p, Target: target})
		}
	}
	return out
}

// pick is the first id holding the first substring any id holds,
// preferring ids without the -thinking suffix.
func pick(ids, want []string) string {
	for _, w := range want {
		var thinking string
		for _, id := range ids {
			if !strings.Contains(strings.ToLower(id), w) {
				continue
			}
			if strings.HasSuffix(id, models.ThinkingSuffix) {
				if thinking == "" {
					thinking = id
				}
				continue
			}
			return id
		}
		if thinking != "" {
			return thinking
		}
	}
	return ""
}

// without is ids less those holding one of avoid.
func without(ids, avoid []string) []string {
	var out []string
next:
	for _, id := range ids {
		for _, a := range avoid {
			if strings.Contains(strings.ToLower(id), a) {
				continue next
			}
		}
		out = append(out, id)
	}
	return out
}
