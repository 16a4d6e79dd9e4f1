package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// options are the command line's.
type options struct {
	Root    string
	Prepare string // the version to prepare the tree for, if any
	Tidy    bool
	Strict  bool
}

// run does what o asks, in a temporary directory it removes.
func run(o options) (err error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return err
	}
	t, err := loadTree(root)
	if err == nil && o.Prepare != "" {
		if err = setVersion(t, o.Prepare); err == nil {
			t, err = loadTree(root)
		}
	}
	if err != nil {
		return err
	}
	if err := checkPublished(t); err != nil {
		return err
	}
	version, err := releaseVersion(t)
	if err != nil {
		return err
	}
	say("version %s", version)
	work, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(work); rmErr != nil && err == nil {
			err = fmt.Errorf("removing the temporary directory: %w", rmErr)
		}
	}()
	r := &release{t: t, version: version, work: work, sums: map[string]hashes{}}
	return r.do(o)
}

// do publishes the release as o asks, then, for the check, uses it.
func (r *release) do(o options) error {
	env, err := outsideEnv(r.work, r.proxyDir())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.work, "tmp"), 0o755); err != nil {
		return err
	}
	switch {
	case o.Prepare != "":
		return r.publish(r.writeSum)
	case o.Tidy:
		return r.publish(r.tidy(env))
	}
	var stale []string
	if err := r.publish(r.compareSum(&stale)); err != nil {
		return err
	}
	if len(stale) > 0 {
		msg := fmt.Sprintf("%s: the lines for %s as built from this tree differ (make release-prepare VERSION=%s writes them)",
			strings.Join(stale, ", "), r.version, r.version)
		if o.Strict {
			return fmt.Errorf("%w: %s", errStaleSum, msg)
		}
		say("note: %s", msg)
	}
	if err := r.consume(env); err != nil {
		return err
	}
	say("passed: %s", r.version)
	return nil
}

// checkPublished reports whether t holds the modules a release publishes.
func checkPublished(t *tree) error {
	for _, d := range append(libraries, tool) {
		if t.byDir(d) == nil {
			return fmt.Errorf("%w: go.work does not use ./%s, which a release publishes", errTree, d)
		}
	}
	return nil
}
