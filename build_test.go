package indextable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// copyFacts copies the fact records of table people from src into a new
// store, without indexes or catalog.
func copyFacts(t testing.TB, src kv.Store) *it.MemoryStore {
	t.Helper()
	dst := it.NewMemoryStore()
	var b kv.Batch
	for k, v := range storeDump(t, src) {
		if tup, _ := kv.DecodeTuple([]byte(k)); tup[1] == int64(0) {
			b.Put([]byte(k), []byte(v))
		}
	}
	require.NoError(t, dst.Apply(context.Background(), &b))
	return dst
}

// requireNoDrift runs Verify and fails on any finding.
func requireNoDrift[T any](t testing.TB, tbl *it.Table[T]) *it.VerifyReport {
	t.Helper()
	rep, err := tbl.Verify(context.Background(), it.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "drift: %v", rep.Samples)
	return rep
}

// TestBuildUnderConcurrentWriters builds every kind of index while
// goroutines insert, update and delete; the built indexes must equal, byte
// for byte, indexes built from scratch over the final records.
func TestBuildUnderConcurrentWriters(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testBuildUnderConcurrentWriters(t, func(s *it.MemoryStore) kv.Store { return s }, personIndexes(), math.MaxInt)
	})
	// Where the build goes record by record, and through the queue, while
	// writes fall back to it; without the unique index that cannot be kept.
	partitioned := []it.Index[person]{}
	for _, ix := range append(personIndexes(), intraIndexes...) {
		if ix.Name != "email" {
			partitioned = append(partitioned, ix)
		}
	}
	t.Run("partitioned", func(t *testing.T) { testBuildUnderConcurrentWriters(t, partitionedStore, partitioned, 200) })
	t.Run("sharded", func(t *testing.T) {
		testBuildUnderConcurrentWriters(t, func(m *it.MemoryStore) kv.Store {
			s, err := it.OpenShardedStore(context.Background(), []kv.Store{m, it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
			require.NoError(t, err)
			return s
		}, partitioned, 200)
	})
}

func testBuildUnderConcurrentWriters(t *testing.T, wrap func(*it.MemoryStore) kv.Store, indexes []it.Index[person], maxWrites int) {
	ctx := context.Background()
	s := wrap(it.NewMemoryStore())
	plain := openWith(t, s)
	const records = 600
	r := rand.New(rand.NewPCG(3, 4))
	for i := range records {
		p := randomPerson(r, i, names)
		p.Email = "" // unique emails are the writers' business
		_, err := plain.Insert(ctx, p)
		require.NoError(t, err)
	}
	tbl := openWith(t, s, indexes...)
	for _, st := range statusOf(t, tbl) {
		require.Contains(t, []it.IndexState{it.IndexWriteOnly, it.IndexDeleteOnly}, st.State, "delete-only on a partitioned store")
	}

	var building atomic.Bool
	building.Store(true)
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			// Writes that all go through the queue are cheaper than its
			// maintenance: cap them, or they outrun the build's catch-up.
			for n := 0; building.Load() && n < maxWrites || n < 50; n++ {
				id := r.IntN(records + 50)
				var err error
				switch r.IntN(4) {
				case 0:
					err = tbl.Delete(ctx, it.Tuple{id})
				default:
					_, err = tbl.Upsert(ctx, randomPerson(r, id, names))
				}
				if err != nil && !errors.Is(err, it.ErrNotFound) && !errors.Is(err, it.ErrUniqueViolation) {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	// Two builders at once, as two processes might: they share the work
	// through the catalog's cursor.
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- tbl.Build(ctx, it.BuildOptions{ChunkSize: 16}) }()
	}
	err := errors.Join(<-errs, <-errs)
	building.Store(false)
	wg.Wait()
	require.NoError(t, err)
	t.Logf("%d writes during the build", writes.Load())
	for _, st := range statusOf(t, tbl) {
		require.Equal(t, it.IndexReadable, st.State)
	}
	storetest.Drain(t, tbl)
	requireNoDrift(t, tbl)

	fresh := wrap(it.NewMemoryStore())
	for k, v := range storeDump(t, s) {
		if tup, _ := kv.DecodeTuple([]byte(k)); tup[1] == int64(0) {
			var b kv.Batch
			b.Put([]byte(k), []byte(v))
			require.NoError(t, fresh.Apply(ctx, &b))
		}
	}
	rebuilt := openWith(t, fresh, indexes...)
	require.NoError(t, rebuilt.Build(ctx, it.BuildOptions{}))
	// A sweep may hint a change that a maintainer applies meanwhile: the
	// hint outlives it, by design (hints.go), until a maintainer removes
	// it after hintGrace. The queue itself must be empty, as in fresh.
	got := storeDump(t, s)
	maps.DeleteFunc(got, func(k, _ string) bool {
		key, ok := kv.ParseKey([]byte(k))
		return ok && key.Space == kv.SpaceHints
	})
	requireSameDump(t, storeDump(t, fresh), got)
}

// requireSameDump fails unless two store dumps are equal, naming the keys
// that differ (decoded) rather than printing both whole.
func requireSameDump(t *testing.T, want, got map[string]string) {
	t.Helper()
	var diff []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diff = append(diff, fmt.Sprintf("missing %v", decodedKey(k)))
		} else if g != v {
			diff = append(diff, fmt.Sprintf("differs %v: want %q, got %q", decodedKey(k), v, g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("extra %v", decodedKey(k)))
		}
	}
	slices.Sort(diff)
	require.Empty(t, diff, "%d of %d keys differ", len(diff), len(want))
}

func decodedKey(k string) any {
	if tup, err := kv.DecodeTuple([]byte(k)); err == nil {
		return it.Tuple(tup)
	}
	return fmt.Sprintf("%q", k)
}

// TestBuildResumesAfterACrash crashes a build at every batch, restarts it
// from the store as the crash left it, and checks that it resumes from its
// cursor and ends with the index a build from scratch makes.
func TestBuildResumesAfterACrash(t *testing.T) {
	ctx := context.Background()
	base := it.NewMemoryStore()
	plain := openWith(t, base)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 50 {
		_, err := plain.Insert(ctx, randomPerson(r, i, names))
		require.NoError(t, err)
	}
	idx := []it.Index[person]{indexByName("town_name"), indexByName("tags")}
	want := copyFacts(t, base)
	require.NoError(t, openWith(t, want, idx...).Build(ctx, it.BuildOptions{}))

	// Two indexes of 50 records in chunks of 8: 7 batches and a flip each.
	for crashAt := 1; crashAt <= 16; crashAt++ {
		for _, applied := range []bool{false, true} {
			s := copyFacts(t, base)
			fs := faultstore.New(s)
			tbl, err := it.Open(ctx, fs, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: idx})
			require.NoError(t, err)
			fs.CrashAt(faultstore.Apply, crashAt, applied)
			err = tbl.Build(ctx, it.BuildOptions{ChunkSize: 8})
			require.ErrorIs(t, err, faultstore.ErrCrashed)

			// Restart.
			tbl = openWith(t, s, idx...)
			batches := 0
			require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 8, Progress: func(it.BuildProgress) { batches++ }}))
			left := 16 - crashAt + 1
			if applied {
				left--
			}
			require.Equal(t, left, batches, "crash at batch %d, applied %v: the build did not resume where it stopped", crashAt, applied)
			require.Equal(t, storeDump(t, want), storeDump(t, s), "crash at batch %d, applied %v", crashAt, applied)
		}
	}
}

// TestWriteOnlyUniqueIndexKeepsOtherRecordsKeys: while a unique index is
// built, a record the build has not reached gives up a key that a record
// behind the cursor took meanwhile; the key stays the latter's.
func TestWriteOnlyUniqueIndexKeepsOtherRecordsKeys(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	plain := openWith(t, s)
	for _, p := range []person{{ID: 1}, {ID: 2}, {ID: 5, Email: "a"}} {
		_, err := plain.Insert(ctx, p)
		require.NoError(t, err)
	}
	tbl := openWith(t, s, indexByName("email"))
	once := false
	err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 1, Progress: func(p it.BuildProgress) {
		if once || p.Done != 2 {
			return
		}
		once = true
		_, err := tbl.Insert(ctx, person{ID: 0, Email: "a"}) // behind the cursor: "a" looks free
		require.NoError(t, err)
		_, err = tbl.Update(ctx, person{ID: 5, Email: "b"}) // ahead of it: gives "a" up
		require.NoError(t, err)
	}})
	require.NoError(t, err)
	requireNoDrift(t, tbl)
	require.Equal(t, []person{{ID: 0, Email: "a"}}, collect(t, tbl, it.Query{Index: "email", Eq: it.Tuple{"a"}}))
	_, err = tbl.Insert(ctx, person{ID: 9, Email: "a"})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
}

// TestWriteOnlyUniqueIndexChecksChangedEntries: during the build of a
// unique full-copy index, a record the build has not reached keeps a key
// that a record behind the cursor took meanwhile, and changes another
// field: its entry would overwrite the other record's, so the write is
// refused, and the build then reports the duplicate.
func TestWriteOnlyUniqueIndexChecksChangedEntries(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	plain := openWith(t, s)
	for _, p := range []person{{ID: 1}, {ID: 2, Email: "y"}, {ID: 5, Email: "x"}} {
		_, err := plain.Insert(ctx, p)
		require.NoError(t, err)
	}
	email := indexByName("email")
	email.Strategy = it.FullCopy
	tbl := openWith(t, s, email)
	once := false
	err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 1, Progress: func(p it.BuildProgress) {
		if once || p.Done != 2 {
			return
		}
		once = true
		_, err := tbl.Update(ctx, person{ID: 2, Email: "x"}) // behind the cursor: "x" looks free
		require.NoError(t, err)
		_, err = tbl.Update(ctx, person{ID: 5, Email: "x", Name: "new"}) // ahead of it
		require.ErrorIs(t, err, it.ErrUniqueViolation)
	}})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["email"].State)
}

// onceStore runs a hook, once, before the first Apply (or GetMany) that
// its predicate picks, so that a test can land a concurrent operation at
// an exact point of another.
type onceStore struct {
	kv.Store
	mu        sync.Mutex
	onApply   func(*kv.Batch) bool
	onGetMany func(keys [][]byte) bool
	hook      func()
}

func (s *onceStore) fire(pick bool) {
	if pick {
		s.mu.Lock()
		hook := s.hook
		s.hook = nil
		s.mu.Unlock()
		if hook != nil {
			hook()
		}
	}
}

func (s *onceStore) Apply(ctx context.Context, b *kv.Batch) error {
	s.fire(s.onApply != nil && s.onApply(b))
	return s.Store.Apply(ctx, b)
}

func (s *onceStore) GetMany(ctx context.Context, keys, dst [][]byte) ([][]byte, error) {
	s.fire(s.onGetMany != nil && s.onGetMany(keys))
	return s.Store.GetMany(ctx, keys, dst)
}

// TestBuildBetweenAnUpdatesReadAndCommit: an update reads a record whose
// key in a write-only unique index the build has not reached, the build
// then commits that entry, and the update commits: it must not leave the
// entry behind (it did: an old key read as absent got no expectation, so
// the key stayed taken by nobody).
func TestBuildBetweenAnUpdatesReadAndCommit(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	_, err := openWith(t, mem).Insert(ctx, person{ID: 1, Email: "old"})
	require.NoError(t, err)
	s := &onceStore{Store: mem}
	tbl := openWith(t, s, indexByName("email"))
	require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["email"].State)
	s.onApply = func(b *kv.Batch) bool {
		for _, op := range b.Ops() {
			if k, ok := kv.ParseKey(op.Key); ok && op.Kind == kv.OpPut && k.Space == kv.SpaceRecords {
				return true // the update's batch, which writes the record
			}
		}
		return false
	}
	s.hook = func() { require.NoError(t, tbl.Build(ctx, it.BuildOptions{})) }
	_, err = tbl.Update(ctx, person{ID: 1, Email: "new"})
	require.NoError(t, err)
	require.Nil(t, s.hook, "the build ran")
	requireNoDrift(t, tbl)
	_, err = tbl.Insert(ctx, person{ID: 2, Email: "old"})
	require.NoError(t, err, "nobody holds the old key")
	require.Equal(t, []person{{ID: 1, Email: "new"}}, collect(t, tbl, it.Query{Index: "email", Eq: it.Tuple{"new"}}))
}

// steppedStore lands a write, once, at a precise point of a Build: its
// scans of the fact table with a Limit (a build's chunks) read the range
// one entry at a time, each anew, as a scan that is not a snapshot may,
// and it runs hook after yielding the entry whose key at picks, or before
// a Get of such a key.
type steppedStore struct {
	kv.Store
	mu   sync.Mutex
	at   func(key []byte) bool
	hook func()
}

func (s *steppedStore) fire(key []byte) {
	s.mu.Lock()
	h := s.hook
	if h != nil && s.at(key) {
		s.hook = nil
	} else {
		h = nil
	}
	s.mu.Unlock()
	if h != nil {
		h()
	}
}

func (s *steppedStore) Get(ctx context.Context, key []byte) ([]byte, error) {
	s.fire(key)
	return s.Store.Get(ctx, key)
}

func (s *steppedStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if sp, _ := space(r.Start); sp != kv.SpaceRecords || r.Limit == 0 || r.Reverse {
		return s.Store.Scan(ctx, r)
	}
	return func(yield func(kv.Entry, error) bool) {
		one := r
		one.Limit = 1
		for range r.Limit {
			var got *kv.Entry
			for e, err := range s.Store.Scan(ctx, one) {
				if err != nil {
					yield(kv.Entry{}, err)
					return
				}
				got = &kv.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)}
			}
			if got == nil || !yield(*got, nil) {
				return
			}
			s.fire(got.Key)
			one.After = got.Key
		}
	}
}

// TestBuildReportsOnlyViolationsThatHold: Build reads records with scans
// that are not snapshots, so a transaction that swaps two records' unique
// keys can land between its reads of them, or between its read of a
// record and of the entry at its key: it then sees one key twice, in the
// chunk or in the store, though the records never held one key at once.
// It must not report that (it did, and left the index write-only), and
// must report a key that two records do hold, on a store of unbounded
// atomicity (chunks) and on a partitioned one (record by record).
func TestBuildReportsOnlyViolationsThatHold(t *testing.T) {
	// The pick of the key of record 1, or of its entry at key 1@e.
	record1 := func(key []byte) bool {
		sp, tup := space(key)
		return sp == kv.SpaceRecords && tup[len(tup)-1] == int64(1)
	}
	entry1 := func(key []byte) bool {
		sp, tup := space(key)
		return (sp == kv.SpaceIndex || sp == kv.SpaceIntra) && slices.Contains(tup, any("1@e"))
	}
	stores := []struct {
		name string
		wrap func(*it.MemoryStore) kv.Store
	}{
		{"chunks", func(m *it.MemoryStore) kv.Store { return m }},
		{"by record", partitionedStore},
	}
	for _, c := range []struct {
		name string
		at   func(key []byte) bool
		swap bool // records 1 and 2 swap keys; else 2 takes 1's too
	}{
		{"swap after record 1 is read", record1, true},
		{"swap before its entry is read", entry1, true},
		{"duplicate after record 1 is read", record1, false},
		{"duplicate before its entry is read", entry1, false},
	} {
		for _, st := range stores {
			t.Run(st.name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				s := &steppedStore{Store: st.wrap(it.NewMemoryStore()), at: c.at}
				// The key leads with the partition, which a unique index
				// needs on a partitioned store.
				schema := it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"Town", "ID"}}
				plain, err := it.Open(ctx, s, schema)
				require.NoError(t, err)
				for id := 1; id <= 3; id++ {
					_, err := plain.Insert(ctx, person{ID: id, Town: "T", Email: fmt.Sprint(id, "@e")})
					require.NoError(t, err)
				}
				schema.Indexes = []it.Index[person]{{Name: "email", Fields: []string{"Town", "Email"}, Unique: true, Strategy: it.KeysOnly}}
				tbl, err := it.Open(ctx, s, schema)
				require.NoError(t, err)
				s.hook = func() {
					err := it.Transact(ctx, s, func(tx *it.Tx) error {
						p := tbl.In(tx)
						one, err := p.Get(ctx, "T", 1)
						if err != nil {
							return err
						}
						two, err := p.Get(ctx, "T", 2)
						if err != nil {
							return err
						}
						if c.swap {
							one.Email = two.Email
							if _, err := p.Update(ctx, one); err != nil {
								return err
							}
						}
						two.Email = "1@e"
						_, err = p.Update(ctx, two)
						return err
					})
					require.NoError(t, err)
				}
				err = tbl.Build(ctx, it.BuildOptions{})
				require.Nil(t, s.hook, "the write landed")
				if !c.swap {
					require.ErrorIs(t, err, it.ErrUniqueViolation)
					require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["email"].State)
					return
				}
				require.NoError(t, err)
				requireNoDrift(t, tbl)
				require.Equal(t, []person{{ID: 2, Town: "T", Email: "1@e"}}, collect(t, tbl, it.Query{Index: "email", Eq: it.Tuple{"T", "1@e"}}))
			})
		}
	}
}

// TestReviewLifecycleRacesSwappingWriters cycles a unique index and a
// full-copy one through DisableIndex, EnableIndex and Build (in chunks of
// a few records) while transactions swap the unique keys of two records
// and writes move records between towns: the unique keys are unique at
// every instant, so no Build may report a violation, and once the writers
// stop, a last Build leaves no drift.
func TestReviewLifecycleRacesSwappingWriters(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	const n = 40
	schema := it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[person]{
			{Name: "email", Fields: []string{"Email"}, Unique: true},
			{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy},
			{Name: "key", Key: func(p person) []it.Tuple { return []it.Tuple{{p.Town, p.Email}} }},
		}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	for id := range n {
		_, err := tbl.Insert(ctx, person{ID: id, Town: fmt.Sprint("t", id%3), Email: fmt.Sprint(id, "@e")})
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 22))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, b := rng.IntN(n), rng.IntN(n)
				var err error
				if a == b { // a move to another town only
					err = it.Transact(ctx, s, func(tx *it.Tx) error {
						p := tbl.In(tx)
						one, err := p.Get(ctx, a)
						if err != nil {
							return err
						}
						one.Town = fmt.Sprint("t", rng.IntN(3))
						_, err = p.Update(ctx, one)
						return err
					})
				} else {
					err = it.Transact(ctx, s, func(tx *it.Tx) error {
						p := tbl.In(tx)
						one, err := p.Get(ctx, a)
						if err != nil {
							return err
						}
						two, err := p.Get(ctx, b)
						if err != nil {
							return err
						}
						one.Email, two.Email = two.Email, one.Email
						one.Town = fmt.Sprint("t", rng.IntN(3))
						if _, err := p.Update(ctx, one); err != nil {
							return err
						}
						_, err = p.Update(ctx, two)
						return err
					})
				}
				if err != nil && !errors.Is(err, it.ErrConflict) {
					errs <- err
					return
				}
			}
		}()
	}
	for round := range 30 {
		name := []string{"email", "town", "key"}[round%3]
		require.NoError(t, tbl.DisableIndex(ctx, name))
		require.NoError(t, tbl.EnableIndex(ctx, name))
		err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 1 + round%4})
		require.NotErrorIs(t, err, it.ErrUniqueViolation, "round %d: the emails are unique at every instant", round)
		if err != nil {
			require.ErrorIs(t, err, it.ErrConflict, "round %d", round)
		}
	}
	close(stop)
	writers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	for name, st := range statusOf(t, tbl) {
		require.Equal(t, it.IndexReadable, st.State, name)
	}
	requireNoDrift(t, tbl)
	for id := range n {
		got := collect(t, tbl, it.Query{Index: "email", Eq: it.Tuple{fmt.Sprint(id, "@e")}})
		require.Len(t, got, 1, "email %d@e", id)
	}
}
