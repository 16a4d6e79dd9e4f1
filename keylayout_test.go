package indextable_test

import (
	"bytes"
	"context"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every key a table writes, in every space, parses as its space, with the
// record's first primary key component as the Lead of its record, changes
// and intra-partition entries.
func TestParseKeyOfEveryStoredKey(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	type rec struct {
		Region, ID, Town string
		N                int
	}
	tbl, err := it.Open(ctx, s, it.Schema[rec]{
		SchemaLease: testLease,
		Name:        "t", PrimaryKey: []string{"Region", "ID"},
		Indexes: []it.Index[rec]{
			{Name: "town", Fields: []string{"Town"}},
			{Name: "n", Fields: []string{"N"}, Unique: true},
			{Name: "late", Fields: []string{"Town"}, Consistency: it.Eventual},
		},
	})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec{Region: "eu", ID: "a", Town: "R", N: 1})
	require.NoError(t, err)
	require.NoError(t, tbl.SaveUsage(ctx))
	spaces := map[kv.KeySpace]int{}
	for e, err := range s.Scan(ctx, kv.ScanRange{}) {
		require.NoError(t, err)
		k, ok := kv.ParseKey(e.Key)
		require.True(t, ok, "%x", e.Key)
		require.NotEqual(t, kv.SpaceOther, k.Space, "%x", e.Key)
		spaces[k.Space]++
		switch k.Space {
		case kv.SpaceRecords, kv.SpaceQueue:
			assert.Equal(t, "eu", decoded(t, k.Lead))
		case kv.SpaceIndex:
			assert.NotNil(t, k.Lead)
			assert.Contains(t, []any{"town", "n", "late"}, decoded(t, k.Index))
		}
		assert.True(t, bytes.HasSuffix(e.Key, k.Rest))
	}
	for _, want := range []kv.KeySpace{kv.SpaceRecords, kv.SpaceIndex, kv.SpaceCatalog, kv.SpaceQueue, kv.SpaceUsage, kv.SpaceRecordType} {
		assert.NotZero(t, spaces[want], "space %d", want)
	}
}

// decoded decodes elem, a whole element, or returns nil for none.
func decoded(t *testing.T, elem []byte) any {
	if elem == nil {
		return nil
	}
	v, rest, err := kv.DecodeElement(elem)
	require.NoError(t, err)
	require.Empty(t, rest)
	return v
}
