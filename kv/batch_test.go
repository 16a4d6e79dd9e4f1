package kv_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func opPut(k, v string) kv.Op {
	return kv.Op{Kind: kv.OpPut, Key: []byte(k), Value: []byte(v)}
}

func opDelete(k string) kv.Op {
	return kv.Op{Kind: kv.OpDelete, Key: []byte(k)}
}

func opExpect(k, v string) kv.Op {
	return kv.Op{Kind: kv.OpExpectValue, Key: []byte(k), Value: []byte(v)}
}

func opAbsent(k string) kv.Op {
	return kv.Op{Kind: kv.OpExpectAbsent, Key: []byte(k)}
}

// opPuts returns n puts of distinct keys.
func opPuts(n int) []kv.Op {
	ops := make([]kv.Op, n)
	for i := range ops {
		ops[i] = opPut(fmt.Sprint("k", i), "v")
	}
	return ops
}

func TestCheckBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []kv.Op
		ok   bool
	}{
		{"empty", nil, true},
		{"distinct writes", []kv.Op{opPut("a", ""), opDelete("b"), opPut("", "")}, true},
		{"put twice", []kv.Op{opPut("a", "1"), opPut("b", ""), opPut("a", "2")}, false},
		{"put and delete", []kv.Op{opPut("a", "1"), opDelete("a")}, false},
		{"empty key twice", []kv.Op{opPut("", ""), opDelete("")}, false},
		{"compare and set", []kv.Op{opExpect("a", "1"), opPut("a", "2"), opAbsent("b"), opDelete("b")}, true},
		{"write then expect", []kv.Op{opPut("a", "2"), opExpect("a", "1")}, true},
		{"expectations twice", []kv.Op{opExpect("a", "1"), opAbsent("a"), opExpect("a", "2")}, true},
		{"zero kind", []kv.Op{{Key: []byte("a")}}, false},
		{"unknown kind", []kv.Op{opPut("a", ""), {Kind: 99, Key: []byte("b")}}, false},
		{"many distinct", opPuts(20), true},
		{"many with a duplicate", append(opPuts(20), opDelete("k7")), false},
		{"many with compare and set", append(opPuts(20), opExpect("k3", "v"), opAbsent("x"), opDelete("x")), true},
		{"many with unknown kind", append(opPuts(20), kv.Op{Kind: 99}), false},
		{"more than 64 distinct", opPuts(100), true},
		{"more than 64 with a duplicate", append(opPuts(100), opPut("k99", "w")), false},
	} {
		err := kv.CheckBatch(kv.NewBatch(tc.ops...))
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, kv.ErrInvalidBatch, tc.name)
		}
	}
}

// TestCheckBatchAllocates: checking a batch of up to 64 writes allocates
// nothing (a store checks every batch it applies).
func TestCheckBatchAllocates(t *testing.T) {
	for _, n := range []int{3, 20, 64} {
		b := kv.NewBatch(append(opPuts(n), opExpect("k0", "v"))...)
		allocs := testing.AllocsPerRun(10, func() {
			if err := kv.CheckBatch(b); err != nil {
				panic(err)
			}
		})
		require.Zero(t, allocs, "%d writes", n)
	}
}

func TestBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() *kv.Batch
		want  []kv.Op
	}{
		{"nil", func() *kv.Batch { return nil }, nil},
		{"zero", func() *kv.Batch { return &kv.Batch{} }, nil},
		{"each kind, in order", func() *kv.Batch {
			var b kv.Batch
			b.ExpectValue([]byte("a"), []byte("1"))
			b.Put([]byte("a"), []byte("2"))
			b.ExpectAbsent([]byte("b"))
			b.Delete([]byte("c"))
			return &b
		}, []kv.Op{opExpect("a", "1"), opPut("a", "2"), opAbsent("b"), opDelete("c")}},
		{"NewBatch", func() *kv.Batch { return kv.NewBatch(opPut("a", "1"), opDelete("b")) }, []kv.Op{opPut("a", "1"), opDelete("b")}},
		{"Add after Put", func() *kv.Batch {
			var b kv.Batch
			b.Put([]byte("a"), nil)
			b.Add(opAbsent("b"), opDelete("c"))
			return &b
		}, []kv.Op{opPut("a", ""), opAbsent("b"), opDelete("c")}},
		{"Add of an unknown kind", func() *kv.Batch { return kv.NewBatch(kv.Op{Kind: 99}) }, []kv.Op{{Kind: 99}}},
		{"Reset", func() *kv.Batch {
			b := kv.NewBatch(opPut("a", "1"))
			b.Reset()
			b.Delete([]byte("b"))
			return b
		}, []kv.Op{opDelete("b")}},
	} {
		b := tc.build()
		assert.Equal(t, len(tc.want), b.Len(), tc.name)
		for i, op := range b.Ops() {
			assert.Equal(t, tc.want[i].Kind, op.Kind, "%s: op %d", tc.name, i)
			assert.Equal(t, string(tc.want[i].Key), string(op.Key), "%s: op %d", tc.name, i)
			assert.Equal(t, string(tc.want[i].Value), string(op.Value), "%s: op %d", tc.name, i)
		}
	}
}

// TestNewBatchKeepsOps: NewBatch wraps the caller's slice, without a copy,
// so a table hands its planned operations to a store as they are.
func TestNewBatchKeepsOps(t *testing.T) {
	ops := make([]kv.Op, 1, 4)
	ops[0] = opPut("a", "1")
	b := kv.NewBatch(ops...)
	require.Same(t, &ops[0], &b.Ops()[0])
	b.Add(opDelete("b"))
	assert.Equal(t, opDelete("b"), ops[:2][1], "Add uses the spare capacity")
}

// A store's Apply, on a map: check the batch, then every expectation,
// then write.
func ExampleCheckBatch() {
	stored := map[string][]byte{"stock": []byte("3")}
	apply := func(b *kv.Batch) error {
		if err := kv.CheckBatch(b); err != nil {
			return err
		}
		for _, op := range b.Ops() {
			if op.IsWrite() {
				continue
			}
			if err := kv.CheckExpectation(op, stored[string(op.Key)]); err != nil {
				return err
			}
		}
		for _, op := range b.Ops() {
			switch op.Kind {
			case kv.OpPut:
				stored[string(op.Key)] = append([]byte(nil), op.Value...)
			case kv.OpDelete:
				delete(stored, string(op.Key))
			}
		}
		return nil
	}

	var b kv.Batch // compare-and-set: 3 becomes 2
	b.ExpectValue([]byte("stock"), []byte("3"))
	b.Put([]byte("stock"), []byte("2"))
	fmt.Println(apply(&b), string(stored["stock"]))
	err := apply(&b) // again: the stock is no longer 3
	fmt.Println(errors.Is(err, kv.ErrConflict), string(stored["stock"]))
	b.Put([]byte("stock"), []byte("1")) // a key written twice
	fmt.Println(errors.Is(apply(&b), kv.ErrInvalidBatch))
	// Output:
	// <nil> 2
	// true 2
	// true
}

// TestBatchSize: what Atomicity bounds a batch by, besides its Len.
func TestBatchSize(t *testing.T) {
	for _, tc := range []struct {
		name          string
		b             *kv.Batch
		writes, bytes int
	}{
		{"nil", nil, 0, 0},
		{"each kind", kv.NewBatch(opExpect("a", "1"), opPut("a", "22"), opAbsent("bb"), opDelete("c")), 2, 8},
		{"expectations alone", kv.NewBatch(opAbsent("a"), opExpect("b", "")), 0, 2},
	} {
		assert.Equal(t, tc.writes, tc.b.Writes(), tc.name)
		assert.Equal(t, tc.bytes, tc.b.Bytes(), tc.name)
	}
}

// TestCheckBatchReusesMaps: checking batches of more than 64 writes, one
// after another as a bulk load's, reuses the map that finds a key
// written twice.
func TestCheckBatchReusesMaps(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector drops pooled maps")
	}
	b := kv.NewBatch(opPuts(1000)...)
	require.NoError(t, kv.CheckBatch(b))
	allocs := testing.AllocsPerRun(100, func() {
		if err := kv.CheckBatch(b); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}
