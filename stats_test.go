package indextable_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
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
func openPlaces(t testing.TB, s kv.Store) *it.Table[place] {
	t.Helper()
	ctx := context.Background()
	tbl, err := it.Open(ctx, s, it.Schema[place]{SchemaLease: testLease, Name: "places", PrimaryKey: []string{"ID"}, Indexes: []it.Index[place]{
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
