package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishFixture publishes the tree in root at v0.1.0 with settle, and
// returns the release.
func publishFixture(t *testing.T, root string, settle func(r *release) settleFunc) (*release, error) {
	t.Helper()
	tr, err := loadTree(root)
	require.NoError(t, err)
	r := &release{t: tr, version: "v0.1.0", work: t.TempDir(), sums: map[string]hashes{}}
	return r, r.publish(settle(r))
}

// sumOfPaths returns the go.sum lines of the modules of r at paths, as r
// published them.
func sumOfPaths(r *release, paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		h := r.sums[p]
		fmt.Fprintf(&b, "%s v0.1.0 %s\n%s v0.1.0/go.mod %s\n", p, h.Zip, p, h.Mod)
	}
	return b.String()
}

func TestPublishWritesSums(t *testing.T) {
	root := writeFiles(t, fixture())
	r, err := publishFixture(t, root, func(r *release) settleFunc { return r.writeSum })
	require.NoError(t, err)
	assert.Len(t, r.sums, 4, "the core, the stores and the tool, not the examples")
	for dir, want := range map[string]string{
		"pebblestore":    sumOfPaths(r, "example.com/it"),
		"azstore":        sumOfPaths(r, "example.com/it"),
		"cmd/indextable": sumOfPaths(r, "example.com/it", "example.com/it/pebblestore"),
		"examples":       sumOfPaths(r, "example.com/it", "example.com/it/azstore"),
	} {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), "go.sum"))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), dir)
	}
	_, err = os.Stat(filepath.Join(root, "go.sum"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the core requires no sibling")
}

func TestPublishComparesSums(t *testing.T) {
	for _, tc := range []struct {
		name      string
		change    map[string]string // after writing the sums
		wantStale []string
	}{
		{name: "as written"},
		{name: "a store changed", change: map[string]string{"pebblestore/p2.go": "package pebblestore\n"}, wantStale: []string{"cmd/indextable/go.sum"}},
		{
			name:      "the core changed",
			change:    map[string]string{"it2.go": "package it\n"},
			wantStale: []string{"azstore/go.sum", "pebblestore/go.sum", "cmd/indextable/go.sum", "examples/go.sum"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, fixture())
			_, err := publishFixture(t, root, func(r *release) settleFunc { return r.writeSum })
			require.NoError(t, err)
			for name, content := range tc.change {
				require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(content), 0o644))
			}
			var stale []string
			_, err = publishFixture(t, root, func(r *release) settleFunc { return r.compareSum(&stale) })
			require.NoError(t, err)
			assert.Equal(t, tc.wantStale, stale)
		})
	}
}

func TestPublishUnpublished(t *testing.T) {
	files := fixture()
	files["cmd/indextable/go.mod"] += "\nrequire example.com/it/examples v0.1.0\n"
	_, err := publishFixture(t, writeFiles(t, files), func(r *release) settleFunc { return r.writeSum })
	require.ErrorIs(t, err, errUnpublished)
	assert.Contains(t, err.Error(), "example.com/it/cmd/indextable requires a module the release does not publish: example.com/it/examples")
}

func TestPublishTidies(t *testing.T) {
	files := fixture()
	released := "example.com/it v0.1.0 h1:released=\nexample.com/it v0.1.0/go.mod h1:releasedmod=\n"
	files["pebblestore/go.sum"] = released + "example.org/unused v1.0.0 h1:x=\n"
	files["azstore/go.mod"] += "\nrequire example.com/it/pebblestore v0.1.0 // indirect\n" // not needed
	root := writeFiles(t, files)
	_, err := publishFixture(t, root, func(r *release) settleFunc {
		return r.tidy(append(os.Environ(), "GOWORK=off", "GOFLAGS=-modcacherw", "GOSUMDB=off",
			"GOPROXY="+fileURL(r.proxyDir()), "GOMODCACHE="+filepath.Join(r.work, "modcache")))
	})
	require.NoError(t, err)
	for dir, want := range map[string]string{
		"pebblestore":    released, // the unused line gone, the released ones kept
		"cmd/indextable": "",       // no sibling lines: release-prepare writes them
	} {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), "go.sum"))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), dir)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "azstore", "go.mod"))
	require.NoError(t, err)
	assert.NotContains(t, string(gomod), "pebblestore", "tidied")
}
