package main

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Errors of the version being released.
var (
	// errNoVersion: no module of the tree requires another.
	errNoVersion = errors.New("no version to release")
	// errDisagree: the modules require their siblings at different versions.
	errDisagree = errors.New("the sibling requirements disagree")
	// errBadVersion: the version is not a release version of the modules.
	errBadVersion = errors.New("not a release version")
	// errReplaced: a go.mod replaces a sibling, which its users would ignore.
	errReplaced = errors.New("a go.mod replaces a module of the tree")
	// errNotReplaced: go.work does not replace a required sibling at the
	// version by its directory, so that builds in the tree would fetch it.
	errNotReplaced = errors.New("go.work lacks a replace")
)

// releaseVersion returns the version being released: the one every module
// of t requires its siblings at, and go.work replaces them at.
func releaseVersion(t *tree) (string, error) {
	var claims []string
	versions := map[string]bool{}
	for _, m := range t.Modules {
		for _, r := range m.Mod.Replace {
			if t.module(r.Old.Path) != nil {
				return "", fmt.Errorf("%w: %s replaces %s (users ignore replace directives: go.work replaces it)", errReplaced, m.file("go.mod"), r.Old.Path)
			}
		}
		for _, r := range t.siblings(m) {
			versions[r.Mod.Version] = true
			claims = append(claims, fmt.Sprintf("%s requires %s %s", m.file("go.mod"), r.Mod.Path, r.Mod.Version))
		}
	}
	for _, r := range t.Work.Replace {
		if t.module(r.Old.Path) != nil {
			versions[r.Old.Version] = true
			claims = append(claims, fmt.Sprintf("go.work replaces %s at %q", r.Old.Path, r.Old.Version))
		}
	}
	switch len(versions) {
	case 0:
		return "", fmt.Errorf("%w: no module of go.work requires another", errNoVersion)
	case 1:
	default:
		return "", fmt.Errorf("%w (make release-prepare VERSION=... sets one):\n\t%s", errDisagree, strings.Join(claims, "\n\t"))
	}
	v := slices.Collect(maps.Keys(versions))[0]
	if err := checkVersion(t, v); err != nil {
		return "", err
	}
	return v, checkWorkReplaces(t, v)
}

// checkVersion reports whether v can be a release of every module of t: a
// canonical semantic version, not a pseudo-version, of the modules' major
// version.
func checkVersion(t *tree, v string) error {
	switch {
	case !semver.IsValid(v) || semver.Canonical(v) != v:
		return fmt.Errorf("%w: %q is not a canonical semantic version such as v0.2.0", errBadVersion, v)
	case module.IsPseudoVersion(v):
		return fmt.Errorf("%w: %s is a pseudo-version", errBadVersion, v)
	}
	for _, m := range t.Modules {
		if err := module.Check(m.Path, v); err != nil {
			return fmt.Errorf("%w: %w", errBadVersion, err)
		}
	}
	return nil
}

// checkWorkReplaces reports whether go.work replaces every required sibling
// at v by its directory.
func checkWorkReplaces(t *tree, v string) error {
	for _, m := range t.Modules {
		for _, r := range t.siblings(m) {
			dir := t.module(r.Mod.Path).Dir
			if !slices.ContainsFunc(t.Work.Replace, func(w *modfile.Replace) bool {
				return w.Old.Path == r.Mod.Path && w.Old.Version == v && w.New.Version == "" && path.Clean(w.New.Path) == dir
			}) {
				return fmt.Errorf("%w: it must replace %s %s => %s, or builds in the tree fetch it (make release-prepare VERSION=%s writes it)",
					errNotReplaced, r.Mod.Path, v, workDir(dir), v)
			}
		}
	}
	return nil
}

// workDir is how go.work names the module directory dir.
func workDir(dir string) string {
	if dir == "." {
		return "./"
	}
	return "./" + dir
}
