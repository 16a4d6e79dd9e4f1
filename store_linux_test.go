//go:build linux

package indextable_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// TestMemoryStoreHugeKeysAndValues checks the bound that keeps a
// MemoryStore item's lengths in 32 bits, with slices of 4 GiB that are
// mapped but never touched, so they cost address space, not memory.
func TestMemoryStoreHugeKeysAndValues(t *testing.T) {
	huge, err := syscall.Mmap(-1, 0, 1<<32+1, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, syscall.Munmap(huge)) })
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte{0}, []byte("zero"))
	b.Put([]byte{1}, []byte("one"))
	require.NoError(t, s.Apply(ctx, &b))

	for name, put := range map[string]func(b *kv.Batch){
		"value": func(b *kv.Batch) { b.Put([]byte("v"), huge[:1<<32-1]) },
		"key":   func(b *kv.Batch) { b.Put(huge[:1<<32-1], nil) },
	} {
		b.Reset()
		b.Put([]byte("small"), []byte{1})
		put(&b)
		err := s.Apply(ctx, &b)
		require.ErrorIs(t, err, indextable.ErrInvalidBatch, name)
		require.ErrorContains(t, err, "4294967295 bytes", name)
		require.Equal(t, 2, s.Len(), "%s: nothing of the batch is applied", name)
	}

	// A key longer than any stored one (its first 2^32-1 bytes are zeros,
	// like the stored key {0}) is absent, and scans from it start where
	// they should.
	_, err = s.Get(ctx, huge)
	require.ErrorIs(t, err, indextable.ErrNotFound)
	values, err := s.GetMany(ctx, [][]byte{huge, {0}}, nil)
	require.NoError(t, err)
	require.Equal(t, [][]byte{nil, []byte("zero")}, values)
	keys := func(r kv.ScanRange) (out []string) {
		for e, err := range s.Scan(ctx, r) {
			require.NoError(t, err)
			out = append(out, string(e.Key))
		}
		return out
	}
	require.Equal(t, []string{"\x01"}, keys(kv.ScanRange{Start: huge}))
	require.Equal(t, []string{"\x00"}, keys(kv.ScanRange{End: huge}))
	require.Equal(t, []string{"\x00"}, keys(kv.ScanRange{End: huge, Reverse: true}))
	require.Equal(t, []string{"\x01"}, keys(kv.ScanRange{After: huge}))
	require.Equal(t, []string{"\x00"}, keys(kv.ScanRange{After: huge, Reverse: true}))
}
