package etcdstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestShardedOnEtcd runs the conformance suite over a ShardedStore of
// three single-member clusters, then storetest's sharded table model over
// them, closing the stores and reopening them under the same prefixes.
func TestShardedOnEtcd(t *testing.T) {
	clusters := []*etcdtest.Cluster{
		etcdtest.Start(t, 1, etcdtest.Options{}),
		etcdtest.Start(t, 1, etcdtest.Options{}),
		etcdtest.Start(t, 1, etcdtest.Options{}),
	}
	fresh := func(t *testing.T) []kv.Store {
		shards := make([]kv.Store, len(clusters))
		for i, c := range clusters {
			shards[i] = openFresh(t, c, etcdstore.Options{})
		}
		return shards
	}
	t.Run("conformance", func(t *testing.T) {
		storetest.TestStore(t, func(t *testing.T) kv.Store {
			s, err := indextable.OpenShardedStore(context.Background(), fresh(t), indextable.WithIndexSharding(indextable.ShardByLeadingKey))
			require.NoError(t, err)
			return s
		})
	})
	t.Run("table", func(t *testing.T) {
		storetest.TestShardedTable(t, fresh, storetest.ShardedTableOptions{Records: 100, Reopen: func(t *testing.T) func() []kv.Store {
			prefix := fmt.Sprintf("sharded%d/", prefixes.Add(1))
			return func() []kv.Store {
				shards := make([]kv.Store, len(clusters))
				for i, c := range clusters {
					s, err := etcdstore.Open(context.Background(), c.Endpoints(), etcdstore.Options{Prefix: prefix})
					require.NoError(t, err)
					shards[i] = s
				}
				return shards
			}
		}})
	})
}
