package indextable

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// FuzzCatalogEntry checks the same for catalog entries.
// testLease is the SchemaLease of tests whose lifecycle steps wait for
// other handles: short, so that they do not wait long.
const testLease = 20 * time.Millisecond

func FuzzCatalogEntry(f *testing.F) {
	f.Add(uint64(1), int64(1), int8(IndexWriteOnly), []byte(nil), int64(0), int64(0), []byte(nil), []byte{0x0c})
	f.Add(uint64(1<<63+5), int64(7), int8(indexDropped), []byte("cursor"), int64(3), int64(9), []byte("def"), []byte{})
	f.Fuzz(func(t *testing.T, fp uint64, gen int64, state int8, cursor []byte, done, total int64, def, raw []byte) {
		c := catalogEntry{fingerprint: fp, gen: gen, state: IndexState(state), cursor: cursor, done: done, total: total, def: def}
		got, err := decodeCatalogEntry(c.encode())
		valid := gen > 0 && (c.state >= IndexWriteOnly && c.state <= IndexDisabled || c.state == indexDropped)
		switch {
		case !valid && err == nil:
			t.Fatalf("decoded an invalid entry %+v", got)
		case valid && err != nil:
			t.Fatalf("decode of %+v: %v", c, err)
		case valid && (got.fingerprint != fp || got.gen != gen || got.state != c.state || !bytes.Equal(got.cursor, cursor) ||
			got.cursor == nil && cursor != nil || got.done != done || got.total != total || !bytes.Equal(got.def, def) || got.def == nil && def != nil):
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
		_, _ = decodeCatalogEntry(raw)
	})
}

// FuzzIndexDefinition checks that a definition decodes as it was encoded,
// and that no input makes the decoder panic.
func FuzzIndexDefinition(f *testing.F) {
	f.Add("ID", "Town,LastName", "FirstName", false, uint8(2), true, false, true, int8(1), uint8(2), []byte{0x15, 0x01})
	f.Add("", "", "", true, uint8(0), false, false, false, int8(0), uint8(0), []byte(nil))
	f.Fuzz(func(t *testing.T, pk, fields, proj string, computed bool, strategy uint8, unique, sparse, multi bool, consistency int8, placement uint8, raw []byte) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		d := IndexDefinition{PrimaryKey: split(pk), Fields: split(fields), Computed: computed, Strategy: Strategy(strategy), Projection: split(proj),
			Unique: unique, Sparse: sparse, MultiValued: multi, Consistency: Consistency(consistency), Placement: Placement(placement)}
		got, err := decodeIndexDefinition(d.encode())
		if len(d.PrimaryKey) == 0 { // no table has no primary key
			if !errors.Is(err, ErrCodec) {
				t.Fatalf("decode of %+v: %v, want ErrCodec", d, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("decode of %+v: %v", d, err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip: got %+v, want %+v", got, d)
		}
		_, _ = decodeIndexDefinition(raw)
	})
}

// TestCatalogKeepsDefinitions checks that ReadCatalog finds each index's
// definition, and that an entry written before definitions were kept
// (format 1) gets its definition when the table is next opened.
func TestCatalogKeepsDefinitions(t *testing.T) {
	type rec struct {
		ID, Town, Name string
		Tags           []string
	}
	ctx := context.Background()
	s := NewMemoryStore()
	schema := Schema[rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []Index[rec]{
		{Name: "town", Fields: []string{"Town", "Name"}, Strategy: Partial, Projection: []string{"Tags"}, Sparse: true},
		{Name: "name", Fields: []string{"Name"}, Unique: true},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: FullCopy, Consistency: Eventual},
		{Name: "upper", Key: func(r rec) []Tuple { return []Tuple{{strings.ToUpper(r.Name)}} }, Version: 2},
	}}
	_, err := Open(ctx, s, schema)
	require.NoError(t, err)
	want := map[string]IndexDefinition{
		"town":  {PrimaryKey: []string{"ID"}, Fields: []string{"Town", "Name"}, Strategy: Partial, Projection: []string{"Tags"}, Sparse: true, Placement: InterPartition},
		"name":  {PrimaryKey: []string{"ID"}, Fields: []string{"Name"}, Unique: true, Placement: InterPartition},
		"tags":  {PrimaryKey: []string{"ID"}, Fields: []string{"Tags"}, MultiValued: true, Strategy: FullCopy, Consistency: Eventual, Placement: InterPartition},
		"upper": {PrimaryKey: []string{"ID"}, Computed: true, Placement: InterPartition},
	}
	check := func() {
		t.Helper()
		tables, err := ReadCatalog(ctx, s)
		require.NoError(t, err)
		require.Len(t, tables, 1)
		require.Equal(t, "t", tables[0].Name)
		require.Len(t, tables[0].Indexes, len(want))
		for _, ix := range tables[0].Indexes {
			require.NotNil(t, ix.Definition, ix.Name)
			require.Equal(t, want[ix.Name], *ix.Definition, ix.Name)
			require.Equal(t, IndexReadable, ix.State, ix.Name)
		}
	}
	check()

	// Rewrite the town entry as format 1 wrote it: no definition.
	key := catalogKey(tuple.AppendString(nil, "t"), "town")
	v, err := s.Get(ctx, key)
	require.NoError(t, err)
	c, err := decodeCatalogEntry(v)
	require.NoError(t, err)
	old, err := kv.EncodeTuple(int64(1), c.fingerprint, c.gen, int64(c.state), nil, c.done, c.total)
	require.NoError(t, err)
	var b kv.Batch
	b.Put(key, old)
	require.NoError(t, s.Apply(ctx, &b))
	tables, err := ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Nil(t, tables[0].Indexes[slices.IndexFunc(tables[0].Indexes, func(ix IndexInfo) bool { return ix.Name == "town" })].Definition)
	_, err = Open(ctx, s, schema)
	require.NoError(t, err)
	check()
}
