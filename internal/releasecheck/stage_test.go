package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStage(t *testing.T) {
	files := map[string]string{
		"m/.gitignore": ".cache/\n*.test\n",
		"m/go.mod":     "module example.com/m\n",
		"m/a.go":       "package m\n",
		"m/sub/b.go":   "package sub\n",
		"m/.cache/x":   "installed by a script\n",
		"m/m.test":     "a test binary\n",
		"m/gone.go":    "package m\n",
	}
	for _, tc := range []struct {
		name string
		git  bool
		want []string
	}{
		{name: "git: tracked files, as a tag holds them", git: true, want: []string{"a.go", "go.mod"}},
		{name: "no git: every file", want: []string{".cache/x", ".gitignore", "a.go", "go.mod", "m.test", "sub/b.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, files)
			if !tc.git { // not a repository: .git is left out all the same
				require.NoError(t, os.MkdirAll(filepath.Join(root, "m", ".git"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "m", ".git", "HEAD"), []byte("junk\n"), 0o644))
			}
			require.NoError(t, os.Symlink("a.go", filepath.Join(root, "m", "link.go")))
			if tc.git {
				git(t, root, "init", "-q")
				git(t, root, "add", "m/go.mod", "m/a.go", "m/gone.go")
			}
			require.NoError(t, os.Remove(filepath.Join(root, "m", "gone.go"))) // tracked, but deleted
			dst := t.TempDir()
			require.NoError(t, stage(root, "m", dst))
			assert.Equal(t, tc.want, listFiles(t, dst))
		})
	}
}

// git runs git with args in dir.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// listFiles returns the files under dir, slash-separated and sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}))
	sort.Strings(out)
	return out
}
