package clientkeys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sumHex(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }

func TestParse(t *testing.T) {
	yamlFile := "keys:\n  - name: alice\n    key: sk-alice-1234\n    limits: {rpm: 60, tokens_per_day: 2000000, concurrent: 4}\n  - name: bob\n    sha256: " + sumHex("sk-bob") + "\n"
	jsonFile := "{\n\t\"keys\": [\n\t\t{\"name\": \"alice\", \"key\": \"sk-alice-1234\", \"limits\": {\"rpm\": 60, \"tokens_per_day\": 2000000, \"concurrent\": 4}},\n\t\t{\"name\": \"bob\", \"sha256\": \"" + sumHex("sk-bob") + "\"}\n\t]\n}\n"
	for name, data := range map[string]string{"yaml": yamlFile, "json": jsonFile} {
		t.Run(name, func(t *testing.T) {
			tab, err := Parse("keys."+name, []byte(data), []string{"sk-plain"})
			require.NoError(t, err)
			require.Equal(t, 3, tab.Len())
			k, ok := tab.Match("sk-alice-1234")
			require.True(t, ok)
			assert.Equal(t, "alice", k.Name)
			assert.Equal(t, Limits{RPM: 60, TokensPerDay: 2000000, Concurrent: 4}, k.Limits)
			k, ok = tab.Match("sk-bob")
			require.True(t, ok)
			assert.Equal(t, "bob", k.Name)
			assert.True(t, k.Limits.None())
			assert.Equal(t, "bob", tab.NameOf(k.Fingerprint))
			k, ok = tab.Match("sk-plain")
			require.True(t, ok)
			assert.Empty(t, k.Name)
			_, ok = tab.Match("sk-other")
			assert.False(t, ok)
		})
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"syntax", "keys:\n  - name: a\n    key: sk-1\n  - name: b\n\tkey: x\n", "k.yaml: yaml: line 4"},
		{"no name", "keys:\n  - key: sk-1\n", "k.yaml:2: a key needs a name"},
		{"no secret", "keys:\n  - name: a\n", "k.yaml:2: key \"a\" needs key"},
		{"both", "keys:\n  - name: a\n    key: sk-1\n    sha256: " + sumHex("x") + "\n", "k.yaml:4: a key has either"},
		{"bad sha", "keys:\n  - name: a\n    sha256: abc\n", "k.yaml:3: sha256 is the 64 hex"},
		{"bad limit", "keys:\n  - name: a\n    key: sk-1\n    limits:\n      rpm: -1\n", "k.yaml:5: rpm is a whole number"},
		{"unknown limit", "keys:\n  - name: a\n    key: sk-1\n    limits: {rps: 1}\n", "k.yaml:4: unknown limit \"rps\""},
		{"unknown field", "keys:\n  - name: a\n    kee: sk-1\n", "k.yaml:3: unknown field \"kee\""},
		{"dup name", "keys:\n  - name: a\n    key: sk-1\n  - name: a\n    key: sk-2\n", "k.yaml:4: name \"a\" is taken by the key at line 2"},
		{"dup key", "keys:\n  - name: a\n    key: sk-1\n  - name: b\n    sha256: " + sumHex("sk-1") + "\n", "k.yaml:5: key \"b\" is the same key as the one at line 3"},
		{"not a list", "keys: 3\n", "k.yaml:1: keys is a list"},
		// The usage ledger joins a record's dimensions with \x1f: no name
		// may hold it, nor any other control character.
		{"separator in name", "keys:\n  - key: sk-1\n    name: \"a\\x1fb\"\n", "k.yaml:3: name \"a\\x1fb\": use 1 to 64 letters"},
		{"separator in JSON name", "{\"keys\": [\n {\"key\": \"sk-1\",\n  \"name\": \"a\\u001fb\"}]}", "k.yaml:3: name \"a\\x1fb\""},
		{"newline in name", "keys:\n  - name: \"a\\nb\"\n    key: sk-1\n", "k.yaml:2: name \"a\\nb\""},
		{"tab in name", "keys:\n  - name: \"a\\tb\"\n    key: sk-1\n", "k.yaml:2: name \"a\\tb\""},
		{"empty", "", "k.yaml:1: the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("k.yaml", []byte(tc.file), nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "sk-1")
		})
	}
}

// A bad file on reload keeps the keys in force, and Status says why; a
// good one replaces them, found by Watch from the file's change.
func TestReloadKeepsTheOldKeysOnABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(path, []byte("keys:\n  - name: alice\n    key: sk-a\n"), 0o600))
	s, err := Load(path, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	go s.Watch(ctx, 100*time.Millisecond, sig, slog.New(slog.NewTextHandler(io.Discard, nil)))

	require.NoError(t, os.WriteFile(path, []byte("keys:\n  - name: alice\n    kee: sk-b\n"), 0o600))
	sig <- os.Interrupt
	require.Eventually(t, func() bool { return s.Status().Err != "" }, 10*time.Second, 50*time.Millisecond)
	assert.Contains(t, s.Status().Err, "keys.yaml:3")
	k, ok := s.Match("sk-a")
	require.True(t, ok, "the old keys stay")
	assert.Equal(t, "alice", k.Name)

	require.NoError(t, os.WriteFile(path, []byte("keys:\n  - name: bob\n    key: sk-bob-longer\n"), 0o600))
	require.Eventually(t, func() bool { _, ok := s.Match("sk-bob-longer"); return ok }, 10*time.Second, 50*time.Millisecond)
	_, ok = s.Match("sk-a")
	assert.False(t, ok)
	assert.Empty(t, s.Status().Err)
}

func TestLoadRefusesABadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.json")
	require.NoError(t, os.WriteFile(path, []byte("{\"keys\": [\n {\"name\": \"a\"}\n]}"), 0o600))
	_, err := Load(path, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keys.json:2")
}
