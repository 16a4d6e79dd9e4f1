package indextable_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/faultstore"
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

func openWith(t testing.TB, s it.Store, indexes ...it.Index[person]) *it.Table[person] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
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
func indexNames(t testing.TB, s it.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := range storeDump(t, s) {
		if tup, err := it.DecodeTuple([]byte(k)); err == nil && tup[1] == int64(1) {
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
	require.Empty(t, indexNames(t, s), "the old definitions' entries are gone")
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
	require.Equal(t, map[string]int{"name@1": 10}, indexNames(t, s))
	_, err := tbl.Count(ctx, it.Query{Index: "town"})
	require.ErrorIs(t, err, it.ErrIndexNotReadable)
	assert.Contains(t, err.Error(), "disabled")

	// Disabled: not maintained.
	_, err = tbl.Update(ctx, person{ID: 1, Town: "Elsewhere", Name: "x"})
	require.NoError(t, err)
	model[1] = person{ID: 1, Town: "Elsewhere", Name: "x"}
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
	assert.True(t, strings.Contains(err.Error(), "[0] and [1]"), err.Error())
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

// TestDroppedGenerationsAreNeverReused: a crash after the catalog dropped
// an index but before its entries were deleted; the index comes back
// later, at a new generation, and the old entries are gone.
func TestDroppedGenerationsAreNeverReused(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	town := indexByName("town_name")
	tbl := openWith(t, mem, town)
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R", Name: fmt.Sprint("n", i)})
		require.NoError(t, err)
	}
	fs := faultstore.New(mem)
	fs.CrashAt(faultstore.Apply, 2, false) // the catalog applies, the deletion does not
	_, err := it.Open(ctx, fs, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}})
	require.ErrorIs(t, err, faultstore.ErrCrashed)
	require.Equal(t, map[string]int{"town_name@1": 3}, indexNames(t, mem))

	plain := openWith(t, mem) // the restart finishes the drop
	require.Empty(t, indexNames(t, mem))
	require.NoError(t, plain.Delete(ctx, it.Tuple{1}))
	again := openWith(t, mem, town)
	require.Equal(t, int64(2), statusOf(t, again)["town_name"].Generation)
	require.NoError(t, again.Build(ctx, it.BuildOptions{}))
	require.Len(t, collect(t, again, it.Query{Index: "town_name", Eq: it.Tuple{"R"}}), 2)
	requireNoDrift(t, again)
}

// TestMaintainerOfAnOlderSchemaStops: a maintainer whose table was opened
// before an index was added would apply changes without it; it stops.
func TestMaintainerOfAnOlderSchemaStops(t *testing.T) {
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
	_, err = old.ApplyPending(ctx, it.MaintainerOptions{})
	require.ErrorIs(t, err, it.ErrInvalidSchema)
	require.ErrorIs(t, old.RunMaintainer(ctx, it.MaintainerOptions{}), it.ErrInvalidSchema)
	storetest.Drain(t, current)
	require.Len(t, collect(t, current, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1)
}

// TestBuildFitsChunksToTheAtomicityScope: a store that takes at most ten
// operations a batch gets chunks small enough.
func TestBuildFitsChunksToTheAtomicityScope(t *testing.T) {
	ctx := context.Background()
	s := scopedStore{it.NewMemoryStore(), it.Atomicity{MaxOps: 10}}
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
		store   it.Store
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

// TestOlderHandleRefusedOnUnboundedStores: two handles of one table on a
// store of unbounded atomicity, the second opened with a newer schema.
// Every write carries the schema version it planned at, so a handle that
// missed a change of the indexes cannot commit: once the newer handle
// added or dropped an index, the older one's writes fail with
// ErrStaleSchema and change nothing (before, they went through without
// the new index's entries, or left entries in a dropped one); a disabling
// or an enabling by the other handle holds for its next write at once.
func TestOlderHandleRefusedOnUnboundedStores(t *testing.T) {
	ctx := context.Background()
	town, name := indexByName("town"), indexByName("name")
	stores := map[string]func(t *testing.T) it.Store{
		"memory": func(*testing.T) it.Store { return it.NewMemoryStore() },
	}
	for storeName, open := range stores {
		t.Run(storeName+"/add", func(t *testing.T) {
			s := open(t)
			older := openWith(t, s, town)
			_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
			require.NoError(t, err)
			newer := openWith(t, s, town, name)
			_, err = older.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
			require.ErrorIs(t, err, it.ErrStaleSchema)
			_, err = older.Get(ctx, 2)
			require.ErrorIs(t, err, it.ErrNotFound, "the refused write changed nothing")
			require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
			_, err = newer.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
			require.NoError(t, err)
			rep, err := newer.Verify(ctx, it.VerifyOptions{})
			require.NoError(t, err)
			require.Zero(t, rep.Total(), "%v", rep.Samples)
			require.Len(t, collect(t, newer, it.Query{Index: "name", Eq: it.Tuple{"B"}}), 1)
		})
		t.Run(storeName+"/drop", func(t *testing.T) {
			s := open(t)
			older := openWith(t, s, town, name)
			newer := openWith(t, s, town)
			_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
			require.ErrorIs(t, err, it.ErrStaleSchema)
			require.Empty(t, keysIn(t, s, it.SpaceIndex), "no entry of the dropped index, nor any other")
			_, err = newer.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
			require.NoError(t, err)
		})
		t.Run(storeName+"/disable", func(t *testing.T) {
			s := open(t)
			one := openWith(t, s, town, name)
			other := openWith(t, s, town, name)
			require.NoError(t, other.DisableIndex(ctx, "name"))
			_, err := one.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
			require.NoError(t, err, "a disabling elsewhere is taken up, not refused")
			require.NoError(t, other.EnableIndex(ctx, "name"))
			_, err = one.Insert(ctx, person{ID: 2, Town: "Oslo", Name: "B"})
			require.NoError(t, err)
			require.NoError(t, other.Build(ctx, it.BuildOptions{}))
			rep, err := other.Verify(ctx, it.VerifyOptions{})
			require.NoError(t, err)
			require.Zero(t, rep.Total(), "%v", rep.Samples)
			require.Len(t, collect(t, other, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1)
		})
	}
}
