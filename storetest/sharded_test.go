package storetest_test

import (
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// TestShardedTable runs storetest's sharded table over three memory
// shards; to reopen them, over memory stores that outlive their Close.
func TestShardedTable(t *testing.T) {
	storetest.TestShardedTable(t, func(t *testing.T) []kv.Store {
		return []kv.Store{indextable.NewMemoryStore(), indextable.NewMemoryStore(), indextable.NewMemoryStore()}
	}, storetest.ShardedTableOptions{Reopen: func(t *testing.T) func() []kv.Store {
		mems := []*indextable.MemoryStore{indextable.NewMemoryStore(), indextable.NewMemoryStore(), indextable.NewMemoryStore()}
		return func() []kv.Store {
			shards := make([]kv.Store, len(mems))
			for i, m := range mems {
				shards[i] = lasting{m}
			}
			return shards
		}
	}})
}

// lasting is a memory store that keeps what it holds when closed, as a
// store on disk does, so that it can be opened again.
type lasting struct{ *indextable.MemoryStore }

func (lasting) Close() error { return nil }
