package indextable_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
)

// BenchmarkLoad measures Table.Load of the benchRecords customers of
// bench_test.go (binary codec) into an empty table on a new memory store,
// against the floor loading the same records by hand, in the same run. An
// op is one whole load; each reports ns/record. Names are
// BenchmarkLoad/floor and BenchmarkLoad/<strategy>/<way>:
//
//   - floor: the records put into BenchmarkFloor's B-trees (newFloor), a
//     primary tree of record pointers and the two secondary trees that
//     order them by their index keys, in batches of loadFloorBatch records,
//     each under one lock.
//   - <strategy>/indexed: Load into a table with the two indexes of
//     fixture.Schema, both of the strategy, in its default batches.
//   - <strategy>/then-build: Load into the table without indexes, then
//     Open with the indexes (they start write-only) and Build: the other
//     way to load an empty table.
//   - <strategy>/inserts: one Table.Insert a record into the indexed
//     table, the way without Load.
//
// Each op starts from a new store, made and collected with the timer
// stopped. Use -benchtime=1x and repeat with -count, as `make bench` does:
//
//	go test -run='^$' -bench='^BenchmarkLoad$' -benchmem -benchtime=1x -count=10 .
func BenchmarkLoad(b *testing.B) {
	base := benchBase()
	b.Run("floor", func(b *testing.B) {
		benchLoadOps(b, func() { loadFloor(b, base) })
	})
	for _, st := range strategies {
		schema := fixture.Schema(st.s, st.proj, &it.BinaryCodec{})
		b.Run(st.name+"/indexed", func(b *testing.B) {
			benchLoadOps(b, func() { loadTable(b, schema, base) })
		})
		b.Run(st.name+"/then-build", func(b *testing.B) {
			benchLoadOps(b, func() { loadThenBuild(b, it.NewMemoryStore(), schema, base) })
		})
		b.Run(st.name+"/inserts", func(b *testing.B) {
			benchLoadOps(b, func() { insertAll(b, schema, base) })
		})
	}
}

// benchLoadOps runs load b.N times, timed, each after a garbage collection
// with the timer stopped, and reports ns/record and cpu-ns/record: the CPU
// time of the whole process (every goroutine's, the garbage collector's
// included) while timed. Load applies a batch while it encodes the next,
// so its time is less than its CPU time when it has two cores.
func benchLoadOps(b *testing.B, load func()) {
	b.ReportAllocs()
	b.StopTimer()
	loadCPU = 0
	for range b.N {
		runtime.GC()
		load()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
	b.ReportMetric(float64(loadCPU.Nanoseconds())/float64(b.N*benchRecords), "cpu-ns/record")
}

// loadCPU sums the CPU time of the timed parts of a benchmark's loads
// (startLoad to stopLoad), and loadCPUStart is the process's CPU time at
// the last startLoad.
var loadCPU, loadCPUStart time.Duration

// startLoad starts b's timer and notes the process's CPU time.
func startLoad(b *testing.B) {
	loadCPUStart = processCPU(b)
	b.StartTimer()
}

// stopLoad stops b's timer and adds the CPU time since startLoad.
func stopLoad(b *testing.B) {
	b.StopTimer()
	loadCPU += processCPU(b) - loadCPUStart
}

// loadFloorBatch is how many records the floor puts under one lock, as
// many as a batch of Load holds by default.
const loadFloorBatch = 1000

// loadFloor puts recs into a new floor, timed. This is the least a bulk
// load into these three trees can do: one insert a tree a record, the
// primary tree's telling whether the key was taken (a load refuses a
// record whose key is), no copy of the record but the one its tree holds,
// and no encoding, as BenchmarkFloor's inserts. The lock taken once a batch
// stands for the one a store shared between goroutines takes once a
// batch, as the memory store does once an Apply; at 1,000 records a batch
// it costs next to nothing, and a floor without it would be no faster to
// speak of.
func loadFloor(b *testing.B, recs []Customer) {
	f := newFloor()
	var mu sync.Mutex
	startLoad(b)
	for batch := range slices.Chunk(recs, loadFloorBatch) {
		mu.Lock()
		for _, c := range batch {
			rec := &c
			if _, taken := f.primary.ReplaceOrInsert(rec); taken {
				b.Fatalf("customer %s loaded twice", c.ID)
			}
			f.townName.ReplaceOrInsert(rec)
			f.lastName.ReplaceOrInsert(rec)
		}
		mu.Unlock()
	}
	stopLoad(b)
	if f.primary.Len() != len(recs) || f.lastName.Len() != len(recs) {
		b.Fatalf("the floor holds %d records, not %d", f.primary.Len(), len(recs))
	}
}

// loadTable loads recs into a new table of schema on a new memory store,
// timed.
func loadTable(b *testing.B, schema it.Schema[Customer], recs []Customer) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), schema)
	if err != nil {
		b.Fatal(err)
	}
	startLoad(b)
	rep, err := tbl.Load(ctx, slices.Values(recs), it.LoadOptions{})
	stopLoad(b)
	checkLoaded(b, rep, err, len(recs))
}

// insertAll inserts recs one by one into a new table of schema on a new
// memory store, timed.
func insertAll(b *testing.B, schema it.Schema[Customer], recs []Customer) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), schema)
	if err != nil {
		b.Fatal(err)
	}
	startLoad(b)
	for _, c := range recs {
		if _, err := tbl.Insert(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	stopLoad(b)
}

// loadThenBuild loads recs into a new table of schema without its indexes
// on store, then opens the table with them and builds them, timed.
func loadThenBuild(b *testing.B, store kv.Store, schema it.Schema[Customer], recs []Customer) {
	ctx := context.Background()
	facts := schema
	facts.Indexes = nil
	tbl, err := it.Open(ctx, store, facts)
	if err != nil {
		b.Fatal(err)
	}
	startLoad(b)
	rep, err := tbl.Load(ctx, slices.Values(recs), it.LoadOptions{})
	if err == nil {
		if tbl, err = it.Open(ctx, store, schema); err == nil {
			err = tbl.Build(ctx, it.BuildOptions{})
		}
	}
	stopLoad(b)
	checkLoaded(b, rep, err, len(recs))
	st, err := tbl.IndexStatus(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range st {
		if s.State != it.IndexReadable || s.Done != int64(len(recs)) {
			b.Fatalf("index %q: %v with %d records done after Build", s.Name, s.State, s.Done)
		}
	}
}

// checkLoaded fails b unless a load that returned rep and err inserted n
// records.
func checkLoaded(b *testing.B, rep it.LoadReport, err error, n int) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Inserted != n || rep.Refused != 0 {
		b.Fatalf("loaded %+v of %d records", rep.LoadProgress, n)
	}
}
