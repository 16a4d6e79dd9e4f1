package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestOnlineSchemaChange: writers keep writing through a handle of the
// older schema while a handle of a newer one adds an index and builds it,
// then while a third drops it. After Build, Verify is clean and every
// query of the new index, through either handle, equals a brute-force
// scan; after the drop's Build, none of its entries is left. On the memory
// store the writes expect the schema version; on a ShardedStore they
// cannot, and the lease protocol (delete-only, write-only, each held for
// two leases) keeps them right.
func TestOnlineSchemaChange(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) kv.Store
	}{
		{"memory", func(*testing.T) kv.Store { return it.NewMemoryStore() }},
		{"sharded", func(t *testing.T) kv.Store { return newShardedMemory(t, 3) }},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.open(t)
			// The protocol takes a write to commit within a lease of its
			// view's check: half a second leaves a slow machine room.
			open := func(indexes ...it.Index[person]) *it.Table[person] {
				tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, SchemaLease: 500 * time.Millisecond})
				require.NoError(t, err)
				return tbl
			}
			town, name := indexByName("town"), indexByName("name")
			older := open(town)
			for i := range 60 {
				_, err := older.Insert(ctx, person{ID: i, Town: towns[i%3], Name: fmt.Sprint("n", i%7)})
				require.NoError(t, err)
			}

			stop := writeThrough(t, older, 60)
			newer := open(town, name)
			require.NoError(t, newer.Build(ctx, it.BuildOptions{ChunkSize: 8}))
			stop()
			storetest.Drain(t, newer)
			requireClean(t, newer)
			for _, tbl := range []*it.Table[person]{newer, older} {
				for v := range 8 {
					want := bruteForce(t, newer, func(p person) bool { return p.Name == fmt.Sprint("n", v) })
					require.Equal(t, want, ids(collect(t, tbl, it.Query{Index: "name", Eq: it.Tuple{fmt.Sprint("n", v)}})), "name n%d", v)
				}
			}

			stop = writeThrough(t, newer, 60)
			dropper := open(town)
			require.NoError(t, dropper.Build(ctx, it.BuildOptions{}))
			stop()
			storetest.Drain(t, dropper)
			requireClean(t, dropper)
			require.NotContains(t, indexNames(t, s), "name@1", "no entry of the dropped index is left")
		})
	}
}

// writeThrough starts two writers that upsert, update and delete records
// 0 to n-1 of tbl until the returned stop is called, which waits for them
// and fails the test on any error but the outcomes of racing writes.
func writeThrough(t *testing.T, tbl *it.Table[person], n int) (stop func()) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				id := (i*7 + w*13) % n
				var err error
				if i%5 == 0 {
					err = tbl.Delete(ctx, it.Tuple{id})
				} else {
					_, err = tbl.Upsert(ctx, person{ID: id, Town: towns[(i+w)%3], Name: fmt.Sprint("n", (i+w)%8)})
				}
				if err != nil && !errors.Is(err, it.ErrConflict) && !errors.Is(err, it.ErrNotFound) {
					errs <- err
					return
				}
			}
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
}

// bruteForce returns the IDs of tbl's records that match, from a scan of
// the fact table.
func bruteForce(t *testing.T, tbl *it.Table[person], match func(person) bool) []int {
	var out []int
	for _, p := range collect(t, tbl, it.Query{}) {
		if match(p) {
			out = append(out, p.ID)
		}
	}
	slices.Sort(out)
	return out
}

// ids returns the sorted IDs of people.
func ids(people []person) []int {
	var out []int
	for _, p := range people {
		out = append(out, p.ID)
	}
	slices.Sort(out)
	return out
}

// catalogOutage fails every scan of the catalog while down is set.
type catalogOutage struct {
	kv.Store
	down atomic.Bool
}

var errOutage = errors.New("catalog unreachable")

func (s *catalogOutage) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if k, ok := kv.ParseKey(r.Start); ok && k.Space == kv.SpaceCatalog && s.down.Load() {
		return func(yield func(kv.Entry, error) bool) { yield(kv.Entry{}, errOutage) }
	}
	return s.Store.Scan(ctx, r)
}

// TestStaleViewRefusesWrites: a handle that cannot read the catalog keeps
// writing on its view while the view is within its lease, refuses writes
// with ErrStaleSchema once it is older, changing nothing, and writes again
// as soon as it can read the catalog.
func TestStaleViewRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s := &catalogOutage{Store: it.NewMemoryStore()}
	const lease = 50 * time.Millisecond
	tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{indexByName("town")}, SchemaLease: lease})
	require.NoError(t, err)
	s.down.Store(true)
	start := time.Now()
	_, err = tbl.Insert(ctx, person{ID: 1, Town: "Oslo"})
	if time.Since(start) < lease/2 { // (a slow machine may already be past it)
		require.NoError(t, err, "a view within half its lease is not read again")
	}
	time.Sleep(lease)
	_, err = tbl.Insert(ctx, person{ID: 2, Town: "Oslo"})
	require.ErrorIs(t, err, it.ErrStaleSchema)
	require.ErrorIs(t, err, errOutage)
	_, err = tbl.Get(ctx, 2)
	require.ErrorIs(t, err, it.ErrNotFound, "the refused write changed nothing")
	s.down.Store(false)
	_, err = tbl.Insert(ctx, person{ID: 2, Town: "Oslo"})
	require.NoError(t, err)
	requireClean(t, tbl)
}

// TestDisableElsewhereWithinTheLease: on a ShardedStore, where writes
// cannot expect the schema version, a DisableIndex through one handle
// holds for another's reads and writes once its view is half a lease old;
// an EnableIndex too, and after Build the index is exact.
func TestDisableElsewhereWithinTheLease(t *testing.T) {
	ctx := context.Background()
	s := newShardedMemory(t, 2)
	open := func() *it.Table[person] {
		tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{indexByName("town")}, SchemaLease: testLease})
		require.NoError(t, err)
		return tbl
	}
	one, other := open(), open()
	_, err := other.Insert(ctx, person{ID: 1, Town: "Oslo"})
	require.NoError(t, err)
	require.NoError(t, one.DisableIndex(ctx, "town"))
	time.Sleep(testLease)
	_, err = other.Count(ctx, it.Query{Index: "town"})
	require.ErrorIs(t, err, it.ErrIndexNotReadable)
	_, err = other.Update(ctx, person{ID: 1, Town: "Bergen"})
	require.NoError(t, err)
	require.NoError(t, one.EnableIndex(ctx, "town"))
	require.Equal(t, it.IndexDeleteOnly, statusOf(t, one)["town"].State)
	time.Sleep(testLease)
	_, err = other.Insert(ctx, person{ID: 2, Town: "Oslo"})
	require.NoError(t, err)
	require.NoError(t, one.Build(ctx, it.BuildOptions{}))
	requireClean(t, other)
	require.Equal(t, []int{2}, ids(collect(t, other, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}})))
	require.Equal(t, []int{1}, ids(collect(t, other, it.Query{Index: "town", Eq: it.Tuple{"Bergen"}})))
}

type revHookStore struct {
	kv.Store
	onScan func()
	armed  atomic.Bool
}

const hookLimit = 7

func (h *revHookStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if r.Limit == hookLimit && h.armed.CompareAndSwap(true, false) {
		h.onScan()
	}
	return h.Store.Scan(ctx, r)
}

// TestBuildOfAnIndexDroppedElsewhere: a Build on a partitioned store whose
// index another process drops while the build scans a chunk, and whose
// view learns the drop meanwhile, stops without writing (it dereferenced
// the index gone from the view).
func TestBuildOfAnIndexDroppedElsewhere(t *testing.T) {
	ctx := context.Background()
	h := &revHookStore{Store: newShardedMemory(t, 3)}
	lease := 5 * time.Millisecond
	open := func(ixs ...it.Index[person]) *it.Table[person] {
		tbl, err := it.Open(ctx, h, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: ixs, SchemaLease: lease})
		require.NoError(t, err)
		return tbl
	}
	base := open(indexByName("town"))
	for i := range 20 {
		_, err := base.Insert(ctx, person{ID: i, Town: towns[i%3], Name: fmt.Sprint("n", i)})
		require.NoError(t, err)
	}
	a := open(indexByName("town"), indexByName("name"))
	h.onScan = func() {
		open(indexByName("town")) // another process drops "name"
		time.Sleep(2 * lease)
		_, err := a.Insert(ctx, person{ID: 100, Town: "x", Name: "y"}) // a's view learns it
		require.NoError(t, err)
	}
	h.armed.Store(true)
	err := a.Build(ctx, it.BuildOptions{ChunkSize: hookLimit})
	t.Log("Build:", err)
	require.NotContains(t, indexNames(t, h), "name@1", "nothing built, and what there was deleted")
}

// TestIndexAddedAfterASchemaWithoutIndexes: a handle of a schema without
// indexes writes a table; another process adds an index to the (still
// empty) table. The first Open wrote a schema version, so the index does
// not start readable (it did on a ShardedStore, and missed the first
// handle's inserts within its lease).
func TestIndexAddedAfterASchemaWithoutIndexes(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) { addAfterNoIndexes(t, sharded) })
	}
}

func addAfterNoIndexes(t *testing.T, sharded bool) {
	ctx := context.Background()
	var s kv.Store = it.NewMemoryStore()
	if sharded {
		s = newShardedMemory(t, 3)
	}
	open := func(ixs ...it.Index[person]) *it.Table[person] {
		tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: ixs, SchemaLease: 200 * time.Millisecond})
		require.NoError(t, err)
		return tbl
	}
	older := open() // no indexes, yet a schema version
	newer := open(indexByName("name"))
	st := statusOf(t, newer)
	t.Log("name is", st["name"].State)
	_, err := older.Insert(ctx, person{ID: 1, Name: "A"}) // within older's lease
	require.NoError(t, err)
	require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
	requireClean(t, newer)
	require.Len(t, collect(t, newer, it.Query{Index: "name", Eq: it.Tuple{"A"}}), 1)
}

// afterScanStore runs after() once, when armed, after a scan with Limit 1
// has yielded all it had.
type afterScanStore struct {
	kv.Store
	after func()
	armed atomic.Bool
}

func (h *afterScanStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	inner := h.Store.Scan(ctx, r)
	if r.Limit != 1 || !h.armed.CompareAndSwap(true, false) {
		return inner
	}
	return func(yield func(kv.Entry, error) bool) {
		for e, err := range inner {
			if !yield(e, err) {
				break
			}
		}
		h.after()
	}
}

// TestEmptyTableRacingAnOlderInsert: an older handle inserts between
// Open's check that the table is empty and its commit of a new index. The
// index starts write-only on a table that had a schema, so the insert is
// not left out of a readable index (it was, on the memory store).
func TestEmptyTableRacingAnOlderInsert(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprint("sharded=", sharded), func(t *testing.T) {
			ctx := context.Background()
			var inner kv.Store = it.NewMemoryStore()
			if sharded {
				inner = newShardedMemory(t, 3)
			}
			h := &afterScanStore{Store: inner}
			open := func(ixs ...it.Index[person]) *it.Table[person] {
				tbl, err := it.Open(ctx, h, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: ixs, SchemaLease: 200 * time.Millisecond})
				require.NoError(t, err)
				return tbl
			}
			older := open(indexByName("town"))
			h.after = func() {
				_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "A"})
				require.NoError(t, err)
			}
			h.armed.Store(true)
			newer := open(indexByName("town"), indexByName("name"))
			t.Log("name is", statusOf(t, newer)["name"].State)
			require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
			requireClean(t, newer)
		})
	}
}

// TestWhatOtherHandlesLearn: what a handle does with the catalog of
// another: its Verify checks, and its Build builds, an index that the other
// added, though its own view has not been read again yet; a read that
// outlasts the lease ends with ErrIndexNotReadable when the other disabled
// its index meanwhile; and an Open deletes the entries of an index dropped
// more than three leases ago without waiting.
func TestWhatOtherHandlesLearn(t *testing.T) {
	ctx := context.Background()
	town, name := indexByName("town"), indexByName("name")
	fill := func(tbl *it.Table[person]) {
		for i := range 5 {
			_, err := tbl.Insert(ctx, person{ID: i, Town: "Oslo", Name: fmt.Sprint("n", i)})
			require.NoError(t, err)
		}
	}
	t.Run("Build and Verify", func(t *testing.T) {
		s := it.NewMemoryStore()
		older := openWith(t, s, town)
		fill(older)
		newer := openWith(t, s, town, name)
		require.NoError(t, older.Build(ctx, it.BuildOptions{}))
		require.Equal(t, it.IndexReadable, statusOf(t, newer)["name"].State, "the older handle built the newer's index")
		older = openWith(t, s, town) // drops name; then another adds it back
		newer = openWith(t, s, town, name)
		require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
		rep, err := older.Verify(ctx, it.VerifyOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 10, rep.Entries, "the older handle verified both indexes")
	})
	t.Run("a long read", func(t *testing.T) {
		s := it.NewMemoryStore()
		one := openWith(t, s, town)
		fill(one)
		other := openWith(t, s, town)
		var last error
		for _, err := range one.Find(ctx, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}}) {
			if last = err; err == nil && other != nil {
				require.NoError(t, other.DisableIndex(ctx, "town"))
				other = nil
				time.Sleep(2 * testLease) // the read outlasts the lease
			}
		}
		require.ErrorIs(t, last, it.ErrIndexNotReadable)
	})
	t.Run("Open collects", func(t *testing.T) {
		s := it.NewMemoryStore()
		fill(openWith(t, s, town, name))
		openWith(t, s, town)
		require.Contains(t, indexNames(t, s), "name@1", "other handles may still read them")
		time.Sleep(4 * testLease)
		openWith(t, s, town)
		require.NotContains(t, indexNames(t, s), "name@1")
	})
}

// TestIndexAddedElsewhereIsKnownAtOnce: a handle whose view is well within
// its lease queries, disables and enables an index that another handle
// added and built, without waiting for the lease to learn it.
func TestIndexAddedElsewhereIsKnownAtOnce(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	open := func(indexes ...it.Index[person]) *it.Table[person] {
		tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, SchemaLease: countLease})
		require.NoError(t, err)
		return tbl
	}
	older := open(indexByName("town"))
	_, err := older.Insert(ctx, person{ID: 1, Town: "Oslo", Name: "n1"})
	require.NoError(t, err)
	newer := open(indexByName("town"), indexByName("name"))
	require.NoError(t, newer.Build(ctx, it.BuildOptions{}))
	require.Equal(t, []int{1}, ids(collect(t, older, it.Query{Index: "name", Eq: it.Tuple{"n1"}})))

	other := open(indexByName("town"), indexByName("name"), indexByName("email"))
	require.NoError(t, other.Build(ctx, it.BuildOptions{}))
	require.NoError(t, older.DisableIndex(ctx, "email"))
	require.Equal(t, it.IndexDisabled, statusOf(t, other)["email"].State)
	_, err = older.Count(ctx, it.Query{Index: "nosuch"})
	require.ErrorIs(t, err, it.ErrInvalidQuery)
}
