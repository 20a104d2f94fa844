// Package clientkeys is the gateway's client keys: the plain list of
// API_KEY (unnamed, no limits) and the named keys of API_KEYS_FILE, each
// with optional limits, matched in constant time and reloaded when the
// file changes. Keys are held as their SHA-256 only.
package clientkeys

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits bound what one key may use; zero is no limit.
type Limits struct {
	RPM          int64 `json:"rpm,omitempty"`
	TokensPerDay int64 `json:"tokens_per_day,omitempty"`
	Concurrent   int64 `json:"concurrent,omitempty"`
}

// None reports whether l limits nothing.
func (l Limits) None() bool { return l == Limits{} }

// Key is a client key as the gateway knows it: never the key itself.
type Key struct {
	// Name is the file's name for the key; "" for a key of API_KEY.
	Name string `json:"name"`
	// Fingerprint is usage.KeyID of the key, as the ledger keeps it.
	Fingerprint string `json:"fingerprint"`
	Limits      Limits `json:"limits"`
	sum         [sha256.Size]byte
}

// Fingerprint is the short hash of a key's SHA-256 the usage ledger
// names keys by (usage.KeyID: "key_" and its first four bytes in hex).
func Fingerprint(sum [sha256.Size]byte) string { return "key_" + hex.EncodeToString(sum[:4]) }

// Table is one generation of keys, read-only once built.
type Table struct {
	keys   []Key
	byName map[string]int
	byFP   map[string]int
}

func newTable(keys []Key) *Table {
	t := &Table{keys: keys, byName: map[string]int{}, byFP: map[string]int{}}
	for i, k := range keys {
		if k.Name != "" {
			t.byName[k.Name] = i
		}
		if _, dup := t.byFP[k.Fingerprint]; !dup {
			t.byFP[k.Fingerprint] = i
		}
	}
	return t
}

// Match finds the key given, comparing its SHA-256 against every key's
// in constant time (the time depends on the number of keys only).
func (t *Table) Match(given string) (Key, bool) {
	sum := sha256.Sum256([]byte(given))
	found, matched := -1, 0
	for i := range t.keys {
		// The first match wins (a file's named key over the same key in
		// API_KEY), with no branch on the secret.
		eq := subtle.ConstantTimeCompare(sum[:], t.keys[i].sum[:]) &^ matched
		found = subtle.ConstantTimeSelect(eq, i, found)
		matched |= eq
	}
	if found < 0 {
		return Key{}, false
	}
	return t.keys[found], true
}

// Len is the number of keys.
func (t *Table) Len() int { return len(t.keys) }

// Keys lists the keys in the file's order, API_KEY's after.
func (t *Table) Keys() []Key { return slices.Clone(t.keys) }

// NameOf is the name of the key of fingerprint ("" when unnamed or unknown).
func (t *Table) NameOf(fingerprint string) string {
	if i, ok := t.byFP[fingerprint]; ok {
		return t.keys[i].Name
	}
	return ""
}

// The keys file's shape; every field but a key's limits is checked by hand
// on the YAML nodes, so that an error names its line. A name holds no
// control character: the usage ledger joins its record's parts with one.
var (
	itemFields  = []string{"name", "key", "sha256", "limits"}
	limitFields = []string{"rpm", "tokens_per_day", "concurrent"}
	nameRE      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)
	hexRE       = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// Parse reads a keys file (YAML, or JSON in the same shape) named file,
// and adds the unnamed keys of plain (API_KEY). Its errors name the file
// and the line, and never quote a key.
func Parse(file string, data []byte, plain []string) (*Table, error) {
	var keys []Key
	if file != "" {
		var err error
		if keys, err = parseFile(file, data); err != nil {
			return nil, err
		}
	}
	for _, p := range plain {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		sum := sha256.Sum256([]byte(p))
		if slices.ContainsFunc(keys, func(k Key) bool { return k.sum == sum }) {
			continue // named in the file
		}
		keys = append(keys, Key{Fingerprint: Fingerprint(sum), sum: sum})
	}
	return newTable(keys), nil
}

func parseFile(file string, data []byte) ([]Key, error) {
	at := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, n.Line, fmt.Sprintf(format, args...))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml's own message names the line ("yaml: line 3: ...").
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s:1: the file is empty: write keys: [{name: alice, key: sk-…}]", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, at(root, "the file is a mapping with one field, keys: a list of {name, key or sha256, limits}")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "keys" {
			return nil, at(k, "unknown field %q: the file has one field, keys", clip(k.Value))
		}
		list = v
	}
	if list == nil {
		return nil, at(root, "no field keys: write keys: [{name: alice, key: sk-…}]")
	}
	if list.Kind != yaml.SequenceNode {
		return nil, at(list, "keys is a list of {name, key or sha256, limits}")
	}
	var keys []Key
	names, sums := map[string]int{}, map[[sha256.Size]byte]int{}
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, at(item, "each key is a mapping {name, key or sha256, limits}")
		}
		var k Key
		var nameNode, secretNode *yaml.Node
		for i := 0; i+1 < len(item.Content); i += 2 {
			f, v := item.Content[i], item.Content[i+1]
			if !slices.Contains(itemFields, f.Value) {
				return nil, at(f, "unknown field %q: a key has name, key or sha256, and limits", clip(f.Value))
			}
			if f.Value != "limits" && (v.Kind != yaml.ScalarNode || v.Tag == "!!null") {
				return nil, at(v, "%s is a string", f.Value)
			}
			switch f.Value {
			case "name":
				nameNode, k.Name = v, v.Value
			case "key", "sha256":
				if secretNode != nil {
					return nil, at(f, "a key has either key or sha256, not both")
				}
				secretNode = v
				if f.Value == "key" {
					if strings.TrimSpace(v.Value) == "" || strings.TrimSpace(v.Value) != v.Value {
						return nil, at(v, "key is empty or has spaces around it")
					}
					k.sum = sha256.Sum256([]byte(v.Value))
				} else {
					if !hexRE.MatchString(v.Value) {
						return nil, at(v, "sha256 is the 64 hex digits of the key's SHA-256 (printf %%s \"$KEY\" | sha256sum)")
					}
					b, _ := hex.DecodeString(v.Value)
					copy(k.sum[:], b)
				}
			case "limits":
				l, err := parseLimits(v, at)
				if err != nil {
					return nil, err
				}
				k.Limits = l
			}
		}
		switch {
		case nameNode == nil:
			return nil, at(item, "a key needs a name")
		case !nameRE.MatchString(k.Name):
			return nil, at(nameNode, "name %q: use 1 to 64 letters, digits and . _ @ -, starting with a letter or digit", clip(k.Name))
		case secretNode == nil:
			return nil, at(item, "key %q needs key: <the key> or sha256: <its SHA-256 in hex>", k.Name)
		}
		if line, dup := names[k.Name]; dup {
			return nil, at(nameNode, "name %q is taken by the key at line %d", k.Name, line)
		}
		if line, dup := sums[k.sum]; dup {
			return nil, at(secretNode, "key %q is the same key as the one at line %d", k.Name, line)
		}
		names[k.Name], sums[k.sum] = nameNode.Line, secretNode.Line
		k.Fingerprint = Fingerprint(k.sum)
		keys = append(keys, k)
	}
	return keys, nil
}

func parseLimits(v *yaml.Node, at func(*yaml.Node, string, ...any) error) (Limits, error) {
	var l Limits
	if v.Tag == "!!null" {
		return l, nil
	}
	if v.Kind != yaml.MappingNode {
		return l, at(v, "limits is a mapping {rpm, tokens_per_day, concurrent}")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		f, n := v.Content[i], v.Content[i+1]
		if !slices.Contains(limitFields, f.Value) {
			return l, at(f, "unknown limit %q: the limits are rpm, tokens_per_day and concurrent", clip(f.Value))
		}
		var x int64
		if n.Kind != yaml.ScalarNode || n.Decode(&x) != nil || x < 0 {
			return l, at(n, "%s is a whole number, 0 or more (0: no limit)", f.Value)
		}
		switch f.Value {
		case "rpm":
			l.RPM = x
		case "tokens_per_day":
			l.TokensPerDay = x
		case "concurrent":
			l.Concurrent = x
		}
	}
	return l, nil
}

// clip bounds what an error quotes of the file.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
