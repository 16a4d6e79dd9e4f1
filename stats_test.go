package indextable_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

// drainAll reads every result of q, returning how many there were.
func drainAll[T any](t testing.TB, tbl *it.Table[T], q it.Query) int {
	t.Helper()
	n := 0
	for _, err := range tbl.Find(context.Background(), q) {
		require.NoError(t, err)
		n++
	}
	return n
}

func TestUsageCountsReadsWritesAndMutations(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{}, Indexes: []it.Index[person]{
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
		tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{
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

func TestStats(t *testing.T) {
	ctx := context.Background()
	store := it.NewMemoryStore()
	tbl := openPeople(t, store)
	empty, err := tbl.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, empty.Records)
	for _, ix := range empty.Indexes {
		require.Equal(t, it.IndexStats{Index: ix.Index}, ix)
	}
	// 30 people: 20 in Redmond, 10 in 5 other towns; 2 tags each (one
	// shared by all); an email for every third.
	for i := range 30 {
		p := person{ID: i, Name: fmt.Sprint("N", i), Town: "Redmond", Tags: []string{"all", fmt.Sprint("t", i%3)}}
		if i >= 20 {
			p.Town = fmt.Sprint("Town", i%5)
		}
		if i%3 == 0 {
			p.Email = fmt.Sprint(i, "@x")
		}
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
	}
	s, err := tbl.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(30), s.Records)
	byName := map[string]it.IndexStats{}
	for _, ix := range s.Indexes {
		byName[ix.Index] = ix
		require.Positive(t, ix.Bytes, ix.Index)
	}
	town := byName["town"]
	assert.Equal(t, int64(30), town.Entries)
	assert.Equal(t, int64(6), town.DistinctKeys)
	assert.Equal(t, it.Tuple{"Redmond"}, town.CommonKey)
	assert.Equal(t, int64(20), town.CommonEntries)
	tags := byName["tags"]
	assert.Equal(t, int64(60), tags.Entries, "one entry a value")
	assert.Equal(t, int64(4), tags.DistinctKeys)
	assert.Equal(t, it.Tuple{"all"}, tags.CommonKey)
	email := byName["email"]
	assert.Equal(t, int64(10), email.Entries, "sparse and unique")
	assert.Equal(t, int64(10), email.DistinctKeys)
	assert.Equal(t, int64(1), email.CommonEntries)
	assert.Greater(t, byName["town_name"].Bytes, town.Bytes, "a full copy takes more room than a key")
	assert.Greater(t, s.FactBytes, town.Bytes)

	// A tool without the record type measures the same from the catalog
	// (indexes in name order there).
	tables, err := it.ReadCatalog(ctx, store)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	tool, err := it.StatsOf(ctx, store, tables[0])
	require.NoError(t, err)
	slices.SortFunc(s.Indexes, func(a, b it.IndexStats) int { return strings.Compare(a.Index, b.Index) })
	require.Equal(t, s, tool)
}

// account is the record of the advice tests.
type account struct {
	ID     int
	Email  string
	Active bool
	Town   string
	Score  int
}

// TestAdvise builds, on purpose, an unused index, a low-cardinality one, a
// skewed one and a volatile one next to a healthy one, and checks that each
// gets its finding and the healthy one none; a skewed key that queries read
// at its rare values gets none either.
func TestAdvise(t *testing.T) {
	for _, readCommon := range []bool{true, false} {
		t.Run(fmt.Sprintf("read common=%t", readCommon), func(t *testing.T) {
			ctx := context.Background()
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
				Indexes: []it.Index[account]{
					{Name: "email", Fields: []string{"Email"}, Unique: true, Strategy: it.KeysOnly},
					{Name: "active", Fields: []string{"Active"}, Strategy: it.KeysOnly},
					{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
					{Name: "score", Fields: []string{"Score"}, Strategy: it.KeysOnly},
					{Name: "email_town", Fields: []string{"Email", "Town"}, Strategy: it.FullCopy},
				}})
			require.NoError(t, err)
			town := func(i int) string {
				if i%10 != 0 {
					return "Redmond" // 90% of the accounts
				}
				return fmt.Sprint("Town", i)
			}
			const n = 1000
			for i := range n {
				_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Active: i%3 == 0, Town: town(i), Score: i})
				require.NoError(t, err)
			}
			for i := range 2 * n { // scores change all the time
				_, err := tbl.Update(ctx, account{ID: i % n, Email: fmt.Sprint(i%n, "@x"), Active: i%n%3 == 0, Town: town(i % n), Score: n + i})
				require.NoError(t, err)
			}
			for i := range 300 {
				drainAll(t, tbl, it.Query{Index: "email", Eq: it.Tuple{fmt.Sprint(i, "@x")}})
				drainAll(t, tbl, it.Query{Index: "active", Eq: it.Tuple{true}, Limit: 1})
				if readCommon {
					drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"Redmond"}, Limit: 1})
				} else {
					drainAll(t, tbl, it.Query{Index: "town", Eq: it.Tuple{town(10 * (i % 100))}})
				}
			}
			for i := range 5 {
				drainAll(t, tbl, it.Query{Index: "score", Eq: it.Tuple{n + i}})
			}
			findings, err := tbl.Advise(ctx, it.AdviseOptions{})
			require.NoError(t, err)
			for _, f := range findings {
				t.Log(f)
			}
			type got struct {
				Index string
				Kind  it.FindingKind
			}
			var kinds []got
			for _, f := range findings {
				kinds = append(kinds, got{f.Index, f.Kind})
				require.NotEmpty(t, f.Reason)
			}
			want := []got{{"active", it.LowCardinality}}
			if readCommon {
				want = append(want, got{"town", it.Skewed})
			}
			want = append(want, got{"score", it.Volatile}, got{"email_town", it.Unused})
			require.Equal(t, want, kinds)
		})
	}
}

// TestAdviseProposesIndexesForFrequentFilters: scans of the fact table that
// filter on the same fields are counted by those fields, saved, and, past
// MinScans, proposed as an index, or pointed at the index that leads with
// them.
func TestAdviseProposesIndexesForFrequentFilters(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[account]{{Name: "town_email", Fields: []string{"Town", "Email"}}}})
	require.NoError(t, err)
	for i := range 100 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Active: i%2 == 0, Town: fmt.Sprint("T", i)})
		require.NoError(t, err)
	}
	scan := func(n int, where map[string]any) {
		for range n {
			drainAll(t, tbl, it.Query{Where: where, Limit: 1})
		}
	}
	scan(200, map[string]any{"Active": true, "Score": 0})
	scan(150, map[string]any{"Town": "T1"})
	scan(10, map[string]any{"Email": "1@x"})
	for range 20 { // reads enough for its 100 entry writes, and not scans
		drainAll(t, tbl, it.Query{Index: "town_email", Where: map[string]any{"Active": true}})
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	u, err := it.UsageOf(ctx, s, "accounts")
	require.NoError(t, err)
	assert.Equal(t, int64(360), u.Scans)
	assert.Equal(t, []it.FilterUse{{Fields: []string{"Active", "Score"}, Scans: 200}, {Fields: []string{"Town"}, Scans: 150}, {Fields: []string{"Email"}, Scans: 10}}, u.Filters)

	findings, err := tbl.Advise(ctx, it.AdviseOptions{})
	require.NoError(t, err)
	require.Len(t, findings, 2, "%v", findings)
	assert.Equal(t, it.Finding{Kind: it.UnindexedFilter, Reason: "200 scans of the 100 records filtered on [Active Score]: an index on them would answer each with a range"}, findings[0])
	assert.Equal(t, it.Finding{Index: "town_email", Kind: it.UnindexedFilter, Reason: "150 scans of the fact table filtered on [Town], which this index leads with: query it instead"}, findings[1])
}

// TestAdviseShrinksFullCopiesToTheFieldsRead: when every read of a
// FullCopy index names its fields, Advise says which strategy would answer
// the same reads without copies; one read of whole records silences it.
func TestAdviseShrinksFullCopiesToTheFieldsRead(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[account]{
			{Name: "by_town", Fields: []string{"Town"}, Strategy: it.FullCopy},
			{Name: "by_email", Fields: []string{"Email"}, Strategy: it.FullCopy},
			{Name: "whole", Fields: []string{"Score"}, Strategy: it.FullCopy},
		}})
	require.NoError(t, err)
	for i := range 40 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Town: fmt.Sprint("T", i), Score: i})
		require.NoError(t, err)
	}
	for i := range 20 {
		drainAll(t, tbl, it.Query{Index: "by_town", Eq: it.Tuple{fmt.Sprint("T", i)}, Fields: []string{"ID", "Town"}})
		drainAll(t, tbl, it.Query{Index: "by_email", Eq: it.Tuple{fmt.Sprint(i, "@x")}, Fields: []string{"Email", "Active"}})
		drainAll(t, tbl, it.Query{Index: "whole", Eq: it.Tuple{i}, Fields: []string{"Town"}})
	}
	drainAll(t, tbl, it.Query{Index: "whole", Eq: it.Tuple{0}})
	n, err := tbl.Count(ctx, it.Query{Index: "by_town"}) // needs no fields
	require.NoError(t, err)
	require.Equal(t, 40, n)
	require.NoError(t, tbl.SaveUsage(ctx))
	u, err := it.UsageOf(ctx, s, "accounts")
	require.NoError(t, err)
	assert.Equal(t, int64(21), u.Indexes["by_town"].Reads)
	assert.Equal(t, int64(0), u.Indexes["by_town"].WholeReads)
	assert.Equal(t, map[string]int64{"ID": 20, "Town": 20}, u.Indexes["by_town"].FieldsRead)
	assert.Equal(t, int64(1), u.Indexes["whole"].WholeReads)

	findings, err := tbl.Advise(ctx, it.AdviseOptions{})
	require.NoError(t, err)
	assert.Equal(t, []it.Finding{
		{Index: "by_town", Kind: it.Projection, Reason: "all 21 reads named only key fields ([ID Town]): KeysOnly would answer them from its entries, with no copy of the records"},
		{Index: "by_email", Kind: it.Projection, Reason: "all 20 reads named only fields among [Active Email]: Partial with Projection [Active] would answer them from its entries, with no whole copy of the records"},
	}, findings)
}

// TestAdviseLeavesHealthyAndUnreadableIndexesAlone: a unique index on a
// small table is not of low cardinality; an index still being built is
// not unused; a covered read of a full copy reads whole records, while
// counts need only keys.
func TestAdviseLeavesHealthyAndUnreadableIndexesAlone(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := it.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"}, Indexes: []it.Index[account]{
		{Name: "email", Fields: []string{"Email"}, Unique: true},
		{Name: "copy", Fields: []string{"Town"}, Strategy: it.FullCopy},
		{Name: "counted", Fields: []string{"Score"}, Strategy: it.FullCopy},
	}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	for i := range 10 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Town: fmt.Sprint("T", i), Score: i})
		require.NoError(t, err)
		drainAll(t, tbl, it.Query{Index: "email", Eq: it.Tuple{fmt.Sprint(i, "@x")}})
		drainAll(t, tbl, it.Query{Index: "copy", Eq: it.Tuple{fmt.Sprint("T", i)}, Covered: true})
		_, err = tbl.Count(ctx, it.Query{Index: "counted", Eq: it.Tuple{i}})
		require.NoError(t, err)
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	// A new index over existing records starts write-only.
	schema.Indexes = append(schema.Indexes, it.Index[account]{Name: "building", Fields: []string{"Town"}})
	tbl, err = it.Open(ctx, s, schema)
	require.NoError(t, err)
	for i := range 10 {
		_, err := tbl.Update(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Town: fmt.Sprint("U", i), Score: i})
		require.NoError(t, err)
	}
	findings, err := tbl.Advise(ctx, it.AdviseOptions{MinWrites: 5})
	require.NoError(t, err)
	require.Equal(t, []it.Finding{{Index: "counted", Kind: it.Projection,
		Reason: "all 10 reads needed only its keys (counts, or covered reads that named no field): KeysOnly would answer them, with no copy of the records"}}, findings)
}

// TestReadCatalogPassesOverOtherKeys: keys that are no table's, before and
// after a table's, do not stop the listing.
func TestReadCatalogPassesOverOtherKeys(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	var b it.Batch
	b.Put([]byte{0x01}, nil)                              // a null element, not a name
	b.Put([]byte("\xff\xffindextable shard layout"), nil) // a shard's layout record
	require.NoError(t, s.Apply(ctx, &b))
	openPeople(t, s)
	tables, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	require.Equal(t, "people", tables[0].Name)
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

// place is the record of the key prefix tests: a composite key whose
// leading Country is skewed while the whole key is not.
type place struct {
	ID                    int
	Country, Admin1, Name string
	Tags                  []string
}

// openPlaces opens a table of 100 places: 90 in US (60 of them in CA, 30
// in WA), and one in each of C0 to C9 (in A); every name is unique. Each
// has the tags "all" and one of "t0", "t1", "t2".
func openPlaces(t testing.TB, s it.Store) *it.Table[place] {
	t.Helper()
	ctx := context.Background()
	tbl, err := it.Open(ctx, s, it.Schema[place]{Name: "places", PrimaryKey: []string{"ID"}, Indexes: []it.Index[place]{
		{Name: "place", Fields: []string{"Country", "Admin1", "Name"}, Strategy: it.KeysOnly},
		{Name: "unique_place", Fields: []string{"Country", "Admin1", "Name"}, Unique: true, Strategy: it.KeysOnly},
		{Name: "country_tags", Fields: []string{"Country", "Tags"}, MultiValued: true, Strategy: it.KeysOnly},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.KeysOnly},
	}})
	require.NoError(t, err)
	for i := range 100 {
		p := place{ID: i, Country: "US", Admin1: "CA", Name: fmt.Sprint("N", i), Tags: []string{"all", fmt.Sprint("t", i%3)}}
		switch {
		case i >= 90:
			p.Country, p.Admin1 = fmt.Sprint("C", i-90), "A"
		case i >= 60:
			p.Admin1 = "WA"
		}
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
	}
	return tbl
}

// TestStatsMeasuresEachKeyPrefix: the scan of an index measures, for each
// leading part of its key that a query may fix, the distinct values and
// the most common one, whether the key is unique, composite or
// multi-valued.
func TestStatsMeasuresEachKeyPrefix(t *testing.T) {
	ctx := context.Background()
	store := it.NewMemoryStore()
	tbl := openPlaces(t, store)
	s, err := tbl.Stats(ctx)
	require.NoError(t, err)
	byName := map[string]it.IndexStats{}
	for _, ix := range s.Indexes {
		byName[ix.Index] = ix
	}
	want := []it.PrefixStats{
		{Distinct: 11, Common: it.Tuple{"US"}, CommonEntries: 90},
		{Distinct: 12, Common: it.Tuple{"US", "CA"}, CommonEntries: 60},
		{Distinct: 100, Common: it.Tuple{"C0", "A", "N90"}, CommonEntries: 1},
	}
	for _, name := range []string{"place", "unique_place"} {
		ix := byName[name]
		assert.Equal(t, want, ix.Prefixes, name)
		assert.Equal(t, want[2].Common, ix.CommonKey, "the whole key is the longest prefix")
		assert.Equal(t, int64(100), ix.DistinctKeys)
	}
	assert.Equal(t, []it.PrefixStats{
		{Distinct: 11, Common: it.Tuple{"US"}, CommonEntries: 180},
		{Distinct: 24, Common: it.Tuple{"US", "all"}, CommonEntries: 90},
	}, byName["country_tags"].Prefixes, "one entry a value")
	assert.Equal(t, []it.PrefixStats{{Distinct: 100, Common: it.Tuple{"N0"}, CommonEntries: 1}}, byName["name"].Prefixes)

	tables, err := it.ReadCatalog(ctx, store)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	tool, err := it.StatsOf(ctx, store, tables[0])
	require.NoError(t, err)
	slices.SortFunc(s.Indexes, func(a, b it.IndexStats) int { return strings.Compare(a.Index, b.Index) })
	require.Equal(t, s, tool, "a tool measures the same")
}

// TestStatsOfADefinitionWithoutPrimaryKey: StatsOf took the primary key's
// length from the definitions alone, and one that names none (written by
// hand, or damaged) counted every entry as a distinct key. It falls back
// on TableInfo.PrimaryKey, and refuses when neither names it.
func TestStatsOfADefinitionWithoutPrimaryKey(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openPlaces(t, s)
	want, err := tbl.Stats(ctx)
	require.NoError(t, err)
	slices.SortFunc(want.Indexes, func(a, b it.IndexStats) int { return strings.Compare(a.Index, b.Index) })
	tables, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		pk   []string
		err  error
	}{
		{"the table's primary key", []string{"ID"}, nil},
		{"none", nil, it.ErrInvalidSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := tables[0]
			info.PrimaryKey = tc.pk
			info.Indexes = slices.Clone(info.Indexes)
			for i := range info.Indexes {
				d := *info.Indexes[i].Definition
				d.PrimaryKey = nil
				info.Indexes[i].Definition = &d
			}
			got, err := it.StatsOf(ctx, s, info)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}
