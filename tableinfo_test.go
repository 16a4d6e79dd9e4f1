package indextable_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// TestReadCatalogPassesOverOtherKeys: keys that are no table's, before and
// after a table's, do not stop the listing.
func TestReadCatalogPassesOverOtherKeys(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte{0x01}, nil)                              // a null element, not a name
	b.Put([]byte("\xff\xffindextable shard layout"), nil) // a shard's layout record
	require.NoError(t, s.Apply(ctx, &b))
	openPeople(t, s)
	tables, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	require.Equal(t, "people", tables[0].Name)
}
