package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// stage copies into dst the files of the tree's directory dir that a commit
// of the tree would hold: with git, the files tracked or not ignored (not
// .cache's Azurite, say); without, every file outside .git. Symbolic links
// are left out, as module zips leave them out.
func stage(root, dir, dst string) error {
	files, err := treeFiles(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return err
	}
	for _, f := range files {
		err := copyFile(filepath.Join(root, filepath.FromSlash(dir), f), filepath.Join(dst, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // tracked, but deleted
			return err
		}
	}
	return nil
}

// treeFiles returns the files in dir, relative to it, as stage takes them.
func treeFiles(dir string) ([]string, error) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Output()
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		return walkFiles(dir)
	}
	// Tracked files only: what a tag of the commit holds.
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached")
	cmd.Stderr = os.Stderr
	if out, err = cmd.Output(); err != nil {
		return nil, err
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, filepath.FromSlash(string(f)))
		}
	}
	return files, nil
}

// walkFiles returns the files in dir, relative to it, outside any .git.
func walkFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Name() == ".git" && d.IsDir():
			return filepath.SkipDir
		case d.Name() == ".git" || d.IsDir():
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, rel)
		return err
	})
	return files, err
}

// copyFile copies the regular file src to dst, creating dst's directory.
func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
