package indextable_test

import (
	"fmt"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// newShardedMemory returns a ShardedStore over n memory stores, each
// counted.
func newShardedMemory(t testing.TB, n int, opts ...it.ShardOption) *it.ShardedStore {
	t.Helper()
	shards := make([]it.Store, n)
	for i := range shards {
		shards[i] = countingstore.New(it.NewMemoryStore())
	}
	s, err := it.NewShardedStore(shards, opts...)
	require.NoError(t, err)
	return s
}

// shardCounts returns what each shard of s has served.
func shardCounts(s *it.ShardedStore) []countingstore.Counts {
	out := make([]countingstore.Counts, s.Shards())
	for i := range out {
		out[i] = s.Shard(i).(*countingstore.Store).Counts()
	}
	return out
}

func TestShardedStore(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			storetest.TestStore(t, func(t *testing.T) it.Store { return newShardedMemory(t, n) })
		})
	}
	t.Run("bounded shards", func(t *testing.T) {
		storetest.TestStore(t, func(t *testing.T) it.Store {
			s, err := it.NewShardedStore([]it.Store{memBoundedStore{it.NewMemoryStore()}, memBoundedStore{it.NewMemoryStore()}, it.NewMemoryStore()})
			require.NoError(t, err)
			return s
		})
	})
}

// TestModelSharded is the model test over 4 shards, under each rule of
// index sharding.
func TestModelSharded(t *testing.T) {
	t.Run("leading", func(t *testing.T) { testModel(t, it.JSONCodec{}, names, modeShardedLeading) })
	t.Run("hash", func(t *testing.T) { testModel(t, &it.BinaryCodec{}, names, modeShardedHash) })
}

func TestNewShardedStoreRejects(t *testing.T) {
	m := it.NewMemoryStore()
	for name, c := range map[string]struct {
		shards []it.Store
		opts   []it.ShardOption
	}{
		"no shards":             {},
		"a nil shard":           {shards: []it.Store{m, nil}},
		"a repeat":              {shards: []it.Store{m, it.NewMemoryStore(), m}},
		"too many":              {shards: make([]it.Store, 1<<16+1)},
		"an unknown rule":       {shards: []it.Store{m}, opts: []it.ShardOption{it.WithIndexSharding(7)}},
		"an unknown index rule": {shards: []it.Store{m}, opts: []it.ShardOption{it.WithShardedIndex("t", "i", 2)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := it.NewShardedStore(c.shards, c.opts...)
			require.ErrorIs(t, err, it.ErrInvalidSharding)
		})
	}
	_, err := it.ShardFor(0, "x")
	require.ErrorIs(t, err, it.ErrInvalidSharding)
	_, err = it.ShardFor(4, struct{}{})
	require.ErrorIs(t, err, it.ErrUnsupportedType)
}

// TestShardFor pins the placement function: these vectors must never
// change, or stores written by one version misplace keys for another.
func TestShardFor(t *testing.T) {
	for _, c := range []struct {
		v    any
		n    int
		want int
	}{
		{"C01", 1, 0}, {"C01", 4, 0}, {"C02", 4, 1}, {"C03", 4, 1}, {"Redmond", 4, 3}, {"Seattle", 4, 0},
		{int64(1), 4, 2}, {"C01", 1000, 308}, {"Redmond", 1000, 167},
	} {
		got, err := it.ShardFor(c.n, c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "ShardFor(%d, %#v)", c.n, c.v)
	}
}
