package pebblestore_test

import (
	"context"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestShardedConformance runs the store conformance suite over a
// ShardedStore of four shards of two backends: Pebble, memory, Pebble,
// memory.
func TestShardedConformance(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) kv.Store {
		s, err := indextable.OpenShardedStore(context.Background(), []kv.Store{
			open(t, t.TempDir(), pebblestore.Options{}),
			indextable.NewMemoryStore(),
			open(t, t.TempDir(), pebblestore.Options{}),
			indextable.NewMemoryStore(),
		})
		require.NoError(t, err)
		return s
	})
}

// shardOpts opens the Pebble shards of TestShardedTable: without waiting
// for the disk, which its closes and reopens do not need.
var shardOpts = pebblestore.Options{NoSync: true}

// TestShardedTable runs storetest's sharded table over a ShardedStore of
// Pebble and memory shards; then over Pebble shards alone, which it closes
// and reopens.
func TestShardedTable(t *testing.T) {
	storetest.TestShardedTable(t, func(t *testing.T) []kv.Store {
		return []kv.Store{
			open(t, t.TempDir(), shardOpts),
			indextable.NewMemoryStore(),
			open(t, t.TempDir(), shardOpts),
		}
	}, storetest.ShardedTableOptions{Reopen: func(t *testing.T) func() []kv.Store {
		dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
		return func() []kv.Store {
			shards := make([]kv.Store, len(dirs))
			for i, dir := range dirs {
				shards[i] = open(t, dir, shardOpts)
			}
			return shards
		}
	}})
}
