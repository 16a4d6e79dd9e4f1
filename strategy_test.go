package indextable_test

import (
	"context"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

// TestKeysOnlyIsTheDefaultStrategy: an Index that names no Strategy keeps
// the primary key only, as KeysOnly's godoc says: a covered read of it
// leaves the other fields zero, and the catalog records KeysOnly.
func TestKeysOnlyIsTheDefaultStrategy(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[person]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "Ada", Note: "x"})
	require.NoError(t, err)
	got := collect(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}, Covered: true})
	require.Equal(t, []person{{ID: 1, Town: "Oslo"}}, got)
	tables, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	require.Equal(t, it.KeysOnly, tables[0].Indexes[0].Definition.Strategy)
}
