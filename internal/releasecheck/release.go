package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
)

// errUnpublished reports a module that requires a sibling a release does not
// publish.
var errUnpublished = errors.New("requires a module the release does not publish")

// release publishes the modules of a tree at one version to a file-based
// module proxy in a temporary directory.
type release struct {
	t       *tree
	version string
	work    string            // the temporary directory: stage, proxy, consumer, modcache, bin
	sums    map[string]hashes // the hashes of the modules published so far, by path
}

// settleFunc is given a module of the tree and the go.sum its release must
// hold (the tree's, with the lines of its siblings at the version), and
// returns the go.sum to publish it with.
type settleFunc func(m *treeModule, sum []byte) ([]byte, error)

func (r *release) proxyDir() string { return filepath.Join(r.work, "proxy") }

// publish takes the modules of the tree in dependency order: it computes the
// go.sum of each, lets settle see it, and publishes the module to the proxy
// when a release publishes it.
func (r *release) publish(settle settleFunc) error {
	mods, err := r.t.order()
	if err != nil {
		return err
	}
	for _, m := range mods {
		sum, err := r.sumFor(m)
		if err != nil {
			return err
		}
		if sum, err = settle(m, sum); err != nil {
			return err
		}
		if r.t.published(m) {
			if err := r.publishModule(m, sum); err != nil {
				return fmt.Errorf("publishing %s %s: %w", m.Path, r.version, err)
			}
		}
	}
	return nil
}

// sumFor returns m's go.sum with the lines of the siblings it requires, at
// the version, as published.
func (r *release) sumFor(m *treeModule) ([]byte, error) {
	old, err := readOptional(r.treeFile(m, "go.sum"))
	if err != nil {
		return nil, err
	}
	add := map[module.Version][]string{}
	for _, req := range r.t.siblings(m) {
		h, ok := r.sums[req.Mod.Path]
		if !ok {
			return nil, fmt.Errorf("%s %w: %s", m.Path, errUnpublished, req.Mod.Path)
		}
		for mod, hs := range sumLines(module.Version{Path: req.Mod.Path, Version: r.version}, h) {
			add[mod] = hs
		}
	}
	isSibling := func(path string) bool { return r.t.module(path) != nil }
	return withSums(m.file("go.sum"), old, isSibling, add)
}

// publishModule stages m's files with go.sum sum and adds it to the proxy.
func (r *release) publishModule(m *treeModule, sum []byte) error {
	dir := filepath.Join(r.work, "stage", strings.ReplaceAll(m.Path, "/", "_"))
	if err := stage(r.t.Root, m.Dir, dir); err != nil {
		return err
	}
	if len(sum) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
			return err
		}
	}
	h, err := writeProxy(r.proxyDir(), module.Version{Path: m.Path, Version: r.version}, dir)
	if err != nil {
		return err
	}
	r.sums[m.Path] = h
	say("published %s %s %s", m.Path, r.version, h.Zip)
	return nil
}

// say prints one line of the check's progress.
func say(format string, args ...any) {
	fmt.Printf("release-check: "+format+"\n", args...)
}
