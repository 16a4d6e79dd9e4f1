package indextable_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

func TestMemoryStore(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) indextable.Store { return indextable.NewMemoryStore() })
}

// memBoundedStore gives a MemoryStore a bounded atomicity scope, like Azure
// Table storage's, so the suite's scope-aware paths run too.
type memBoundedStore struct{ *indextable.MemoryStore }

var memBoundedScope = indextable.Atomicity{Partition: firstBytePartition, MaxOps: 10, MaxBytes: 1 << 10}

func firstBytePartition(key []byte) []byte { return key[:min(len(key), 1)] }

func (memBoundedStore) Atomicity() indextable.Atomicity { return memBoundedScope }

func (s memBoundedStore) Apply(ctx context.Context, b *indextable.Batch) error {
	if err := memBoundedScope.Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

func TestMemoryStoreBoundedScope(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) indextable.Store { return memBoundedStore{indextable.NewMemoryStore()} })
}

func TestMemoryStoreLenAndConflict(t *testing.T) {
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	var b indextable.Batch
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

// opBatch builds a Batch of ops; an unknown kind is set through Ops, the only
// way to build one.
func opBatch(ops ...indextable.Op) *indextable.Batch {
	var b indextable.Batch
	for _, op := range ops {
		switch op.Kind {
		case indextable.OpPut:
			b.Put(op.Key, op.Value)
		case indextable.OpDelete:
			b.Delete(op.Key)
		case indextable.OpExpectValue:
			b.ExpectValue(op.Key, op.Value)
		case indextable.OpExpectAbsent:
			b.ExpectAbsent(op.Key)
		default:
			b.Put(op.Key, op.Value)
			b.Ops()[b.Len()-1].Kind = op.Kind
		}
	}
	return &b
}

func opPut(k, v string) indextable.Op {
	return indextable.Op{Kind: indextable.OpPut, Key: []byte(k), Value: []byte(v)}
}

func opDelete(k string) indextable.Op {
	return indextable.Op{Kind: indextable.OpDelete, Key: []byte(k)}
}

func opExpect(k, v string) indextable.Op {
	return indextable.Op{Kind: indextable.OpExpectValue, Key: []byte(k), Value: []byte(v)}
}

func opAbsent(k string) indextable.Op {
	return indextable.Op{Kind: indextable.OpExpectAbsent, Key: []byte(k)}
}

// opPuts returns n puts of distinct keys.
func opPuts(n int) []indextable.Op {
	ops := make([]indextable.Op, n)
	for i := range ops {
		ops[i] = opPut(fmt.Sprint("k", i), "v")
	}
	return ops
}

func TestScanRangeContains(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		r    indextable.ScanRange
		key  string
		want bool
	}{
		{indextable.ScanRange{}, "", true},
		{indextable.ScanRange{}, "\xff", true},
		{indextable.ScanRange{Start: b("b")}, "b", true},
		{indextable.ScanRange{Start: b("b")}, "a\xff", false},
		{indextable.ScanRange{End: b("b")}, "b", false},
		{indextable.ScanRange{End: b("b")}, "a\xff", true},
		{indextable.ScanRange{Start: b("b"), End: b("b")}, "b", false},
		{indextable.ScanRange{Start: []byte{}}, "", true},
		{indextable.ScanRange{End: []byte{}}, "", false},
		{indextable.ScanRange{After: b("b")}, "b", false},
		{indextable.ScanRange{After: b("b")}, "b\x00", true},
		{indextable.ScanRange{After: b("b")}, "a", false},
		{indextable.ScanRange{After: b("b"), Reverse: true}, "b", false},
		{indextable.ScanRange{After: b("b"), Reverse: true}, "a", true},
		{indextable.ScanRange{After: b("b"), Reverse: true}, "b\x00", false},
		{indextable.ScanRange{After: []byte{}}, "", false},
		{indextable.ScanRange{After: []byte{}, Reverse: true}, "", false},
		{indextable.ScanRange{Start: b("c"), After: b("a")}, "b", false},
		{indextable.ScanRange{End: b("c"), After: b("d"), Reverse: true}, "c", false},
	} {
		require.Equal(t, tc.want, tc.r.Contains([]byte(tc.key)), "%+v contains %q", tc.r, tc.key)
	}
}

func TestAtomicityAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    indextable.Atomicity
		ops  []indextable.Op
		ok   bool
	}{
		{"unbounded", indextable.Atomicity{}, opPuts(1000), true},
		{"empty batch", indextable.Atomicity{MaxOps: 1, MaxBytes: 1, Partition: firstBytePartition}, nil, true},
		{"max ops reached", indextable.Atomicity{MaxOps: 3}, opPuts(3), true},
		{"max ops exceeded", indextable.Atomicity{MaxOps: 3}, opPuts(4), false},
		{"max bytes reached", indextable.Atomicity{MaxBytes: 6}, []indextable.Op{opPut("ab", "c"), opDelete("d"), opExpect("e", "f")}, true},
		{"max bytes exceeded", indextable.Atomicity{MaxBytes: 5}, []indextable.Op{opPut("ab", "c"), opDelete("d"), opExpect("e", "f")}, false},
		{"one partition", indextable.Atomicity{Partition: firstBytePartition}, []indextable.Op{opPut("a1", ""), opDelete("a2"), opAbsent("a")}, true},
		{"two partitions", indextable.Atomicity{Partition: firstBytePartition}, []indextable.Op{opPut("a1", ""), opDelete("a2"), opAbsent("b1")}, false},
		{"empty key partition", indextable.Atomicity{Partition: firstBytePartition}, []indextable.Op{opPut("", ""), opPut("a", "")}, false},
		{"one op", indextable.Atomicity{Partition: firstBytePartition, MaxOps: 1}, []indextable.Op{opPut("z", "")}, true},
	} {
		err := tc.a.Allows(opBatch(tc.ops...))
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, indextable.ErrInvalidBatch, tc.name)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []indextable.Op
		ok   bool
	}{
		{"empty", nil, true},
		{"distinct writes", []indextable.Op{opPut("a", ""), opDelete("b"), opPut("", "")}, true},
		{"put twice", []indextable.Op{opPut("a", "1"), opPut("b", ""), opPut("a", "2")}, false},
		{"put and delete", []indextable.Op{opPut("a", "1"), opDelete("a")}, false},
		{"empty key twice", []indextable.Op{opPut("", ""), opDelete("")}, false},
		{"compare and set", []indextable.Op{opExpect("a", "1"), opPut("a", "2"), opAbsent("b"), opDelete("b")}, true},
		{"write then expect", []indextable.Op{opPut("a", "2"), opExpect("a", "1")}, true},
		{"expectations twice", []indextable.Op{opExpect("a", "1"), opAbsent("a"), opExpect("a", "2")}, true},
		{"zero kind", []indextable.Op{{Key: []byte("a")}}, false},
		{"unknown kind", []indextable.Op{opPut("a", ""), {Kind: 99, Key: []byte("b")}}, false},
		{"many distinct", opPuts(20), true},
		{"many with a duplicate", append(opPuts(20), opDelete("k7")), false},
		{"many with compare and set", append(opPuts(20), opExpect("k3", "v"), opAbsent("x"), opDelete("x")), true},
		{"many with unknown kind", append(opPuts(20), indextable.Op{Kind: 99}), false},
	} {
		err := indextable.CheckBatch(opBatch(tc.ops...))
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, indextable.ErrInvalidBatch, tc.name)
		}
	}
}

const memBenchKeys = 100_000

// memBenchStore returns a MemoryStore holding memBenchKeys keys, and the keys.
func memBenchStore(b *testing.B) (*indextable.MemoryStore, [][]byte) {
	s := indextable.NewMemoryStore()
	b.Cleanup(func() { s.Close() })
	keys := make([][]byte, memBenchKeys)
	var batch indextable.Batch
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
		for _, err := range s.Scan(ctx, indextable.ScanRange{Start: keys[memSpread(i, memBenchKeys-100)], Limit: 100}) {
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
	var batch indextable.Batch
	for i := range b.N {
		batch.Reset()
		batch.Put(keys[memSpread(i, memBenchKeys)], value)
		if err := s.Apply(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
}
