package indextable_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable"
	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

func TestMemoryStore(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) kv.Store { return indextable.NewMemoryStore() })
}

// memBoundedStore gives a MemoryStore a bounded atomicity scope, like Azure
// Table storage's, so the suite's scope-aware paths run too.
type memBoundedStore struct{ *indextable.MemoryStore }

func firstBytePartition(key []byte) []byte { return key[:min(len(key), 1)] }

var memBoundedScope = kv.Atomicity{Partition: firstBytePartition, MaxOps: 10, MaxBytes: 1 << 10}

func (memBoundedStore) Atomicity() kv.Atomicity { return memBoundedScope }

func (s memBoundedStore) Apply(ctx context.Context, b *kv.Batch) error {
	if err := memBoundedScope.Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

func TestMemoryStoreBoundedScope(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) kv.Store { return memBoundedStore{indextable.NewMemoryStore()} })
}

func TestMemoryStoreLenAndConflict(t *testing.T) {
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), nil)
	require.NoError(t, s.Apply(ctx, &b))
	require.Equal(t, 2, s.Len())

	b.Reset()
	b.Delete([]byte("a"))
	b.ExpectAbsent([]byte("b"))
	err := s.Apply(ctx, &b)
	require.ErrorIs(t, err, indextable.ErrConflict)
	require.ErrorContains(t, err, `"b"`, "the error names the key")
	require.Equal(t, 2, s.Len())

	require.NoError(t, s.Close())
	require.Zero(t, s.Len())
}

const memBenchKeys = 100_000

// memBenchStore returns a MemoryStore holding memBenchKeys keys, and the keys.
func memBenchStore(b *testing.B) (*indextable.MemoryStore, [][]byte) {
	s := indextable.NewMemoryStore()
	b.Cleanup(func() { s.Close() })
	keys := make([][]byte, memBenchKeys)
	var batch kv.Batch
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		batch.Put(keys[i], fmt.Appendf(nil, "value%08d", i))
	}
	require.NoError(b, s.Apply(context.Background(), &batch))
	b.ReportAllocs()
	b.ResetTimer()
	return s, keys
}

// memSpread maps i to a key index in a scattered order.
func memSpread(i, n int) int { return i * 7919 % n }

func BenchmarkMemoryStoreGet(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	for i := range b.N {
		if _, err := s.Get(ctx, keys[memSpread(i, memBenchKeys)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryStoreScan100(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	for i := range b.N {
		n := 0
		for _, err := range s.Scan(ctx, kv.ScanRange{Start: keys[memSpread(i, memBenchKeys-100)], Limit: 100}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 100 {
			b.Fatalf("scanned %d entries, want 100", n)
		}
	}
}

func BenchmarkMemoryStoreApply(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	value := []byte("new value")
	var batch kv.Batch
	for i := range b.N {
		batch.Reset()
		batch.Put(keys[memSpread(i, memBenchKeys)], value)
		if err := s.Apply(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemoryStoreExpectsWhatWasLastWritten: the store keeps the item an
// expectation last read; a batch that writes its key must not leave the
// old value to the next expectation.
func TestMemoryStoreExpectsWhatWasLastWritten(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	k := []byte("version")
	apply := func(build func(b *kv.Batch)) error {
		var b kv.Batch
		build(&b)
		return s.Apply(ctx, &b)
	}
	require.NoError(t, apply(func(b *kv.Batch) { b.Put(k, []byte("1")) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")); b.Put([]byte("other"), nil) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")); b.Put(k, []byte("2")) }))
	require.ErrorIs(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")) }), it.ErrConflict)
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("2")) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.Delete(k) }))
	require.ErrorIs(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("2")) }), it.ErrConflict)
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectAbsent(k) }))
}
