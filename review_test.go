package indextable_test

// Adversarial review of "Index lifecycle beside writes: an immutable view,
// drained changes" against issue 15. Each test lands a concurrent operation
// at an exact point of another through reviewStore's hooks, so that none
// depends on timing; a test that shows a wait proves it by the goroutines'
// stacks, not by a clock alone.

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
)

// reviewTag marks the context of the one call a test watches: hooks fire
// only for store calls made with it.
type reviewTag struct{}

func tagged() context.Context { return context.WithValue(context.Background(), reviewTag{}, true) }

func isTagged(ctx context.Context) bool { return ctx.Value(reviewTag{}) != nil }

// reviewStore calls its hooks around store calls; a hook that returns true
// is done and is not called again.
type reviewStore struct {
	it.Store
	mu         sync.Mutex
	afterGet   func(ctx context.Context, key []byte) bool
	beforeMany func(ctx context.Context, keys [][]byte) bool
	beforeScan func(ctx context.Context, r it.ScanRange) bool
	afterApply func(ctx context.Context, b *it.Batch, err error) bool
}

func (s *reviewStore) Get(ctx context.Context, key []byte) ([]byte, error) {
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

func (s *reviewStore) GetMany(ctx context.Context, keys, dst [][]byte) ([][]byte, error) {
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

func (s *reviewStore) Scan(ctx context.Context, r it.ScanRange) iter.Seq2[it.Entry, error] {
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

func (s *reviewStore) Apply(ctx context.Context, b *it.Batch) error {
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

// space returns the key space of a key of table "people" (0 records,
// 1 index entries, 2 catalog, 3 queue), and the key's tuple; -1 if none.
func space(key []byte) (int64, it.Tuple) {
	k, err := it.DecodeTuple(key)
	if err != nil || len(k) < 2 || k[0] != "people" {
		return -1, k
	}
	n, _ := k[1].(int64)
	return n, k
}

func townQuery(town string) it.Query { return it.Query{Index: "town", Eq: it.Tuple{town}} }

func findAll(ctx context.Context, tbl *it.Table[person], q it.Query) ([]person, error) {
	var out []person
	for p, err := range tbl.Find(ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// TestReviewStaleCatalogReadRevivesDisabledIndex: readCatalog reads the
// catalog, then refresh publishes the state it read, under the publish
// lock only, and with no check that the view did not move on since the
// read. A DisableIndex that commits and publishes in between (it keeps the
// generation) is undone: the view says readable again. Queries then use an
// index whose entries the disabling deleted (they return nothing, not
// ErrIndexNotReadable), and writes put entries into the disabled
// generation, which no one deletes. Any catalog reader does it:
// IndexStatus here, Verify, Find's readable check, Build.
func TestReviewStaleCatalogReadRevivesDisabledIndex(t *testing.T) {
	ctx := context.Background()
	s := &reviewStore{Store: it.NewMemoryStore()}
	tbl := openWith(t, s, indexByName("town"))
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	fired := false
	s.afterGet = func(c context.Context, key []byte) bool {
		if sp, _ := space(key); !isTagged(c) || sp != 2 {
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
	got, err := findAll(ctx, tbl, townQuery("R"))
	require.ErrorIs(t, err, it.ErrIndexNotReadable,
		"the disabled index was queried as readable, and returned %d of 3 records", len(got))
}

// TestReviewBuildRefreshRevivesDisabledIndex: Build's last chunk commits
// the index readable, then publishes it (committed -> refresh) outside the
// drain lock, from the catalog entry it committed. A DisableIndex between
// the two is undone the same way.
func TestReviewBuildRefreshRevivesDisabledIndex(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	plain := openWith(t, mem)
	for i := range 3 {
		_, err := plain.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	s := &reviewStore{Store: mem}
	tbl := openWith(t, s, indexByName("town"))
	require.Equal(t, it.IndexWriteOnly, statusOf(t, tbl)["town"].State)
	fired := false
	s.afterApply = func(c context.Context, b *it.Batch, err error) bool {
		ops := b.Ops()
		if !isTagged(c) || err != nil || len(ops) != 2 {
			return false
		}
		if sp, _ := space(ops[1].Key); sp != 2 || ops[1].Kind != it.OpPut {
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
	got, err := findAll(ctx, tbl, townQuery("R"))
	require.ErrorIs(t, err, it.ErrIndexNotReadable,
		"the disabled index was queried as readable, and returned %d of 4 records", len(got))
}

// TestReviewVerifyEntryABA: confirm reads the record, then the entry, at
// two moments. The entry can come back between them (an update moves a
// record's key away, and back), so a record read before and an entry read
// after are confirmed together though they never stood together: Verify
// reports drift that a quiet Verify does not. (Repair is safe: its fix
// expects the record as read, and conflicts.)
func TestReviewVerifyEntryABA(t *testing.T) {
	ctx := context.Background()
	for _, write := range []string{"move away and back", "delete and insert again"} {
		t.Run(write, func(t *testing.T) {
			s := &reviewStore{Store: it.NewMemoryStore()}
			tbl := openWith(t, s, indexByName("town_name"))
			rec := person{ID: 1, Town: "A", Name: "n"}
			_, err := tbl.Insert(ctx, rec)
			require.NoError(t, err)
			first := false
			// The index pass has read the entry; before it looks its record
			// up, the record loses the entry.
			s.beforeMany = func(c context.Context, keys [][]byte) bool {
				if sp, _ := space(keys[0]); !isTagged(c) || sp != 0 {
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
				if sp, k := space(key); !isTagged(c) || !first || sp != 0 || len(k) != 3 {
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

// TestReviewVerifyShardedMaintainerBetweenEntryAndQueue: on a partitioned
// store a write whose entries lie outside its record's partition commits
// the record and queues its entries. confirm reads the record, then the
// entry, then the queue: a maintainer that applies the change between the
// entry read and the queue scan leaves an absent entry confirmed (nothing
// queued any more) and Verify reports a missing entry that a quiet Verify
// does not.
func TestReviewVerifyShardedMaintainerBetweenEntryAndQueue(t *testing.T) {
	ctx := context.Background()
	sharded, err := it.OpenShardedStore(ctx, []it.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	s := &reviewStore{Store: sharded}
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
	s.beforeScan = func(c context.Context, r it.ScanRange) bool {
		if sp, k := space(r.Start); !isTagged(c) || sp != 0 || len(k) != 2 {
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
	s.beforeScan = chainScan(s.beforeScan, func(c context.Context, r it.ScanRange) bool {
		if sp, k := space(r.Start); !isTagged(c) || !moved || sp != 3 || len(k) != 3 {
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
func chainScan(a, b func(context.Context, it.ScanRange) bool) func(context.Context, it.ScanRange) bool {
	var aDone atomic.Bool
	return func(c context.Context, r it.ScanRange) bool {
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

// waitFor polls cond, yielding, up to a generous bound.
func waitFor(cond func() bool) bool {
	for range 5000 {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

// blockingHandler is a slog handler that, on its first record, writes to
// the table it logs for (as a handler that keeps its log in the store
// would), while a DisableIndex waits.
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

// TestReviewLoggerUnderDrainLock: applyGroups calls the maintainer's
// Logger (MaintainerOptions.Logger, user code) while it holds the drain
// lock shared. A DisableIndex then waits for the lock, and Go's RWMutex
// admits no new reader while a writer waits: a Logger that writes to the
// table (or waits for anything that does) never returns. The test shows
// the three goroutines parked in the cycle, then lets the Logger give up.
func TestReviewLoggerUnderDrainLock(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	eventual := indexByName("town")
	eventual.Consistency = it.Eventual
	tbl := openWith(t, mem, eventual, indexByName("email"))
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "A", Email: "a"})
	require.NoError(t, err)
	// The record's change waits in the queue; the record no longer
	// decodes, so the maintainer logs that it cannot apply it.
	key, err := it.EncodeTuple("people", int64(0), int64(1))
	require.NoError(t, err)
	var b it.Batch
	b.Put(key, []byte{0x01, 0xFF, 0xFE})
	require.NoError(t, mem.Apply(ctx, &b))

	var cycle string
	h := &blockingHandler{Handler: slog.NewTextHandler(io.Discard, nil)}
	h.run = func() {
		disabled := make(chan error, 1)
		go func() { disabled <- tbl.DisableIndex(ctx, "email") }()
		require.True(t, waitFor(func() bool {
			return goroutineIn(stacks(), "sync.(*RWMutex).Lock", "switchState")
		}), "DisableIndex waits for the drain lock")
		wrote := make(chan error, 1)
		go func() {
			_, err := tbl.Upsert(ctx, person{ID: 2, Town: "B", Email: "b"})
			wrote <- err
		}()
		// The write parks on the drain lock: it cannot pass while the
		// disabling waits, which cannot pass while this Logger runs.
		parked := waitFor(func() bool { return goroutineIn(stacks(), "sync.(*RWMutex).RLock", "writeRecord") })
		all := stacks()
		if parked && len(wrote) == 0 && goroutineIn(all, "sync.(*RWMutex).Lock", "switchState") &&
			goroutineIn(all, "blockingHandler", "applyGroups") {
			cycle = "the Logger's write waits for the drain lock (RLock in writeRecord), which a DisableIndex waits for (Lock in switchState), which waits for the maintainer in the Logger (applyGroups)"
		}
		// Give up, so that the test ends: returning from the Logger
		// releases the maintainer's lock.
		go func() { <-wrote; <-disabled }()
	}
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{Logger: slog.New(h)})
	require.NoError(t, err)
	require.Empty(t, cycle)
}

// TestReviewNilArguments sweeps the exported calls with a nil context or
// store that issue 15 item 4 asks to refuse with an error, not a panic.
func TestReviewNilArguments(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	tbl := openWith(t, mem, indexByName("town"))
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "A"})
	require.NoError(t, err)
	var nilCtx context.Context
	calls := map[string]func() error{
		"OpenShardedStore(nil shard)": func() error {
			_, err := it.OpenShardedStore(ctx, []it.Store{mem, nil})
			return err
		},
		"Find(nil ctx)": func() error {
			for _, err := range tbl.Find(nilCtx, townQuery("A")) {
				return err
			}
			return nil
		},
		"Count(nil ctx)": func() error { _, err := tbl.Count(nilCtx, townQuery("A")); return err },
		"FindPage(nil ctx)": func() error {
			q := townQuery("A")
			q.Limit = 1
			_, _, err := tbl.FindPage(nilCtx, q)
			return err
		},
		"Exists(nil ctx)": func() error { _, err := tbl.Exists(nilCtx, townQuery("A")); return err },
		"Stats(nil ctx)":  func() error { _, err := tbl.Stats(nilCtx); return err },
		"MemoryStore.Scan": func() error {
			for _, err := range mem.Scan(nilCtx, it.ScanRange{}) {
				return err
			}
			return nil
		},
		"Verify(nil ctx)":    func() error { _, err := tbl.Verify(nilCtx, it.VerifyOptions{}); return err },
		"Delete(nil ctx)":    func() error { return tbl.Delete(nilCtx, it.Tuple{1}) },
		"Disable(nil ctx)":   func() error { return tbl.DisableIndex(nilCtx, "town") },
		"Upsert(nil ctx)":    func() error { _, err := tbl.Upsert(nilCtx, person{ID: 1}); return err },
		"Advise(nil ctx)":    func() error { _, err := tbl.Advise(nilCtx, it.AdviseOptions{}); return err },
		"StatsOf(nil)":       func() error { _, err := it.StatsOf(ctx, nil, it.TableInfo{Name: "people"}); return err },
		"ReadCatalog(nil)":   func() error { _, err := it.ReadCatalog(ctx, nil); return err },
		"WaitIndexed(nil)":   func() error { return tbl.WaitIndexed(nilCtx) },
		"SaveUsage(nil)":     func() error { return tbl.SaveUsage(nilCtx) },
		"IndexStatus(nil)":   func() error { _, err := tbl.IndexStatus(nilCtx); return err },
		"RunMaintainer(nil)": func() error { return tbl.RunMaintainer(nilCtx, it.MaintainerOptions{}) },
	}
	var panicked []string
	for name, call := range calls {
		func() {
			defer func() {
				if r := recover(); r != nil {
					panicked = append(panicked, fmt.Sprintf("%s: %v", name, r))
				}
			}()
			err := call()
			if err == nil {
				panicked = append(panicked, name+": no error")
			}
		}()
	}
	require.Empty(t, panicked)
}

// TestReviewLifecycleStress runs everything at once, under -race: writes,
// a maintainer, Disable/Enable, Build, Verify, Repair, IndexStatus, Stats,
// Usage, SaveUsage and Advise, on a MemoryStore and a ShardedStore. No
// Verify beside the writes may report what the quiet Verify at the end does
// not, the end must be exact, and no entry may be left in a generation that
// was disabled. At 75f70ef it finds no race, but leaves entries in disabled
// generations in most runs: the stale refresh of
// TestReviewStaleCatalogReadRevivesDisabledIndex (with that fixed, by an
// epoch that refresh checks, it passed 3x4 runs under -race).
func TestReviewLifecycleStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	for _, kind := range []string{"memory", "sharded", "memory without repair", "sharded without repair"} {
		t.Run(kind, func(t *testing.T) {
			repair := !strings.HasSuffix(kind, "without repair")
			kind, _, _ := strings.Cut(kind, " ")
			ctx := context.Background()
			var store it.Store = it.NewMemoryStore()
			if kind == "sharded" {
				var err error
				store, err = it.OpenShardedStore(ctx, []it.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
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
				_, err := findAll(ctx, tbl, townQuery(towns[i%3]))
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
				start, err := it.EncodeTuple("people", sp)
				require.NoError(t, err)
				for e, err := range store.Scan(ctx, it.ScanRange{Start: start, End: append(start, 0xFF)}) {
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

// TestReviewMaintainerOnClosedShardedStore: issue 15 item 9 on a
// ShardedStore: RunMaintainer returns ErrClosed at once, not when its
// context ends (callCounter cancels it after a number of calls).
func TestReviewMaintainerOnClosedShardedStore(t *testing.T) {
	sharded, err := it.OpenShardedStore(context.Background(), []it.Store{it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	s := &callCounter{Store: sharded}
	tbl := openWith(t, s, eventualIndexes([]it.Index[person]{indexByName("town")})...)
	require.NoError(t, sharded.Close())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.limit, s.cancel = s.calls.Load()+50, cancel
	err = tbl.RunMaintainer(ctx, it.MaintainerOptions{MaxBackoff: time.Microsecond})
	require.ErrorIs(t, err, it.ErrClosed)
	require.Less(t, s.calls.Load(), s.limit, "it went on calling the closed store")
}

// TestReviewMaintainerBetweenEnableCommitAndPublish: EnableIndex commits a
// new generation to the catalog, then publishes it (both under the publish
// lock). sameCatalog, which every maintainer pass starts with, reads the
// catalog and then the view without that lock: between the commit and the
// publication it sees a generation newer than the view, and reports the
// index "defined anew since the table was opened; reopen it" (wrapping
// ErrInvalidSchema), on which RunMaintainer stops for good. An EnableIndex
// of this very table kills its maintainers.
func TestReviewMaintainerBetweenEnableCommitAndPublish(t *testing.T) {
	ctx := context.Background()
	s := &reviewStore{Store: it.NewMemoryStore()}
	tbl := openWith(t, s, eventualIndexes([]it.Index[person]{indexByName("town")})...)
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "A"})
	require.NoError(t, err)
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.NoError(t, tbl.DisableIndex(ctx, "town"))
	done := make(chan error, 1)
	fired := false
	s.afterApply = func(c context.Context, b *it.Batch, err error) bool {
		ops := b.Ops()
		if !isTagged(c) || err != nil || len(ops) != 2 {
			return false
		}
		if sp, _ := space(ops[1].Key); sp != 2 {
			return false
		}
		// The new generation is committed, not yet published: a pass
		// starts now, and runs until it ends or waits (as a fixed
		// sameCatalog would, for the publication).
		go func() {
			_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
			done <- err
		}()
		waitFor(func() bool {
			return len(done) > 0 || goroutineIn(stacks(), "sameCatalog", "Mutex).Lock")
		})
		fired = true
		return true
	}
	require.NoError(t, tbl.EnableIndex(tagged(), "town"))
	require.True(t, fired)
	require.NoError(t, <-done, "a maintainer pass beside this table's EnableIndex (RunMaintainer stops on this error)")
}

// TestReviewCallbacksMayReenter: the callbacks that run outside the drain
// lock may change the index lifecycle and write: Build's and Verify's
// Progress, and the body of a Find loop. (Nothing found: this passes.)
func TestReviewCallbacksMayReenter(t *testing.T) {
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
