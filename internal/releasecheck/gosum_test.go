package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
)

func TestWithSums(t *testing.T) {
	isSibling := func(p string) bool { return strings.HasPrefix(p, "example.com/it") }
	core := module.Version{Path: "example.com/it", Version: "v0.2.0"}
	for _, tc := range []struct {
		name    string
		old     string
		add     map[module.Version][]string
		want    string
		wantErr error
	}{
		{
			name: "adds the sibling's lines in the go command's order",
			old: "golang.org/x/text v0.3.0 h1:t=\ngolang.org/x/text v0.3.0/go.mod h1:tm=\n" +
				"example.org/a v1.10.0/go.mod h1:a10m=\nexample.org/a v1.9.0 h1:a9=\n",
			add: sumLines(core, hashes{Zip: "h1:z=", Mod: "h1:m="}),
			want: "example.com/it v0.2.0 h1:z=\nexample.com/it v0.2.0/go.mod h1:m=\n" +
				"example.org/a v1.9.0 h1:a9=\nexample.org/a v1.10.0/go.mod h1:a10m=\n" +
				"golang.org/x/text v0.3.0 h1:t=\ngolang.org/x/text v0.3.0/go.mod h1:tm=\n",
		},
		{
			name: "drops the siblings' old lines, at any version",
			old: "example.com/it v0.1.0 h1:old=\nexample.com/it v0.1.0/go.mod h1:oldm=\n" +
				"example.com/it/pebblestore v0.2.0 h1:stale=\nexample.org/a v1.0.0 h1:a=\n",
			add:  sumLines(core, hashes{Zip: "h1:z=", Mod: "h1:m="}),
			want: "example.com/it v0.2.0 h1:z=\nexample.com/it v0.2.0/go.mod h1:m=\nexample.org/a v1.0.0 h1:a=\n",
		},
		{name: "no go.sum, nothing to add", want: ""},
		{name: "blank lines", old: "\nexample.org/a v1.0.0 h1:a=\n\n", want: "example.org/a v1.0.0 h1:a=\n"},
		{name: "malformed line", old: "example.org/a v1.0.0\n", wantErr: errGoSum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withSums("go.sum", []byte(tc.old), isSibling, tc.add)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), "go.sum:1")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}
