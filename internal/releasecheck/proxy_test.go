package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
)

func TestWriteProxy(t *testing.T) {
	root := writeFiles(t, fixture())
	for _, tc := range []struct {
		dir   string
		mod   module.Version
		files []string // the zip's, without the module@version/ prefix
	}{
		{
			dir: ".", mod: module.Version{Path: "example.com/it", Version: "v0.1.0"},
			files: []string{"go.mod", "go.work", "it.go"}, // not the nested modules'
		},
		{
			dir: "cmd/indextable", mod: module.Version{Path: "example.com/it/cmd/indextable", Version: "v0.1.0"},
			files: []string{"go.mod", "main.go"},
		},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			proxyDir := t.TempDir()
			h, err := writeProxy(proxyDir, tc.mod, filepath.Join(root, tc.dir))
			require.NoError(t, err)
			at, err := proxyPath(proxyDir, tc.mod)
			require.NoError(t, err)
			assert.Equal(t, tc.files, zipFiles(t, at+".zip", tc.mod))
			list, err := os.ReadFile(filepath.Join(filepath.Dir(at), "list"))
			require.NoError(t, err)
			assert.Equal(t, "v0.1.0\n", string(list))

			// The go command, downloading the module from the proxy,
			// computes the same hashes.
			got := goModDownload(t, proxyDir, tc.mod)
			assert.Equal(t, h, hashes{Zip: got.Sum, Mod: got.GoModSum})
		})
	}
}

// zipFiles returns the names of the files in the module zip name, without
// their mod@version/ prefix.
func zipFiles(t *testing.T, name string, mod module.Version) []string {
	t.Helper()
	z, err := zip.OpenReader(name)
	require.NoError(t, err)
	defer z.Close()
	var out []string
	prefix := mod.String() + "/"
	for _, f := range z.File {
		require.Contains(t, f.Name, prefix)
		out = append(out, f.Name[len(prefix):])
	}
	return out
}

// goModDownload downloads mod from the file-based proxy in proxyDir alone,
// into a module cache of its own, and returns what go mod download -json
// says of it.
func goModDownload(t *testing.T, proxyDir string, mod module.Version) (out struct{ Sum, GoModSum string }) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod.String())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-modcacherw", "GOSUMDB=off",
		"GOPROXY="+fileURL(proxyDir), "GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"))
	data, err := cmd.Output()
	require.NoError(t, err, "%s", data)
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}
