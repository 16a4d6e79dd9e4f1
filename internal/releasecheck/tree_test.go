package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture returns the files of a small tree shaped as the repository:
// the core, its two stores and the tool, requiring each other at v0.1.0,
// and the examples, which are not published.
func fixture() map[string]string {
	return map[string]string{
		"go.work": "go 1.23.0\n\nuse (\n\t.\n\t./azstore\n\t./cmd/indextable\n\t./examples\n\t./pebblestore\n)\n\n" +
			"replace (\n\texample.com/it v0.1.0 => ./\n\texample.com/it/azstore v0.1.0 => ./azstore\n\texample.com/it/pebblestore v0.1.0 => ./pebblestore\n)\n",
		"go.mod":                 "module example.com/it\n\ngo 1.23.0\n",
		"it.go":                  "package it\n",
		"pebblestore/go.mod":     "module example.com/it/pebblestore\n\ngo 1.23.0\n\nrequire example.com/it v0.1.0\n",
		"pebblestore/p.go":       "package pebblestore\n\nimport _ \"example.com/it\"\n",
		"azstore/go.mod":         "module example.com/it/azstore\n\ngo 1.23.0\n\nrequire example.com/it v0.1.0\n",
		"azstore/a.go":           "package azstore\n\nimport _ \"example.com/it\"\n",
		"cmd/indextable/go.mod":  "module example.com/it/cmd/indextable\n\ngo 1.23.0\n\nrequire (\n\texample.com/it v0.1.0\n\texample.com/it/pebblestore v0.1.0\n)\n",
		"cmd/indextable/main.go": "package main\n\nimport _ \"example.com/it/pebblestore\"\n\nfunc main() {}\n",
		"examples/go.mod":        "module example.com/it/examples\n\ngo 1.23.0\n\nrequire (\n\texample.com/it v0.1.0\n\texample.com/it/azstore v0.1.0\n)\n",
		"examples/e.go":          "package examples\n\nimport _ \"example.com/it/azstore\"\n",
	}
}

// writeFiles writes files, by slash-separated name, under a new temporary
// directory, and returns the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

// dirs returns the directories of mods.
func dirs(mods []*treeModule) []string {
	var out []string
	for _, m := range mods {
		out = append(out, m.Dir)
	}
	return out
}

func TestLoadTree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change map[string]string // files to set; "" removes one
		want   []string          // the modules' directories, or nil for errTree
	}{
		{name: "repository", want: []string{".", "azstore", "cmd/indextable", "examples", "pebblestore"}},
		{name: "no go.work", change: map[string]string{"go.work": ""}},
		{name: "no go.mod", change: map[string]string{"azstore/go.mod": ""}},
		{name: "no module line", change: map[string]string{"azstore/go.mod": "go 1.23.0\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fixture()
			for name, content := range tc.change {
				files[name] = content
				if content == "" {
					delete(files, name)
				}
			}
			tr, err := loadTree(writeFiles(t, files))
			if tc.want == nil {
				require.ErrorIs(t, err, errTree)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, dirs(tr.Modules))
			assert.Equal(t, "example.com/it/cmd/indextable", tr.byDir("cmd/indextable").Path)
		})
	}
}

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change map[string]string
		want   []string // nil for errTree
	}{
		{name: "siblings first", want: []string{".", "azstore", "pebblestore", "cmd/indextable", "examples"}},
		{
			name:   "cycle",
			change: map[string]string{"go.mod": "module example.com/it\n\ngo 1.23.0\n\nrequire example.com/it/azstore v0.1.0\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fixture()
			for name, content := range tc.change {
				files[name] = content
			}
			tr, err := loadTree(writeFiles(t, files))
			require.NoError(t, err)
			got, err := tr.order()
			if tc.want == nil {
				require.ErrorIs(t, err, errTree)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, dirs(got))
		})
	}
}
