package models

import (
	"fmt"
	"path"
	"strings"
)

// Alias maps the model names that match a glob pattern (path.Match
// syntax: * and ?) to a public model name.
type Alias struct {
	Pattern, Target string
}

// Aliases are tried in order; the first whose pattern matches and whose
// target the catalog publishes wins.
type Aliases []Alias

// DefaultTarget is the alias target that stands for the catalog's default
// model (Catalog.Default) when no model of that name is published: the
// upstream's list changes without notice, and a family of client names
// (claude-*, gpt-*) must still reach a model that works.
const DefaultTarget = "default"

// ParseAliases reads "pattern=target" entries, such as the values of
// MODEL_ALIASES.
func ParseAliases(entries []string) (Aliases, error) {
	var out Aliases
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		pattern, target, ok := strings.Cut(e, "=")
		pattern, target = strings.TrimSpace(pattern), strings.TrimSpace(target)
		if !ok || pattern == "" || target == "" {
			return nil, fmt.Errorf("alias %q: write pattern=model, e.g. claude-*=claude-sonnet-4.6", e)
		}
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("alias %q: the pattern is not a valid glob: %v", e, err)
		}
		out = append(out, Alias{Pattern: pattern, Target: target})
	}
	return out, nil
}

// Resolve returns the public model name stands for: itself when published,
// else the first matching alias with a published target. DefaultTarget is
// the catalog's default model (its -thinking twin if name asks for one).
func (a Aliases) Resolve(name string, c *Catalog) (public string, ok bool) {
	if _, ok := c.Resolve(name); ok {
		return name, true
	}
	for _, al := range a {
		if matched, _ := path.Match(al.Pattern, name); !matched {
			continue
		}
		if _, ok := c.Resolve(al.Target); ok {
			return al.Target, true
		}
		if al.Target != DefaultTarget {
			continue
		}
		if def, ok := c.Default(); ok {
			if strings.HasSuffix(name, ThinkingSuffix) {
				if _, ok := c.Resolve(def + ThinkingSuffix); ok {
					return def + ThinkingSuffix, true
				}
			}
			return def, true
		}
	}
	return "", false
}
