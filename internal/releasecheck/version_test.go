package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReleaseVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(files map[string]string)
		want    string
		wantErr error
		inErr   []string // what the error must name
	}{
		{name: "agree", want: "v0.1.0"},
		{
			name: "a go.mod disagrees",
			edit: func(f map[string]string) {
				f["azstore/go.mod"] = strings.Replace(f["azstore/go.mod"], "v0.1.0", "v0.2.0", 1)
			},
			wantErr: errDisagree,
			inErr:   []string{"azstore/go.mod requires example.com/it v0.2.0", "pebblestore/go.mod requires example.com/it v0.1.0"},
		},
		{
			name:    "go.work disagrees",
			edit:    func(f map[string]string) { f["go.work"] = strings.Replace(f["go.work"], "it v0.1.0", "it v0.0.9", 1) },
			wantErr: errDisagree,
			inErr:   []string{`go.work replaces example.com/it at "v0.0.9"`},
		},
		{
			name: "no sibling requirements",
			edit: func(f map[string]string) {
				f["go.work"] = "go 1.23.0\n\nuse .\n"
			},
			wantErr: errNoVersion,
		},
		{
			name:    "pseudo-version",
			edit:    func(f map[string]string) { setAll(f, "v0.1.0", "v0.0.0-00010101000000-000000000000") },
			wantErr: errBadVersion,
			inErr:   []string{"pseudo-version"},
		},
		{
			name:    "replace in a go.mod",
			edit:    func(f map[string]string) { f["azstore/go.mod"] += "\nreplace example.com/it => ../\n" },
			wantErr: errReplaced,
			inErr:   []string{"azstore/go.mod replaces example.com/it"},
		},
		{
			name: "go.work lacks a replace",
			edit: func(f map[string]string) {
				f["go.work"] = strings.Replace(f["go.work"], "\texample.com/it/azstore v0.1.0 => ./azstore\n", "", 1)
			},
			wantErr: errNotReplaced,
			inErr:   []string{"example.com/it/azstore v0.1.0 => ./azstore"},
		},
		{
			name: "go.work replaces by another directory",
			edit: func(f map[string]string) {
				f["go.work"] = strings.Replace(f["go.work"], "=> ./\n", "=> ./azstore\n", 1)
			},
			wantErr: errNotReplaced,
			inErr:   []string{"example.com/it v0.1.0 => ./"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := fixture()
			if tc.edit != nil {
				tc.edit(files)
			}
			tr, err := loadTree(writeFiles(t, files))
			require.NoError(t, err)
			got, err := releaseVersion(tr)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				for _, s := range tc.inErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// setAll replaces version old by new in every go.mod and go.work of files.
func setAll(files map[string]string, old, new string) {
	for name, content := range files {
		if strings.HasSuffix(name, "go.mod") || name == "go.work" {
			files[name] = strings.ReplaceAll(content, old, new)
		}
	}
}
