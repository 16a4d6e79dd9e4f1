package azstore_test

import (
	"context"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestShardedOnAzure runs the store conformance suite over a ShardedStore
// of two Azure tables and a memory store, then storetest's sharded table
// over another such store, and over three Azure tables that it closes and
// reopens: 60 customers, not 200, as each read of a table is a request to
// Azurite.
func TestShardedOnAzure(t *testing.T) {
	conn := azuritetest.Connection(t)
	t.Run("conformance", func(t *testing.T) {
		storetest.TestStore(t, func(t *testing.T) kv.Store {
			s, err := indextable.OpenShardedStore(context.Background(), []kv.Store{
				openFresh(t, conn), openFresh(t, conn), indextable.NewMemoryStore(),
			}, indextable.WithIndexSharding(indextable.ShardByLeadingKey))
			require.NoError(t, err)
			return s
		})
	})
	t.Run("table", func(t *testing.T) {
		storetest.TestShardedTable(t, func(t *testing.T) []kv.Store {
			return []kv.Store{openFresh(t, conn), openFresh(t, conn), indextable.NewMemoryStore()}
		}, storetest.ShardedTableOptions{Records: 60, Reopen: func(t *testing.T) func() []kv.Store {
			tables := []string{azuritetest.FreshTable(t, conn, "t"), azuritetest.FreshTable(t, conn, "t"), azuritetest.FreshTable(t, conn, "t")}
			return func() []kv.Store {
				shards := make([]kv.Store, len(tables))
				for i, name := range tables {
					shards[i] = openTable(t, conn, name, nil)
				}
				return shards
			}
		}})
	})
}
