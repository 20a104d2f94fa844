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

// DefaultRefusals are the upstream persona's refusals seen in the wild.
var DefaultRefusals = []string{
	`(?i)I(?:'m| am) (?:an? )?(?:AI )?(?:support|customer support) (?:assistant|agent) for Cursor`,
	`(?i)I can only (?:help|assist) with (?:questions|topics|things) (?:about|related to) Cursor`,
	`(?i)I(?:'m| am) (?:here|designed|only able) to (?:help|assist) (?:you )?with Cursor`,
	`(?i)(?:outside|beyond) (?:the )?scope of (?:what I can (?:help|assist) with|my (?:role|purpose))`,
}

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
