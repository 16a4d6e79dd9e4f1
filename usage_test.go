package indextable_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

func TestUsageCountsReadsWritesAndMutations(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{}, Indexes: []it.Index[person]{
		{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.FullCopy, Consistency: it.Eventual},
	}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	for i := range 10 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: fmt.Sprint("T", i%2), Tags: []string{"a", "b"}})
		require.NoError(t, err)
	}
	for i := range 3 { // moves the town entry: a delete and a put; tags stay
		_, err := tbl.Update(ctx, person{ID: i, Town: "Moved", Tags: []string{"a", "b"}})
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Delete(ctx, it.Tuple{9})) // a town entry and two tags
	_, err = tbl.Insert(ctx, person{ID: 0})          // refused: not a write
	require.ErrorIs(t, err, it.ErrExists)
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)

	require.Equal(t, 3, drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"T1"}})) // 3, 5, 7
	require.Equal(t, 3, drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"T1"}, Limit: 10}))
	require.Equal(t, 2, drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"T0"}, Limit: 2}))
	n, err := tbl.Count(ctx, it.Query{Index: "tags", Eq: it.Tuple{"a"}})
	require.NoError(t, err)
	require.Equal(t, 9, n)
	page, _, err := tbl.FindPage(ctx, it.Query{Index: "tags", Limit: 5})
	require.NoError(t, err)
	require.Len(t, page, 5)
	require.Equal(t, 9, drainAll(t, tbl, it.Query{}))

	u, err := tbl.Usage(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(14), u.Writes)
	assert.Equal(t, int64(1), u.Scans)
	town := u.Indexes["town"]
	assert.Equal(t, int64(3), town.Reads)
	assert.Equal(t, int64(3+3+2), town.Returned)
	assert.Equal(t, int64(10+3*2+1), town.Mutations)
	assert.Equal(t, int64(3*2+1), town.Changes, "of updates and deletes, not inserts")
	assert.Equal(t, []it.KeyReads{{Key: it.Tuple{"T1"}, Reads: 2}, {Key: it.Tuple{"T0"}, Reads: 1}}, town.ReadKeys)
	tags := u.Indexes["tags"]
	assert.Equal(t, int64(2), tags.Reads)
	assert.Equal(t, int64(9+5), tags.Returned, "Count counts entries; FindPage what it returns")
	// The maintainer ran once, after every write: it put the entries of the
	// 9 records there are, and deleted those of the one inserted and deleted.
	assert.Equal(t, int64(9*2+2), tags.Mutations, "through the queue")
	assert.Zero(t, tags.Changes, "each record's queued changes began with its insert")
	assert.Equal(t, []it.KeyReads{{Key: it.Tuple{}, Reads: 1}, {Key: it.Tuple{"a"}, Reads: 1}}, tags.ReadKeys)
}

func TestSaveUsageAddsUpOverProcesses(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	open := func() *it.Table[person] {
		tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{
			{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
		}})
		require.NoError(t, err)
		return tbl
	}
	first, second := open(), open()
	for i := range 40 {
		tbl := first
		if i%2 == 1 {
			tbl = second
		}
		_, err := tbl.Insert(ctx, person{ID: i, Town: fmt.Sprint("T", i%4)})
		require.NoError(t, err)
		drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{fmt.Sprint("T", i%4)}})
	}
	// Both save at once, and again: the totals add up, counted once.
	var wg sync.WaitGroup
	for _, tbl := range []*it.Table[person]{first, second, first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, tbl.SaveUsage(ctx))
		}()
	}
	wg.Wait()
	u, err := open().Usage(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(40), u.Writes)
	assert.Equal(t, int64(40), u.Indexes["town"].Reads)
	assert.Equal(t, int64(40), u.Indexes["town"].Mutations)
	var keyReads int64
	for _, k := range u.Indexes["town"].ReadKeys {
		keyReads += k.Reads
	}
	assert.Equal(t, int64(40), keyReads)
	tool, err := it.UsageOf(ctx, s, "people")
	require.NoError(t, err)
	assert.Equal(t, u, tool, "a tool reads the same totals")

	// What a process has not saved yet shows in its own Usage only.
	drainAll(t, first, it.Query{Index: "town", Eq: it.Tuple{"T0"}})
	mine, err := first.Usage(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(41), mine.Indexes["town"].Reads)
	theirs, err := second.Usage(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(40), theirs.Indexes["town"].Reads)

	// A failed save keeps the counts for the next.
	require.NoError(t, s.Close())
	require.ErrorIs(t, first.SaveUsage(ctx), it.ErrClosed)
}

func TestReadKeysKeepTheMostRead(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, it.NewMemoryStore())
	// 100 keys read once each, and one read 50 times in between: a sketch
	// of 32 keys keeps the frequent one, with its count or more.
	for i := range 100 {
		drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{fmt.Sprint("rare", i)}})
		if i%2 == 0 {
			drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"often"}})
		}
	}
	u, err := tbl.Usage(ctx)
	require.NoError(t, err)
	keys := u.Indexes["town"].ReadKeys
	require.Len(t, keys, 32)
	require.Equal(t, it.Tuple{"often"}, keys[0].Key)
	require.GreaterOrEqual(t, keys[0].Reads, int64(50))
	require.True(t, slices.IsSortedFunc(keys, func(a, b it.KeyReads) int { return int(b.Reads - a.Reads) }))
}

// TestUsageCountsAResumedPageAsTheSameQuery: a walk of many pages is one
// query, whichever page it resumes from: one read of the index (or scan of
// the fact table), one read key, one filter, one count of the fields it
// names; every record it returns counts as returned.
func TestUsageCountsAResumedPageAsTheSameQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    it.Query
	}{
		{"index", it.Query{Index: "town", Eq: it.Tuple{"T1"}, Fields: []string{"Name"}, Limit: 3}},
		{"index, filtered", it.Query{Index: "town", Eq: it.Tuple{"T1"}, Where: map[string]any{"Score": 1}, Limit: 3}},
		{"fact table, filtered", it.Query{Where: map[string]any{"Town": "T1"}, Limit: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := openPeople(t, it.NewMemoryStore())
			for i := range 40 {
				_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprint("N", i), Town: fmt.Sprint("T", i%2), Score: 1})
				require.NoError(t, err)
			}
			q, pages, got := tc.q, 0, 0
			for {
				page, cursor, err := tbl.FindPage(ctx, q)
				require.NoError(t, err)
				pages, got = pages+1, got+len(page)
				if cursor == "" {
					break
				}
				q.Cursor = cursor
			}
			require.Equal(t, 20, got)
			require.Equal(t, 7, pages)
			// The last page, resumed by Find, is the same query too.
			drainAll(t, tbl, q)

			u, err := tbl.Usage(ctx)
			require.NoError(t, err)
			town := u.Indexes["town"]
			if tc.q.Index == "" {
				assert.Equal(t, int64(1), u.Scans)
				assert.Equal(t, []it.FilterUse{{Fields: []string{"Town"}, Scans: 1}}, u.Filters)
				assert.Zero(t, town.Reads)
				return
			}
			assert.Zero(t, u.Scans)
			assert.Empty(t, u.Filters)
			assert.Equal(t, int64(1), town.Reads)
			assert.Equal(t, int64(20+2), town.Returned, "every page's records, and the resumed Find's")
			assert.Equal(t, []it.KeyReads{{Key: it.Tuple{"T1"}, Reads: 1}}, town.ReadKeys)
			if tc.q.Fields != nil {
				assert.Equal(t, map[string]int64{"Name": 1}, town.FieldsRead)
				assert.Zero(t, town.WholeReads)
			} else {
				assert.Nil(t, town.FieldsRead)
				assert.Equal(t, int64(1), town.WholeReads)
			}
		})
	}
}
