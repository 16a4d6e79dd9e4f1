package indextable_test

import (
	"context"
	"strings"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// limited is a memory store with the bounds of Azure Table storage (as
// azstore declares them) and the partitions of partitionedStore: a store
// whose limits tests can reach without Azurite.
type limited struct{ *it.MemoryStore }

func (limited) Atomicity() it.Atomicity {
	return it.Atomicity{Partition: partitionOf, MaxOps: 99, MaxBytes: 2 << 20, MaxKeyBytes: 383, MaxValueBytes: 704 << 10}
}

func (s limited) Apply(ctx context.Context, b *it.Batch) error {
	if err := s.Atomicity().Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

// TestLimitsOfAStore: the conformance of a bounded store's limits, and
// writes that straddle them through a table, on one store and on 4 shards.
func TestLimitsOfAStore(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) it.Store { return limited{it.NewMemoryStore()} })
	t.Run("table", func(t *testing.T) { storetest.TestLimits(t, limited{it.NewMemoryStore()}, storetest.LimitsOptions{}) })
	t.Run("sharded", func(t *testing.T) {
		shards := []it.Store{limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}}
		s, err := it.OpenShardedStore(context.Background(), shards, it.WithIndexSharding(it.ShardByHash))
		require.NoError(t, err)
		storetest.TestLimits(t, s, storetest.LimitsOptions{})
	})
}

// irec is the record of issue 16's samples: P leads the primary key.
type irec struct {
	P, ID, B string
	Data     []byte
	Tags     []string
}

// TestWritesRefusedUpFront (issue 16, items 1 to 3): on a store with
// Azure's limits, a write whose record, change records or entries the store
// could not hold is refused before anything is written, with an error that
// names the field, the index and the limit, rather than accepted and left
// for a maintainer that can never apply it, or a record that can never be
// deleted.
func TestWritesRefusedUpFront(t *testing.T) {
	ctx := context.Background()
	long := func(n int) string { return strings.Repeat("y", n) }
	for _, tc := range []struct {
		name    string
		rec     irec
		err     error
		message []string
	}{
		{"an inter-partition index's key", irec{P: "p", ID: "1", B: long(390)}, it.ErrInvalidKey,
			[]string{`index "b"`, "field B takes 390 bytes where at most", "keys of 383"}},
		{"the partition field, twice in an intra-partition key", irec{P: long(200), ID: "1"}, it.ErrInvalidKey,
			[]string{`index "pb"`, "field P (it is in the key 2 times) takes 200 bytes"}},
		{"an ID too long for a change record's key", irec{P: "p", ID: long(380)}, it.ErrInvalidKey,
			[]string{"change record", "primary key field ID takes 380 bytes where at most"}},
		{"a record a change record cannot copy", irec{P: "p", ID: "1", Data: make([]byte, 704<<10-11)}, it.ErrInvalidBatch,
			[]string{"at most 699012 fit", "a maintainer's batch", "three copies"}},
		{"a record beyond any value", irec{P: "p", ID: "1", Data: make([]byte, 2<<20)}, it.ErrInvalidBatch,
			[]string{"takes 2097176 bytes, and at most 699012 fit"}},
		{"a record with more unique keys than a delete can free", irec{P: "p", ID: "1", Tags: manyTags(97)}, it.ErrInvalidBatch,
			[]string{"97 unique keys", "99 operations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := limited{it.NewMemoryStore()}
			tbl, err := it.Open(ctx, s, it.Schema[irec]{Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
				Indexes: []it.Index[irec]{
					{Name: "b", Fields: []string{"B"}},
					{Name: "pb", Fields: []string{"P", "B"}},
					{Name: "tags", Fields: []string{"P", "Tags"}, MultiValued: true, Unique: true},
				}})
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, tc.rec)
			require.ErrorIs(t, err, tc.err)
			for _, m := range tc.message {
				require.ErrorContains(t, err, m)
			}
			require.NotContains(t, err.Error(), `\x`, "no stored key bytes")
			_, err = tbl.Get(ctx, tc.rec.P, tc.rec.ID)
			require.ErrorIs(t, err, it.ErrNotFound)
			lag, err := tbl.Lag(ctx)
			require.NoError(t, err)
			require.Zero(t, lag.Pending, "nothing queued")
		})
	}
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	return tags
}
