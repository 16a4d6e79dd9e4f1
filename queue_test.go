package indextable_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

func TestEventualReadsCheckTheFactTable(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: eventualIndexes(personIndexes())})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, person{ID: 1, Town: "R", Name: "A"})
	require.NoError(t, err)
	// Nothing is indexed before the maintainer runs.
	require.Empty(t, collect(t, tbl, it.Query{Index: "town_name", Eq: it.Tuple{"R"}}))
	n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, collect(t, tbl, it.Query{Index: "town_name", Eq: it.Tuple{"R"}}), 1)

	// The record moves to S: its full-copy entry under R is stale until the
	// maintainer runs, and no read returns it, covered or not.
	_, err = tbl.Update(ctx, person{ID: 1, Town: "S", Name: "A"})
	require.NoError(t, err)
	for _, covered := range []bool{false, true} {
		for _, ix := range []string{"town_name", "town", "score_mod"} {
			q := it.Query{Index: ix, Covered: covered}
			got := collect(t, tbl, q)
			require.Empty(t, got, "%+v", q)
			c, err := tbl.Count(ctx, q)
			require.NoError(t, err)
			require.Zero(t, c)
		}
	}
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, lag.Pending)
	require.Positive(t, lag.Oldest)

	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, []person{{ID: 1, Town: "S", Name: "A"}}, collect(t, tbl, it.Query{Index: "town_name", Eq: it.Tuple{"S"}}))
	require.Equal(t, []person{{ID: 1, Town: "S"}}, collect(t, tbl, it.Query{Index: "town", Covered: true}))
	lag, err = tbl.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, it.Lag{}, lag)

	// With more changes queued than a read checks one by one, it checks
	// every result.
	for i := range 100 {
		_, err := tbl.Insert(ctx, person{ID: 10 + i, Town: "S"})
		require.NoError(t, err)
	}
	_, err = tbl.Update(ctx, person{ID: 1, Town: "U", Name: "A"})
	require.NoError(t, err)
	for _, covered := range []bool{false, true} {
		require.Empty(t, collect(t, tbl, it.Query{Index: "town_name", Eq: it.Tuple{"S"}, Covered: covered}))
	}
}

func TestWaitIndexedAndLag(t *testing.T) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: eventualIndexes(personIndexes())})
	require.NoError(t, err)
	for i := range 50 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, 50, lag.Pending)

	// No maintainer: the barrier waits until its context ends.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, tbl.WaitIndexed(short), context.DeadlineExceeded)

	m := startMaintainers(t, tbl, 2)
	defer m.stop()
	require.NoError(t, tbl.WaitIndexed(ctx))
	n, err := tbl.Count(ctx, it.Query{Index: "town", Eq: it.Tuple{"R"}})
	require.NoError(t, err)
	require.Equal(t, 50, n)
	lag, err = tbl.Lag(ctx)
	require.NoError(t, err)
	require.Zero(t, lag.Pending)
}
