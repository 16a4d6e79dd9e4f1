package indextable_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

// findingsOf returns the findings about index, and those of no index when
// index is empty.
func findingsOf(findings []it.Finding, index string) []it.Finding {
	var out []it.Finding
	for _, f := range findings {
		if f.Index == index {
			out = append(out, f)
		}
	}
	return out
}

// TestAdviseJudgesSkewOnEachKeyPrefix: on a Country, Admin1, Name index
// whose whole key is unique, a query that fixes only Country reads 90% of
// the entries when it asks for US: skew is judged on each prefix length
// that queries fix, at the values they ask for, and on every prefix when
// no query fixed a key.
func TestAdviseJudgesSkewOnEachKeyPrefix(t *testing.T) {
	const (
		us   = `key prefix ("US") holds 90%% of the entries, and %d of the %d queries that fixed its first component asked for it`
		usCA = `key prefix ("US", "CA") holds 60%% of the entries, and %d of the %d queries that fixed its first 2 components asked for it`
	)
	for _, tc := range []struct {
		name  string
		reads func(i int) it.Tuple // the Eq of the i-th of 100 queries
		want  []string
	}{
		{"the common leading value", func(int) it.Tuple { return it.Tuple{"US"} }, []string{fmt.Sprintf(us, 100, 100)}},
		{"rare leading values", func(i int) it.Tuple { return it.Tuple{fmt.Sprint("C", i%10)} }, nil},
		{"mostly rare leading values", func(i int) it.Tuple {
			if i%3 == 0 {
				return it.Tuple{"US"}
			}
			return it.Tuple{fmt.Sprint("C", i%10)}
		}, nil},
		{"two common prefixes", func(i int) it.Tuple {
			if i%2 == 0 {
				return it.Tuple{"US"}
			}
			return it.Tuple{"US", "CA"}
		}, []string{fmt.Sprintf(us, 50, 50), fmt.Sprintf(usCA, 50, 50)}},
		{"common country, rare regions", func(i int) it.Tuple {
			if i < 20 {
				return it.Tuple{"US"}
			}
			return it.Tuple{fmt.Sprint("C", i%10), "A"}
		}, []string{fmt.Sprintf(us, 20, 20)}},
		{"whole keys", func(i int) it.Tuple { return it.Tuple{"US", "CA", fmt.Sprint("N", i%60)} }, nil},
		{"no key fixed", func(int) it.Tuple { return nil }, []string{
			`key prefix ("US") holds 90% of the entries, and no query fixed a key, so it is not known whether queries ask for the rare ones`,
			`key prefix ("US", "CA") holds 60% of the entries, and no query fixed a key, so it is not known whether queries ask for the rare ones`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl := openPlaces(t, it.NewMemoryStore())
			for i := range 100 {
				drainAll(t, tbl, it.Query{Index: "place", Eq: tc.reads(i), Limit: 1})
			}
			findings, err := tbl.Advise(ctx, it.AdviseOptions{})
			require.NoError(t, err)
			var got []string
			for _, f := range findingsOf(findings, "place") {
				require.Equal(t, it.FindingSkewed, f.Kind, f.Reason)
				got = append(got, f.Reason)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestFindingsJudgeTheWholeKeyWithoutPrefixStats: stats measured without
// Prefixes (by hand, or by a tool of an earlier version) are judged on the
// whole key, as before.
func TestFindingsJudgeTheWholeKeyWithoutPrefixStats(t *testing.T) {
	table := it.TableInfo{Name: "t", Indexes: []it.IndexInfo{{IndexStatus: it.IndexStatus{Name: "town", State: it.IndexReadable}}}}
	stats := it.TableStats{Records: 1000, Indexes: []it.IndexStats{{Index: "town", Entries: 1000, DistinctKeys: 500, CommonKey: it.Tuple{"Redmond"}, CommonEntries: 501}}}
	usage := it.TableUsage{Indexes: map[string]it.IndexUsage{"town": {Reads: 10, ReadKeys: []it.KeyReads{{Key: it.Tuple{"Redmond"}, Reads: 6}, {Key: it.Tuple{"Bellevue"}, Reads: 4}}}}}
	assert.Equal(t, []it.Finding{{Index: "town", Kind: it.FindingSkewed, Reason: `key ("Redmond") holds 50% of the entries, and 6 of the 10 queries that fixed a key asked for it`}},
		it.Findings(table, stats, usage, it.AdviseOptions{}))
}

// shop is the record of the filter advice tests.
type shop struct {
	ID     int
	Town   string
	Email  string
	Active bool
	Tags   []string
}

// TestAdviseNamesTheIndexThatLeadsWithTheFieldsFiltered: the scans that
// filter on fields an index leads with point at that index, whatever keeps
// them from using it, and an index that leads with some of the fields is
// named before a new one is proposed; a walk of many pages is one scan.
func TestAdviseNamesTheIndexThatLeadsWithTheFieldsFiltered(t *testing.T) {
	townEmail := []it.Index[shop]{{Name: "town_email", Fields: []string{"Town", "Email"}}}
	town, townActive := map[string]any{"Town": "T1"}, map[string]any{"Town": "T1", "Active": true}
	finding := func(index, reason string) []it.Finding {
		return []it.Finding{{Index: index, Kind: it.FindingUnindexedFilter, Reason: reason}}
	}
	const scans = "100 scans of the 100 records filtered on [Town], which this index leads with, but "
	for _, tc := range []struct {
		name   string
		before []it.Index[shop] // built with the records
		after  []it.Index[shop] // added over them, and built when build is set
		build  bool
		where  map[string]any
		pages  bool // one walk of 100 pages, not 100 queries
		want   []it.Finding
	}{
		{"readable", townEmail, nil, false, town, false,
			finding("town_email", "100 scans of the fact table filtered on [Town], which this index leads with: query it instead")},
		{"being built", nil, townEmail, false, town, false,
			finding("town_email", scans+"it is still being built: query it once it is readable")},
		{"sparse", nil, []it.Index[shop]{{Name: "town", Fields: []string{"Town"}, Sparse: true}}, true, town, false,
			finding("town", scans+"it is sparse: it leaves out the records with a zero value in any of its key fields")},
		{"multi-valued", nil, []it.Index[shop]{{Name: "town_tags", Fields: []string{"Town", "Tags"}, MultiValued: true}}, true, town, false,
			finding("town_tags", scans+"it is multi-valued: it holds a record once for each element of its slice fields, and not at all when one is empty")},
		{"leads with some", townEmail, nil, false, townActive, false,
			finding("town_email", "100 scans of the 100 records filtered on [Active Town], of which this index leads with [Town]: query it by Eq on those, with the rest in Where, before adding an index on them all")},
		{"leads with none", townEmail, nil, false, map[string]any{"Email": "1@x", "Active": true}, false,
			finding("", "100 scans of the 100 records filtered on [Active Email]: an index on them would answer each with a range")},
		{"one walk of 100 pages", nil, nil, false, town, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := it.NewMemoryStore()
			schema := it.Schema[shop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}, Indexes: tc.before}
			tbl, err := it.Open(ctx, s, schema)
			require.NoError(t, err)
			for i := range 100 {
				_, err := tbl.Insert(ctx, shop{ID: i, Town: fmt.Sprint("T", i%2), Email: fmt.Sprint(i, "@x"), Active: true, Tags: []string{"a"}})
				require.NoError(t, err)
			}
			if tc.after != nil { // a new index over records starts write-only
				schema.Indexes = append(tc.before, tc.after...)
				tbl, err = it.Open(ctx, s, schema)
				require.NoError(t, err)
				if tc.build {
					require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
				}
			}
			q := it.Query{Where: tc.where, Limit: 1}
			for range 100 {
				page, cursor, err := tbl.FindPage(ctx, q)
				require.NoError(t, err)
				require.Len(t, page, 1)
				if tc.pages {
					q.Cursor = cursor
				}
			}
			assert.Equal(t, tc.want, filterFindings(t, tbl))
		})
	}
	t.Run("disabled", func(t *testing.T) {
		ctx := context.Background()
		tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[shop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}, Indexes: townEmail})
		require.NoError(t, err)
		_, err = tbl.Insert(ctx, shop{ID: 1, Town: "T1"})
		require.NoError(t, err)
		require.NoError(t, tbl.DisableIndex(ctx, "town_email"))
		for range 100 {
			drainAll(t, tbl, it.Query{Where: town})
		}
		assert.Equal(t, finding("town_email", "100 scans of the 1 records filtered on [Town], which this index leads with, but it is disabled: enable it (EnableIndex) rather than add another"),
			filterFindings(t, tbl))
	})
}

// filterFindings returns the UnindexedFilter findings of Advise on tbl.
func filterFindings[T any](t *testing.T, tbl *it.Table[T]) []it.Finding {
	t.Helper()
	findings, err := tbl.Advise(context.Background(), it.AdviseOptions{})
	require.NoError(t, err)
	var out []it.Finding
	for _, f := range findings {
		if f.Kind == it.FindingUnindexedFilter {
			out = append(out, f)
		}
	}
	return out
}

// adviseFixture is a table's catalog, stats and usage, built by hand.
type adviseFixture struct {
	info  it.TableInfo
	stats it.TableStats
	usage it.TableUsage
}

// quietFixture is 1000 records over 100 ages, queried at age 30: the
// defaults find nothing in it.
func quietFixture() adviseFixture {
	return adviseFixture{
		info: it.TableInfo{Name: "q", Indexes: []it.IndexInfo{{
			IndexStatus: it.IndexStatus{Name: "age", State: it.IndexReadable, Generation: 1},
			Definition:  &it.IndexDefinition{PrimaryKey: []string{"ID"}, Fields: []string{"Age"}},
		}}},
		stats: it.TableStats{Records: 1000, Indexes: []it.IndexStats{{
			Index: "age", Entries: 1000, DistinctKeys: 100, CommonKey: it.Tuple{int64(30)}, CommonEntries: 10,
			Prefixes: []it.PrefixStats{{Distinct: 100, Common: it.Tuple{int64(30)}, CommonEntries: 10}},
		}}},
		usage: it.TableUsage{Writes: 10, Indexes: map[string]it.IndexUsage{"age": {
			Reads: 100, Returned: 1000, WholeReads: 100, ReadKeys: []it.KeyReads{{Key: it.Tuple{int64(30)}, Reads: 100}},
		}}},
	}
}

// loudFixture is 1000 records whose "active" index is of low cardinality,
// skewed, volatile, and whose "unread" index nobody reads, with 100 scans
// filtered on Town: the defaults find one of each.
func loudFixture() adviseFixture {
	def := &it.IndexDefinition{PrimaryKey: []string{"ID"}, Fields: []string{"Active"}}
	return adviseFixture{
		info: it.TableInfo{Name: "l", Indexes: []it.IndexInfo{
			{IndexStatus: it.IndexStatus{Name: "active", State: it.IndexReadable, Generation: 1}, Definition: def},
			{IndexStatus: it.IndexStatus{Name: "unread", State: it.IndexReadable, Generation: 1}, Definition: def},
		}},
		stats: it.TableStats{Records: 1000, Indexes: []it.IndexStats{
			{Index: "active", Entries: 1000, DistinctKeys: 2, CommonKey: it.Tuple{true}, CommonEntries: 900,
				Prefixes: []it.PrefixStats{{Distinct: 2, Common: it.Tuple{true}, CommonEntries: 900}}},
			{Index: "unread", Entries: 1000, DistinctKeys: 1000, CommonKey: it.Tuple{true}, CommonEntries: 1},
		}},
		usage: it.TableUsage{Writes: 2000, Filters: []it.FilterUse{{Fields: []string{"Town"}, Scans: 100}},
			Indexes: map[string]it.IndexUsage{"active": {
				Reads: 10, WholeReads: 10, Changes: 1000, ReadKeys: []it.KeyReads{{Key: it.Tuple{true}, Reads: 10}},
			}}},
	}
}

// badAdviseOptions are options with a field that is no threshold: NaN,
// infinite, negative, or a share above 1.
var badAdviseOptions = []it.AdviseOptions{
	{MinWrites: -1}, {MinScans: -1},
	{Selectivity: math.NaN()}, {Selectivity: math.Inf(1)}, {Selectivity: math.Inf(-1)}, {Selectivity: -0.1}, {Selectivity: 1.5},
	{Skew: math.NaN()}, {Skew: math.Inf(1)}, {Skew: math.Inf(-1)}, {Skew: -0.1}, {Skew: 1.5},
	{Volatility: math.NaN()}, {Volatility: math.Inf(1)}, {Volatility: math.Inf(-1)}, {Volatility: -1},
}

// TestFindingsTakeTheDefaultForOptionsOutOfRange: a NaN option made every
// comparison false, which reported every key of more than one entry
// skewed (Skew) or silenced a rule (Selectivity, Volatility); an infinite
// or out-of-range one silenced its rule. Findings, which returns no error,
// takes the default for such a field.
func TestFindingsTakeTheDefaultForOptionsOutOfRange(t *testing.T) {
	for name, fx := range map[string]adviseFixture{"quiet": quietFixture(), "loud": loudFixture()} {
		want := it.Findings(fx.info, fx.stats, fx.usage, it.AdviseOptions{})
		if name == "loud" {
			var kinds []it.FindingKind
			for _, f := range want {
				kinds = append(kinds, f.Kind)
			}
			require.Equal(t, []it.FindingKind{it.FindingLowCardinality, it.FindingSkewed, it.FindingVolatile, it.FindingUnused, it.FindingUnindexedFilter}, kinds, "%v", want)
		} else {
			require.Empty(t, want)
		}
		for _, opts := range badAdviseOptions {
			assert.Equal(t, want, it.Findings(fx.info, fx.stats, fx.usage, opts), "%s: options %+v", name, opts)
		}
	}
}

// TestAdviseRefusesOptionsOutOfRange: Advise, which returns an error,
// refuses an option that is no threshold; a zero one takes the default,
// and a share of 1 is one.
func TestAdviseRefusesOptionsOutOfRange(t *testing.T) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[shop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	for _, opts := range badAdviseOptions {
		_, err := tbl.Advise(ctx, opts)
		assert.ErrorIs(t, err, it.ErrInvalidArgument, "%+v", opts)
	}
	for _, opts := range []it.AdviseOptions{{}, {Selectivity: 1, Skew: 1}, {MinWrites: math.MaxInt64, Volatility: 1e300}} {
		_, err := tbl.Advise(ctx, opts)
		assert.NoError(t, err, "%+v", opts)
	}
}

// TestAdviseKnowsThePrimaryKeyWithoutIndexes: the filter rule learned the
// primary key from index definitions only, so on a table with no index it
// proposed an index on the primary key, an index the fact table already
// is. The table's primary key is known without indexes: from the table
// (Advise), and from what the store keeps (ReadCatalog, for Findings).
func TestAdviseKnowsThePrimaryKeyWithoutIndexes(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[shop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	for i := range 10 {
		_, err := tbl.Insert(ctx, shop{ID: i, Town: "T"})
		require.NoError(t, err)
	}
	for i := range 100 {
		drainAll(t, tbl, it.Query{Where: map[string]any{"ID": i % 10}})
	}
	want := []it.Finding{{Kind: it.FindingUnindexedFilter,
		Reason: "100 scans of the 10 records filtered on [ID], which the primary key leads with: query the fact table by Eq instead"}}
	findings, err := tbl.Advise(ctx, it.AdviseOptions{})
	require.NoError(t, err)
	assert.Equal(t, want, findings)

	// A tool, without the program.
	require.NoError(t, tbl.SaveUsage(ctx))
	tables, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	assert.Equal(t, []string{"ID"}, tables[0].PrimaryKey)
	stats, err := it.StatsOf(ctx, s, tables[0])
	require.NoError(t, err)
	usage, err := it.UsageOf(ctx, s, "shops")
	require.NoError(t, err)
	assert.Equal(t, want, it.Findings(tables[0], stats, usage, it.AdviseOptions{}))
}

// TestAdviseFindsFiltersThatFixThePrimaryKeyByEq: a filter on the whole
// primary key and other fields selects at most one record, which Get, or
// Eq on the primary key, finds; Advise proposed an index on them all
// (with an index on other fields, or without one).
func TestAdviseFindsFiltersThatFixThePrimaryKeyByEq(t *testing.T) {
	type visit struct {
		Region string
		ID     int
		Town   string
		Age    int
	}
	const prefixOfPK = "100 scans of the 10 records filtered on [Region], which the primary key leads with: query the fact table by Eq instead"
	for _, tc := range []struct {
		name    string
		pk      []string
		indexes []it.Index[visit]
		where   func(v visit) map[string]any
		want    string
	}{
		{"primary key and another field", []string{"ID"}, nil,
			func(v visit) map[string]any { return map[string]any{"ID": v.ID, "Age": v.Age} },
			"100 scans of the 10 records filtered on [Age ID], which hold the whole primary key [ID]: each selects at most one record, which Get by the primary key (or a query of the fact table by Eq on it) reads without a scan; compare the rest with what it returns"},
		{"the same, beside an index", []string{"ID"}, []it.Index[visit]{{Name: "town", Fields: []string{"Town"}}},
			func(v visit) map[string]any { return map[string]any{"ID": v.ID, "Age": v.Age} },
			"100 scans of the 10 records filtered on [Age ID], which hold the whole primary key [ID]: each selects at most one record, which Get by the primary key (or a query of the fact table by Eq on it) reads without a scan; compare the rest with what it returns"},
		{"a composite primary key and another field", []string{"Region", "ID"}, []it.Index[visit]{{Name: "age_id", Fields: []string{"Age", "ID"}}},
			func(v visit) map[string]any { return map[string]any{"Region": v.Region, "ID": v.ID, "Age": v.Age} },
			"100 scans of the 10 records filtered on [Age ID Region], which hold the whole primary key [Region ID]: each selects at most one record, which Get by the primary key (or a query of the fact table by Eq on it) reads without a scan; compare the rest with what it returns"},
		{"a prefix of a composite primary key", []string{"Region", "ID"}, nil,
			func(v visit) map[string]any { return map[string]any{"Region": v.Region} }, prefixOfPK},
		{"a prefix of a composite primary key, beside an index on it", []string{"Region", "ID"}, []it.Index[visit]{{Name: "region", Fields: []string{"Region"}}},
			func(v visit) map[string]any { return map[string]any{"Region": v.Region} }, prefixOfPK},
		{"part of a composite primary key", []string{"Region", "ID"}, nil,
			func(v visit) map[string]any { return map[string]any{"ID": v.ID} },
			"100 scans of the 10 records filtered on [ID]: an index on them would answer each with a range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[visit]{SchemaLease: testLease, Name: "visits", PrimaryKey: tc.pk, Indexes: tc.indexes})
			require.NoError(t, err)
			var visits []visit
			for i := range 10 {
				v := visit{Region: fmt.Sprint("R", i%2), ID: i, Town: "T", Age: i}
				visits = append(visits, v)
				_, err := tbl.Insert(ctx, v)
				require.NoError(t, err)
			}
			for i := range 100 {
				drainAll(t, tbl, it.Query{Where: tc.where(visits[i%10])})
			}
			assert.Equal(t, []it.Finding{{Kind: it.FindingUnindexedFilter, Reason: tc.want}}, filterFindings(t, tbl))
		})
	}
}

// TestFindingsOfAFilterOnNoField: a FilterUse with no field (built by
// hand) is no filter; the primary key "led with" its empty set.
func TestFindingsOfAFilterOnNoField(t *testing.T) {
	fx := quietFixture()
	fx.usage.Filters = []it.FilterUse{{Scans: 1000}, {Fields: []string{}, Scans: 1000}}
	assert.Empty(t, it.Findings(fx.info, fx.stats, fx.usage, it.AdviseOptions{}))
}

// TestFindingsProjectionOfAMultiValuedIndexLacksOnlyItsSliceFields: the
// entries of a KeysOnly or Partial multi-valued index hold its
// single-valued key fields (Query.Covered), not its slice fields; the
// projection rule took every key field of a MultiValued index as missing,
// and proposed a projection where KeysOnly would answer the reads. Which
// key fields are slices is read from the table's record type; without one, only
// a lone key field is known to be one.
func TestFindingsProjectionOfAMultiValuedIndexLacksOnlyItsSliceFields(t *testing.T) {
	const desc = `struct{ID int "";Country string "";Tags []string "";Note string "";}`
	for _, tc := range []struct {
		name   string
		desc   string
		fields []string // the index's key fields
		read   []string // the fields every read named
		want   string
	}{
		{"single-valued key fields", desc, []string{"Country", "Tags"}, []string{"ID", "Country"},
			"all 50 reads named only key fields ([Country ID]): KeysOnly would answer them from its entries, with no copy of the records"},
		{"a slice field", desc, []string{"Country", "Tags"}, []string{"ID", "Country", "Tags"},
			"all 50 reads named only fields among [Country ID Tags]: Partial with Projection [Tags] would answer them from its entries, with no whole copy of the records"},
		{"a slice field and another", desc, []string{"Country", "Tags"}, []string{"Tags", "Note"},
			"all 50 reads named only fields among [Note Tags]: Partial with Projection [Note Tags] would answer them from its entries, with no whole copy of the records"},
		{"a lone key field, without a record type", "", []string{"Tags"}, []string{"ID", "Tags"},
			"all 50 reads named only fields among [ID Tags]: Partial with Projection [Tags] would answer them from its entries, with no whole copy of the records"},
		{"key fields without a record type", "", []string{"Country", "Tags"}, []string{"ID", "Country"},
			"all 50 reads named only fields among [Country ID]: KeysOnly would answer them from its entries if none of [Country] is a slice field of the index, else Partial with Projection of those that are (the table keeps no record type to tell), with no whole copy of the records"},
		{"key fields and another, without a record type", "", []string{"Country", "Tags"}, []string{"Country", "Note"},
			"all 50 reads named only fields among [Country Note]: Partial with Projection [Note], and those of [Country] that are slice fields of the index (the table keeps no record type to tell), would answer them from its entries, with no whole copy of the records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &it.IndexDefinition{PrimaryKey: []string{"ID"}, Fields: tc.fields, Strategy: it.FullCopy, MultiValued: true}
			info := it.TableInfo{Name: "m", PrimaryKey: []string{"ID"}, Codec: "json", RecordType: tc.desc,
				Indexes: []it.IndexInfo{{IndexStatus: it.IndexStatus{Name: "ct", State: it.IndexReadable, Generation: 1}, Definition: def}}}
			stats := it.TableStats{Records: 1000, Indexes: []it.IndexStats{{Index: "ct", Entries: 3000, DistinctKeys: 3000, CommonEntries: 1}}}
			fields := map[string]int64{}
			for _, f := range tc.read {
				fields[f] = 50
			}
			usage := it.TableUsage{Indexes: map[string]it.IndexUsage{"ct": {Reads: 50, FieldsRead: fields}}}
			assert.Equal(t, []it.Finding{{Index: "ct", Kind: it.FindingProjection, Reason: tc.want}}, it.Findings(info, stats, usage, it.AdviseOptions{}))
		})
	}
}

// pricedPlace has its own JSON encoding (Price): the store keeps no record type
// of it.
type pricedPlace struct {
	ID      int
	Country string
	Tags    []string
	Price   moneyAmount
}

// TestAdviseProjectionOfAMultiValuedIndex: what the rule proposes answers
// the reads from the entries; Advise knows the slice fields from the
// record type the table keeps, or from the table when it keeps none.
func TestAdviseProjectionOfAMultiValuedIndex(t *testing.T) {
	t.Run("a record type kept", func(t *testing.T) {
		adviseProjectionOfAMultiValuedIndex(t, place{ID: 1, Country: "US", Tags: []string{"a", "b"}})
	})
	t.Run("no record type kept", func(t *testing.T) {
		adviseProjectionOfAMultiValuedIndex(t, pricedPlace{ID: 1, Country: "US", Tags: []string{"a", "b"}})
	})
}

func adviseProjectionOfAMultiValuedIndex[T any](t *testing.T, rec T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	full := it.Index[T]{Name: "ct", Fields: []string{"Country", "Tags"}, MultiValued: true, Strategy: it.FullCopy}
	tbl, err := it.Open(ctx, s, it.Schema[T]{SchemaLease: testLease, Name: "places", PrimaryKey: []string{"ID"}, Indexes: []it.Index[T]{full}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec)
	require.NoError(t, err)
	q := it.Query{Index: "ct", Eq: it.Tuple{"US"}, Fields: []string{"ID", "Country"}}
	drainAll(t, tbl, q)
	findings, err := tbl.Advise(ctx, it.AdviseOptions{})
	require.NoError(t, err)
	var projections []it.Finding
	for _, f := range findings {
		if f.Kind == it.FindingProjection {
			projections = append(projections, f)
		}
	}
	require.Equal(t, []it.Finding{{Index: "ct", Kind: it.FindingProjection,
		Reason: "all 1 reads named only key fields ([Country ID]): KeysOnly would answer them from its entries, with no copy of the records"}}, projections)

	// Indeed: the same read of the KeysOnly index is covered.
	keysOnly := full
	keysOnly.Strategy = it.KeysOnly
	tbl, err = it.Open(ctx, s, it.Schema[T]{SchemaLease: testLease, Name: "places", PrimaryKey: []string{"ID"}, Indexes: []it.Index[T]{keysOnly}})
	require.NoError(t, err)
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	var zero T
	for r, err := range tbl.Find(ctx, q) {
		require.NoError(t, err)
		v := reflect.ValueOf(&zero).Elem()
		v.FieldByName("ID").Set(reflect.ValueOf(1))
		v.FieldByName("Country").Set(reflect.ValueOf("US"))
		assert.Equal(t, zero, r, "answered from the entry alone")
	}
}

// TestFindingsOfAnUnusedUniqueIndexSayItChecksWrites: an unread unique
// index was called unused like any other, though every write checks its
// key against it: dropping it drops the constraint.
func TestFindingsOfAnUnusedUniqueIndexSayItChecksWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		unique bool
		want   string
	}{
		{"unique", true, "no query read it in 2000 record writes, which wrote 0 of its entries; but it is unique: writes check their keys against it, which dropping it would stop"},
		{"not unique", false, "no query read it in 2000 record writes, which wrote 0 of its entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := loudFixture()
			fx.info.Indexes[1].Definition = &it.IndexDefinition{PrimaryKey: []string{"ID"}, Fields: []string{"Email"}, Unique: tc.unique}
			assert.Equal(t, []it.Finding{{Index: "unread", Kind: it.FindingUnused, Reason: tc.want}},
				findingsOf(it.Findings(fx.info, fx.stats, fx.usage, it.AdviseOptions{}), "unread"))
		})
	}
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
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[account]{SchemaLease: testLease, Name: "accounts", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
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
			want := []got{{"active", it.FindingLowCardinality}}
			if readCommon {
				want = append(want, got{"town", it.FindingSkewed})
			}
			want = append(want, got{"score", it.FindingVolatile}, got{"email_town", it.FindingUnused})
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
	tbl, err := it.Open(ctx, s, it.Schema[account]{SchemaLease: testLease, Name: "accounts", PrimaryKey: []string{"ID"},
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
	assert.Equal(t, it.Finding{Kind: it.FindingUnindexedFilter, Reason: "200 scans of the 100 records filtered on [Active Score]: an index on them would answer each with a range"}, findings[0])
	assert.Equal(t, it.Finding{Index: "town_email", Kind: it.FindingUnindexedFilter, Reason: "150 scans of the fact table filtered on [Town], which this index leads with: query it instead"}, findings[1])
}

// TestAdviseShrinksFullCopiesToTheFieldsRead: when every read of a
// FullCopy index names its fields, Advise says which strategy would answer
// the same reads without copies; one read of whole records silences it.
func TestAdviseShrinksFullCopiesToTheFieldsRead(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[account]{SchemaLease: testLease, Name: "accounts", PrimaryKey: []string{"ID"},
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
		{Index: "by_town", Kind: it.FindingProjection, Reason: "all 21 reads named only key fields ([ID Town]): KeysOnly would answer them from its entries, with no copy of the records"},
		{Index: "by_email", Kind: it.FindingProjection, Reason: "all 20 reads named only fields among [Active Email]: Partial with Projection [Active] would answer them from its entries, with no whole copy of the records"},
	}, findings)
}

// TestAdviseLeavesHealthyAndUnreadableIndexesAlone: a unique index on a
// small table is not of low cardinality; an index still being built is
// not unused; a covered read of a full copy reads whole records, while
// counts need only keys.
func TestAdviseLeavesHealthyAndUnreadableIndexesAlone(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := it.Schema[account]{SchemaLease: testLease, Name: "accounts", PrimaryKey: []string{"ID"}, Indexes: []it.Index[account]{
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
	require.Equal(t, []it.Finding{{Index: "counted", Kind: it.FindingProjection,
		Reason: "all 10 reads needed only its keys (counts, or covered reads that named no field): KeysOnly would answer them, with no copy of the records"}}, findings)
}
