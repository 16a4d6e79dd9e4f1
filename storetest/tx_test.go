package storetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestTransactions runs storetest's model of accounts on the memory store,
// and over a ShardedStore of two memory shards with a bank on each, whose
// transactions stay within one shard.
func TestTransactions(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.TestTransactions(t, func(t *testing.T) kv.Store { return indextable.NewMemoryStore() }, storetest.TransactionsOptions{})
	})
	t.Run("sharded", func(t *testing.T) {
		storetest.TestTransactions(t, func(t *testing.T) kv.Store {
			s, err := indextable.OpenShardedStore(context.Background(), []kv.Store{indextable.NewMemoryStore(), indextable.NewMemoryStore()})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		}, storetest.TransactionsOptions{Banks: banksOnShards(t, 2), Partitioned: true})
	})
}

// banksOnShards returns the names of n banks, the first on shard 0 of n,
// the next on shard 1, and so on.
func banksOnShards(t *testing.T, n int) []string {
	banks := make([]string, n)
	for found, i := 0, 0; found < n; i++ {
		name := fmt.Sprint("bank", i)
		shard, err := indextable.ShardFor(n, name)
		require.NoError(t, err)
		if banks[shard] == "" {
			banks[shard] = name
			found++
		}
	}
	return banks
}
