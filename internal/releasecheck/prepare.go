package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/mod/modfile"
)

// setVersion makes every module of t require its siblings at version, and
// go.work replace each required sibling at version by its directory, so
// that builds in the tree keep using the tree's modules.
func setVersion(t *tree, version string) error {
	if err := checkVersion(t, version); err != nil {
		return err
	}
	required := map[string]string{} // the directory of each required sibling, by path
	for _, m := range t.Modules {
		reqs := t.siblings(m)
		for _, r := range reqs {
			required[r.Mod.Path] = t.module(r.Mod.Path).Dir
			if err := m.Mod.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
		if len(reqs) > 0 {
			m.Mod.Cleanup()
			if err := writeFormatted(t.Root, m.file("go.mod"), modfile.Format(m.Mod.Syntax)); err != nil {
				return err
			}
		}
	}
	return setWorkReplaces(t, version, required)
}

// setWorkReplaces rewrites go.work to replace the modules of required, and
// no other module of t, at version by their directories. New lines go next
// to the ones they replace, so that go.work keeps its replace block.
func setWorkReplaces(t *tree, version string, required map[string]string) error {
	paths := make([]string, 0, len(required))
	for p := range required {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := t.Work.AddReplace(p, version, workDir(required[p]), ""); err != nil {
			return err
		}
	}
	for _, r := range append([]*modfile.Replace(nil), t.Work.Replace...) {
		keep := required[r.Old.Path] != "" && r.Old.Version == version
		if t.module(r.Old.Path) != nil && !keep {
			if err := t.Work.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	t.Work.Cleanup()
	return writeFormatted(t.Root, "go.work", modfile.Format(t.Work.Syntax))
}

// writeFormatted writes data to file name (slash-separated, relative to
// root) unless it holds it already, and says so.
func writeFormatted(root, name string, data []byte) error {
	file := filepath.Join(root, filepath.FromSlash(name))
	old, err := readOptional(file)
	if err != nil || bytes.Equal(old, data) {
		return err
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	say("wrote %s", name)
	return nil
}
