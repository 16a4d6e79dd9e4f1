package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"golang.org/x/mod/modfile"
)

// errTree reports a tree the check cannot read: no go.work, a go.mod without
// a module line, modules that require each other in a cycle.
var errTree = errors.New("bad tree")

// The modules a release publishes, by directory: the libraries a user gets
// with go get, and the tool they install with go install. The examples and
// the benchmarks are not published.
var (
	libraries = []string{".", "pebblestore", "azstore", "etcdstore"}
	tool      = "cmd/indextable"
)

// treeModule is one module of the tree.
type treeModule struct {
	Dir  string // relative to the tree's root, slash-separated; "." for the core
	Path string
	Mod  *modfile.File
}

// file names one of m's files relative to the tree's root, for messages.
func (m *treeModule) file(name string) string { return path.Join(m.Dir, name) }

// tree is the repository: its root, its go.work and the modules go.work uses.
type tree struct {
	Root    string
	Work    *modfile.WorkFile
	Modules []*treeModule // in go.work's order
}

// loadTree reads root's go.work and the go.mod of every module it uses.
func loadTree(root string) (*tree, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTree, err)
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTree, err)
	}
	t := &tree{Root: root, Work: wf}
	for _, u := range wf.Use {
		m, err := loadModule(root, path.Clean(filepath.ToSlash(u.Path)))
		if err != nil {
			return nil, err
		}
		t.Modules = append(t.Modules, m)
	}
	return t, nil
}

// loadModule reads the go.mod of the module in root's directory dir.
func loadModule(root, dir string) (*treeModule, error) {
	name := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTree, err)
	}
	f, err := modfile.Parse(path.Join(dir, "go.mod"), data, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTree, err)
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%w: %s has no module line", errTree, path.Join(dir, "go.mod"))
	}
	return &treeModule{Dir: dir, Path: f.Module.Mod.Path, Mod: f}, nil
}

// module returns the module of t with path p, or nil.
func (t *tree) module(p string) *treeModule {
	for _, m := range t.Modules {
		if m.Path == p {
			return m
		}
	}
	return nil
}

// byDir returns the module of t in directory dir, or nil.
func (t *tree) byDir(dir string) *treeModule {
	for _, m := range t.Modules {
		if m.Dir == dir {
			return m
		}
	}
	return nil
}

// published reports whether a release publishes m.
func (t *tree) published(m *treeModule) bool {
	return m.Dir == tool || slices.Contains(libraries, m.Dir)
}

// siblings returns m's requirements on other modules of t.
func (t *tree) siblings(m *treeModule) []*modfile.Require {
	var reqs []*modfile.Require
	for _, r := range m.Mod.Require {
		if t.module(r.Mod.Path) != nil {
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// order returns t's modules so that each comes after the siblings it
// requires, otherwise in go.work's order.
func (t *tree) order() ([]*treeModule, error) {
	var out []*treeModule
	state := map[*treeModule]int{} // 1: being visited, 2: done
	var visit func(m *treeModule) error
	visit = func(m *treeModule) error {
		switch state[m] {
		case 1:
			return fmt.Errorf("%w: %s requires itself through its siblings", errTree, m.Path)
		case 2:
			return nil
		}
		state[m] = 1
		for _, r := range t.siblings(m) {
			if err := visit(t.module(r.Mod.Path)); err != nil {
				return err
			}
		}
		state[m] = 2
		out = append(out, m)
		return nil
	}
	for _, m := range t.Modules {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}
