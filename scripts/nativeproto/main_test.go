package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testSchema = `# a listing in the SDK's format
service a.v1.Svc
  Call a.v1.Req b.v1.Resp unary
  Stream a.v1.Req a.v1.Outer server_streaming
  Both a.v1.Req a.v1.Outer bidi
  Unused a.v1.Big a.v1.Big unary
message a.v1.Req
  1 text string
  3 outer a.v1.Outer optional
message a.v1.Outer
  2 inner a.v1.Outer.Inner repeated
  1 mode a.v1.Mode
  5 one string oneof=choice
  4 two a.v1.Big oneof=choice
  6 meta map<string,google.protobuf.Value>
  7 gone string
message a.v1.Outer.Inner
  1 n int64 optional
message a.v1.Big
  1 huge a.v1.Huge
  2 small string
message a.v1.Huge
  1 x string
message b.v1.Resp
  1 ok bool
enum a.v1.Mode
  0 MODE_UNSPECIFIED
  2 MODE_TWO
`

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name, subset string
		want         map[string][]string // package -> lines the file must hold
		absent       map[string][]string
		err          string
	}{{
		name:   "closure of the methods with numbers, labels, oneofs, maps and nesting",
		subset: "gopkg a.v1 x/a;a\ngopkg b.v1 x/b;b\nrpc a.v1.Svc Call\nrpc a.v1.Svc Stream\nrpc a.v1.Svc Both\n",
		want: map[string][]string{
			"a.v1": {
				`import "b/v1/b.proto";`, `import "google/protobuf/struct.proto";`, `option go_package = "x/a;a";`,
				"  rpc Call(.a.v1.Req) returns (.b.v1.Resp);",
				"  rpc Stream(.a.v1.Req) returns (stream .a.v1.Outer);",
				"  rpc Both(stream .a.v1.Req) returns (stream .a.v1.Outer);",
				"  optional .a.v1.Outer outer = 3;",
				"  repeated .a.v1.Outer.Inner inner = 2;",
				"  oneof choice {\n    string one = 5;\n    .a.v1.Big two = 4;\n  }",
				"  map<string, .google.protobuf.Value> meta = 6;",
				"  message Inner {\n    optional int64 n = 1;\n  }",
				"enum Mode {\n  MODE_UNSPECIFIED = 0;\n  MODE_TWO = 2;\n}",
				"message Huge {",
			},
			"b.v1": {"package b.v1;", "  bool ok = 1;"},
		},
		absent: map[string][]string{"a.v1": {"Unused"}},
	}, {
		name:   "stub, only and drop",
		subset: "gopkg a.v1 x/a;a\nroot a.v1.Req\nstub a.v1.Big\nonly a.v1.Outer inner,two\ndrop a.v1.Req.text\n",
		want:   map[string][]string{"a.v1": {"message Big {\n}", "  repeated .a.v1.Outer.Inner inner = 2;", "  oneof choice {\n    .a.v1.Big two = 4;\n  }"}},
		absent: map[string][]string{"a.v1": {"Huge", "string text", "gone", "Mode", "meta"}},
	}, {
		name:   "a package without gopkg",
		subset: "root a.v1.Req\n",
		err:    "package a.v1 has no gopkg directive",
	}, {
		name:   "an unknown root",
		subset: "gopkg a.v1 x/a;a\nroot a.v1.Nope\n",
		err:    "type a.v1.Nope is not in the schema",
	}, {
		name:   "a drop of a field that does not exist",
		subset: "gopkg a.v1 x/a;a\nroot a.v1.Req\ndrop a.v1.Req.nope\n",
		err:    "drop a.v1.Req.nope: no such field",
	}, {
		name:   "only naming an unknown field",
		subset: "gopkg a.v1 x/a;a\nroot a.v1.Req\nonly a.v1.Outer inner,nope\n",
		err:    "only a.v1.Outer: no field nope",
	}, {
		name:   "an unknown method",
		subset: "gopkg a.v1 x/a;a\nrpc a.v1.Svc Nope\n",
		err:    "method a.v1.Svc/Nope is not in the schema",
	}, {
		name:   "a bad directive",
		subset: "include a.v1.Req\n",
		err:    `line 1: bad directive "include a.v1.Req"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSchema(strings.NewReader(testSchema))
			require.NoError(t, err)
			sub, err := parseSubset(strings.NewReader(tc.subset))
			if err == nil {
				var files []outFile
				files, err = build(s, sub)
				if err == nil {
					got := map[string]string{}
					for _, f := range files {
						got[f.pkg] = f.text
					}
					for pkg, lines := range tc.want {
						for _, l := range lines {
							assert.Contains(t, got[pkg], l, "package %s", pkg)
						}
					}
					for pkg, words := range tc.absent {
						for _, w := range words {
							assert.NotContains(t, got[pkg], w, "package %s", pkg)
						}
					}
				}
			}
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			}
		})
	}
}

func TestParseSchemaErrors(t *testing.T) {
	for _, bad := range []string{
		"message a.v1.X\n  x y string\n",
		"message a.v1.X\n  1 y string sometimes\n",
		"thing a.v1.X\n",
		"  1 y string\n",
	} {
		_, err := parseSchema(strings.NewReader(bad))
		assert.Error(t, err, "%q", bad)
	}
}

// TestCommittedProtoIsGenerated regenerates the .proto sources from the
// schema listing, when it is at hand (the project's shared/ folder sits
// beside the repository), and checks they match the committed ones: the
// files must not be edited by hand.
func TestCommittedProtoIsGenerated(t *testing.T) {
	schema := os.Getenv("NATIVE_SCHEMA")
	if schema == "" {
		schema = filepath.Join("..", "..", "..", "shared", "NATIVE-SCHEMA.txt")
	}
	if _, err := os.Stat(schema); err != nil {
		t.Skipf("SKIPPED: no schema listing at %s (set NATIVE_SCHEMA)", schema)
	}
	out := t.TempDir()
	require.NoError(t, run(schema, filepath.Join("..", "..", "services", "native", "proto", "subset.txt"), out, false))
	for _, f := range []string{"agent/v1/agent.proto", "aiserver/v1/aiserver.proto"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "services", "native", "proto", f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s differs from the generator's output: regenerate it", f)
	}
}
