// Command nativeproto writes the .proto sources of the subset of Cursor's
// native agent API that cursor2api speaks: the closure of a subset file's
// roots in a schema listing of the official client, one file per package.
// Generating, not writing by hand, keeps field numbers exact: a wrong one
// corrupts the wire silently, while a missing field is harmless in proto3.
//
// Usage:
//
//	go run ./scripts/nativeproto -schema NATIVE-SCHEMA.txt \
//	    -subset services/native/proto/subset.txt -out services/native/proto
//
// The subset file has one directive a line ('#' starts a comment):
//
//	root MESSAGE          include MESSAGE and everything it reaches
//	rpc SERVICE METHOD    include the method and its request and response
//	stub MESSAGE          declare MESSAGE without fields (its fields stay unknown)
//	drop MESSAGE.FIELD    leave one field out
//	only MESSAGE F1,F2    keep only the fields named (the others stay unknown)
//	gopkg PACKAGE IMPORT  the go_package option of a proto package
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	schemaPath := flag.String("schema", "", "path of the schema listing (NATIVE-SCHEMA.txt)")
	subsetPath := flag.String("subset", "", "path of the subset file")
	outDir := flag.String("out", "", "directory to write PACKAGE/VERSION/NAME.proto under")
	stats := flag.Bool("stats", false, "print the number of messages per package instead of writing")
	flag.Parse()
	if *schemaPath == "" || *subsetPath == "" || (*outDir == "" && !*stats) {
		fmt.Fprintln(os.Stderr, "nativeproto: -schema, -subset and -out are required")
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*schemaPath, *subsetPath, *outDir, *stats); err != nil {
		fmt.Fprintln(os.Stderr, "nativeproto:", err)
		os.Exit(1)
	}
}

func run(schemaPath, subsetPath, outDir string, stats bool) error {
	sf, err := os.Open(schemaPath)
	if err != nil {
		return err
	}
	defer sf.Close()
	s, err := parseSchema(sf)
	if err != nil {
		return fmt.Errorf("schema %s: %w", schemaPath, err)
	}
	bf, err := os.Open(subsetPath)
	if err != nil {
		return err
	}
	defer bf.Close()
	sub, err := parseSubset(bf)
	if err != nil {
		return fmt.Errorf("subset %s: %w", subsetPath, err)
	}
	files, err := build(s, sub)
	if err != nil {
		return err
	}
	if stats {
		for _, f := range files {
			fmt.Printf("%s: %d messages, %d enums\n", f.pkg, f.messages, f.enums)
		}
		return nil
	}
	for _, f := range files {
		path := filepath.Join(outDir, f.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// field is one field line of the listing.
type field struct {
	num   int
	name  string
	typ   string // scalar, map<K,V> or a full message or enum name
	label string // "", "optional", "repeated"
	oneof string
}

type message struct {
	name   string
	fields []field
}

type enumValue struct {
	num  int
	name string
}

type enum struct {
	name   string
	values []enumValue
}

type method struct {
	name, in, out, kind string
}

type schema struct {
	messages map[string]*message
	enums    map[string]*enum
	services map[string][]method
}

func parseSchema(r io.Reader) (*schema, error) {
	s := &schema{messages: map[string]*message{}, enums: map[string]*enum{}, services: map[string][]method{}}
	var (
		curMsg  *message
		curEnum *enum
		curSvc  string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := sc.Text()
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if !strings.HasPrefix(t, " ") {
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: want KIND NAME, got %q", line, t)
			}
			curMsg, curEnum, curSvc = nil, nil, ""
			switch f[0] {
			case "message":
				curMsg = &message{name: f[1]}
				s.messages[f[1]] = curMsg
			case "enum":
				curEnum = &enum{name: f[1]}
				s.enums[f[1]] = curEnum
			case "service":
				curSvc = f[1]
				s.services[curSvc] = nil
			default:
				return nil, fmt.Errorf("line %d: unknown kind %q", line, f[0])
			}
			continue
		}
		switch {
		case curMsg != nil:
			if len(f) < 3 || len(f) > 4 {
				return nil, fmt.Errorf("line %d: want NUMBER NAME TYPE [LABEL], got %q", line, t)
			}
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, fmt.Errorf("line %d: field number: %w", line, err)
			}
			fl := field{num: n, name: f[1], typ: f[2]}
			if len(f) == 4 {
				switch l := f[3]; {
				case l == "optional" || l == "repeated":
					fl.label = l
				case strings.HasPrefix(l, "oneof="):
					fl.oneof = strings.TrimPrefix(l, "oneof=")
				default:
					return nil, fmt.Errorf("line %d: unknown label %q", line, l)
				}
			}
			curMsg.fields = append(curMsg.fields, fl)
		case curEnum != nil:
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: want NUMBER NAME, got %q", line, t)
			}
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, fmt.Errorf("line %d: enum number: %w", line, err)
			}
			curEnum.values = append(curEnum.values, enumValue{num: n, name: f[1]})
		case curSvc != "":
			if len(f) != 4 {
				return nil, fmt.Errorf("line %d: want NAME IN OUT KIND, got %q", line, t)
			}
			s.services[curSvc] = append(s.services[curSvc], method{f[0], f[1], f[2], f[3]})
		default:
			return nil, fmt.Errorf("line %d: member outside a declaration", line)
		}
	}
	return s, sc.Err()
}

type subset struct {
	roots  []string
	rpcs   map[string][]string // service -> methods, in order given
	stubs  map[string]bool
	drops  map[string]bool // MESSAGE.FIELD
	only   map[string]map[string]bool
	gopkgs map[string]string
}

func parseSubset(r io.Reader) (*subset, error) {
	sub := &subset{rpcs: map[string][]string{}, stubs: map[string]bool{}, drops: map[string]bool{}, only: map[string]map[string]bool{}, gopkgs: map[string]string{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(t)
		if len(f) == 0 {
			continue
		}
		want := map[string]int{"root": 2, "rpc": 3, "stub": 2, "drop": 2, "only": 3, "gopkg": 3}[f[0]]
		if want == 0 || len(f) != want {
			return nil, fmt.Errorf("line %d: bad directive %q", line, strings.TrimSpace(t))
		}
		switch f[0] {
		case "root":
			sub.roots = append(sub.roots, f[1])
		case "rpc":
			sub.rpcs[f[1]] = append(sub.rpcs[f[1]], f[2])
		case "stub":
			sub.stubs[f[1]] = true
		case "drop":
			sub.drops[f[1]] = true
		case "only":
			keep := map[string]bool{}
			for _, n := range strings.Split(f[2], ",") {
				keep[n] = true
			}
			sub.only[f[1]] = keep
		case "gopkg":
			sub.gopkgs[f[1]] = f[2]
		}
	}
	return sub, sc.Err()
}

// skip reports whether field fname of message msg is left out.
func (sub *subset) skip(msg, fname string) bool {
	if sub.drops[msg+"."+fname] {
		return true
	}
	if keep, ok := sub.only[msg]; ok {
		return !keep[fname]
	}
	return false
}

var scalars = map[string]bool{
	"double": true, "float": true, "int32": true, "int64": true, "uint32": true, "uint64": true,
	"sint32": true, "sint64": true, "fixed32": true, "fixed64": true, "sfixed32": true,
	"sfixed64": true, "bool": true, "string": true, "bytes": true,
}

// wellKnown maps the google.protobuf types the listing uses to their import.
var wellKnown = map[string]string{
	"google.protobuf.Value":     "google/protobuf/struct.proto",
	"google.protobuf.Struct":    "google/protobuf/struct.proto",
	"google.protobuf.ListValue": "google/protobuf/struct.proto",
	"google.protobuf.Timestamp": "google/protobuf/timestamp.proto",
}

// pkgOf returns the proto package of a full name: its first two parts.
func pkgOf(name string) string {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) < 3 {
		return name
	}
	return parts[0] + "." + parts[1]
}

// typeRefs returns the message and enum names a field type refers to.
func typeRefs(typ string) []string {
	if k, v, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(typ, "map<"), ">"), ","); ok && strings.HasPrefix(typ, "map<") {
		var out []string
		for _, t := range []string{k, v} {
			if !scalars[t] {
				out = append(out, t)
			}
		}
		return out
	}
	if scalars[typ] {
		return nil
	}
	return []string{typ}
}

type outFile struct {
	pkg, path, text string
	messages, enums int
}

func build(s *schema, sub *subset) ([]outFile, error) {
	keep := map[string]bool{} // message and enum names to declare
	var walk func(name string) error
	walk = func(name string) error {
		if keep[name] {
			return nil
		}
		if _, ok := wellKnown[name]; ok {
			keep[name] = true
			return nil
		}
		if _, ok := s.enums[name]; ok {
			keep[name] = true
			return walkParent(s, name, walk)
		}
		m, ok := s.messages[name]
		if !ok {
			return fmt.Errorf("type %s is not in the schema", name)
		}
		keep[name] = true
		if err := walkParent(s, name, walk); err != nil {
			return err
		}
		if sub.stubs[name] {
			return nil
		}
		for _, f := range m.fields {
			if sub.skip(name, f.name) {
				continue
			}
			for _, t := range typeRefs(f.typ) {
				if err := walk(t); err != nil {
					return fmt.Errorf("%s.%s: %w", name, f.name, err)
				}
			}
		}
		return nil
	}
	for _, r := range sub.roots {
		if err := walk(r); err != nil {
			return nil, err
		}
	}
	svcs := slices.Sorted(func(yield func(string) bool) {
		for k := range sub.rpcs {
			if !yield(k) {
				return
			}
		}
	})
	for _, svc := range svcs {
		ms, ok := s.services[svc]
		if !ok {
			return nil, fmt.Errorf("service %s is not in the schema", svc)
		}
		for _, want := range sub.rpcs[svc] {
			i := slices.IndexFunc(ms, func(m method) bool { return m.name == want })
			if i < 0 {
				return nil, fmt.Errorf("method %s/%s is not in the schema", svc, want)
			}
			for _, t := range []string{ms[i].in, ms[i].out} {
				if err := walk(t); err != nil {
					return nil, err
				}
			}
		}
	}
	for d := range sub.drops {
		msg, fname, _ := cutLast(d)
		m, ok := s.messages[msg]
		if !ok || !slices.ContainsFunc(m.fields, func(f field) bool { return f.name == fname }) {
			return nil, fmt.Errorf("drop %s: no such field", d)
		}
	}
	for msg, keep := range sub.only {
		m, ok := s.messages[msg]
		if !ok {
			return nil, fmt.Errorf("only %s: no such message", msg)
		}
		for fname := range keep {
			if !slices.ContainsFunc(m.fields, func(f field) bool { return f.name == fname }) {
				return nil, fmt.Errorf("only %s: no field %s", msg, fname)
			}
		}
	}
	for st := range sub.stubs {
		if _, ok := s.messages[st]; !ok {
			return nil, fmt.Errorf("stub %s: no such message", st)
		}
	}

	// Group the kept names by package, top-level names first.
	byPkg := map[string][]string{}
	for n := range keep {
		if _, ok := wellKnown[n]; ok {
			continue
		}
		byPkg[pkgOf(n)] = append(byPkg[pkgOf(n)], n)
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var out []outFile
	for _, p := range pkgs {
		names := byPkg[p]
		sort.Strings(names)
		f, err := writeFile(s, sub, p, names, keep, svcs)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// walkParent keeps the enclosing message of a nested type, so the type can
// be declared inside it under its own name.
func walkParent(s *schema, name string, walk func(string) error) error {
	parent, _, ok := cutLast(name)
	if !ok {
		return nil
	}
	if _, isMsg := s.messages[parent]; isMsg {
		return walk(parent)
	}
	return nil
}

func cutLast(name string) (string, string, bool) {
	i := strings.LastIndex(name, ".")
	if i < 0 {
		return "", name, false
	}
	return name[:i], name[i+1:], true
}

func writeFile(s *schema, sub *subset, pkg string, names []string, keep map[string]bool, svcs []string) (outFile, error) {
	gopkg, ok := sub.gopkgs[pkg]
	if !ok {
		return outFile{}, fmt.Errorf("package %s has no gopkg directive", pkg)
	}
	parts := strings.Split(pkg, ".")
	of := outFile{pkg: pkg, path: filepath.Join(parts[0], parts[1], parts[0]+".proto")}

	// Imports: other packages and well-known types referred to from here.
	imports := map[string]bool{}
	note := func(t string) {
		if wk, ok := wellKnown[t]; ok {
			imports[wk] = true
		} else if pp := pkgOf(t); pp != pkg {
			pp := strings.Split(pp, ".")
			imports[filepath.Join(pp[0], pp[1], pp[0]+".proto")] = true
		}
	}
	children := map[string][]string{} // parent -> nested kept names
	var top []string
	for _, n := range names {
		parent, _, _ := cutLast(n)
		if _, ok := s.messages[parent]; ok {
			children[parent] = append(children[parent], n)
		} else {
			top = append(top, n)
		}
		if m, ok := s.messages[n]; ok && !sub.stubs[n] {
			for _, f := range m.fields {
				if sub.skip(n, f.name) {
					continue
				}
				for _, t := range typeRefs(f.typ) {
					note(t)
				}
			}
		}
	}
	for _, svc := range svcs {
		if pkgOf(svc) != pkg {
			continue
		}
		for _, want := range sub.rpcs[svc] {
			for _, m := range s.services[svc] {
				if m.name == want {
					note(m.in)
					note(m.out)
				}
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by scripts/nativeproto from the schema listing of @cursor/sdk 1.0.32. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// The subset written is chosen in subset.txt; messages marked \"stub\" there\n")
	fmt.Fprintf(&b, "// are declared without fields, and their contents stay unknown fields.\n\n")
	fmt.Fprintf(&b, "syntax = \"proto3\";\n\npackage %s;\n\n", pkg)
	imps := make([]string, 0, len(imports))
	for i := range imports {
		imps = append(imps, i)
	}
	sort.Strings(imps)
	for _, i := range imps {
		fmt.Fprintf(&b, "import %q;\n", i)
	}
	if len(imps) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "option go_package = %q;\n", gopkg)

	for _, svc := range svcs {
		if pkgOf(svc) != pkg {
			continue
		}
		_, short, _ := cutLast(svc)
		fmt.Fprintf(&b, "\nservice %s {\n", short)
		for _, want := range sub.rpcs[svc] {
			for _, m := range s.services[svc] {
				if m.name != want {
					continue
				}
				in, out := "."+m.in, "."+m.out
				switch m.kind {
				case "unary":
				case "server_streaming":
					out = "stream " + out
				case "client_streaming":
					in = "stream " + in
				case "bidi":
					in, out = "stream "+in, "stream "+out
				default:
					return outFile{}, fmt.Errorf("method %s/%s: unknown kind %q", svc, m.name, m.kind)
				}
				fmt.Fprintf(&b, "  rpc %s(%s) returns (%s);\n", m.name, in, out)
			}
		}
		b.WriteString("}\n")
	}

	var emit func(name, indent string) error
	emit = func(name, indent string) error {
		_, short, _ := cutLast(name)
		if e, ok := s.enums[name]; ok {
			of.enums++
			fmt.Fprintf(&b, "\n%senum %s {\n", indent, short)
			for _, v := range e.values {
				fmt.Fprintf(&b, "%s  %s = %d;\n", indent, v.name, v.num)
			}
			fmt.Fprintf(&b, "%s}\n", indent)
			return nil
		}
		m := s.messages[name]
		of.messages++
		fmt.Fprintf(&b, "\n%smessage %s {\n", indent, short)
		if !sub.stubs[name] {
			done := map[string]bool{}
			for _, f := range m.fields {
				if sub.skip(name, f.name) {
					continue
				}
				if f.oneof == "" {
					fmt.Fprintf(&b, "%s  %s\n", indent, fieldDecl(s, f))
					continue
				}
				if done[f.oneof] {
					continue
				}
				done[f.oneof] = true
				fmt.Fprintf(&b, "%s  oneof %s {\n", indent, f.oneof)
				for _, g := range m.fields {
					if g.oneof == f.oneof && !sub.skip(name, g.name) {
						fmt.Fprintf(&b, "%s    %s\n", indent, fieldDecl(s, g))
					}
				}
				fmt.Fprintf(&b, "%s  }\n", indent)
			}
		}
		for _, c := range children[name] {
			if err := emit(c, indent+"  "); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "%s}\n", indent)
		return nil
	}
	for _, n := range top {
		if !keep[n] {
			continue
		}
		if err := emit(n, ""); err != nil {
			return outFile{}, err
		}
	}
	of.text = b.String()
	return of, nil
}

func typeName(s *schema, t string) string {
	if scalars[t] {
		return t
	}
	return "." + t
}

func fieldDecl(s *schema, f field) string {
	typ := typeName(s, f.typ)
	if strings.HasPrefix(f.typ, "map<") {
		k, v, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(f.typ, "map<"), ">"), ",")
		typ = "map<" + typeName(s, k) + ", " + typeName(s, v) + ">"
	}
	label := ""
	if f.label != "" {
		label = f.label + " "
	}
	return fmt.Sprintf("%s%s %s = %d;", label, typ, f.name, f.num)
}
