package chat

import (
	"fmt"
	"regexp"
)

// isRefusal reports whether a reply's opening matches a refusal pattern.
func (s *Service) isRefusal(text string) bool {
	if len(text) > 2000 {
		text = text[:2000] // refusals open the reply
	}
	for _, re := range s.settings.Refusals {
		if re.MatchString(text) {
			return true
		}
	}
	return false
}

// DefaultRefusals are the upstream personas' refusals (support, and since
// April 2026 docs) as public gateways' issue trackers quote them. Each names
// the persona or its scope, so an ordinary answer about Cursor does not match.
var DefaultRefusals = []string{
	`(?i)I(?:'m| am) (?:an? )?(?:AI )?(?:support|customer support) (?:assistant|agent) for Cursor`,
	`(?i)(?:outside|beyond) (?:the )?scope of (?:what I can (?:help|assist) with|my (?:role|purpose))`,
	// "I can only help with questions about Cursor", "I only assist with
	// Cursor-related topics", "I'm only able to answer questions related
	// to Cursor", "I'm here to help with questions about Cursor"
	`(?i)\bI (?:can |could )?(?:only|just) (?:help|assist|answer)` + refusalScope,
	`(?i)\bI(?:'m| am) (?:(?:only|just) (?:able|here)|here|designed|built|scoped) to (?:help|assist|answer)` + refusalScope,
	// "I'm a documentation assistant", "As Cursor's docs assistant, ..."
	`(?i)\b(?:I(?:'m| am)|As) (?:an? |the )?(?:Cursor(?:'s)? )?(?:AI )?(?:documentation|docs) (?:assistant|agent|bot|helper)\b`,
	`(?i)\bscoped to (?:answering|helping with|assisting with)(?: (?:questions|topics))?(?: (?:about|related to|regarding|on))? (?:the )?Cursor\b`,
	`(?i)\b(?:is not|isn't|not) something I (?:can|am able to|'m able to) (?:help|assist) (?:you )?with\b`,
	`(?i)\b(?:falls|is|are) (?:outside|beyond) (?:of )?(?:my|this assistant's) (?:scope|area of expertise|purpose)\b`,
	// the docs persona on its own tools: "I only have two tools: read_file and read_dir"
	`(?i)\bI (?:only |just )?have (?:access to )?(?:only )?(?:two|2) tools\b`,
	`(?i)\bmy (?:only )?tools are ` + "`?read_file`? and `?read_dir`?",
	// the same in Chinese: "只能回答与 Cursor 相关的问题", "专注于回答与 Cursor 编辑器相关的问题", "我是 Cursor 的文档助手"
	`只能(?:回答|帮助|解答)[^。！？\n]{0,30}Cursor`,
	`专[注门]于?(?:回答|帮助|解答)[^。！？\n]{0,30}Cursor`,
	`我是\s*Cursor\s*的?\s*(?:文档|支持|客服)助手`,
}

// refusalScope is the end of a refusal that names its scope: "with
// Cursor", "you with questions about Cursor", "questions related to the
// Cursor editor". Answering "the Cursor question" is no refusal.
const refusalScope = `(?: you)? (?:with (?:(?:questions|topics|things|issues|queries|requests) )?(?:(?:about|related to|regarding|concerning|on) )?|` +
	`(?:questions|topics|things|issues|queries|requests) (?:about|related to|regarding|concerning|on) )(?:the )?Cursor\b`

// CompileRefusals compiles REFUSAL_PATTERNS, or DefaultRefusals when none
// are given.
func CompileRefusals(patterns []string) ([]*regexp.Regexp, error) {
	if len(patterns) == 0 {
		patterns = DefaultRefusals
	}
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("refusal pattern %q: %w", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}
