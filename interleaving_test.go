package indextable_test

// Interleavings of lifecycle changes, Build, Verify and maintainers with one
// another and with writes. Each test lands a concurrent operation at an
// exact point of another through watchedStore's hooks, so that none depends
// on timing; a test that shows a wait proves it by the goroutines' stacks,
// with a generous bound.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// watchTag marks the context of the one call a test watches: hooks fire
// only for store calls made with it.
type watchTag struct{}

func tagged() context.Context { return context.WithValue(context.Background(), watchTag{}, true) }

func isTagged(ctx context.Context) bool { return ctx.Value(watchTag{}) != nil }

// watchedStore calls its hooks around store calls; a hook that returns true
// is done and is not called again.
type watchedStore struct {
	kv.Store
	mu         sync.Mutex
	afterGet   func(ctx context.Context, key []byte) bool
	beforeMany func(ctx context.Context, keys [][]byte) bool
	beforeScan func(ctx context.Context, r kv.ScanRange) bool
	afterApply func(ctx context.Context, b *kv.Batch, err error) bool
}

func (s *watchedStore) Get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := s.Store.Get(ctx, key)
	s.mu.Lock()
	h := s.afterGet
	s.mu.Unlock()
	if h != nil && h(ctx, key) {
		s.mu.Lock()
		s.afterGet = nil
		s.mu.Unlock()
	}
	return v, err
}

func (s *watchedStore) GetMany(ctx context.Context, keys, dst [][]byte) ([][]byte, error) {
	s.mu.Lock()
	h := s.beforeMany
	s.mu.Unlock()
	if h != nil && h(ctx, keys) {
		s.mu.Lock()
		s.beforeMany = nil
		s.mu.Unlock()
	}
	return s.Store.GetMany(ctx, keys, dst)
}

func (s *watchedStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	s.mu.Lock()
	h := s.beforeScan
	s.mu.Unlock()
	if h != nil && h(ctx, r) {
		s.mu.Lock()
		s.beforeScan = nil
		s.mu.Unlock()
	}
	return s.Store.Scan(ctx, r)
}

func (s *watchedStore) Apply(ctx context.Context, b *kv.Batch) error {
	err := s.Store.Apply(ctx, b)
	s.mu.Lock()
	h := s.afterApply
	s.mu.Unlock()
	if h != nil && h(ctx, b, err) {
		s.mu.Lock()
		s.afterApply = nil
		s.mu.Unlock()
	}
	return err
}

// space returns the key space of a key of table "people" (SpaceOther if
// it is none of the table's), and the key's tuple.
func space(key []byte) (kv.KeySpace, it.Tuple) {
	k, ok := kv.ParseKey(key)
	t, err := kv.DecodeTuple(key)
	if !ok || err != nil || t[0] != "people" {
		return kv.SpaceOther, t
	}
	return k.Space, t
}

func townQuery(town string) it.Query { return it.Query{Index: "town", Eq: it.Tuple{town}} }

func findPeople(ctx context.Context, tbl *it.Table[person], q it.Query) ([]person, error) {
	var out []person
	for p, err := range tbl.Find(ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// TestStaleCatalogReadRevivesDisabledIndex: readCatalog reads the
// catalog, then refresh publishes the state it read, under the publish
// lock only, and with no check that the view did not move on since the
// read. A DisableIndex that commits and publishes in between (it keeps the
// generation) is undone: the view says readable again. Queries then use an
// index whose entries the disabling deleted (they return nothing, not
// ErrIndexNotReadable), and writes put entries into the disabled
// generation, which no one deletes. Any catalog reader does it:
// IndexStatus here, Verify, Find's readable check, Build.
func TestStaleCatalogReadRevivesDisabledIndex(t *testing.T) {
	ctx := context.Background()
	s := &watchedStore{Store: it.NewMemoryStore()}
	tbl := openWith(t, s, indexByName("town"))
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	fired := false
	s.afterGet = func(c context.Context, key []byte) bool {
		if sp, _ := space(key); !isTagged(c) || sp != kv.SpaceCatalog {
			return false
		}
		// IndexStatus has read the catalog entry (readable); the disabling
		// commits and publishes before IndexStatus refreshes the view.
		require.NoError(t, tbl.DisableIndex(ctx, "town"))
		fired = true
		return true
	}
	_, err := tbl.IndexStatus(tagged())
	require.NoError(t, err)
	require.True(t, fired)

	// The catalog says disabled: a query must be refused.
	got, err := findPeople(ctx, tbl, townQuery("R"))
	require.ErrorIs(t, err, it.ErrIndexNotReadable,
		"the disabled index was queried as readable, and returned %d of 3 records", len(got))
}

// TestBuildRefreshRevivesDisabledIndex: Build's last chunk commits
// the index readable, then publishes it (committed -> refresh) outside the
// drain lock, from the catalog entry it committed. A DisableIndex between
// the two is undone the same way.
func TestBuildRefreshRevivesDisabledIndex(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	plain := openWith(t, mem)
	for i := range 3 {
		_, err := plain.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	s := &watchedStore{Store: mem}
	tbl := openWith(t, s, indexByName("town"))
	require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["town"].State)
	fired := false
	s.afterApply = func(c context.Context, b *kv.Batch, err error) bool {
		ops := b.Ops()
		if !isTagged(c) || err != nil || len(ops) != 2 {
			return false
		}
		if sp, _ := space(ops[1].Key); sp != kv.SpaceCatalog || ops[1].Kind != kv.OpPut {
			return false
		}
		// The last chunk committed the index readable; disable it before
		// Build publishes that.
		require.NoError(t, tbl.DisableIndex(ctx, "town"))
		fired = true
		return true
	}
	require.NoError(t, tbl.Build(tagged(), it.BuildOptions{}))
	require.True(t, fired)

	_, err := tbl.Insert(ctx, person{ID: 9, Town: "R"})
	require.NoError(t, err)
	got, err := findPeople(ctx, tbl, townQuery("R"))
	require.ErrorIs(t, err, it.ErrIndexNotReadable,
		"the disabled index was queried as readable, and returned %d of 4 records", len(got))
}

// TestVerifyEntryABA: confirm reads the record, then the entry, at
// two moments. The entry can come back between them (an update moves a
// record's key away, and back), so a record read before and an entry read
// after are confirmed together though they never stood together: Verify
// reports drift that a quiet Verify does not. (Repair is safe: its fix
// expects the record as read, and conflicts.)
func TestVerifyEntryABA(t *testing.T) {
	ctx := context.Background()
	for _, write := range []string{"move away and back", "delete and insert again"} {
		t.Run(write, func(t *testing.T) {
			s := &watchedStore{Store: it.NewMemoryStore()}
			tbl := openWith(t, s, indexByName("town_name"))
			rec := person{ID: 1, Town: "A", Name: "n"}
			_, err := tbl.Insert(ctx, rec)
			require.NoError(t, err)
			first := false
			// The index pass has read the entry; before it looks its record
			// up, the record loses the entry.
			s.beforeMany = func(c context.Context, keys [][]byte) bool {
				if sp, _ := space(keys[0]); !isTagged(c) || sp != kv.SpaceRecords {
					return false
				}
				if write == "move away and back" {
					_, err := tbl.Update(ctx, person{ID: 1, Town: "B", Name: "n"})
					require.NoError(t, err)
				} else {
					require.NoError(t, tbl.Delete(ctx, it.Tuple{1}))
				}
				first = true
				return true
			}
			second := false
			// confirm has read the record again; before it reads the
			// entry, the record gets the entry back.
			s.afterGet = func(c context.Context, key []byte) bool {
				if sp, k := space(key); !isTagged(c) || !first || sp != kv.SpaceRecords || len(k) != 3 {
					return false
				}
				var err error
				if write == "move away and back" {
					_, err = tbl.Update(ctx, rec)
				} else {
					_, err = tbl.Insert(ctx, rec)
				}
				require.NoError(t, err)
				second = true
				return true
			}
			rep, err := tbl.Verify(tagged(), it.VerifyOptions{})
			require.NoError(t, err)
			require.True(t, first && second, "both writes ran")
			quiet := requireNoDriftReport(t, tbl)
			require.Zero(t, rep.Total(), "Verify beside the writes found %v; a quiet Verify found %d", rep.Samples, quiet)
		})
	}
}

func requireNoDriftReport(t *testing.T, tbl *it.Table[person]) int {
	t.Helper()
	rep, err := tbl.Verify(context.Background(), it.VerifyOptions{})
	require.NoError(t, err)
	return rep.Total()
}

// TestVerifyShardedMaintainerBetweenEntryAndQueue: on a partitioned
// store a write whose entries lie outside its record's partition commits
// the record and queues its entries. confirm reads the record, then the
// entry, then the queue: a maintainer that applies the change between the
// entry read and the queue scan leaves an absent entry confirmed (nothing
// queued any more) and Verify reports a missing entry that a quiet Verify
// does not.
func TestVerifyShardedMaintainerBetweenEntryAndQueue(t *testing.T) {
	ctx := context.Background()
	sharded, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	s := &watchedStore{Store: sharded}
	tbl := openWith(t, s, indexByName("town"))
	settle := func() {
		t.Helper()
		_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
	}
	// A record whose move from town A to B goes through the queue.
	id := -1
	for i := range 32 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "A"})
		require.NoError(t, err)
		settle()
		_, err = tbl.Update(ctx, person{ID: i, Town: "B"})
		require.NoError(t, err)
		lag, err := tbl.Lag(ctx)
		require.NoError(t, err)
		settle()
		_, err = tbl.Update(ctx, person{ID: i, Town: "A"})
		require.NoError(t, err)
		settle()
		if lag.Pending > 0 {
			id = i
			break
		}
	}
	require.GreaterOrEqual(t, id, 0, "no record's write went through the queue")
	requireNoDrift(t, tbl)

	moved := false
	// After Verify read the queue (nothing pending), before it reads the
	// records: the record moves, its entries queued.
	s.beforeScan = func(c context.Context, r kv.ScanRange) bool {
		if sp, k := space(r.Start); !isTagged(c) || sp != kv.SpaceRecords || len(k) != 2 {
			return false
		}
		_, err := tbl.Update(ctx, person{ID: id, Town: "B"})
		require.NoError(t, err)
		moved = true
		return true
	}
	applied := false
	// confirm has read the record and found the entry absent; before it
	// scans the record's queue, a maintainer applies the change.
	s.beforeScan = chainScan(s.beforeScan, func(c context.Context, r kv.ScanRange) bool {
		if sp, k := space(r.Start); !isTagged(c) || !moved || sp != kv.SpaceQueue || len(k) != 3 {
			return false
		}
		n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		applied = n > 0
		return true
	})
	rep, err := tbl.Verify(tagged(), it.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, moved && applied, "the write and the maintainer ran")
	quiet := requireNoDriftReport(t, tbl)
	require.Zero(t, rep.Total(), "Verify beside a write and a maintainer found %v; a quiet Verify found %d", rep.Samples, quiet)
}

// chainScan runs a, until it is done, then b.
func chainScan(a, b func(context.Context, kv.ScanRange) bool) func(context.Context, kv.ScanRange) bool {
	var aDone atomic.Bool
	return func(c context.Context, r kv.ScanRange) bool {
		if !aDone.Load() {
			aDone.Store(a(c, r))
			return false
		}
		return b(c, r)
	}
}

// stacks returns every goroutine's stack.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// goroutineIn reports whether a goroutine's stack holds all of frames, in
// any order.
func goroutineIn(all string, frames ...string) bool {
	for _, g := range strings.Split(all, "\n\n") {
		ok := true
		for _, f := range frames {
			ok = ok && strings.Contains(g, f)
		}
		if ok {
			return true
		}
	}
	return false
}

// waitFor polls cond, yielding, for two minutes at most: far longer than
// a goroutine takes to reach a lock on a slow, shared machine.
func waitFor(cond func() bool) bool {
	for range 120_000 {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// blockingHandler is a slog handler that runs run on its first record: a
// handler that writes to the table it logs for, say, as one that keeps its
// log in the store would.
type blockingHandler struct {
	slog.Handler
	once sync.Once
	run  func()
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.once.Do(h.run)
	return nil
}

// TestMaintainerLogsOutsideTheDrainLock: a maintainer's Logger (user
// code) may write to the table while a DisableIndex is under way. The
// maintainer called it while it held the drain lock shared; the disabling
// then waited for the lock, and Go's RWMutex admits no new reader while a
// writer waits, so the Logger's write never returned. The Logger checks,
// by the goroutines' stacks, that the write and the disabling are not both
// parked on the lock, and returns either way, so that the test ends.
func TestMaintainerLogsOutsideTheDrainLock(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	eventual := indexByName("town")
	eventual.Consistency = it.Eventual
	tbl := openWith(t, mem, eventual, indexByName("email"))
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "A", Email: "a"})
	require.NoError(t, err)
	// The record's change waits in the queue; the record no longer
	// decodes, so the maintainer logs that it cannot apply it.
	key, err := kv.EncodeTuple("people", int64(0), int64(1))
	require.NoError(t, err)
	var b kv.Batch
	b.Put(key, []byte{0x01, 0xFF, 0xFE})
	require.NoError(t, mem.Apply(ctx, &b))

	var cycle bool
	disabled, wrote := make(chan error, 1), make(chan error, 1)
	h := &blockingHandler{Handler: slog.NewTextHandler(io.Discard, nil)}
	h.run = func() {
		go func() { disabled <- tbl.DisableIndex(ctx, "email") }()
		require.True(t, waitFor(func() bool {
			return len(disabled) > 0 || goroutineIn(stacks(), "sync.(*RWMutex).Lock", "switchState")
		}), "DisableIndex neither returns nor waits for the drain lock")
		go func() {
			_, err := tbl.Upsert(ctx, person{ID: 2, Town: "B", Email: "b"})
			wrote <- err
		}()
		require.True(t, waitFor(func() bool {
			return len(wrote) > 0 || goroutineIn(stacks(), "sync.(*RWMutex).RLock", "writeRecord")
		}), "the Logger's write neither returns nor waits for the drain lock")
		all := stacks()
		cycle = len(wrote) == 0 && goroutineIn(all, "sync.(*RWMutex).RLock", "writeRecord") &&
			goroutineIn(all, "sync.(*RWMutex).Lock", "switchState")
	}
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{Logger: slog.New(h)})
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	require.NoError(t, <-disabled)
	require.False(t, cycle, "the Logger's write waited for the drain lock, which a DisableIndex waited for, which waited for the maintainer in the Logger")
}

// TestLifecycleStress runs everything at once, under -race: writes,
// a maintainer, Disable/Enable, Build, Verify, Repair, IndexStatus, Stats,
// Usage, SaveUsage and Advise, on a MemoryStore and a ShardedStore. No
// Verify beside the writes may report what the quiet Verify at the end does
// not, the end must be exact, and no entry may be left in a generation that
// was disabled (it left some in most runs while a catalog read from before
// a disabling could publish the index readable again: see
// TestStaleCatalogReadRevivesDisabledIndex).
func TestLifecycleStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	for _, kind := range []string{"memory", "sharded", "memory without repair", "sharded without repair"} {
		t.Run(kind, func(t *testing.T) {
			repair := !strings.HasSuffix(kind, "without repair")
			kind, _, _ := strings.Cut(kind, " ")
			ctx := context.Background()
			var store kv.Store = it.NewMemoryStore()
			if kind == "sharded" {
				var err error
				store, err = it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
				require.NoError(t, err)
			}
			// A partitioned store refuses unique keys outside a record's
			// partition: there the unique index leads with the key.
			unique := indexByName("email")
			if kind == "sharded" {
				unique = intraIndexes[1]
			}
			names := []string{"town", unique.Name, "town_name"}
			tbl := openWith(t, store, indexByName("town"), unique, indexByName("town_name"))
			for i := range 40 {
				_, err := tbl.Insert(ctx, person{ID: i, Town: towns[i%3], Name: fmt.Sprint(i), Email: fmt.Sprint("e", i)})
				require.NoError(t, err)
			}
			mctx, stopMaintainer := context.WithCancel(ctx)
			mdone := make(chan error, 1)
			go func() { mdone <- tbl.RunMaintainer(mctx, it.MaintainerOptions{MaxIdle: time.Millisecond}) }()

			var wg sync.WaitGroup
			var stop atomic.Bool
			var mu sync.Mutex
			var problems []string
			note := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				if len(problems) < 20 {
					problems = append(problems, fmt.Sprintf(format, args...))
				}
			}
			var runs sync.Map // name -> *atomic.Int64
			goLoop := func(name string, f func(i int) error) {
				wg.Add(1)
				n, _ := runs.LoadOrStore(name, new(atomic.Int64))
				go func() {
					defer wg.Done()
					for i := 0; !stop.Load(); i++ {
						n.(*atomic.Int64).Add(1)
						if err := f(i); err != nil && !errors.Is(err, it.ErrConflict) &&
							!errors.Is(err, it.ErrUniqueViolation) && !errors.Is(err, it.ErrNotFound) &&
							!errors.Is(err, it.ErrIndexNotReadable) {
							note("%s: %v", name, err)
						}
					}
				}()
			}
			for w := range 2 {
				goLoop(fmt.Sprint("writer", w), func(i int) error {
					id := (i*7 + w*13) % 40
					if i%9 == 0 {
						return tbl.Delete(ctx, it.Tuple{id})
					}
					_, err := tbl.Upsert(ctx, person{ID: id, Town: towns[(i+w)%3], Name: fmt.Sprint(i), Email: fmt.Sprint("e", (i*3+w)%50)})
					return err
				})
			}
			goLoop("lifecycle", func(i int) error {
				name := names[i%3]
				if err := tbl.DisableIndex(ctx, name); err != nil {
					return err
				}
				return tbl.EnableIndex(ctx, name)
			})
			goLoop("build", func(int) error {
				err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 4})
				if errors.Is(err, it.ErrUniqueViolation) || errors.Is(err, it.ErrConflict) {
					return nil
				}
				return err
			})
			goLoop("verify", func(int) error {
				rep, err := tbl.Verify(ctx, it.VerifyOptions{ChunkSize: 5})
				if err == nil && rep.Total() > 0 {
					note("verify beside writes: %v", rep.Samples)
				}
				return err
			})
			if repair { // else it would fix, unseen, drift that the others made
				goLoop("repair", func(int) error { _, err := tbl.Repair(ctx, it.VerifyOptions{ChunkSize: 7}); return err })
			}
			goLoop("observe", func(i int) error {
				var err error
				switch i % 5 {
				case 0:
					_, err = tbl.IndexStatus(ctx)
				case 1:
					_, err = tbl.Stats(ctx)
				case 2:
					_, err = tbl.Usage(ctx)
				case 3:
					err = tbl.SaveUsage(ctx)
				case 4:
					_, err = tbl.Advise(ctx, it.AdviseOptions{})
				}
				return err
			})
			goLoop("find", func(i int) error {
				_, err := findPeople(ctx, tbl, townQuery(towns[i%3]))
				return err
			})
			time.Sleep(1500 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			stopMaintainer()
			<-mdone
			runs.Range(func(k, v any) bool { t.Logf("%s: %d", k, v.(*atomic.Int64).Load()); return true })
			_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
			require.NoError(t, err)
			for _, name := range names {
				require.NoError(t, tbl.EnableIndex(ctx, name))
			}
			err = tbl.Build(ctx, it.BuildOptions{})
			if err != nil && !errors.Is(err, it.ErrUniqueViolation) {
				require.NoError(t, err)
			}
			rep, err := tbl.Verify(ctx, it.VerifyOptions{})
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			// No entry may be left in a generation other than the current
			// one: every disabling deleted its generation after it returned.
			gens := map[string]int64{}
			for _, st := range statusOf(t, tbl) {
				gens[st.Name] = st.Generation
			}
			for _, sp := range []int64{1, 5} {
				start, err := kv.EncodeTuple("people", sp)
				require.NoError(t, err)
				for e, err := range store.Scan(ctx, kv.ScanRange{Start: start, End: append(start, 0xFF)}) {
					require.NoError(t, err)
					_, k := space(e.Key)
					if len(k) >= 4 && k[3] != gens[fmt.Sprint(k[2])] {
						problems = append(problems, fmt.Sprintf("entry %v left in generation %v of index %v (now %d)", k, k[3], k[2], gens[fmt.Sprint(k[2])]))
						break
					}
				}
			}
			if rep.Total() > 0 {
				problems = append(problems, fmt.Sprintf("quiet Verify: %v", rep.Samples))
			}
			require.Empty(t, problems)
		})
	}
}

// TestMaintainerBetweenEnableCommitAndPublish: EnableIndex commits a
// new generation to the catalog, then publishes it (both under the publish
// lock). refreshView, which every maintainer pass starts with, reads the
// catalog and then the view without that lock: between the commit and the
// publication it sees a generation newer than the view, and reports the
// index "defined anew since the table was opened; reopen it" (wrapping
// ErrInvalidSchema), on which RunMaintainer stops for good. An EnableIndex
// of this very table kills its maintainers.
func TestMaintainerBetweenEnableCommitAndPublish(t *testing.T) {
	ctx := context.Background()
	s := &watchedStore{Store: it.NewMemoryStore()}
	tbl := openWith(t, s, eventualIndexes([]it.Index[person]{indexByName("town")})...)
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "A"})
	require.NoError(t, err)
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.NoError(t, tbl.DisableIndex(ctx, "town"))
	done := make(chan error, 1)
	fired := false
	s.afterApply = func(c context.Context, b *kv.Batch, err error) bool {
		ops := b.Ops()
		if !isTagged(c) || err != nil || len(ops) != 4 { // the entry and the schema version
			return false
		}
		if sp, _ := space(ops[1].Key); sp != kv.SpaceCatalog {
			return false
		}
		// The new generation is committed, not yet published: a pass
		// starts now, and runs until it ends or waits (as a fixed
		// refreshView does, for the publication).
		go func() {
			_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
			done <- err
		}()
		waitFor(func() bool {
			return len(done) > 0 || goroutineIn(stacks(), "refreshView", "Mutex).Lock")
		})
		fired = true
		return true
	}
	require.NoError(t, tbl.EnableIndex(tagged(), "town"))
	require.True(t, fired)
	require.NoError(t, <-done, "a maintainer pass beside this table's EnableIndex (RunMaintainer stops on this error)")
}

// TestCallbacksMayReenter: the callbacks that run outside the drain
// lock may change the index lifecycle and write: Build's and Verify's
// Progress, and the body of a Find loop. (Nothing found: this passes.)
func TestCallbacksMayReenter(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	plain := openWith(t, mem)
	for i := range 6 {
		_, err := plain.Insert(ctx, person{ID: i, Town: "A", Email: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	tbl := openWith(t, mem, indexByName("town"), indexByName("email"))
	left := 0
	cycle := func() {
		if left == 0 {
			return // a build that each chunk restarts never ends
		}
		left--
		_, err := tbl.Upsert(ctx, person{ID: 100, Town: "A", Email: "x"})
		require.NoError(t, err)
		require.NoError(t, tbl.DisableIndex(ctx, "email"))
		require.NoError(t, tbl.EnableIndex(ctx, "email"))
	}
	left = 2
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 2, Progress: func(it.BuildProgress) { cycle() }}))
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	left = 2
	_, err := tbl.Verify(ctx, it.VerifyOptions{ChunkSize: 2, Progress: func(it.VerifyProgress) { cycle() }})
	require.NoError(t, err)
	left = 2
	for _, err := range tbl.Find(ctx, townQuery("A")) {
		require.NoError(t, err)
		cycle()
	}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	requireNoDrift(t, tbl)
}
