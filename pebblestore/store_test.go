package pebblestore_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, dir string, opts pebblestore.Options) *pebblestore.Store {
	t.Helper()
	s, err := pebblestore.Open(dir, opts)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts pebblestore.Options
	}{{"Sync", pebblestore.Options{}}, {"NoSync", pebblestore.Options{NoSync: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.TestStore(t, func(t *testing.T) indextable.Store {
				return open(t, t.TempDir(), tc.opts)
			})
		})
	}
}

// TestReopen: what one store wrote, the next one on the directory reads.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, pebblestore.Options{})
	var b indextable.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte{})
	require.NoError(t, s.Apply(ctx, &b))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close returns nil")

	s = open(t, dir, pebblestore.Options{})
	defer s.Close()
	v, err := s.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, []byte("1"), v)
	v, err = s.Get(ctx, []byte("b"))
	require.NoError(t, err)
	assert.Equal(t, []byte{}, v)
}

// TestLocked: a directory held by a store, in this process or another,
// cannot be opened again until that store closes.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, pebblestore.Options{})
	_, err := pebblestore.Open(dir, pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked)
	assert.Contains(t, err.Error(), dir)

	// Another process: this test binary, run as a child that opens dir.
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenInChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PEBBLESTORE_CHILD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ErrLocked")

	require.NoError(t, s.Close())
	s = open(t, dir, pebblestore.Options{})
	require.NoError(t, s.Close())
}

// TestOpenInChild is TestLocked's child process: it reports whether Open
// failed with ErrLocked.
func TestOpenInChild(t *testing.T) {
	dir := os.Getenv("PEBBLESTORE_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestLocked")
	}
	_, err := pebblestore.Open(dir, pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked)
	t.Log("ErrLocked:", err)
}

func TestOpenBadDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err := pebblestore.Open(file, pebblestore.Options{})
	require.Error(t, err)
	assert.NotErrorIs(t, err, pebblestore.ErrLocked)
}
