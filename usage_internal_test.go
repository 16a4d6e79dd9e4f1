package indextable

import (
	"testing"
)

// FuzzStoredUsage checks that usage totals decode as they were encoded,
// that negative counts are refused, and that no input panics the decoder.
func FuzzStoredUsage(f *testing.F) {
	f.Add(int64(3), int64(1), "Town", int64(2), "town", int64(5), int64(9), int64(4), int64(1), "ID", int64(2), []byte("\x02R\x00"), int64(2), []byte{0x0c})
	f.Fuzz(func(t *testing.T, writes, scans int64, filter string, filtered int64, index string, reads, returned, mutations, whole int64,
		field string, fieldReads int64, key []byte, keyReads int64, raw []byte) {
		u := newStoredUsage()
		u.writes, u.scans = writes, scans
		u.filters[filter] = filtered
		u.indexes[index] = IndexUsage{Reads: reads, Returned: returned, Mutations: mutations, WholeReads: whole, FieldsRead: map[string]int64{field: fieldReads}}
		u.keys[index] = map[string]int64{string(key): keyReads}
		got, err := decodeStoredUsage(u.encode())
		negative := false
		for _, n := range []int64{writes, scans, filtered, reads, returned, mutations, whole, fieldReads, keyReads} {
			negative = negative || n < 0
		}
		switch {
		case negative && err == nil:
			t.Fatalf("decoded negative counts: %+v", got)
		case !negative && err != nil:
			t.Fatalf("decode of %+v: %v", u, err)
		case !negative && (got.writes != writes || got.scans != scans || got.filters[filter] != filtered ||
			got.indexes[index].Reads != reads || got.indexes[index].FieldsRead[field] != fieldReads || got.keys[index][string(key)] != keyReads):
			t.Fatalf("round trip: got %+v, want %+v", got, u)
		}
		_, _ = decodeStoredUsage(raw)
	})
}
