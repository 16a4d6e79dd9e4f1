package indextable_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// film is partitioned by genre, as the movies of the pattern's figures.
type film struct {
	Genre, Title string
	Year         int
	Rating       int
	Actors       []string
}

// apart is a memory store that gives every key a partition of its own, so
// no index entry shares its record's.
type apart struct{ *it.MemoryStore }

func (apart) Atomicity() kv.Atomicity {
	return kv.Atomicity{Partition: func(k []byte) []byte { return k }}
}

func openFilms(t testing.TB, s kv.Store, indexes ...it.Index[film]) (*it.Table[film], error) {
	t.Helper()
	return openFilmsLeased(t, s, testLease, indexes...)
}

func openFilmsLeased(t testing.TB, s kv.Store, lease time.Duration, indexes ...it.Index[film]) (*it.Table[film], error) {
	t.Helper()
	return it.Open(context.Background(), s, it.Schema[film]{SchemaLease: lease, Name: "films", PrimaryKey: []string{"Genre", "Title"}, Indexes: indexes})
}

func TestPlacementIsResolvedForTheStore(t *testing.T) {
	leading := it.Index[film]{Name: "ix", Fields: []string{"Genre", "Year"}}
	other := it.Index[film]{Name: "ix", Fields: []string{"Year"}}
	computed := it.Index[film]{Name: "ix", Key: func(f film) []it.Tuple { return []it.Tuple{{f.Genre, f.Year}} }}
	with := func(ix it.Index[film], p it.Placement) it.Index[film] { ix.Placement = p; return ix }
	stores := map[string]func() kv.Store{
		"memory":      func() kv.Store { return it.NewMemoryStore() },
		"partitioned": func() kv.Store { return partitionedStore(it.NewMemoryStore()) },
		"apart":       func() kv.Store { return apart{it.NewMemoryStore()} },
	}
	for _, tc := range []struct {
		store string
		index it.Index[film]
		want  it.Placement // zero: an invalid schema
	}{
		// Auto picks intra-partition only where the store puts the entries
		// in their records' partitions.
		{"memory", leading, it.InterPartition},
		{"partitioned", leading, it.IntraPartition},
		{"apart", leading, it.InterPartition},
		{"partitioned", other, it.InterPartition},
		{"partitioned", computed, it.InterPartition},
		// What is asked, where the store allows it.
		{"partitioned", with(leading, it.InterPartition), it.InterPartition},
		{"memory", with(leading, it.IntraPartition), it.IntraPartition},
		{"partitioned", with(leading, it.IntraPartition), it.IntraPartition},
		{"apart", with(leading, it.IntraPartition), 0},
		{"partitioned", with(other, it.IntraPartition), 0},
		{"memory", with(computed, it.IntraPartition), 0},
		{"memory", with(leading, it.Placement(9)), 0},
	} {
		name := tc.store + "/" + tc.index.Placement.String()
		tbl, err := openFilms(t, stores[tc.store](), tc.index)
		if tc.want == 0 {
			require.ErrorIs(t, err, it.ErrInvalidSchema, name)
			continue
		}
		require.NoError(t, err, name)
		st, err := tbl.IndexStatus(context.Background())
		require.NoError(t, err)
		assert.Equal(t, tc.want, st[0].Placement, "%s, fields %v", name, tc.index.Fields)
	}
}

// TestIntraPartitionIndexesCommitWithTheirRecord: on a partitioned store,
// a write commits its record and its intra-partition entries at once, and
// queues only the inter-partition ones.
func TestIntraPartitionIndexesCommitWithTheirRecord(t *testing.T) {
	ctx := context.Background()
	s := partitionedStore(it.NewMemoryStore())
	tbl, err := openFilms(t, s,
		it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Strategy: it.FullCopy},
		it.Index[film]{Name: "rating", Fields: []string{"Genre", "Rating", "Title"}, Unique: true},
		it.Index[film]{Name: "actor", Fields: []string{"Actors"}, MultiValued: true},
	)
	require.NoError(t, err)
	find := func(index string, eq ...any) []string {
		var titles []string
		for f, err := range tbl.Find(ctx, it.Query{Index: index, Eq: eq}) {
			require.NoError(t, err)
			titles = append(titles, f.Title)
		}
		return titles
	}
	_, err = tbl.Insert(ctx, film{Genre: "Sci-Fi", Title: "Red Dust", Year: 2019, Rating: 7, Actors: []string{"Ava Stone"}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, film{Genre: "Sci-Fi", Title: "Blue Moon", Year: 2021, Rating: 8, Actors: []string{"Ava Stone"}})
	require.NoError(t, err)

	assert.Equal(t, []string{"Red Dust"}, find("year", "Sci-Fi", 2019))
	assert.Equal(t, []string{"Red Dust", "Blue Moon"}, find("rating", "Sci-Fi"))
	assert.Empty(t, find("actor", "Ava Stone"), "the actor index waits for the maintainer")
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, lag.Pending)

	// A unique intra-partition key is checked in the write's transaction.
	_, err = tbl.Update(ctx, film{Genre: "Sci-Fi", Title: "Blue Moon", Year: 2021, Rating: 7, Actors: []string{"Ava Stone"}})
	require.NoError(t, err, "the rating key includes the title")
	_, err = tbl.Update(ctx, film{Genre: "Sci-Fi", Title: "Red Dust", Year: 2020, Rating: 7})
	require.NoError(t, err)
	assert.Equal(t, []string{"Red Dust"}, find("year", "Sci-Fi", 2020))
	assert.Empty(t, find("year", "Sci-Fi", 2019))

	storetest.Drain(t, tbl)
	assert.Equal(t, []string{"Blue Moon"}, find("actor", "Ava Stone"))
	report, err := tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, report.Total())
	assert.Equal(t, int64(5), report.Entries, "two records in two intra-partition indexes, and Blue Moon under its actor")
}

// TestIntraPartitionUniqueIndex: on a partitioned store, a unique index
// that lies with its records is checked, where one that does not is
// refused when the table opens: no write could check its keys.
func TestIntraPartitionUniqueIndex(t *testing.T) {
	ctx := context.Background()
	for _, p := range []it.Placement{it.IntraPartition, it.InterPartition} {
		tbl, err := openFilms(t, partitionedStore(it.NewMemoryStore()),
			it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Unique: true, Placement: p})
		if p == it.InterPartition {
			require.ErrorIs(t, err, it.ErrInvalidSchema)
			require.ErrorContains(t, err, `unique index "year"`)
			continue
		}
		require.NoError(t, err)
		_, err = tbl.Insert(ctx, film{Genre: "Drama", Title: "A", Year: 2000})
		require.NoError(t, err)
		_, err = tbl.Insert(ctx, film{Genre: "Drama", Title: "B", Year: 2000})
		require.ErrorIs(t, err, it.ErrUniqueViolation)
		_, err = tbl.Insert(ctx, film{Genre: "Comedy", Title: "B", Year: 2000})
		require.NoError(t, err, "another partition, another key")
	}
}

// TestPlacementChangeRebuilds: a new placement is a new definition, whose
// entries are built anew where it puts them, and the old ones dropped.
func TestPlacementChangeRebuilds(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	count := func(space int64) int {
		prefix, err := kv.EncodeTuple("films", space)
		require.NoError(t, err)
		n := 0
		for _, err := range s.Scan(ctx, kv.ScanRange{Start: prefix, End: append(prefix, 0xff)}) {
			require.NoError(t, err)
			n++
		}
		return n
	}
	for i, p := range []it.Placement{it.InterPartition, it.IntraPartition, it.InterPartition} {
		tbl, err := openFilms(t, s, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Placement: p})
		require.NoError(t, err)
		if i == 0 {
			for _, title := range []string{"A", "B", "C"} {
				_, err := tbl.Insert(ctx, film{Genre: "Drama", Title: title, Year: 1990})
				require.NoError(t, err)
			}
		}
		require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
		st, err := tbl.IndexStatus(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(i+1), st[0].Generation, p)
		n, err := tbl.Count(ctx, it.Query{Index: "year", Eq: it.Tuple{"Drama", 1990}})
		require.NoError(t, err)
		assert.Equal(t, 3, n, p)
		inter, intra := count(1), count(5)
		if p == it.IntraPartition {
			inter, intra = intra, inter
		}
		assert.Equal(t, 3, inter, "%v: entries where it puts them", p)
		assert.Zero(t, intra, "%v: none left where the other placement put them", p)
	}
	// Opening it again looks for older generations' entries once in each
	// space, however many generations there were.
	counted := countingstore.New(s)
	_, err := openFilms(t, counted, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Placement: it.InterPartition})
	require.NoError(t, err)
	assert.EqualValues(t, 5, counted.Counts().Scans, "the catalog (reconciled, then for garbage), a record, and each space's old generations")

	// At the first generation there is nothing older to look for.
	counted = countingstore.New(it.NewMemoryStore())
	_, err = openFilms(t, counted, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}})
	require.NoError(t, err)
	assert.EqualValues(t, 3, counted.Counts().Scans, "the catalog (twice), and a record")
}

// TestBuildJoinsTheRecordsOfAPartition: on a partitioned store, Build
// indexes the records of one partition in one batch.
func TestBuildJoinsTheRecordsOfAPartition(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(partitionedStore(it.NewMemoryStore()))
	plain, err := openFilms(t, s)
	require.NoError(t, err)
	for i := range 30 {
		_, err := plain.Insert(ctx, film{Genre: []string{"Drama", "Comedy", "Sci-Fi"}[i/10], Title: fmt.Sprint(i), Year: 2000 + i%3})
		require.NoError(t, err)
	}
	tbl, err := openFilms(t, s, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}})
	require.NoError(t, err)
	before := s.Counts()
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 100}))
	assert.EqualValues(t, 1+3+2, s.Counts().Sub(before).Applies, "the move from delete-only, a batch a genre, then the cursor and the flip")
	n, err := tbl.Count(ctx, it.Query{Index: "year", Eq: it.Tuple{"Comedy", 2001}})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "10, 13, 16 and 19")
	requireNoDrift(t, tbl)
}

// TestBuildKeepsUniqueKeysApart: two records of one partition that share
// a key of a unique intra-partition index are not joined in one batch,
// where each would find the key free.
func TestBuildKeepsUniqueKeysApart(t *testing.T) {
	ctx := context.Background()
	s := partitionedStore(it.NewMemoryStore())
	plain, err := openFilms(t, s)
	require.NoError(t, err)
	for _, title := range []string{"A", "B"} {
		_, err := plain.Insert(ctx, film{Genre: "Drama", Title: title, Year: 2000})
		require.NoError(t, err)
	}
	tbl, err := openFilms(t, s, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Unique: true})
	require.NoError(t, err)
	require.ErrorIs(t, tbl.Build(ctx, it.BuildOptions{}), it.ErrUniqueViolation)
}

// racing runs hook, once, before the first batch that expects two records.
type racing struct {
	kv.Store
	hook func()
}

func (s *racing) Apply(ctx context.Context, b *kv.Batch) error {
	facts := 0
	for _, op := range b.Ops() {
		if k, ok := kv.ParseKey(op.Key); ok && k.Space == kv.SpaceRecords && k.Lead != nil && !op.IsWrite() {
			facts++
		}
	}
	if hook := s.hook; hook != nil && facts > 1 {
		s.hook = nil
		hook()
	}
	return s.Store.Apply(ctx, b)
}

// TestBuildRedoesAnOvertakenBatch: when a write overtakes a batch that
// joins a partition's records, Build indexes each of them again, as it
// now is.
func TestBuildRedoesAnOvertakenBatch(t *testing.T) {
	ctx := context.Background()
	s := &racing{Store: partitionedStore(it.NewMemoryStore())}
	plain, err := openFilms(t, s)
	require.NoError(t, err)
	for i := range 5 {
		_, err := plain.Insert(ctx, film{Genre: "Drama", Title: fmt.Sprint(i), Year: 2000})
		require.NoError(t, err)
	}
	tbl, err := openFilms(t, s, it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}})
	require.NoError(t, err)
	s.hook = func() {
		_, err := plain.Update(ctx, film{Genre: "Drama", Title: "3", Year: 2001})
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	require.Nil(t, s.hook, "the write raced the build")
	n, err := tbl.Count(ctx, it.Query{Index: "year", Eq: it.Tuple{"Drama", 2000}})
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = tbl.Count(ctx, it.Query{Index: "year", Eq: it.Tuple{"Drama", 2001}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	requireNoDrift(t, tbl)
}

// small bounds batches to a few operations, in one partition.
type small struct {
	*it.MemoryStore
	maxOps int
}

func (s small) Atomicity() kv.Atomicity { return kv.Atomicity{MaxOps: s.maxOps} }

// TestBuildOnAStoreWithSmallBatches: where not even one record and its
// entries fit a batch with the catalog, Build goes record by record, and
// through the queue for a record whose entries do not fit with it. Where a
// maintainer cannot apply such a change at all, Build says so and stops.
func TestBuildOnAStoreWithSmallBatches(t *testing.T) {
	ctx := context.Background()
	cast := []string{"Ava", "Ben", "Cara", "Dan", "Eve", "Finn"}
	for _, maxOps := range []int{6, 4} {
		s := small{it.NewMemoryStore(), maxOps}
		plain, err := openFilms(t, s)
		require.NoError(t, err)
		for i := range cast {
			_, err := plain.Insert(ctx, film{Genre: "Drama", Title: fmt.Sprint(i), Actors: cast[:i+1]})
			require.NoError(t, err)
		}
		tbl, err := openFilms(t, s, it.Index[film]{Name: "actor", Fields: []string{"Actors"}, MultiValued: true})
		require.NoError(t, err)
		err = tbl.Build(ctx, it.BuildOptions{})
		if maxOps == 4 {
			// Its last batch would expect the record and two change
			// records, and remove both: five operations.
			require.ErrorContains(t, err, `a change cannot be applied: record ("Drama", "3"): one change of the record does not fit`)
			continue
		}
		require.NoError(t, err)
		for i, actor := range cast {
			n, err := tbl.Count(ctx, it.Query{Index: "actor", Eq: it.Tuple{actor}})
			require.NoError(t, err)
			assert.Equal(t, len(cast)-i, n, actor)
		}
		requireNoDrift(t, tbl)
	}
}

// TestIntraPartitionReadChecksOnlyItsPartitionsQueue: a full-copy read of
// one partition through an intra-partition index trusts its entries
// whatever waits in other partitions' queues.
func TestIntraPartitionReadChecksOnlyItsPartitionsQueue(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(partitionedStore(it.NewMemoryStore()))
	tbl, err := openFilmsLeased(t, s, countLease,
		it.Index[film]{Name: "year", Fields: []string{"Genre", "Year"}, Strategy: it.FullCopy},
		it.Index[film]{Name: "actor", Fields: []string{"Actors"}, MultiValued: true})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, film{Genre: "Drama", Title: "D", Year: 2000, Actors: []string{"Ava"}})
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	for i := range 70 { // more changes than a read checks one by one
		_, err := tbl.Insert(ctx, film{Genre: "Comedy", Title: fmt.Sprint(i), Year: 2000, Actors: []string{"Ben"}})
		require.NoError(t, err)
	}
	before := s.Counts()
	got := collectFilms(t, tbl, it.Query{Index: "year", Eq: it.Tuple{"Drama", 2000}})
	c := s.Counts().Sub(before)
	assert.Equal(t, []string{"D"}, got)
	assert.Zero(t, c.Gets+c.GetManys, "no record fetched to check the entry")
	assert.EqualValues(t, 2, c.Scans, "the partition's queue, then the index")

	// Across partitions, every entry is checked.
	before = s.Counts()
	assert.Len(t, collectFilms(t, tbl, it.Query{Index: "year"}), 71)
	assert.NotZero(t, s.Counts().Sub(before).GetManys)
}

func collectFilms(t testing.TB, tbl *it.Table[film], q it.Query) []string {
	t.Helper()
	var titles []string
	for f, err := range tbl.Find(context.Background(), q) {
		require.NoError(t, err)
		titles = append(titles, f.Title)
	}
	return titles
}
