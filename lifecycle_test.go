package indextable_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// TestLifecycle is a model-based randomized test of the index lifecycle
// under load, over a memory store and a sharded one (whose bounded
// atomicity sends writes, builds and repairs through the queue). Writers,
// each owning a disjoint set of primary keys so that the model of each
// record is exact, insert, upsert, update and delete, some conditionally
// and some clashing on a unique key; readers query every index; a
// lifecycle goroutine disables, enables, builds, verifies and repairs
// indexes (two of Build, Verify and Repair at once at times), and reopens
// the table with another schema while the others pause; a maintainer runs
// throughout. Every write's outcome and every read's results are checked
// as they come. A Verify or Repair that finds drift is followed at once by
// a quiet Verify (writers paused, queue applied): a finding it does not
// repeat was false, and drift it finds is drift. At the end the fact table
// and every index must equal the model, and a quiet Verify be clean.
//
// The seed comes from -lifecycle.seed, or the clock, and is logged:
//
//	go test -race -run TestLifecycle -lifecycle.seed=N .
//
// replays the writers', readers' and lifecycle's choices; not the way the
// goroutines interleave.
func TestLifecycle(t *testing.T) {
	seed := *lifecycleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -lifecycle.seed=%d)", seed, seed)
	sizes := lcSizes{writers: 3, keys: 8, writes: 300, readers: 2, reads: 300, lifecycle: 60}
	if testing.Short() {
		sizes = lcSizes{writers: 2, keys: 6, writes: 80, readers: 1, reads: 80, lifecycle: 12}
	}
	for i, c := range []struct {
		name  string
		store func(testing.TB) kv.Store
		codec it.Codec
	}{
		{"memory", func(testing.TB) kv.Store { return it.NewMemoryStore() }, nil},
		// Bounded, partitioned atomicity: writes fall back to the queue,
		// and Build and Repair go through it.
		{"sharded", func(t testing.TB) kv.Store {
			shards := []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()}
			s, err := it.OpenShardedStore(context.Background(), shards)
			require.NoError(t, err)
			return s
		}, &it.BinaryCodec{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := newLCRun(t, seed, uint64(i), sizes, c.store(t), c.codec)
			run.run()
		})
	}
}

var lifecycleSeed = flag.Uint64("lifecycle.seed", 0, "the seed of TestLifecycle; 0 takes one from the clock")

// lcRec is the record of TestLifecycle. Group, the first primary key field,
// is the partition on a sharded store; Sum is a checksum of the other
// fields, so that a torn or mixed-up record shows.
type lcRec struct {
	Group string
	ID    int
	Town  string
	Name  string
	Score int
	Tags  []string
	Email string
	Note  string
	Sum   uint32
}

func (r lcRec) sum() uint32 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%d|%s|%s|%d|%q|%s|%s", r.Group, r.ID, r.Town, r.Name, r.Score, r.Tags, r.Email, r.Note)
	return h.Sum32()
}

// normalized makes nil and empty Tags compare equal.
func (r lcRec) normalized() lcRec {
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	return r
}

func (r lcRec) pk() it.Tuple { return it.Tuple{r.Group, r.ID} }

// Small domains, so that keys collide and ranges hold several records.
var (
	lcTowns = []string{"Redmond", "Seattle", "Bellevue", ""}
	lcNames = []string{"Smith", "Jones", "Chen", ""}
	lcTags  = []string{"a", "b", "c", ""}
	lcNotes = []string{"n0", "n1", "n2"}
)

const (
	lcGroups = 4
	lcScores = 8
	lcEmails = 4 // per writer: a writer's emails are its own
)

func lcGroup(id int) string { return "g" + strconv.Itoa(id%lcGroups) }

func lcEmail(writer, i int) string { return fmt.Sprintf("w%d-%d@e", writer, i) }

// lcIndex is an index the schema may have: its key fields, the model of its
// keys (written apart from the library), and the definitions it may take.
type lcIndex struct {
	name     string
	fields   []string
	keys     func(lcRec) []it.Tuple
	variants []it.Index[lcRec]
	initial  bool // in the first schema
}

var lcIndexes = []lcIndex{
	{name: "town_name", fields: []string{"Town", "Name"}, initial: true,
		keys:     func(r lcRec) []it.Tuple { return []it.Tuple{{r.Town, r.Name}} },
		variants: []it.Index[lcRec]{{Strategy: it.FullCopy}, {Strategy: it.FullCopy, Version: 1}}},
	{name: "score", fields: []string{"Score"}, initial: true,
		keys:     func(r lcRec) []it.Tuple { return []it.Tuple{{r.Score}} },
		variants: []it.Index[lcRec]{{Strategy: it.KeysOnly}, {Strategy: it.Partial, Projection: []string{"Town"}}}},
	{name: "name", fields: []string{"Name"}, initial: true,
		keys: func(r lcRec) []it.Tuple {
			if r.Name == "" {
				return nil
			}
			return []it.Tuple{{r.Name}}
		},
		variants: []it.Index[lcRec]{
			{Strategy: it.Partial, Projection: []string{"Score", "Note"}, Sparse: true},
			{Strategy: it.Partial, Projection: []string{"Note"}, Sparse: true},
		}},
	{name: "email", fields: []string{"Group", "Email"}, initial: true,
		keys: func(r lcRec) []it.Tuple {
			if r.Email == "" {
				return nil
			}
			return []it.Tuple{{r.Group, r.Email}}
		},
		variants: []it.Index[lcRec]{
			{Strategy: it.KeysOnly, Unique: true, Sparse: true},
			{Strategy: it.FullCopy, Unique: true, Sparse: true},
		}},
	{name: "tags", fields: []string{"Tags"}, initial: true,
		keys: func(r lcRec) []it.Tuple {
			var out []it.Tuple
			for i, tag := range r.Tags {
				if !slices.Contains(r.Tags[:i], tag) {
					out = append(out, it.Tuple{tag})
				}
			}
			return out
		},
		variants: []it.Index[lcRec]{
			{Strategy: it.KeysOnly, MultiValued: true},
			{Strategy: it.Partial, Projection: []string{"Name"}, MultiValued: true},
		}},
	{name: "note_ev", fields: []string{"Note", "Score"}, initial: true,
		keys: func(r lcRec) []it.Tuple { return []it.Tuple{{r.Note, r.Score}} },
		variants: []it.Index[lcRec]{
			{Strategy: it.FullCopy, Consistency: it.Eventual},
			{Strategy: it.FullCopy, Consistency: it.Synchronous},
		}},
	{name: "town", fields: []string{"Town"},
		keys: func(r lcRec) []it.Tuple { return []it.Tuple{{r.Town}} },
		variants: []it.Index[lcRec]{
			{Strategy: it.KeysOnly, Consistency: it.Eventual},
			{Strategy: it.Partial, Projection: []string{"Score"}, Consistency: it.Eventual},
		}},
}

// lcUnique is the position of the unique index in lcIndexes.
const lcUnique = 3

// lcSchema picks a variant of each index of lcIndexes, or -1 for none.
type lcSchema []int

func lcFirstSchema() lcSchema {
	s := make(lcSchema, len(lcIndexes))
	for i, ix := range lcIndexes {
		if !ix.initial {
			s[i] = -1
		}
	}
	return s
}

// spec returns the definition of index i.
func (s lcSchema) spec(i int) it.Index[lcRec] {
	spec := lcIndexes[i].variants[s[i]]
	spec.Name, spec.Fields = lcIndexes[i].name, lcIndexes[i].fields
	return spec
}

func (s lcSchema) present() []int {
	var out []int
	for i, v := range s {
		if v >= 0 {
			out = append(out, i)
		}
	}
	return out
}

func (s lcSchema) schema(codec it.Codec) it.Schema[lcRec] {
	out := it.Schema[lcRec]{SchemaLease: testLease, Name: "lc", PrimaryKey: []string{"Group", "ID"}, Codec: codec}
	for _, i := range s.present() {
		out.Indexes = append(out.Indexes, s.spec(i))
	}
	return out
}

// mutate returns s with one index added, removed, or defined anew.
func (s lcSchema) mutate(r *rand.Rand) lcSchema {
	for {
		next := slices.Clone(s)
		i := r.IntN(len(next))
		switch {
		case next[i] < 0:
			next[i] = r.IntN(len(lcIndexes[i].variants))
		case r.IntN(3) == 0:
			next[i] = -1
		default:
			next[i] = (next[i] + 1) % len(lcIndexes[i].variants)
		}
		if len(next.present()) >= 2 {
			return next
		}
	}
}

// lcCovered is what a covered read of an index defined as spec returns
// for r: the primary key, the single-valued key fields, the projection.
func lcCovered(spec it.Index[lcRec], r lcRec) lcRec {
	if spec.Strategy == it.FullCopy {
		return r.normalized()
	}
	out := lcRec{Group: r.Group, ID: r.ID}
	from, to := reflect.ValueOf(r), reflect.ValueOf(&out).Elem()
	for _, f := range append(slices.Clone(spec.Fields), spec.Projection...) {
		if f == "Tags" && spec.MultiValued {
			continue
		}
		to.FieldByName(f).Set(from.FieldByName(f))
	}
	return out.normalized()
}

// lcMatches reports whether key k is within query q.
func lcMatches(q it.Query, k it.Tuple) bool {
	if len(k) < len(q.Eq) || kv.CompareTuples(k[:len(q.Eq)], q.Eq) != 0 {
		return false
	}
	if q.Lower == nil && q.Upper == nil {
		return true
	}
	c := it.Tuple{k[len(q.Eq)]}
	if b := q.Lower; b != nil {
		if n := kv.CompareTuples(c, it.Tuple{b.Value}); n < 0 || n == 0 && b.Exclusive {
			return false
		}
	}
	if b := q.Upper; b != nil {
		if n := kv.CompareTuples(c, it.Tuple{b.Value}); n > 0 || n == 0 && b.Exclusive {
			return false
		}
	}
	return true
}

// lcValue returns a value of field f: one of those keys hold at position
// pos, most of the time, when keys are given; else one of its domain.
func lcValue(r *rand.Rand, f string, pos int, keys []it.Tuple, writers int) any {
	if len(keys) > 0 && r.IntN(4) > 0 {
		return keys[r.IntN(len(keys))][pos]
	}
	switch f {
	case "Town":
		return lcTowns[r.IntN(len(lcTowns))]
	case "Name":
		return lcNames[r.IntN(len(lcNames))]
	case "Score":
		return r.IntN(lcScores + 1)
	case "Tags":
		return lcTags[r.IntN(len(lcTags))]
	case "Note":
		return lcNotes[r.IntN(len(lcNotes))]
	case "Group":
		return lcGroup(r.IntN(lcGroups))
	case "Email":
		return lcEmail(r.IntN(writers), r.IntN(lcEmails+1))
	}
	panic(f)
}

// lcQuery returns a random query of ix: a prefix of its key, and perhaps
// bounds on the next component, in either direction.
func lcQuery(r *rand.Rand, ix *lcIndex, keys []it.Tuple, writers int) it.Query {
	q := it.Query{Index: ix.name, Reverse: r.IntN(3) == 0}
	n := r.IntN(len(ix.fields) + 1)
	for i := range n {
		q.Eq = append(q.Eq, lcValue(r, ix.fields[i], i, keys, writers))
	}
	if n < len(ix.fields) && r.IntN(2) == 0 {
		bound := func() *it.Bound {
			switch r.IntN(3) {
			case 0:
				return nil
			case 1:
				return it.Inclusive(lcValue(r, ix.fields[n], n, keys, writers))
			}
			return it.Exclusive(lcValue(r, ix.fields[n], n, keys, writers))
		}
		q.Lower, q.Upper = bound(), bound()
	}
	return q
}

// lcExpect is the brute force: what q reads from index ix, defined as spec,
// over the records of model, in index order (key, then primary key).
func lcExpect(ix *lcIndex, spec it.Index[lcRec], model map[int]lcRec, q it.Query) []lcRec {
	type hit struct {
		order it.Tuple
		rec   lcRec
	}
	var hits []hit
	for _, rec := range model {
		for _, k := range ix.keys(rec) {
			if lcMatches(q, k) {
				hits = append(hits, hit{append(slices.Clone(k), rec.Group, rec.ID), rec})
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return kv.CompareTuples(a.order, b.order) })
	if q.Reverse {
		slices.Reverse(hits)
	}
	out := []lcRec{}
	for _, h := range hits {
		if q.Covered {
			out = append(out, lcCovered(spec, h.rec))
		} else {
			out = append(out, h.rec.normalized())
		}
	}
	return out
}

type lcSizes struct{ writers, keys, writes, readers, reads, lifecycle int }

// lcFinding is a drift that Verify or Repair reported during the run.
type lcFinding struct {
	op      string
	drift   map[it.DriftKind]int
	samples []it.Drift
}

// lcRun is one run of TestLifecycle, over one store.
type lcRun struct {
	t      *testing.T
	seed   uint64
	stream uint64 // tells the stores' random streams apart
	sizes  lcSizes
	store  kv.Store
	codec  it.Codec
	ctx    context.Context
	cancel context.CancelFunc

	// Writers and readers hold gate per operation; a reopen takes it, so
	// that every goroutine switches to the new table at once.
	gate   sync.RWMutex
	tbl    *it.Table[lcRec] // under gate; written only by the lifecycle
	schema lcSchema         // under gate; written only by the lifecycle

	// uniq is odd while the unique index may not be enforced: while it is
	// not readable (disabled, out of the schema, or write-only, when a
	// write cannot see the keys of the records the build has not reached),
	// a write that clashes on it may succeed.
	uniq atomic.Int64
	// dupSeq counts the clashing writes, and the duplicates made and
	// fixed; dupLive the writers holding or writing one now. Build may
	// then find a violation.
	dupSeq, dupLive atomic.Int64
	// Each role goes on past its count of operations (up to a cap) until
	// the writers and the lifecycle have done theirs, so that they overlap.
	writersShort atomic.Int64 // writers that have not done their count
	lifecycleMet atomic.Bool  // the lifecycle has done its count
	progress     atomic.Int64 // operations completed, for the watchdog
	lifecycleOp  atomic.Value // string: the lifecycle operation under way, or the last

	maint struct {
		cancel context.CancelFunc
		done   chan struct{}
	}

	mu       sync.Mutex
	failures map[string]int // by kind
	findings []lcFinding    // of Verify and Repair during the run
	judged   int            // findings judged by a quiet Verify
	counts   map[string]int // what the run did, by kind, for the log
}

func newLCRun(t *testing.T, seed, stream uint64, sizes lcSizes, store kv.Store, codec it.Codec) *lcRun {
	run := &lcRun{t: t, seed: seed, stream: stream, sizes: sizes, store: store, codec: codec, failures: map[string]int{}, counts: map[string]int{}}
	run.ctx, run.cancel = context.WithCancel(context.Background())
	return run
}

func (run *lcRun) rand(role, n int) *rand.Rand {
	return rand.New(rand.NewPCG(run.seed, run.stream<<32|uint64(role)<<16|uint64(n)))
}

// fail records a failure of a kind; the first three of each are reported
// in full, the others counted.
func (run *lcRun) fail(kind, format string, args ...any) {
	run.mu.Lock()
	n := run.failures[kind]
	run.failures[kind]++
	run.mu.Unlock()
	if n < 3 {
		op, _ := run.lifecycleOp.Load().(string)
		run.t.Errorf("seed %d: %s: %s\n(lifecycle: %s)", run.seed, kind, fmt.Sprintf(format, args...), op)
	}
}

// count counts an outcome, for the log.
func (run *lcRun) count(kind string) {
	run.mu.Lock()
	run.counts[kind]++
	run.mu.Unlock()
}

func (run *lcRun) stopped() bool { return run.ctx.Err() != nil }

// recoverPanic, deferred in a goroutine, turns a panic into a failure with
// its stack, and stops the run.
func (run *lcRun) recoverPanic(who string) {
	if r := recover(); r != nil {
		run.fail("panic", "%s: %v\n%s", who, r, debug.Stack())
		run.cancel()
	}
}

// run runs the writers, readers, lifecycle and maintainer, then checks.
func (run *lcRun) run() {
	t := run.t
	t.Cleanup(func() {
		if t.Failed() {
			run.mu.Lock()
			t.Logf("seed %d: failures by kind: %v", run.seed, run.failures)
			run.mu.Unlock()
		}
	})
	schema := lcFirstSchema()
	tbl, err := it.Open(run.ctx, run.store, schema.schema(run.codec))
	require.NoError(t, err)
	run.tbl, run.schema = tbl, schema
	run.startMaintainer()
	finished, watched := make(chan struct{}), make(chan struct{})
	go run.watchdog(finished, watched)
	defer func() {
		run.cancel()
		run.stopMaintainer()
		close(finished)
		<-watched
	}()

	writers := make([]*lcWriter, run.sizes.writers)
	for w := range writers {
		writers[w] = newLCWriter(run, w)
		writers[w].populate()
	}
	var wg sync.WaitGroup
	run.writersShort.Store(int64(len(writers)))
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer run.recoverPanic(fmt.Sprintf("writer %d", w.w))
			w.loop()
		}()
	}
	for i := range run.sizes.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer run.recoverPanic(fmt.Sprintf("reader %d", i))
			run.reader(run.rand(2, i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer run.recoverPanic("lifecycle")
		run.lifecycle(run.rand(3, 0))
	}()
	wg.Wait()
	if run.stopped() {
		return // a panic or a hang, reported
	}
	model, versions := map[int]lcRec{}, map[int]it.Version{}
	for _, w := range writers {
		for id, rec := range w.model {
			model[id], versions[id] = rec, w.ver[id]
		}
	}
	run.finish(model, versions)
}

// watchdog reports a hang, until finished: no operation completed for
// three minutes, far longer than any one takes on a slow, shared machine.
// It dumps every goroutine and stops the run; if that does not unwind it
// either, it panics, which ends the test binary.
func (run *lcRun) watchdog(finished <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	last, idle := run.progress.Load(), 0
	for {
		select {
		case <-finished:
			return
		case <-tick.C:
		}
		if p := run.progress.Load(); p != last {
			last, idle = p, 0
			continue
		}
		const window = 18 // checks: three minutes
		if idle++; idle%window != 0 {
			continue
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "seed %d: no operation completed in %d checks of the progress; goroutines:\n%s", run.seed, idle, buf)
		if idle > window {
			panic(fmt.Sprintf("TestLifecycle hangs, even stopped; seed %d", run.seed))
		}
		run.fail("hang", "no operation completed in %d checks of the progress (goroutines on stderr)", idle)
		run.cancel()
	}
}

// startMaintainer runs a maintainer of the current table until
// stopMaintainer. One that stops on its own is a failure (the table it
// maintains is current), and is started again, up to a thousand times.
func (run *lcRun) startMaintainer() {
	ctx, cancel := context.WithCancel(run.ctx)
	done := make(chan struct{})
	run.maint.cancel, run.maint.done = cancel, done
	tbl := run.tbl
	go func() {
		defer close(done)
		defer run.recoverPanic("maintainer")
		for restarts := 0; ; restarts++ {
			err := tbl.RunMaintainer(ctx, it.MaintainerOptions{BatchSize: 8})
			if ctx.Err() != nil {
				return
			}
			run.fail("maintainer stopped", "RunMaintainer of the current table returned: %v", err)
			if restarts == 1000 {
				return // waitIndexed reports it gone
			}
			select { // a pause, lest it spin while the catalog is behind
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
}

func (run *lcRun) stopMaintainer() {
	run.maint.cancel()
	<-run.maint.done
}

// setUniqueEnforced marks the unique index as enforced, or as maybe not.
func (run *lcRun) setUniqueEnforced(on bool) {
	for {
		v := run.uniq.Load()
		if (v%2 == 0) == on || run.uniq.CompareAndSwap(v, v+1) {
			return
		}
	}
}

// noteUniqueReadable marks the unique index as enforced if it is readable,
// after a Build: it stays readable until the lifecycle goroutine disables
// it or reopens the table.
func (run *lcRun) noteUniqueReadable(tbl *it.Table[lcRec], schema lcSchema) {
	if schema[lcUnique] < 0 {
		return
	}
	list, err := tbl.IndexStatus(run.ctx)
	if err != nil {
		if !run.stopped() {
			run.fail("IndexStatus failed", "%v", err)
		}
		return
	}
	for k, i := range schema.present() {
		if i == lcUnique && list[k].State == it.IndexReadable {
			run.setUniqueEnforced(true)
		}
	}
}

// lcWriter writes the records it owns and keeps their exact model.
type lcWriter struct {
	run   *lcRun
	w     int
	r     *rand.Rand
	ids   []int
	model map[int]lcRec
	ver   map[int]it.Version
	dup   bool // two of its records share a unique key (accepted unenforced)
}

func newLCWriter(run *lcRun, w int) *lcWriter {
	wr := &lcWriter{run: run, w: w, r: run.rand(1, w), model: map[int]lcRec{}, ver: map[int]it.Version{}}
	for i := range run.sizes.keys {
		wr.ids = append(wr.ids, w*run.sizes.keys+i)
	}
	return wr
}

// populate inserts most of the writer's records, before the run.
func (w *lcWriter) populate() {
	for _, id := range w.ids {
		if w.r.IntN(4) > 0 {
			w.insert(w.random(id))
		}
	}
}

// loop writes: sizes.writes times, and more while the lifecycle has not
// done its count (up to three times it).
func (w *lcWriter) loop() {
	short := true
	defer func() {
		if short {
			w.run.writersShort.Add(-1)
		}
	}()
	for n := 0; !w.run.stopped(); n++ {
		if n == w.run.sizes.writes {
			w.run.writersShort.Add(-1)
			short = false
		}
		if n >= w.run.sizes.writes && (w.run.lifecycleMet.Load() || n >= 3*w.run.sizes.writes) {
			break
		}
		w.step()
		w.run.progress.Add(1)
	}
	for w.fixDuplicate() && !w.run.stopped() {
	}
}

func (w *lcWriter) step() {
	if w.fixDuplicate() {
		return
	}
	id := w.ids[w.r.IntN(len(w.ids))]
	_, exists := w.model[id]
	switch op := w.r.IntN(16); {
	case op < 2:
		w.insert(w.next(id))
	case op < 5:
		w.upsert(w.next(id))
	case op < 9:
		w.update(w.next(id), 0)
	case op < 10:
		w.delete(id, 0)
	case op < 11 && exists:
		w.update(w.next(id), w.ver[id]) // IfVersion, current
	case op < 12 && exists:
		w.delete(id, w.ver[id])
	case op < 13:
		w.stale(id)
	case op < 15:
		w.takeEmail(id)
	default:
		w.swapEmails()
	}
}

// random returns a new record with primary key id.
func (w *lcWriter) random(id int) lcRec {
	r := w.r
	rec := lcRec{Group: lcGroup(id), ID: id, Town: lcTowns[r.IntN(len(lcTowns))], Name: lcNames[r.IntN(len(lcNames))],
		Score: r.IntN(lcScores), Note: lcNotes[r.IntN(len(lcNotes))]}
	for range r.IntN(4) {
		rec.Tags = append(rec.Tags, lcTags[r.IntN(len(lcTags))])
	}
	if r.IntN(2) == 0 {
		rec.Email = lcEmail(w.w, r.IntN(lcEmails))
	}
	rec.Sum = rec.sum()
	return rec
}

// next returns record id moved to other index keys, or a new one.
func (w *lcWriter) next(id int) lcRec {
	old, ok := w.model[id]
	if !ok || w.r.IntN(4) == 0 {
		return w.random(id)
	}
	fresh := w.random(id)
	rec := old
	rec.Tags = slices.Clone(old.Tags)
	for range 1 + w.r.IntN(2) {
		switch w.r.IntN(6) {
		case 0:
			rec.Town = fresh.Town
		case 1:
			rec.Name = fresh.Name
		case 2:
			rec.Score = fresh.Score
		case 3:
			rec.Tags = fresh.Tags
		case 4:
			rec.Email = fresh.Email
		default:
			rec.Note = fresh.Note
		}
	}
	rec.Sum = rec.sum()
	return rec
}

// clashes reports whether rec would share its unique key with another of
// the writer's records (only the writer uses its emails).
func (w *lcWriter) clashes(rec lcRec) bool {
	if rec.Email == "" {
		return false
	}
	for id, o := range w.model {
		if id != rec.ID && o.Group == rec.Group && o.Email == rec.Email {
			return true
		}
	}
	return false
}

func (w *lcWriter) insert(rec lcRec) {
	var expect error
	if _, ok := w.model[rec.ID]; ok {
		expect = it.ErrExists
	}
	w.write("insert", rec.ID, &rec, expect, func(ctx context.Context, t *it.Table[lcRec]) (it.Version, error) {
		return t.Insert(ctx, rec)
	})
}

func (w *lcWriter) upsert(rec lcRec) {
	w.write("upsert", rec.ID, &rec, nil, func(ctx context.Context, t *it.Table[lcRec]) (it.Version, error) {
		return t.Upsert(ctx, rec)
	})
}

// update updates rec, if its version is still v when v is not zero.
func (w *lcWriter) update(rec lcRec, v it.Version) {
	var opts []it.WriteOption
	op := "update"
	if v != 0 {
		opts, op = append(opts, it.IfVersion(v)), fmt.Sprintf("update if version %d", v)
	}
	var expect error
	switch cur, ok := w.ver[rec.ID]; {
	case !ok:
		expect = it.ErrNotFound
	case v != 0 && v != cur:
		expect = it.ErrConflict
	}
	w.write(op, rec.ID, &rec, expect, func(ctx context.Context, t *it.Table[lcRec]) (it.Version, error) {
		return t.Update(ctx, rec, opts...)
	})
}

// delete deletes record id, if its version is still v when v is not zero.
func (w *lcWriter) delete(id int, v it.Version) {
	var opts []it.WriteOption
	op := "delete"
	if v != 0 {
		opts, op = append(opts, it.IfVersion(v)), fmt.Sprintf("delete if version %d", v)
	}
	var expect error
	switch cur, ok := w.ver[id]; {
	case !ok:
		expect = it.ErrNotFound
	case v != 0 && v != cur:
		expect = it.ErrConflict
	}
	w.write(op, id, nil, expect, func(ctx context.Context, t *it.Table[lcRec]) (it.Version, error) {
		args := []any{lcGroup(id), id}
		for _, o := range opts {
			args = append(args, o)
		}
		return 0, t.Delete(ctx, args...)
	})
}

// stale writes record id conditionally on a version it does not have.
func (w *lcWriter) stale(id int) {
	v := w.ver[id] + 1 + it.Version(w.r.IntN(2))<<40
	if w.r.IntN(2) == 0 {
		w.update(w.next(id), v)
	} else {
		w.delete(id, v)
	}
}

// takeEmail updates record id to the email of a sibling (a record of the
// same group): a unique key clash, to be refused.
func (w *lcWriter) takeEmail(id int) {
	rec, ok := w.model[id]
	if !ok {
		w.upsert(w.next(id))
		return
	}
	for _, o := range w.shuffled() {
		if sib := w.model[o]; o != id && sib.Group == rec.Group && sib.Email != "" && sib.Email != rec.Email {
			rec.Email = sib.Email
			rec.Sum = rec.sum()
			w.update(rec, 0)
			return
		}
	}
	w.update(w.next(id), 0)
}

// swapEmails swaps the emails of two siblings: a direct attempt, which
// clashes, then through a free key.
func (w *lcWriter) swapEmails() {
	ids := w.shuffled()
	for _, a := range ids {
		for _, b := range ids {
			ra, rb := w.model[a], w.model[b]
			if a == b || ra.Group != rb.Group || ra.Email == "" || rb.Email == "" || ra.Email == rb.Email {
				continue
			}
			ea, eb := ra.Email, rb.Email
			w.setEmail(a, eb) // clashes
			w.setEmail(a, "")
			w.setEmail(b, ea)
			w.setEmail(a, eb)
			return
		}
	}
	w.takeEmail(w.ids[w.r.IntN(len(w.ids))])
}

func (w *lcWriter) setEmail(id int, email string) {
	rec, ok := w.model[id]
	if !ok {
		return
	}
	rec.Email = email
	rec.Sum = rec.sum()
	w.update(rec, 0)
}

// shuffled returns the ids of the writer's records, in random order.
func (w *lcWriter) shuffled() []int {
	var ids []int
	for _, id := range w.ids {
		if _, ok := w.model[id]; ok {
			ids = append(ids, id)
		}
	}
	w.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids
}

// fixDuplicate clears the email of a record that shares it with a sibling,
// which a write accepted while the unique index was not enforced, and
// reports whether there was one.
func (w *lcWriter) fixDuplicate() bool {
	for _, id := range w.ids {
		if rec, ok := w.model[id]; ok && w.clashes(rec) {
			w.setEmail(id, "")
			return true
		}
	}
	return false
}

// write runs do, a write of record id (next, or a delete when next is
// nil), on the current table, and checks its outcome against the model,
// which it then updates. expect is the error the model predicts. A write
// that would give two records one unique key must be refused, unless the
// unique index may not have been enforced meanwhile. A refused write must
// change nothing; an accepted one must be read back as written.
func (w *lcWriter) write(op string, id int, next *lcRec, expect error, do func(context.Context, *it.Table[lcRec]) (it.Version, error)) {
	run := w.run
	clash := expect == nil && next != nil && w.clashes(*next)
	if clash { // the duplicate may be in the store before the write returns
		run.dupLive.Add(1)
		run.dupSeq.Add(1)
	}
	tbl, v, enforced, err := w.do(do)
	if clash {
		run.dupLive.Add(-1)
	}
	if run.stopped() {
		return
	}
	what := fmt.Sprintf("writer %d: %s of record %d", w.w, op, id)
	if next != nil {
		what += fmt.Sprintf(" to %+v", *next)
	}
	switch {
	case expect != nil && errors.Is(err, expect), clash && errors.Is(err, it.ErrUniqueViolation):
		run.count("write refused: " + lcErrKind(err))
		w.checkUnchanged(tbl, what, id)
	case expect != nil:
		run.fail("wrong write outcome", "%s: got %v, want %v", what, err, expect)
		w.resync(tbl, id)
	case clash && err == nil && enforced:
		run.fail("unique key not enforced", "%s: accepted, though record %v has its key", what, w.sibling(*next))
		w.applied(tbl, what, id, next, v)
	case errors.Is(err, it.ErrUniqueViolation):
		run.fail("false unique violation", "%s: %v; no other record has the key", what, err)
		w.checkUnchanged(tbl, what, id)
	case err != nil:
		run.fail("write failed", "%s: %v", what, err)
		w.resync(tbl, id)
	default:
		if clash {
			run.count("write: clash accepted, not enforced")
		} else {
			run.count("write")
		}
		w.applied(tbl, what, id, next, v)
	}
}

// do runs a write on the current table, and reports whether the unique
// index was enforced all along.
func (w *lcWriter) do(write func(context.Context, *it.Table[lcRec]) (it.Version, error)) (tbl *it.Table[lcRec], v it.Version, enforced bool, err error) {
	run := w.run
	run.gate.RLock()
	defer run.gate.RUnlock()
	before := run.uniq.Load()
	tbl = run.tbl
	v, err = write(run.ctx, tbl)
	after := run.uniq.Load()
	return tbl, v, before == after && before%2 == 0, err
}

// lcErrKind names the kind of a write's error, for the log.
func lcErrKind(err error) string {
	for _, e := range []error{it.ErrExists, it.ErrNotFound, it.ErrConflict, it.ErrUniqueViolation} {
		if errors.Is(err, e) {
			return strings.TrimPrefix(e.Error(), "indextable: ")
		}
	}
	return fmt.Sprint(err)
}

// sibling returns the record rec clashes with.
func (w *lcWriter) sibling(rec lcRec) lcRec {
	for id, o := range w.model {
		if id != rec.ID && o.Group == rec.Group && o.Email == rec.Email {
			return o
		}
	}
	return lcRec{}
}

// applied records an accepted write in the model and reads it back.
func (w *lcWriter) applied(tbl *it.Table[lcRec], what string, id int, next *lcRec, v it.Version) {
	if next == nil {
		delete(w.model, id)
		delete(w.ver, id)
	} else {
		w.model[id], w.ver[id] = *next, v
	}
	w.noteDuplicates()
	if !w.matchesStore(tbl, id) {
		w.run.fail("write not read back", "%s", what)
		w.resync(tbl, id)
	}
}

// checkUnchanged checks that a refused write left record id as it was.
func (w *lcWriter) checkUnchanged(tbl *it.Table[lcRec], what string, id int) {
	if !w.matchesStore(tbl, id) {
		w.run.fail("refused write changed the record", "%s", what)
		w.resync(tbl, id)
	}
}

// matchesStore reports whether record id and its version are as modeled.
func (w *lcWriter) matchesStore(tbl *it.Table[lcRec], id int) bool {
	rec, v, err := tbl.GetVersioned(w.run.ctx, lcGroup(id), id)
	want, ok := w.model[id]
	switch {
	case errors.Is(err, it.ErrNotFound):
		return !ok
	case err != nil:
		if !w.run.stopped() {
			w.run.fail("read back failed", "writer %d: record %d: %v", w.w, id, err)
		}
		return true
	}
	return ok && v == w.ver[id] && assert.ObjectsAreEqual(want.normalized(), rec.normalized())
}

// resync takes record id from the store, after a failure, so that one bug
// is reported once.
func (w *lcWriter) resync(tbl *it.Table[lcRec], id int) {
	rec, v, err := tbl.GetVersioned(w.run.ctx, lcGroup(id), id)
	switch {
	case errors.Is(err, it.ErrNotFound):
		delete(w.model, id)
		delete(w.ver, id)
	case err == nil:
		w.model[id], w.ver[id] = rec, v
	}
	w.noteDuplicates()
}

// noteDuplicates keeps the run's count of writers that hold a duplicate
// unique key.
func (w *lcWriter) noteDuplicates() {
	dup := false
	for _, rec := range w.model {
		dup = dup || w.clashes(rec)
	}
	if dup != w.dup {
		w.dup = dup
		w.run.dupSeq.Add(1)
		if dup {
			w.run.dupLive.Add(1)
		} else {
			w.run.dupLive.Add(-1)
		}
	}
}

// reader queries random indexes until the writers are done (at least
// sizes.reads times, at most three times that).
func (run *lcRun) reader(r *rand.Rand) {
	for n := 0; (n < run.sizes.reads || !run.countsMet() && n < 3*run.sizes.reads) && !run.stopped(); n++ {
		run.read(r)
		run.progress.Add(1)
	}
}

// read runs one random query on the current table and checks that every
// result is a sound record that has a key within the query. An index may
// be unreadable; no other error is right.
func (run *lcRun) read(r *rand.Rand) {
	run.gate.RLock()
	defer run.gate.RUnlock()
	tbl, schema := run.tbl, run.schema
	present := schema.present()
	i := present[r.IntN(len(present))]
	ix, spec := &lcIndexes[i], schema.spec(i)
	q := lcQuery(r, ix, nil, run.sizes.writers)
	// A covered read of a multi-valued index holds no key to check.
	q.Covered = !spec.MultiValued && r.IntN(3) == 0
	what := fmt.Sprintf("reader: index %s (%+v), query %s", ix.name, spec, lcShowQuery(q))
	switch r.IntN(5) {
	case 0, 1:
		if r.IntN(2) == 0 {
			q.Limit = 1 + r.IntN(4)
		}
		for rec, err := range tbl.Find(run.ctx, q) {
			if err != nil {
				run.readError(what, err, false)
				break
			}
			run.checkResult(what, ix, spec, q, rec)
		}
	case 2:
		q.Limit = 1 + r.IntN(3)
		for page := 0; ; page++ {
			recs, next, err := tbl.FindPage(run.ctx, q)
			if err != nil {
				run.readError(what, err, page > 0)
				break
			}
			for _, rec := range recs {
				run.checkResult(what, ix, spec, q, rec)
			}
			if next == "" {
				break
			}
			q.Cursor = next
		}
	case 3:
		_, err := tbl.Count(run.ctx, q)
		run.readError(what+" (Count)", err, false)
	default:
		_, err := tbl.Exists(run.ctx, q)
		run.readError(what+" (Exists)", err, false)
	}
}

// readError reports err unless it is nil or says the index is not
// readable; a continued FindPage may also find its cursor refused, when
// the index was defined anew between pages.
func (run *lcRun) readError(what string, err error, continued bool) {
	switch {
	case err == nil:
		run.count("read")
	case errors.Is(err, it.ErrIndexNotReadable):
		run.count("read: not readable")
	case run.stopped():
	case continued && errors.Is(err, it.ErrInvalidCursor):
		run.count("read: cursor refused")
	default:
		run.fail("read failed", "%s: %v", what, err)
	}
}

// checkResult checks one result of query q on index ix: a record of a
// writer, whole (unless covered) and with a key within the query.
func (run *lcRun) checkResult(what string, ix *lcIndex, spec it.Index[lcRec], q it.Query, rec lcRec) {
	owner := rec.ID / run.sizes.keys
	whole := !q.Covered || spec.Strategy == it.FullCopy
	switch {
	case rec.ID < 0 || owner >= run.sizes.writers || rec.Group != lcGroup(rec.ID):
		run.fail("read returned no writer's record", "%s: %+v", what, rec)
	case rec.Email != "" && !strings.HasPrefix(rec.Email, fmt.Sprintf("w%d-", owner)):
		run.fail("read returned a mixed-up record", "%s: %+v", what, rec)
	case whole && rec.Sum != rec.sum():
		run.fail("read returned a torn record", "%s: %+v (checksum %d, want %d)", what, rec, rec.Sum, rec.sum())
	case !slices.ContainsFunc(ix.keys(rec), func(k it.Tuple) bool { return lcMatches(q, k) }):
		run.fail("read returned a record outside the query", "%s: %+v has keys %v", what, rec, ix.keys(rec))
	}
}

// lcShowQuery renders the parts of q that make it.
func lcShowQuery(q it.Query) string {
	s := fmt.Sprintf("Eq %v", q.Eq)
	for i, b := range []*it.Bound{q.Lower, q.Upper} {
		if b != nil {
			s += fmt.Sprintf(" %s %v (exclusive %v)", []string{"Lower", "Upper"}[i], b.Value, b.Exclusive)
		}
	}
	return s + fmt.Sprintf(" Reverse %v Covered %v Limit %d", q.Reverse, q.Covered, q.Limit)
}

// lifecycle runs random lifecycle operations: sizes.lifecycle of them, and
// more while the writers have not done their count (up to ten times it).
func (run *lcRun) lifecycle(r *rand.Rand) {
	defer run.lifecycleMet.Store(true)
	for n := 0; !run.stopped(); n++ {
		if n >= run.sizes.lifecycle {
			run.lifecycleMet.Store(true)
			if run.writersShort.Load() == 0 || n >= 10*run.sizes.lifecycle {
				return
			}
		}
		run.lifecycleStep(r)
		run.progress.Add(1)
	}
}

// countsMet reports whether the writers and the lifecycle have done their
// counts of operations.
func (run *lcRun) countsMet() bool {
	return run.writersShort.Load() == 0 && run.lifecycleMet.Load()
}

func (run *lcRun) lifecycleStep(r *rand.Rand) {
	tbl, schema := run.tbl, run.schema // only this goroutine changes them
	defer run.confirm()
	present := schema.present()
	i := present[r.IntN(len(present))]
	op := r.IntN(20)
	kind := []string{"disable", "enable", "build", "verify", "repair", "status", "pair", "reopen"}[lcOpKind(op)]
	if kind == "disable" || kind == "enable" {
		kind += " " + lcIndexes[i].name
	}
	run.count("lifecycle: " + strings.Fields(kind)[0])
	last, _ := run.lifecycleOp.Load().(string)
	run.lifecycleOp.Store(fmt.Sprintf("%s under way, after %s", kind, strings.Split(last, " under way")[0]))
	defer run.lifecycleOp.Store(kind + " done")
	switch {
	case op < 2:
		run.disable(tbl, i)
	case op < 5:
		run.enable(tbl, i)
	case op < 9:
		run.build(tbl, schema, "Build", 1+r.IntN(8))
	case op < 12:
		run.verify(tbl, "Verify", false, 1+r.IntN(8))
	case op < 14:
		run.verify(tbl, "Repair", true, 1+r.IntN(8))
	case op < 15:
		run.status(tbl, schema)
	case op < 18:
		run.pair(r, tbl, schema)
	default:
		run.reopen(r)
	}
}

// lcOpKind maps a lifecycle draw to its kind, as lifecycleStep does.
func lcOpKind(op int) int {
	for k, end := range []int{2, 5, 9, 12, 14, 15, 18} {
		if op < end {
			return k
		}
	}
	return 7
}

func (run *lcRun) disable(tbl *it.Table[lcRec], i int) {
	if i == lcUnique {
		run.setUniqueEnforced(false)
	}
	if err := tbl.DisableIndex(run.ctx, lcIndexes[i].name); err != nil && !run.stopped() {
		run.fail("DisableIndex failed", "index %s: %v", lcIndexes[i].name, err)
	}
}

func (run *lcRun) enable(tbl *it.Table[lcRec], i int) {
	// The unique index, enabled, is write-only: not enforced yet.
	if err := tbl.EnableIndex(run.ctx, lcIndexes[i].name); err != nil && !run.stopped() {
		run.fail("EnableIndex failed", "index %s: %v", lcIndexes[i].name, err)
	}
}

// build runs Build. A unique violation is right only while a writer
// holds a duplicate key, which it may while the index is not enforced.
func (run *lcRun) build(tbl *it.Table[lcRec], schema lcSchema, op string, chunk int) {
	seq, live := run.dupSeq.Load(), run.dupLive.Load()
	err := tbl.Build(run.ctx, it.BuildOptions{ChunkSize: chunk})
	dups := live > 0 || run.dupLive.Load() > 0 || run.dupSeq.Load() != seq
	run.noteUniqueReadable(tbl, schema)
	switch {
	case err == nil, run.stopped():
	case errors.Is(err, it.ErrUniqueViolation) && dups:
	case errors.Is(err, it.ErrUniqueViolation):
		run.fail("false unique violation in Build", "%s (chunks of %d): %v", op, chunk, err)
	default:
		run.fail("Build failed", "%s (chunks of %d): %v", op, chunk, err)
	}
}

// verify runs Verify, or Repair, and records what it finds: drift that
// the writers' model never has.
func (run *lcRun) verify(tbl *it.Table[lcRec], op string, repair bool, chunk int) {
	do := tbl.Verify
	if repair {
		do = tbl.Repair
	}
	rep, err := do(run.ctx, it.VerifyOptions{ChunkSize: chunk})
	if run.stopped() {
		return
	}
	if err != nil {
		run.fail(op+" failed", "chunks of %d: %v", chunk, err)
		return
	}
	if rep.Total() > 0 {
		run.mu.Lock()
		run.findings = append(run.findings, lcFinding{op: fmt.Sprintf("%s (chunks of %d)", op, chunk), drift: rep.Drift, samples: rep.Samples})
		run.mu.Unlock()
	}
}

// status checks that IndexStatus lists the schema's indexes, each in a
// state of the lifecycle.
func (run *lcRun) status(tbl *it.Table[lcRec], schema lcSchema) {
	list, err := tbl.IndexStatus(run.ctx)
	if err != nil {
		if !run.stopped() {
			run.fail("IndexStatus failed", "%v", err)
		}
		return
	}
	var names, want []string
	for _, st := range list {
		names = append(names, st.Name)
		if !slices.Contains([]it.IndexState{it.IndexDeleteOnly, it.IndexWriteOnly, it.IndexReadable, it.IndexDisabled}, st.State) {
			run.fail("IndexStatus: unknown state", "%+v", st)
		}
	}
	for _, i := range schema.present() {
		want = append(want, lcIndexes[i].name)
	}
	if !slices.Equal(names, want) {
		run.fail("IndexStatus: wrong indexes", "got %v, want %v", names, want)
	}
}

// pair runs two of Build, Verify and Repair at once.
func (run *lcRun) pair(r *rand.Rand, tbl *it.Table[lcRec], schema lcSchema) {
	var wg sync.WaitGroup
	ops := [2]int{r.IntN(3), r.IntN(3)}
	names := []string{"Build", "Verify", "Repair"}
	for k, op := range ops {
		chunk := 1 + r.IntN(8)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer run.recoverPanic("lifecycle pair")
			label := fmt.Sprintf("%s beside %s", names[op], names[ops[1-k]])
			switch op {
			case 0:
				run.build(tbl, schema, label, chunk)
			case 1:
				run.verify(tbl, label, false, chunk)
			default:
				run.verify(tbl, label, true, chunk)
			}
		}()
	}
	wg.Wait()
}

// reopen pauses the writers and readers, opens the table with another
// schema, and switches every goroutine, and the maintainer, to it.
func (run *lcRun) reopen(r *rand.Rand) {
	next := run.schema.mutate(r)
	run.gate.Lock()
	defer run.gate.Unlock()
	run.stopMaintainer()
	defer run.startMaintainer()
	tbl, err := it.Open(run.ctx, run.store, next.schema(run.codec))
	if err != nil {
		if !run.stopped() {
			run.fail("reopen failed", "schema %v: %v", next, err)
		}
		return
	}
	run.tbl, run.schema = tbl, next
	run.setUniqueEnforced(false)
	run.noteUniqueReadable(tbl, next)
}

// finish checks the table once the run is quiet: every queued change
// applied, Verify is clean (so every finding of the run was false), the
// fact table and every readable index equal the model; then again after
// every index is enabled and built.
func (run *lcRun) finish(model map[int]lcRec, versions map[int]it.Version) {
	t := run.t
	r := run.rand(4, 0)
	run.waitIndexed("after the run")
	quiet := run.quietVerify("after the run")
	run.judgeFindings(quiet, "the quiet Verify after the run")
	run.checkFacts(model, versions)
	run.checkIndexes(r, model)

	for _, i := range run.schema.present() {
		require.NoError(t, run.tbl.EnableIndex(run.ctx, lcIndexes[i].name), "seed %d", run.seed)
	}
	require.NoError(t, run.tbl.Build(run.ctx, it.BuildOptions{}), "seed %d: the last Build", run.seed)
	run.waitIndexed("after the last Build")
	list, err := run.tbl.IndexStatus(run.ctx)
	require.NoError(t, err)
	for _, st := range list {
		assert.Equal(t, it.IndexReadable, st.State, "seed %d: index %s after the last Build", run.seed, st.Name)
	}
	run.quietVerify("after the last Build")
	run.checkIndexes(r, model)
	run.mu.Lock()
	t.Logf("seed %d: schema at the end %v; %d operations: %v", run.seed, run.schema, run.progress.Load(), run.counts)
	run.mu.Unlock()
}

// waitIndexed waits until the maintainer has applied every queued change,
// or fails when the maintainer is gone.
func (run *lcRun) waitIndexed(when string) {
	ctx, cancel := context.WithCancel(run.ctx)
	defer cancel()
	done := run.maint.done
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := run.tbl.WaitIndexed(ctx); err != nil {
		run.fail("WaitIndexed failed", "%s: %v (the maintainer stopped)", when, err)
	}
	run.progress.Add(1)
}

// quietVerify runs Verify with nothing else running: it must be clean.
func (run *lcRun) quietVerify(when string) *it.VerifyReport {
	rep, err := run.tbl.Verify(run.ctx, it.VerifyOptions{})
	require.NoError(run.t, err, "seed %d: quiet Verify %s", run.seed, when)
	if rep.Total() > 0 {
		run.fail("drift", "quiet Verify %s: %v, samples %v", when, rep.Drift, lcFirst(rep.Samples, 5))
	}
	run.progress.Add(1)
	return rep
}

func lcFirst[E any](list []E, n int) []E { return list[:min(n, len(list))] }

// confirm judges the findings of the last lifecycle operation, if any: it
// pauses the writers and readers, lets the maintainer catch up, and runs a
// quiet Verify. A finding it does not repeat was false; drift it finds is
// reported, and repaired so that it is reported once.
func (run *lcRun) confirm() {
	run.mu.Lock()
	fresh := len(run.findings) > run.judged
	run.mu.Unlock()
	if !fresh || run.stopped() {
		return
	}
	run.gate.Lock()
	defer run.gate.Unlock()
	run.waitIndexed("to confirm a finding")
	rep, err := run.tbl.Verify(run.ctx, it.VerifyOptions{})
	if err != nil {
		if !run.stopped() {
			run.fail("Verify failed", "quiet, to confirm a finding: %v", err)
		}
		return
	}
	run.judgeFindings(rep, "a quiet Verify right after")
	if rep.Total() > 0 {
		run.fail("drift", "a quiet Verify during the run: %v, samples %v", rep.Drift, lcFirst(rep.Samples, 5))
		if _, err := run.tbl.Repair(run.ctx, it.VerifyOptions{}); err != nil && !run.stopped() {
			run.fail("Repair failed", "quiet, of confirmed drift: %v", err)
		}
	}
}

// judgeFindings fails on every finding of the run not yet judged: one the
// quiet Verify does not repeat was false, unless a Repair fixed it (by
// itself, or beside the Verify), which leaves it undecided; one the quiet
// Verify repeats is drift.
func (run *lcRun) judgeFindings(quiet *it.VerifyReport, by string) {
	seen := map[string]bool{}
	for _, d := range quiet.Samples {
		seen[d.String()] = true
	}
	run.mu.Lock()
	fresh := run.findings[run.judged:]
	run.judged = len(run.findings)
	run.mu.Unlock()
	for _, f := range fresh {
		kind, judged := "false finding of Verify", "not in"
		switch {
		case strings.HasPrefix(f.op, "Repair"):
			kind = "finding of Repair, repaired (real drift, or false)"
		case strings.Contains(f.op, "beside Repair"):
			kind = "finding of Verify beside a Repair (false, or drift the Repair fixed)"
		}
		for _, d := range f.samples {
			d.Repaired = false
			if seen[d.String()] {
				kind, judged = "drift found during the run", "also in"
			}
		}
		run.fail(kind, "%s: %v, samples %v; %s %s", f.op, f.drift, lcFirst(f.samples, 5), judged, by)
	}
}

// checkFacts compares the fact table, and each record's version, with the
// model.
func (run *lcRun) checkFacts(model map[int]lcRec, versions map[int]it.Version) {
	want := []lcRec{}
	for _, rec := range model {
		want = append(want, rec.normalized())
	}
	slices.SortFunc(want, func(a, b lcRec) int { return kv.CompareTuples(a.pk(), b.pk()) })
	got := []lcRec{}
	for rec, err := range run.tbl.Find(run.ctx, it.Query{}) {
		require.NoError(run.t, err, "seed %d: scan of the fact table", run.seed)
		got = append(got, rec.normalized())
	}
	if !assert.Equal(run.t, want, got, "seed %d: the fact table", run.seed) {
		run.fail("fact table differs from the model", "see above")
	}
	for id, v := range versions {
		_, got, err := run.tbl.GetVersioned(run.ctx, lcGroup(id), id)
		if err != nil || got != v {
			run.fail("wrong version", "record %d: version %d (%v), want %d", id, got, err, v)
		}
	}
}

// checkIndexes compares queries of every readable index with the brute
// force: the whole index, each key exactly, each leading component, and
// random ranges, each both ways, covered and not, whole and in pages.
func (run *lcRun) checkIndexes(r *rand.Rand, model map[int]lcRec) {
	list, err := run.tbl.IndexStatus(run.ctx)
	require.NoError(run.t, err)
	for k, i := range run.schema.present() {
		if list[k].State != it.IndexReadable {
			continue
		}
		ix, spec := &lcIndexes[i], run.schema.spec(i)
		var keys []it.Tuple
		for _, rec := range model {
			keys = append(keys, ix.keys(rec)...)
		}
		queries := []it.Query{{}}
		for _, k := range keys {
			queries = append(queries, it.Query{Eq: k}, it.Query{Eq: k[:1]})
		}
		for range 30 {
			queries = append(queries, lcQuery(r, ix, keys, run.sizes.writers))
		}
		seen := map[string]bool{}
		for _, q := range queries {
			q.Index = ix.name
			for _, rev := range []bool{false, true} {
				q.Reverse = rev
				if s := lcShowQuery(q); !seen[s] {
					seen[s] = true
					run.checkQuery(r, ix, spec, model, q)
				}
			}
		}
		run.progress.Add(1)
	}
}

// checkQuery compares q, covered and not, limited and in pages, and its
// Count and Exists, with the brute force.
func (run *lcRun) checkQuery(r *rand.Rand, ix *lcIndex, spec it.Index[lcRec], model map[int]lcRec, q it.Query) {
	what := fmt.Sprintf("index %s (%+v), query %s", ix.name, spec, lcShowQuery(q))
	for _, covered := range []bool{false, true} {
		q.Covered = covered
		want := lcExpect(ix, spec, model, q)
		if got, err := run.collect(q); err != nil || !assert.ObjectsAreEqual(want, got) {
			run.fail("wrong query result", "%s covered %v: got %v (%v), want %v", what, covered, got, err, want)
		}
		q.Limit = 1 + r.IntN(3)
		var paged []lcRec
		for q.Cursor = ""; ; {
			page, next, err := run.tbl.FindPage(run.ctx, q)
			if err != nil {
				run.fail("wrong query result", "%s covered %v, page of %d: %v", what, covered, q.Limit, err)
				break
			}
			for _, rec := range page {
				paged = append(paged, rec.normalized())
			}
			if q.Cursor = next; next == "" {
				break
			}
		}
		if !assert.ObjectsAreEqual(want, append([]lcRec{}, paged...)) {
			run.fail("wrong query result", "%s covered %v, in pages of %d: got %v, want %v", what, covered, q.Limit, paged, want)
		}
		q.Cursor = ""
		if got, err := run.collect(q); err != nil || !assert.ObjectsAreEqual(lcFirst(want, q.Limit), got) {
			run.fail("wrong query result", "%s covered %v, limit %d: got %v (%v), want %v", what, covered, q.Limit, got, err, lcFirst(want, q.Limit))
		}
		q.Limit = 0
		n, err := run.tbl.Count(run.ctx, q)
		if err != nil || n != len(want) {
			run.fail("wrong query result", "%s: Count %d (%v), want %d", what, n, err, len(want))
		}
		ok, err := run.tbl.Exists(run.ctx, q)
		if err != nil || ok != (len(want) > 0) {
			run.fail("wrong query result", "%s: Exists %v (%v), want %v", what, ok, err, len(want) > 0)
		}
	}
}

// collect reads q whole.
func (run *lcRun) collect(q it.Query) ([]lcRec, error) {
	out := []lcRec{}
	for rec, err := range run.tbl.Find(run.ctx, q) {
		if err != nil {
			return out, err
		}
		out = append(out, rec.normalized())
	}
	return out, nil
}
