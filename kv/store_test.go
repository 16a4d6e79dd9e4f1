package kv_test

import (
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// firstBytePartition partitions keys by their first byte.
func firstBytePartition(key []byte) []byte { return key[:min(len(key), 1)] }

func TestScanRangeContains(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		r    kv.ScanRange
		key  string
		want bool
	}{
		{kv.ScanRange{}, "", true},
		{kv.ScanRange{}, "\xff", true},
		{kv.ScanRange{Start: b("b")}, "b", true},
		{kv.ScanRange{Start: b("b")}, "a\xff", false},
		{kv.ScanRange{End: b("b")}, "b", false},
		{kv.ScanRange{End: b("b")}, "a\xff", true},
		{kv.ScanRange{Start: b("b"), End: b("b")}, "b", false},
		{kv.ScanRange{Start: []byte{}}, "", true},
		{kv.ScanRange{End: []byte{}}, "", false},
		{kv.ScanRange{After: b("b")}, "b", false},
		{kv.ScanRange{After: b("b")}, "b\x00", true},
		{kv.ScanRange{After: b("b")}, "a", false},
		{kv.ScanRange{After: b("b"), Reverse: true}, "b", false},
		{kv.ScanRange{After: b("b"), Reverse: true}, "a", true},
		{kv.ScanRange{After: b("b"), Reverse: true}, "b\x00", false},
		{kv.ScanRange{After: []byte{}}, "", false},
		{kv.ScanRange{After: []byte{}, Reverse: true}, "", false},
		{kv.ScanRange{Start: b("c"), After: b("a")}, "b", false},
		{kv.ScanRange{End: b("c"), After: b("d"), Reverse: true}, "c", false},
	} {
		require.Equal(t, tc.want, tc.r.Contains([]byte(tc.key)), "%+v contains %q", tc.r, tc.key)
	}
}

func TestAtomicityAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    kv.Atomicity
		ops  []kv.Op
		ok   bool
		says string // in the error, when not empty
	}{
		{"unbounded", kv.Atomicity{}, opPuts(1000), true, ""},
		{"empty batch", kv.Atomicity{MaxOps: 1, MaxBytes: 1, Partition: firstBytePartition}, nil, true, ""},
		{"max ops reached", kv.Atomicity{MaxOps: 3}, opPuts(3), true, ""},
		{"max ops exceeded", kv.Atomicity{MaxOps: 3}, opPuts(4), false, ""},
		{"max bytes reached", kv.Atomicity{MaxBytes: 6}, []kv.Op{opPut("ab", "c"), opDelete("d"), opExpect("e", "f")}, true, ""},
		{"max bytes exceeded", kv.Atomicity{MaxBytes: 5}, []kv.Op{opPut("ab", "c"), opDelete("d"), opExpect("e", "f")}, false, ""},
		{"one partition", kv.Atomicity{Partition: firstBytePartition}, []kv.Op{opPut("a1", ""), opDelete("a2"), opAbsent("a")}, true, ""},
		{"two partitions", kv.Atomicity{Partition: firstBytePartition}, []kv.Op{opPut("a1", ""), opDelete("a2"), opAbsent("b1")}, false, ""},
		{"empty key partition", kv.Atomicity{Partition: firstBytePartition}, []kv.Op{opPut("", ""), opPut("a", "")}, false, ""},
		{"one op", kv.Atomicity{Partition: firstBytePartition, MaxOps: 1}, []kv.Op{opPut("z", "")}, true, ""},
		{"max ops counts expectations", kv.Atomicity{MaxOps: 3}, []kv.Op{opPut("a", ""), opAbsent("a"), opExpect("b", ""), opAbsent("c")}, false, "4 operations, atomicity scope allows 3"},
		{"max writes reached", kv.Atomicity{MaxWrites: 3}, []kv.Op{opPut("a", ""), opDelete("b"), opPut("c", "")}, true, ""},
		{"max writes exceeded", kv.Atomicity{MaxWrites: 3}, opPuts(4), false, "4 puts and deletes, atomicity scope allows 3"},
		{"max writes exceeded by a delete", kv.Atomicity{MaxWrites: 3}, append(opPuts(3), opDelete("d"), opAbsent("e")), false, "4 puts and deletes"},
		{"expectations beyond max writes", kv.Atomicity{MaxWrites: 2}, []kv.Op{opPut("a", ""), opAbsent("a"), opDelete("b"), opExpect("b", "v"), opExpect("c", "v"), opAbsent("d")}, true, ""},
		{"max writes within max ops", kv.Atomicity{MaxOps: 4, MaxWrites: 3}, append(opPuts(3), opAbsent("e"), opExpect("f", "")), false, "5 operations"},
	} {
		err := tc.a.Allows(kv.NewBatch(tc.ops...))
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, kv.ErrInvalidBatch, tc.name)
			require.ErrorContains(t, err, tc.says, tc.name)
		}
	}
}
