package chat

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreAsksNoDialect holds the core to one path for every back door:
// what differs between them is the dialect's, so no code of the package
// asserts a dialect's type or carries a flag saying which kind it has.
func TestCoreAsksNoDialect(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var found []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if n.Type != nil && strings.HasSuffix(typeName(n.Type), "Dialect") {
					found = append(found, fset.Position(n.Pos()).String()+": assertion to "+typeName(n.Type))
				}
			case *ast.Field:
				for _, name := range n.Names {
					if strings.Contains(strings.ToLower(name.Name), "native") && typeName(n.Type) == "bool" {
						found = append(found, fset.Position(n.Pos()).String()+": field "+name.Name+" bool")
					}
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && strings.Contains(strings.ToLower(id.Name), "native") {
						found = append(found, fset.Position(n.Pos()).String()+": variable "+id.Name)
					}
				}
			}
			return true
		})
	}
	assert.Empty(t, found, "the core asks the dialect, never which dialect it has")
}

// typeName is the name of a type expression: T, *T or pkg.T.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
