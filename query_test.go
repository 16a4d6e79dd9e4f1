package indextable_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

func TestQueriesTakeAnyLimit(t *testing.T) {
	ctx := context.Background()
	stores := map[string]it.Store{"memory": it.NewMemoryStore(), "one shard": newShardedMemory(t, 1), "three shards": newShardedMemory(t, 3)}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			// No unique index: a sharded store cannot check one.
			indexes := slices.DeleteFunc(personIndexes(), func(ix it.Index[person]) bool { return ix.Unique })
			tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
			require.NoError(t, err)
			for i := range 5 {
				_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprint("N", i), Town: "R", Tags: []string{"a", "b"}, Score: i})
				require.NoError(t, err)
			}
			_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{}) // what a sharded store queued
			require.NoError(t, err)
			for _, c := range []struct {
				q it.Query
				n int
			}{
				{it.Query{}, 5},
				{it.Query{Index: "town_name", Eq: it.Tuple{"R"}}, 5},
				{it.Query{Index: "town", Reverse: true}, 5},
				{it.Query{Index: "name", Covered: true}, 5},
				{it.Query{Index: "tags"}, 10}, // an entry per tag
				{it.Query{Index: "score_mod", Eq: it.Tuple{1}}, 2},
				{it.Query{Where: map[string]any{"Town": "R"}}, 5},
			} {
				all := collect(t, tbl, c.q)
				require.Len(t, all, c.n)
				for _, limit := range []int{1, 2, math.MaxInt - 1, math.MaxInt} {
					q := c.q
					q.Limit = limit
					want := all[:min(limit, len(all))]
					msg := fmt.Sprintf("query %+v", q)
					assert.Equal(t, want, collect(t, tbl, q), msg)
					page, cursor, err := tbl.FindPage(ctx, q)
					require.NoError(t, err, msg)
					assert.Equal(t, want, page, msg)
					assert.Equal(t, limit < len(all), cursor != "", msg)
					n, err := tbl.Count(ctx, q)
					require.NoError(t, err, msg)
					assert.Equal(t, len(want), n, msg)
					ok, err := tbl.Exists(ctx, q)
					require.NoError(t, err, msg)
					assert.True(t, ok, msg)
				}
			}
		})
	}
}
