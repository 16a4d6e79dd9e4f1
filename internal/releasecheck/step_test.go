package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		wantErr bool
	}{
		{name: "go version", argv: []string{"go", "version"}},
		{name: "go frobnicate", argv: []string{"go", "frobnicate"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runStep(tc.name, t.TempDir(), nil, tc.argv...)
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, errStep)
			assert.Contains(t, err.Error(), "step failed: "+tc.name+": exit status")
		})
	}
}

func TestOutsideEnv(t *testing.T) {
	work := t.TempDir()
	env, err := outsideEnv(work, filepath.Join(work, "proxy"))
	require.NoError(t, err)
	last := map[string]string{} // exec uses the last value of a variable
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	for k, want := range map[string]string{
		"GOWORK":     "off",
		"GOSUMDB":    "off",
		"GOMODCACHE": filepath.Join(work, "modcache"),
		"GOBIN":      filepath.Join(work, "bin"),
		"TMPDIR":     filepath.Join(work, "tmp"),
	} {
		assert.Equal(t, want, last[k], k)
	}
	assert.Contains(t, last["GOFLAGS"], "-modcacherw")
	assert.True(t, strings.HasPrefix(last["GOPROXY"], "file://"+filepath.ToSlash(work)+"/proxy,file://"), last["GOPROXY"])
}
