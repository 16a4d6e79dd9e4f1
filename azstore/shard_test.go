package azstore_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// shardCustomer is the record of TestShardedOnAzure's table.
type shardCustomer struct {
	ID                    string
	Town, LastName, Email string
}

// TestShardedOnAzure runs the store conformance suite over a ShardedStore
// of two Azure tables and a memory store, then a table with a FullCopy and
// a KeysOnly index, sharded by their leading keys, over another such store,
// against a map.
func TestShardedOnAzure(t *testing.T) {
	conn := azurite(t)
	newStore := func(t *testing.T) *indextable.ShardedStore {
		s, err := indextable.OpenShardedStore(context.Background(), []indextable.Store{
			openFresh(t, conn), openFresh(t, conn), indextable.NewMemoryStore(),
		}, indextable.WithIndexSharding(indextable.ShardByLeadingKey))
		require.NoError(t, err)
		return s
	}
	t.Run("conformance", func(t *testing.T) {
		storetest.TestStore(t, func(t *testing.T) indextable.Store { return newStore(t) })
	})
	t.Run("table", func(t *testing.T) {
		ctx := context.Background()
		s := newStore(t)
		t.Cleanup(func() { s.Close() })
		tbl, err := indextable.Open(ctx, s, indextable.Schema[shardCustomer]{
			Name:       "customers",
			PrimaryKey: []string{"ID"},
			Indexes: []indextable.Index[shardCustomer]{
				{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
				{Name: "lastname", Fields: []string{"LastName"}, Strategy: indextable.KeysOnly},
			},
		})
		require.NoError(t, err)
		towns := []string{"Bellevue", "Redmond", "Seattle", "Tacoma"}
		names := []string{"Chen", "Diaz", "Kim", "Patel", "Smith"}
		rng := rand.New(rand.NewPCG(3, 3))
		model := map[string]shardCustomer{}
		for i := range 60 {
			c := shardCustomer{ID: fmt.Sprintf("C%03d", i), Town: towns[rng.IntN(len(towns))],
				LastName: names[rng.IntN(len(names))], Email: fmt.Sprintf("c%d@example.com", i)}
			_, err := tbl.Insert(ctx, c)
			require.NoError(t, err, "insert %s", c.ID)
			model[c.ID] = c
		}
		drain(t, tbl)

		// Every shard holds records, each on the shard of its ID.
		for i := range s.Shards() {
			records := 0
			for e, err := range s.Shard(i).Scan(ctx, indextable.ScanRange{}) {
				require.NoError(t, err)
				if e.Key[0] == 0xFF {
					continue // the shard's layout record
				}
				require.Equal(t, i, s.ShardOf(e.Key), "key %x", e.Key)
				k, ok := indextable.ParseKey(e.Key)
				require.True(t, ok, "key %x", e.Key)
				if k.Space == indextable.SpaceRecords {
					lead, _, err := indextable.DecodeElement(k.Lead)
					require.NoError(t, err)
					want, err := indextable.ShardFor(s.Shards(), lead)
					require.NoError(t, err)
					require.Equal(t, want, i, "%v", k)
					records++
				}
			}
			require.NotZero(t, records, "shard %d holds no records", i)
		}

		find := func(q indextable.Query) []shardCustomer {
			var got []shardCustomer
			for c, err := range tbl.Find(ctx, q) {
				require.NoError(t, err)
				got = append(got, c)
			}
			return got
		}
		expect := func(keep func(shardCustomer) bool) []shardCustomer {
			var want []shardCustomer
			for _, c := range model {
				if keep(c) {
					want = append(want, c)
				}
			}
			slices.SortFunc(want, func(a, b shardCustomer) int {
				return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
			})
			return want
		}
		for _, town := range towns {
			want := expect(func(c shardCustomer) bool { return c.Town == town })
			require.NotEmpty(t, want)
			require.Equal(t, want, find(indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town}}), "town %s", town)
		}
		for _, name := range names {
			want := expect(func(c shardCustomer) bool { return c.LastName == name })
			slices.SortFunc(want, func(a, b shardCustomer) int { return cmp.Compare(a.ID, b.ID) })
			require.NotEmpty(t, want)
			require.Equal(t, want, find(indextable.Query{Index: "lastname", Eq: indextable.Tuple{name}}), "lastname %s", name)
		}
		// A scan of the whole index merges the shards, in pages.
		all := expect(func(shardCustomer) bool { return true })
		require.Equal(t, all, find(indextable.Query{Index: "town_lastname"}))
		var paged []shardCustomer
		q := indextable.Query{Index: "town_lastname", Limit: 7}
		for {
			page, cursor, err := tbl.FindPage(ctx, q)
			require.NoError(t, err)
			paged = append(paged, page...)
			if cursor == "" {
				break
			}
			q.Cursor = cursor
		}
		require.Equal(t, all, paged)

		rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
		require.NoError(t, err)
		require.Zero(t, rep.Total(), "%+v", rep)
		require.EqualValues(t, len(model), rep.Records)
		require.EqualValues(t, 2*len(model), rep.Entries)
		require.NoError(t, s.Close())
	})
}
