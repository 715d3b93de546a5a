// Command checksize lists the Go files and functions of a module that are
// too long to review: a non-test, non-generated .go file over -file-lines
// lines, or a function (or method) in -func-dir, subpackages included,
// over -func-lines lines from its func keyword to its closing brace. It
// exits 1 when it lists any; scripts/check-size.sh runs it.
//
// Usage: go run ./scripts/internal/checksize [flags] [module root]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	fileMax := flag.Int("file-lines", 600, "most lines a file may have")
	funcMax := flag.Int("func-lines", 120, "most lines a function in -func-dir may have")
	funcDir := flag.String("func-dir", "repo", "slash path, from the root, whose functions are checked")
	flag.Parse()
	root := "."
	if flag.NArg() > 1 {
		fmt.Fprintln(os.Stderr, "usage: checksize [flags] [module root]")
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		root = flag.Arg(0)
	}
	offenders, err := check(root, *fileMax, *funcMax, *funcDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checksize:", err)
		os.Exit(2)
	}
	for _, o := range offenders {
		fmt.Println(o)
	}
	if len(offenders) > 0 {
		fmt.Fprintf(os.Stderr, "checksize: %d over the limits (files %d lines, functions in %s/ %d lines)\n", len(offenders), *fileMax, *funcDir, *funcMax)
		os.Exit(1)
	}
}

// check walks the module at root the way the go command sees it: it skips
// testdata, vendor, directories whose names start with . or _, and nested
// modules.
func check(root string, fileMax, funcMax int, funcDir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		found, err := checkFile(path, rel, fileMax, funcMax, rel == funcDir || strings.HasPrefix(rel, funcDir+"/"))
		out = append(out, found...)
		return err
	})
	sort.Strings(out)
	return out, err
}

// checkFile returns what is too long in one file, named by rel.
func checkFile(path, rel string, fileMax, funcMax int, funcs bool) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []string
	if n := lineCount(src); n > fileMax {
		out = append(out, fmt.Sprintf("%s: %d lines (limit %d)", rel, n, fileMax))
	}
	if !funcs {
		return out, nil
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		if n := end.Line - start.Line + 1; n > funcMax {
			out = append(out, fmt.Sprintf("%s:%d: func %s: %d lines (limit %d)", rel, start.Line, funcName(fd), n, funcMax))
		}
	}
	return out, nil
}

// lineCount counts lines as wc -l does, plus a last one without a newline.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// funcName is Name, or Type.Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
