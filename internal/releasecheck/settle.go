package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// errStaleSum reports (with -strict) a go.sum of the tree without the lines
// of its siblings as built from the tree.
var errStaleSum = errors.New("a go.sum lacks the lines of the version")

// compareSum returns a settleFunc that publishes each module with the
// computed go.sum, and lists in stale the go.sum files of the tree that
// differ from it: release-prepare has not written them, or a module changed
// since.
func (r *release) compareSum(stale *[]string) settleFunc {
	return func(m *treeModule, sum []byte) ([]byte, error) {
		old, err := readOptional(r.treeFile(m, "go.sum"))
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(old, sum) {
			*stale = append(*stale, m.file("go.sum"))
		}
		return sum, nil
	}
}

// writeSum is a settleFunc that writes the computed go.sum into the tree.
func (r *release) writeSum(m *treeModule, sum []byte) ([]byte, error) {
	name := r.treeFile(m, "go.sum")
	old, err := readOptional(name)
	if err != nil || bytes.Equal(old, sum) {
		return sum, err
	}
	if err := os.WriteFile(name, sum, 0o644); err != nil {
		return nil, err
	}
	say("wrote %s", m.file("go.sum"))
	return sum, nil
}

// tidy returns a settleFunc that runs go mod tidy (in environment env) in
// each module, whose siblings are on the proxy by then, and publishes the
// module as tidied. Tidying, the module's go.sum holds its siblings' lines
// as built from the tree, which the proxy serves; then it gets back the
// lines it had, since a version the tree stands in for may have been
// released already, with other hashes.
func (r *release) tidy(env []string) settleFunc {
	return func(m *treeModule, sum []byte) ([]byte, error) {
		name := r.treeFile(m, "go.sum")
		old, err := readOptional(name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, sum, 0o644); err != nil {
			return nil, err
		}
		dir := filepath.Join(r.t.Root, filepath.FromSlash(m.Dir))
		if err := runStep("go mod tidy in "+m.Dir, dir, env, "go", "mod", "tidy"); err != nil {
			return nil, errors.Join(err, os.WriteFile(name, old, 0o644))
		}
		tidied, err := readOptional(name)
		if err != nil {
			return nil, err
		}
		restored, err := r.withSiblingSums(m, tidied, old)
		if err != nil {
			return nil, err
		}
		return restored, os.WriteFile(name, restored, 0o644)
	}
}

// withSiblingSums returns go.sum sum of m with the lines of m's siblings
// those of go.sum from.
func (r *release) withSiblingSums(m *treeModule, sum, from []byte) ([]byte, error) {
	isSibling := func(path string) bool { return r.t.module(path) != nil }
	lines, err := parseSum(m.file("go.sum"), from)
	if err != nil {
		return nil, err
	}
	for mod := range lines {
		if !isSibling(mod.Path) {
			delete(lines, mod)
		}
	}
	return withSums(m.file("go.sum"), sum, isSibling, lines)
}

// treeFile returns the name of m's file name in the tree.
func (r *release) treeFile(m *treeModule, name string) string {
	return filepath.Join(r.t.Root, filepath.FromSlash(m.file(name)))
}

// readOptional returns the content of file name, or nothing if it does not
// exist.
func readOptional(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
