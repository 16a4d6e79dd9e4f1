package kv_test

import (
	"testing"

	indextable "github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// firstBytePartition partitions keys by their first byte.
func firstBytePartition(key []byte) []byte { return key[:min(len(key), 1)] }

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
