package indextable_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

func indexByName(name string) it.Index[person] {
	for _, ix := range personIndexes() {
		if ix.Name == name {
			return ix
		}
	}
	panic(name)
}

func openWith(t testing.TB, s kv.Store, indexes ...it.Index[person]) *it.Table[person] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
	require.NoError(t, err)
	return tbl
}

func statusOf(t testing.TB, tbl *it.Table[person]) map[string]it.IndexStatus {
	t.Helper()
	list, err := tbl.IndexStatus(context.Background())
	require.NoError(t, err)
	out := map[string]it.IndexStatus{}
	for _, s := range list {
		out[s.Name] = s
	}
	return out
}

// indexNames returns the index names that have entries in s.
func indexNames(t testing.TB, s kv.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := range storeDump(t, s) {
		if tup, err := kv.DecodeTuple([]byte(k)); err == nil && tup[1] == int64(1) {
			out[fmt.Sprintf("%v@%v", tup[2], tup[3])]++
		}
	}
	return out
}

func TestCatalogDetectsSchemaChanges(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()

	// An empty table makes its indexes readable at once.
	tbl := openWith(t, s, indexByName("town"), indexByName("tags"))
	st := statusOf(t, tbl)
	require.Equal(t, it.IndexReadable, st["town"].State)
	model := map[int]person{}
	for i := range 20 {
		p := person{ID: i, Name: fmt.Sprint("n", i%4), Town: towns[i%3], Tags: []string{"a"}, Email: fmt.Sprint(i, "@e"), Score: i}
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
		model[i] = p
	}
	require.Equal(t, map[string]int{"town@1": 20, "tags@1": 20}, indexNames(t, s))

	// Reopening with the same schema changes nothing.
	before := storeDump(t, s)
	tbl = openWith(t, s, indexByName("town"), indexByName("tags"))
	require.Equal(t, before, storeDump(t, s))
	require.Equal(t, st, statusOf(t, tbl))

	// Town changes strategy, tags goes, name and email come.
	town := indexByName("town")
	town.Strategy = it.FullCopy
	tbl = openWith(t, s, town, indexByName("name"), indexByName("email"))
	st = statusOf(t, tbl)
	require.Equal(t, it.IndexStatus{Name: "town", State: it.IndexWriteOnly, Generation: 2, Placement: it.InterPartition}, st["town"])
	require.Equal(t, it.IndexWriteOnly, st["name"].State)
	require.Equal(t, it.IndexWriteOnly, st["email"].State)
	require.Equal(t, map[string]int{"town@1": 20, "tags@1": 20}, indexNames(t, s), "the old definitions' entries, for handles that may still read them")
	for _, name := range []string{"town", "name", "email"} {
		_, _, err := tbl.FindPage(ctx, it.Query{Index: name, Limit: 1})
		require.ErrorIs(t, err, it.ErrIndexNotReadable)
		assert.Contains(t, err.Error(), "write-only")
		_, err = tbl.Count(ctx, it.Query{Index: name})
		require.ErrorIs(t, err, it.ErrIndexNotReadable)
	}

	// Writes maintain write-only indexes while they wait for Build.
	p := person{ID: 100, Name: "late", Town: "Seattle", Email: "late@e"}
	_, err := tbl.Insert(ctx, p)
	require.NoError(t, err)
	model[100] = p
	var progress []it.BuildProgress
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 6, Progress: func(p it.BuildProgress) { progress = append(progress, p) }}))
	require.Equal(t, map[string]int{"town@2": 21, "name@1": 21, "email@1": 21}, indexNames(t, s), "Build deleted the old definitions' entries")
	st = statusOf(t, tbl)
	for _, name := range []string{"town", "name", "email"} {
		require.Equal(t, it.IndexReadable, st[name].State, name)
		require.Equal(t, int64(21), st[name].Done)
		require.Equal(t, int64(21), st[name].Total)
		if name != "town" {
			checkIndex(t, tbl, model, name, nil)
		}
	}
	var wantTown []person // a full copy now: covered reads return all
	for _, e := range modelScan("town", model, nil) {
		wantTown = append(wantTown, e.p)
	}
	require.Equal(t, normalize(wantTown), normalize(collect(t, tbl, it.Query{Index: "town", Covered: true})))
	require.Len(t, progress, 3*(4+1)) // four chunks and the flip, per index
	last := progress[len(progress)-1]
	require.Equal(t, it.BuildProgress{Index: "email", Done: 21, Total: 21, Readable: true}, last)

	// A computed key is rebuilt when its Version changes.
	parity := indexByName("score_parity")
	tbl = openWith(t, s, parity)
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	tbl = openWith(t, s, parity)
	require.Equal(t, int64(1), statusOf(t, tbl)["score_parity"].Generation)
	parity.Version = 2
	tbl = openWith(t, s, parity)
	require.Equal(t, it.IndexStatus{Name: "score_parity", State: it.IndexWriteOnly, Generation: 2, Placement: it.InterPartition}, statusOf(t, tbl)["score_parity"])
}

// TestReadableStateReachesOtherTables checks that a table opened before a
// build finished elsewhere reads the index once it is readable.
func TestReadableStateReachesOtherTables(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openWith(t, s)
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R"})
	require.NoError(t, err)
	a := openWith(t, s, indexByName("town"))
	b := openWith(t, s, indexByName("town"))
	_, err = b.Count(ctx, it.Query{Index: "town"})
	require.ErrorIs(t, err, it.ErrIndexNotReadable)
	require.NoError(t, a.Build(ctx, it.BuildOptions{}))
	n, err := b.Count(ctx, it.Query{Index: "town"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestDisableAndEnableIndex(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openWith(t, s, indexByName("town"), indexByName("name"))
	model := map[int]person{}
	for i := range 10 {
		p := person{ID: i, Town: towns[i%3], Name: "x"}
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
		model[i] = p
	}
	require.NoError(t, tbl.DisableIndex(ctx, "town"))
	require.Equal(t, map[string]int{"town@1": 10, "name@1": 10}, indexNames(t, s), "other handles may read them for two leases")
	_, err := tbl.Count(ctx, it.Query{Index: "town"})
	require.ErrorIs(t, err, it.ErrIndexNotReadable)
	assert.Contains(t, err.Error(), "disabled")

	// Disabled: not maintained.
	_, err = tbl.Update(ctx, person{ID: 1, Town: "Elsewhere", Name: "x"})
	require.NoError(t, err)
	model[1] = person{ID: 1, Town: "Elsewhere", Name: "x"}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}), "Build waits out the lease and deletes them")
	require.Equal(t, map[string]int{"name@1": 10}, indexNames(t, s))

	// The disabled state survives reopening.
	tbl = openWith(t, s, indexByName("town"), indexByName("name"))
	require.Equal(t, it.IndexDisabled, statusOf(t, tbl)["town"].State)

	require.NoError(t, tbl.EnableIndex(ctx, "town"))
	require.Equal(t, it.IndexStatus{Name: "town", State: it.IndexWriteOnly, Generation: 2, Placement: it.InterPartition}, statusOf(t, tbl)["town"])
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	checkIndex(t, tbl, model, "town", nil)
	require.ErrorIs(t, tbl.DisableIndex(ctx, "nope"), it.ErrInvalidSchema)
}

func TestBuildStopsAtAUniqueViolation(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openWith(t, s)
	for i := range 10 {
		_, err := tbl.Insert(ctx, person{ID: i, Email: fmt.Sprint(i%9, "@e")})
		require.NoError(t, err)
	}
	tbl = openWith(t, s, indexByName("email"))
	err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 4})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	assert.Contains(t, err.Error(), "0@e")
	require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["email"].State)

	// Within one chunk too.
	s = it.NewMemoryStore()
	tbl = openWith(t, s)
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Email: "same"})
		require.NoError(t, err)
	}
	tbl = openWith(t, s, indexByName("email"))
	err = tbl.Build(ctx, it.BuildOptions{})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	assert.True(t, strings.Contains(err.Error(), "(0) and (1)"), err.Error())
}

// TestConsistencyChangeRebuilds switches an index from eventual to
// synchronous while changes are queued: the index is rebuilt, so the
// queued changes cannot be lost.
func TestConsistencyChangeRebuilds(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	town := indexByName("town")
	town.Consistency = it.Eventual
	tbl := openWith(t, s, town)
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R"})
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	_, err = tbl.Update(ctx, person{ID: 1, Town: "S"})
	require.NoError(t, err)

	tbl = openWith(t, s, indexByName("town"))
	require.Equal(t, it.IndexStatus{Name: "town", State: it.IndexWriteOnly, Generation: 2, Placement: it.InterPartition}, statusOf(t, tbl)["town"])
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	storetest.Drain(t, tbl)
	checkIndex(t, tbl, map[int]person{1: {ID: 1, Town: "S"}}, "town", nil)
	requireNoDrift(t, tbl)
}

// TestDroppedGenerationsAreNeverReused: an index is dropped, and its
// entries stay while handles of the older schema may read them; it comes
// back, at a new generation, before they are deleted, and they never show
// in it.
func TestDroppedGenerationsAreNeverReused(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	town := indexByName("town_name")
	tbl := openWith(t, mem, town)
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R", Name: fmt.Sprint("n", i)})
		require.NoError(t, err)
	}
	plain := openWith(t, mem) // drops the index
	require.Equal(t, map[string]int{"town_name@1": 3}, indexNames(t, mem))
	require.NoError(t, plain.Delete(ctx, it.Tuple{1}))
	again := openWith(t, mem, town)
	require.Equal(t, int64(2), statusOf(t, again)["town_name"].Generation)
	time.Sleep(testLease) // the first handle's view is older than half a lease: it reads the catalog again
	_, err := tbl.Count(ctx, it.Query{Index: "town_name"})
	require.ErrorIs(t, err, it.ErrIndexNotReadable, "the first handle learnt the new generation, write-only")
	require.NoError(t, again.Build(ctx, it.BuildOptions{}))
	require.Equal(t, map[string]int{"town_name@2": 2}, indexNames(t, mem))
	require.Len(t, collect(t, again, it.Query{Index: "town_name", Eq: it.Tuple{"R"}}), 2)
	requireNoDrift(t, again)
}

// TestMaintainerOfAnOlderSchema: a maintainer whose table was opened
// before an index was added maintains it too, learnt from the catalog;
// one that cannot (a Key func) stops with ErrStaleSchema.
func TestMaintainerOfAnOlderSchema(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	town := indexByName("town")
	town.Consistency = it.Eventual
	old := openWith(t, s, town)
	name := indexByName("name")
	name.Consistency = it.Eventual
	current := openWith(t, s, town, name)
	_, err := current.Insert(ctx, person{ID: 1, Town: "R", Name: "A"})
	require.NoError(t, err)
	n, err := old.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, current.Build(ctx, it.BuildOptions{}))
	require.Len(t, collect(t, current, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1)
	requireNoDrift(t, current)

	upper := it.Index[person]{Name: "upper", Consistency: it.Eventual, Key: func(p person) []it.Tuple { return []it.Tuple{{strings.ToUpper(p.Name)}} }}
	newest := openWith(t, s, town, name, upper)
	_, err = newest.Insert(ctx, person{ID: 2, Town: "R", Name: "b"})
	require.NoError(t, err)
	_, err = old.ApplyPending(ctx, it.MaintainerOptions{})
	require.ErrorIs(t, err, it.ErrStaleSchema)
	require.ErrorIs(t, old.RunMaintainer(ctx, it.MaintainerOptions{}), it.ErrStaleSchema)
	storetest.Drain(t, newest)
	require.NoError(t, newest.Build(ctx, it.BuildOptions{}))
	require.Len(t, collect(t, newest, it.Query{Index: "upper", Eq: it.Tuple{"B"}}), 1)
}

// TestBuildFitsChunksToTheAtomicityScope: a store that takes at most ten
// operations a batch gets chunks small enough.
func TestBuildFitsChunksToTheAtomicityScope(t *testing.T) {
	ctx := context.Background()
	s := scopedStore{it.NewMemoryStore(), kv.Atomicity{MaxOps: 10}}
	plain := openWith(t, s)
	for i := range 30 {
		_, err := plain.Insert(ctx, person{ID: i, Town: towns[i%3]})
		require.NoError(t, err)
	}
	tbl := openWith(t, s, indexByName("town"))
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	requireNoDrift(t, tbl)
}

// TestDisableAndEnableBesideWrites switches an index off and on while
// writes run: no write may see half a change of the table's indexes (it
// panicked, and raced, when a write read the index states twice), and
// once the index is built again it must hold exactly the records' entries.
func TestDisableAndEnableBesideWrites(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		store   kv.Store
		indexes []string // the first two are switched
	}{
		{it.NewMemoryStore(), []string{"town", "email", "town_name"}},
		// A unique index there must lead with the partition: none.
		{partitionedStore(it.NewMemoryStore()), []string{"town", "tags", "town_name"}},
	} {
		var indexes []it.Index[person]
		for _, name := range tc.indexes {
			indexes = append(indexes, indexByName(name))
		}
		tbl := openWith(t, tc.store, indexes...)
		stop := make(chan struct{})
		switched := make(chan error, 1)
		go func() {
			defer close(switched)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := tc.indexes[i%2]
				if err := tbl.DisableIndex(ctx, name); err != nil {
					switched <- err
					return
				}
				if err := tbl.EnableIndex(ctx, name); err != nil {
					switched <- err
					return
				}
			}
		}()
		model := map[int]person{}
		for i := range 400 {
			p := person{ID: i % 7, Town: towns[i%3], Name: fmt.Sprint(i % 5), Email: fmt.Sprint("e", i), Tags: []string{fmt.Sprint(i % 4)}}
			_, err := tbl.Upsert(ctx, p)
			require.NoError(t, err)
			model[p.ID] = p
		}
		close(stop)
		require.NoError(t, <-switched)
		require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
		storetest.Drain(t, tbl)
		requireNoDrift(t, tbl)
		for _, name := range tc.indexes {
			checkIndex(t, tbl, model, name, nil)
		}
	}
}

// TestCatalogEntryThatIsNoTupleIsACodecError: stored bytes that do
// not decode are ErrCodec everywhere else (a usage record, an index
// definition, a change record); a catalog entry that is no tuple matched
// only ErrMalformedKey.
func TestCatalogEntryThatIsNoTupleIsACodecError(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openAges(t, s, it.Index[ageRec]{Name: "age", Fields: []string{"Age"}})
	putRaw(t, s, mustKey(t, "r2", 2, "age"), []byte{0xff, 0xff})
	_, err := tbl.IndexStatus(ctx)
	require.Error(t, err)
	t.Log(err)
	assert.ErrorIs(t, err, it.ErrCodec, "a catalog entry that does not decode")
}

// testLease is the SchemaLease of tests whose lifecycle steps wait for
// other handles: short, so that they do not wait long.
const testLease = 20 * time.Millisecond

// countLease is the SchemaLease of tests that count a store's operations:
// long, so that no view is read again while they count.
const countLease = time.Hour

// TestOlderHandleOnUnboundedStores: two handles of one table on a store of
// unbounded atomicity, the second opened with a newer schema. Every write
// carries the schema version it planned at, so a handle that missed a
// change of the indexes cannot commit without it: once the newer handle
// added an index, the older one's writes maintain it too (before, they
// went through without its entries); once it dropped one, they leave it
// be; a disabling or an enabling holds for the next write at once. An
// added index with a Key func, which the older program cannot compute,
// makes its writes fail with ErrStaleSchema and change nothing.
func TestOlderHandleOnUnboundedStores(t *testing.T) {
	ctx := context.Background()
	town, name := indexByName("town"), indexByName("name")
	computed := it.Index[person]{Name: "upper", Key: func(p person) []it.Tuple { return []it.Tuple{{strings.ToUpper(p.Name)}} }}
	open := func(s kv.Store, indexes ...it.Index[person]) *it.Table[person] {
		tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
		require.NoError(t, err)
		return tbl
	}
	t.Run("add", func(t *testing.T) {
		s := it.NewMemoryStore()
		older := open(s, town)
		_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
		require.NoError(t, err)
		newer := open(s, town, name)
		_, err = older.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
		require.NoError(t, err, "the older handle learns the index from the catalog")
		require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
		_, err = older.Update(ctx, person{ID: 2, Town: "Oslo", Name: "C"})
		require.NoError(t, err)
		requireClean(t, newer)
		require.Len(t, collect(t, newer, it.Query{Index: "name", Eq: it.Tuple{"C"}}), 1)
		require.Empty(t, collect(t, newer, it.Query{Index: "name", Eq: it.Tuple{"B"}}))
		require.Len(t, collect(t, older, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1, "the older handle reads it too")
	})
	t.Run("add a Key func", func(t *testing.T) {
		s := it.NewMemoryStore()
		older := open(s, town)
		newer := open(s, town, computed)
		_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "a"})
		require.ErrorIs(t, err, it.ErrStaleSchema)
		_, err = older.Get(ctx, 1)
		require.ErrorIs(t, err, it.ErrNotFound, "the refused write changed nothing")
		require.Empty(t, collect(t, older, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}}), "reads go on")
		_, err = newer.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "a"})
		require.NoError(t, err)
		requireClean(t, newer)
	})
	t.Run("drop", func(t *testing.T) {
		s := it.NewMemoryStore()
		older := open(s, town, name)
		_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
		require.NoError(t, err)
		newer := open(s, town)
		_, err = older.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
		require.NoError(t, err)
		_, err = older.Count(ctx, it.Query{Index: "name"})
		require.ErrorIs(t, err, it.ErrIndexNotReadable)
		require.NoError(t, newer.Build(ctx, it.BuildOptions{}), "Build deletes the dropped index's entries")
		_, err = older.Insert(ctx, person{ID: 3, Town: "Oslo", Name: "C"})
		require.NoError(t, err)
		requireClean(t, newer)
		require.Len(t, keysIn(t, s, kv.SpaceIndex), 3, "the entries of town, none of the dropped index")
	})
	t.Run("an older revision reopens", func(t *testing.T) {
		s := it.NewMemoryStore()
		openRev := func(rev int64, indexes ...it.Index[person]) *it.Table[person] {
			tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, SchemaLease: testLease, Revision: rev})
			require.NoError(t, err)
			return tbl
		}
		_, err := openRev(1, town).Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
		require.NoError(t, err)
		newer := openRev(2, town, name)
		before := statusOf(t, newer)
		older := openRev(1, town) // restarted during the deploy: leaves the catalog be
		require.Equal(t, before, statusOf(t, newer))
		_, err = older.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
		require.NoError(t, err)
		require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
		requireClean(t, newer)
		require.Len(t, collect(t, older, it.Query{Index: "name", Eq: it.Tuple{"B"}}), 1)
		openRev(3, town)      // the next release drops it
		time.Sleep(testLease) // older reads the catalog again at its next read
		_, err = older.Count(ctx, it.Query{Index: "name"})
		require.ErrorIs(t, err, it.ErrIndexNotReadable)
	})
	t.Run("disable", func(t *testing.T) {
		s := it.NewMemoryStore()
		one := open(s, town, name)
		other := open(s, town, name)
		require.NoError(t, other.DisableIndex(ctx, "name"))
		_, err := one.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
		require.NoError(t, err, "a disabling elsewhere is taken up, not refused")
		require.NoError(t, other.EnableIndex(ctx, "name"))
		_, err = one.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
		require.NoError(t, err)
		require.NoError(t, other.Build(ctx, it.BuildOptions{}))
		requireClean(t, other)
		require.Len(t, collect(t, other, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1)
	})
}

// requireClean requires that Verify finds nothing wrong with tbl.
func requireClean(t testing.TB, tbl *it.Table[person]) {
	t.Helper()
	rep, err := tbl.Verify(context.Background(), it.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "%v", rep.Samples)
}
