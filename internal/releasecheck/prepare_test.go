package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		wantErr error
	}{
		{version: "v0.2.0"},
		{version: "v1.0.0-rc.1"},
		{version: "v0.2", wantErr: errBadVersion},
		{version: "v2.0.0", wantErr: errBadVersion},
		{version: "v0.0.0-20250101000000-abcdefabcdef", wantErr: errBadVersion},
	} {
		t.Run(tc.version, func(t *testing.T) {
			files := fixture()
			root := writeFiles(t, files)
			tr, err := loadTree(root)
			require.NoError(t, err)
			err = setVersion(tr, tc.version)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				for name, content := range files { // nothing written
					data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
					require.NoError(t, err)
					assert.Equal(t, content, string(data), name)
				}
				return
			}
			require.NoError(t, err)
			tr, err = loadTree(root)
			require.NoError(t, err)
			got, err := releaseVersion(tr)
			require.NoError(t, err)
			assert.Equal(t, tc.version, got)
			work, err := os.ReadFile(filepath.Join(root, "go.work"))
			require.NoError(t, err)
			assert.Equal(t, strings.ReplaceAll(files["go.work"], "v0.1.0", tc.version), string(work))
			gomod, err := os.ReadFile(filepath.Join(root, "cmd", "indextable", "go.mod"))
			require.NoError(t, err)
			assert.Equal(t, strings.ReplaceAll(files["cmd/indextable/go.mod"], "v0.1.0", tc.version), string(gomod))
		})
	}
}
