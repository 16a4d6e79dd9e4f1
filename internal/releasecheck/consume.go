package main

import (
	"debug/buildinfo"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"golang.org/x/mod/module"
)

// errSumMismatch reports a hash the check computed that the go command
// does not agree with.
var errSumMismatch = errors.New("the go command computed another hash")

// errInstalled reports that go install ...@latest installed another version
// than the release's.
var errInstalled = errors.New("go install installed the wrong version")

// backendsMain is a program on both stores of the release: it opens a
// table on Pebble, and on Azure Table storage when given a connection string.
//
//go:embed backends.go.txt
var backendsMain []byte

// quickstart is the README's Quick start, in the tree.
const quickstart = "examples/quickstart/main.go"

// consume uses the published modules as a user would, in a fresh module in
// environment env: it gets the libraries, builds and runs the Quick start
// and a program on both stores, and installs and runs the tool.
func (r *release) consume(env []string) error {
	dir := filepath.Join(r.work, "consumer")
	if err := r.getLibraries(dir, env); err != nil {
		return err
	}
	qs, err := os.ReadFile(filepath.Join(r.t.Root, filepath.FromSlash(quickstart)))
	if err != nil {
		return err
	}
	if err := r.buildAndRun(dir, env, "quickstart", qs); err != nil {
		return err
	}
	if err := r.buildAndRun(dir, env, "backends", backendsMain); err != nil {
		return err
	}
	return r.installTool(dir, env)
}

// getLibraries creates a module in dir and gets the libraries of the
// release into it, then checks the hashes the go command wrote in its go.sum.
func (r *release) getLibraries(dir string, env []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := runStep("go mod init example.com/consumer", dir, env, "go", "mod", "init", "example.com/consumer"); err != nil {
		return err
	}
	for _, d := range libraries {
		p := r.t.byDir(d).Path + "@" + r.version
		if err := runStep("go get "+p, dir, env, "go", "get", p); err != nil {
			return err
		}
	}
	return r.checkSums(filepath.Join(dir, "go.sum"))
}

// checkSums reports whether the go command wrote in go.sum name the hashes
// of the libraries the check computed (those release-prepare writes).
func (r *release) checkSums(name string) error {
	say("compare the hashes in go.sum with the check's")
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	got, err := parseSum(name, data)
	if err != nil {
		return err
	}
	for _, d := range libraries {
		p := r.t.byDir(d).Path
		for mod, want := range sumLines(module.Version{Path: p, Version: r.version}, r.sums[p]) {
			if !slices.Equal(got[mod], want) {
				return fmt.Errorf("%w: the go command wrote %s %s %v, the check computed %v", errSumMismatch, mod.Path, mod.Version, got[mod], want)
			}
		}
	}
	return nil
}

// buildAndRun writes src as the program name in the module in dir, builds
// it and runs it.
func (r *release) buildAndRun(dir string, env []string, name string, src []byte) error {
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name, "main.go"), src, 0o644); err != nil {
		return err
	}
	bin := filepath.Join(r.work, "bin", name)
	if err := runStep("go build ./"+name, dir, env, "go", "build", "-o", bin, "./"+name); err != nil {
		return err
	}
	return runStep("run "+name, dir, env, bin)
}

// installTool installs the tool with go install ...@latest, checks that
// latest is the release, and runs its help.
func (r *release) installTool(dir string, env []string) error {
	p := r.t.byDir(tool).Path
	if err := runStep("go install "+p+"@latest", dir, env, "go", "install", p+"@latest"); err != nil {
		return err
	}
	bin := filepath.Join(r.work, "bin", path.Base(p))
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return err
	}
	if info.Main.Path != p || info.Main.Version != r.version {
		return fmt.Errorf("%w: %s %s, not %s %s", errInstalled, info.Main.Path, info.Main.Version, p, r.version)
	}
	return runStep(path.Base(p)+" help", dir, env, bin, "help")
}
