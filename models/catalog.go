package models

import (
	"fmt"
	"strings"
	"sync"
)

// Cursor's two hosts, the one home of each: the Connect API (the native
// back door's runs, the key exchange) and the REST API (the account's
// models, Cloud Agents). CURSOR_BACKEND_URL replaces both for the native
// back door; CLOUD_API_URL's default in config spells CursorAPIURL.
const (
	CursorConnectURL = "https://api2.cursor.sh"
	CursorAPIURL     = "https://api.cursor.com"
)

// ThinkingSuffix marks the public variant of a model that reasons in
// <thinking> tags before answering.
const ThinkingSuffix = "-thinking"

// ResolvedModel is what a public model name means for one request.
type ResolvedModel struct {
	Public   string // the name the client asked for, echoed in responses
	Base     string // the public base name, without -thinking
	Upstream string // the upstream model id sent to Cursor
	Thinking bool
}

// Catalog is the set of public models and their upstream ids. It is built
// from configuration; a back door that learns its models at run time
// (the agent CLI) swaps in a fresh list with Replace.
type Catalog struct {
	mu       sync.RWMutex
	names    []string
	resolved map[string]ResolvedModel
	// display holds the upstream's display names, when it gave them.
	display map[string]string
}

// defaultUpstream holds the upstream ids of well-known public names, so that
// MODELS=gemini-3-flash works without a MODEL_MAP entry.
var defaultUpstream = map[string]string{
	"claude-sonnet-4.6": "anthropic/claude-sonnet-4.6",
	"claude-sonnet-4.5": "anthropic/claude-sonnet-4.5",
	"claude-opus-4.6":   "anthropic/claude-opus-4.6",
	"claude-opus-4.5":   "anthropic/claude-opus-4.5",
	"claude-haiku-4.5":  "anthropic/claude-haiku-4.5",
	"gemini-3-flash":    "google/gemini-3-flash",
	"gemini-3-pro":      "google/gemini-3-pro",
	"gemini-2.5-pro":    "google/gemini-2.5-pro",
	"gemini-2.5-flash":  "google/gemini-2.5-flash",
	"gpt-5":             "openai/gpt-5",
	"gpt-5.1":           "openai/gpt-5.1",
	"gpt-5-mini":        "openai/gpt-5-mini",
	"grok-4":            "xai/grok-4",
}

// vendorPrefixes infers the upstream vendor of names not in defaultUpstream.
var vendorPrefixes = []struct{ prefix, vendor string }{
	{"claude-", "anthropic"},
	{"gemini-", "google"},
	{"gpt-", "openai"},
	{"o3", "openai"},
	{"o4", "openai"},
	{"grok-", "xai"},
}

// UpstreamID returns the upstream id for a public base name: the MODEL_MAP
// entry, else a built-in default, else the name itself when it already looks
// like an upstream id ("vendor/model"), else a vendor inferred from the
// name's prefix. ok is false when none applies.
func UpstreamID(base string, modelMap map[string]string) (id string, ok bool) {
	if id, ok := modelMap[base]; ok && id != "" {
		return id, true
	}
	if id, ok := defaultUpstream[base]; ok {
		return id, true
	}
	if strings.Contains(base, "/") {
		return base, true
	}
	for _, v := range vendorPrefixes {
		if strings.HasPrefix(base, v.prefix) {
			return v.vendor + "/" + base, true
		}
	}
	return "", false
}

// NewCatalog publishes every base name and its -thinking variant. A name
// that already ends in -thinking is published as is and maps to its base's
// upstream id; duplicates are dropped with the first position kept.
func NewCatalog(bases []string, modelMap map[string]string) (*Catalog, error) {
	c := &Catalog{resolved: make(map[string]ResolvedModel)}
	add := func(public, base string, thinking bool) error {
		if _, dup := c.resolved[public]; dup {
			return nil
		}
		up, ok := UpstreamID(base, modelMap)
		if !ok {
			return fmt.Errorf("model %q has no upstream id: add it to MODEL_MAP as %s=vendor/model", base, base)
		}
		c.names = append(c.names, public)
		c.resolved[public] = ResolvedModel{Public: public, Base: base, Upstream: up, Thinking: thinking}
		return nil
	}
	for _, name := range bases {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		base, isThinking := strings.CutSuffix(name, ThinkingSuffix)
		if isThinking {
			if base == "" {
				return nil, fmt.Errorf("model name %q has no base name", name)
			}
			if err := add(name, base, true); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(name, name, false); err != nil {
			return nil, err
		}
		if err := add(name+ThinkingSuffix, name, true); err != nil {
			return nil, err
		}
	}
	if len(c.names) == 0 {
		return nil, fmt.Errorf("MODELS lists no model")
	}
	return c, nil
}

// NewUpstreamCatalog publishes the model ids an upstream offers under
// their own names, each also as <id>-thinking. An id that the upstream
// itself offers with the -thinking suffix keeps its own upstream id, so
// that the upstream's native thinking model is used for it.
func NewUpstreamCatalog(ids []string) (*Catalog, error) {
	offered := make(map[string]bool, len(ids))
	for _, id := range ids {
		offered[strings.TrimSpace(id)] = true
	}
	c := &Catalog{resolved: make(map[string]ResolvedModel)}
	add := func(public, base, up string, thinking bool) {
		if _, dup := c.resolved[public]; dup {
			return
		}
		c.names = append(c.names, public)
		c.resolved[public] = ResolvedModel{Public: public, Base: base, Upstream: up, Thinking: thinking}
	}
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if base, ok := strings.CutSuffix(id, ThinkingSuffix); ok && base != "" {
			add(id, base, id, true)
			continue
		}
		add(id, id, id, false)
		thinking := id + ThinkingSuffix
		if offered[thinking] {
			add(thinking, id, thinking, true)
		} else {
			add(thinking, id, id, true)
		}
	}
	if len(c.names) == 0 {
		return nil, fmt.Errorf("the upstream offers no model")
	}
	return c, nil
}

// NamedModel is a model an upstream offers, with the name it shows.
type NamedModel struct {
	ID, Display string
}

// NewNamedCatalog publishes an upstream's models as it names them and
// invents no -thinking twin: for a native back door, a twin could think no
// more than its base, and a -thinking id is the upstream's own variant.
func NewNamedCatalog(list []NamedModel) (*Catalog, error) {
	c := &Catalog{resolved: make(map[string]ResolvedModel), display: map[string]string{}}
	for _, m := range list {
		id := strings.TrimSpace(m.ID)
		if id == "" {
			continue
		}
		if _, dup := c.resolved[id]; dup {
			continue
		}
		base, thinking := strings.CutSuffix(id, ThinkingSuffix)
		if base == "" {
			base, thinking = id, false
		}
		c.names = append(c.names, id)
		c.resolved[id] = ResolvedModel{Public: id, Base: base, Upstream: id, Thinking: thinking}
		if d := strings.TrimSpace(m.Display); d != "" {
			c.display[id] = d
		}
	}
	if len(c.names) == 0 {
		return nil, fmt.Errorf("the upstream offers no model")
	}
	return c, nil
}

// DisplayName is the name the upstream shows for a published model; the
// model's own name when it gave none.
func (c *Catalog) DisplayName(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if d, ok := c.display[name]; ok {
		return d
	}
	return name
}

// Replace makes c publish what next publishes. Requests already resolved
// keep the model they resolved.
func (c *Catalog) Replace(next *Catalog) {
	next.mu.RLock()
	names, resolved, display := next.names, next.resolved, next.display
	next.mu.RUnlock()
	c.mu.Lock()
	c.names, c.resolved, c.display = names, resolved, display
	c.mu.Unlock()
}

// Names returns the public model names in publication order.
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]string(nil), c.names...)
}

// Default is the model a DefaultTarget alias stands for: the first
// published name without the -thinking suffix, else the first name. ok is
// false when the catalog is empty.
func (c *Catalog) Default() (name string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, n := range c.names {
		if !c.resolved[n].Thinking {
			return n, true
		}
	}
	if len(c.names) == 0 {
		return "", false
	}
	return c.names[0], true
}

// Resolve looks up a public model name.
func (c *Catalog) Resolve(public string) (ResolvedModel, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.resolved[public]
	return m, ok
}

// Upstreams returns each upstream id the catalog uses with the public
// names that map to it.
func (c *Catalog) Upstreams() map[string][]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string][]string)
	for _, name := range c.names {
		m := c.resolved[name]
		out[m.Upstream] = append(out[m.Upstream], name)
	}
	return out
}
