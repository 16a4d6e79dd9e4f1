package pebblestore_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmptyKeyLargeValueFlush: the empty key, which kv.Store allows, may
// hold a value that fills a Pebble data block; flushing it must not crash
// the process (Pebble's default Separator panics on an empty key that ends
// a block, and its invariant checks on any empty key).
func TestEmptyKeyLargeValueFlush(t *testing.T) {
	ctx := context.Background()
	s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.Apply(ctx, kv.NewBatch(
		kv.Op{Kind: kv.OpPut, Key: []byte{}, Value: make([]byte, 5000)},
		kv.Op{Kind: kv.OpPut, Key: []byte{0}, Value: []byte("x")})))
	require.NoError(t, s.DB().Flush())
	v, err := s.Get(ctx, []byte{})
	require.NoError(t, err)
	require.Len(t, v, 5000)
}

// TestEmptyKeyColumnarBlocks: Pebble's columnar sstables (a later format
// that Options.Pebble may choose) cannot hold the empty key alone in a
// block, even a small value of it.
func TestEmptyKeyColumnarBlocks(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), pebblestore.Options{Pebble: &pebble.Options{FormatMajorVersion: pebble.FormatNewest}})
	defer s.Close()
	require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte{}, Value: []byte("e")})))
	require.NoError(t, s.DB().Flush())
	v, err := s.Get(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("e"), v)
}

// entry is a key and its value, in a test's tables.
type entry struct{ key, value string }

// legacyStore returns a new directory holding entries as pebblestore
// v0.1.0 stored them: each key as it is, and no format marker; in its
// sstables if flush, else in its write-ahead log only.
func legacyStore(t *testing.T, flush bool, entries ...entry) string {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, db.Set([]byte(e.key), []byte(e.value), pebble.Sync))
	}
	if flush {
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Close())
	return dir
}

// requireEntries checks that s holds exactly want, in order, by Scan (both
// ways) and Get.
func requireEntries(t *testing.T, s *pebblestore.Store, want []entry) {
	t.Helper()
	ctx := context.Background()
	var got []entry
	for e, err := range s.Scan(ctx, kv.ScanRange{}) {
		require.NoError(t, err)
		got = append(got, entry{string(e.Key), string(e.Value)})
	}
	require.Equal(t, want, got)
	got = got[:0]
	for e, err := range s.Scan(ctx, kv.ScanRange{Reverse: true}) {
		require.NoError(t, err)
		got = append(got, entry{string(e.Key), string(e.Value)})
	}
	slices.Reverse(got)
	require.Equal(t, want, got, "reverse")
	for _, e := range want {
		v, err := s.Get(ctx, []byte(e.key))
		require.NoError(t, err, "Get %q", e.key)
		require.Equal(t, e.value, string(v), "Get %q", e.key)
	}
}

// legacyEntries are keys of a store of v0.1.0, in order: those below
// 0x01, which this version stores otherwise, the key of the format marker
// among them, and others.
var legacyEntries = []entry{
	{"", "empty"}, {"\x00", "zero"}, {"\x00\x00", "zero zero"},
	{"\x00\x01pebblestore format", "not the marker"}, {"\x00\xff", "zero ff"},
	{"\x01", "one"}, {"\x02t\x00", "a table's"}, {"\xff", "ff"},
}

// TestUpgradeLegacyStore: Open rewrites the keys of a store of v0.1.0
// under their keys of this version's format, whether they are in its
// sstables or its write-ahead log, and the store reads the same after
// another Open, writable or read-only.
func TestUpgradeLegacyStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush bool
	}{{"sstables", true}, {"log", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := legacyStore(t, tc.flush, legacyEntries...)
			for _, opts := range []pebblestore.Options{{}, {}, {ReadOnly: true}} {
				s := open(t, dir, opts)
				requireEntries(t, s, legacyEntries)
				require.NoError(t, s.Close())
			}
		})
	}
}

// TestUpgradeCrashedLegacyStore: a store of v0.1.0 whose process crashed
// flushing a large value of the empty key holds it in its write-ahead
// log, which Open flushes; the store's comparer then separates the empty
// key from the next, where Pebble's default panics. Pebble's invariant
// checks refuse the empty key in an sstable however separated, so builds
// with them cannot recover such a store.
func TestUpgradeCrashedLegacyStore(t *testing.T) {
	if pebbleInvariants {
		t.Skip("Pebble's invariant checks refuse the empty key in an sstable")
	}
	big := string(make([]byte, 5000))
	want := []entry{{"", big}, {"\x00", "zero"}, {"a", big}}
	dir := legacyStore(t, false, want...)
	for range 2 {
		s := open(t, dir, pebblestore.Options{})
		requireEntries(t, s, want)
		require.NoError(t, s.Close())
	}
}

// TestReadOnlyLegacyStore: a read-only Open of a store of v0.1.0 refuses
// one that holds keys below 0x01 with ErrFormat, as it cannot upgrade
// them, and reads one that holds none, whose keys are those of the
// format.
func TestReadOnlyLegacyStore(t *testing.T) {
	dir := legacyStore(t, true, legacyEntries...)
	_, err := pebblestore.Open(dir, pebblestore.Options{ReadOnly: true})
	require.ErrorIs(t, err, pebblestore.ErrFormat)
	assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
	t.Log(err)
	s := open(t, dir, pebblestore.Options{}) // the lock is free again
	requireEntries(t, s, legacyEntries)
	require.NoError(t, s.Close())

	above := legacyEntries[5:]
	require.Equal(t, "\x01", above[0].key)
	dir = legacyStore(t, true, above...)
	s = open(t, dir, pebblestore.Options{ReadOnly: true})
	requireEntries(t, s, above)
	require.NoError(t, s.Close())
}
