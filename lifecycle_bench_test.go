package indextable_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	it "github.com/indextable/indextable"
)

// The lifecycle benchmarks time what an index costs besides its reads: an
// eventual write, the maintainer that catches up with it, a backfill, and a
// verification. They use the customers, towns and sizes of bench_test.go,
// the binary codec and keys-only indexes. Run them with:
//
//	go test -run='^$' -bench='EventualWrite|Maintainer|Verify' -benchmem -benchtime=20000x .
//	go test -run='^$' -bench=Backfill -benchtime=1x .

// backfillRecords is the size of the table BenchmarkBackfill builds an
// index over.
const backfillRecords = 1_000_000

// benchSurnameNames are the surnames of benchCustomer, made once.
var benchSurnameNames = sync.OnceValue(func() []string {
	names := make([]string, benchSurnames)
	for i := range names {
		names[i] = fmt.Sprintf("Surname%04d", i)
	}
	return names
})

// lifecycleIndexes returns the two indexes of bench_test.go, a composite
// (Town, LastName) and a LastName index, keys-only, of consistency c.
func lifecycleIndexes(c it.Consistency) []it.Index[Customer] {
	return []it.Index[Customer]{
		{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: it.KeysOnly, Consistency: c},
		{Name: "lastname", Fields: []string{"LastName"}, Strategy: it.KeysOnly, Consistency: c},
	}
}

func lifecycleSchema(indexes []it.Index[Customer]) it.Schema[Customer] {
	return it.Schema[Customer]{Name: "customers", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{}, Indexes: indexes}
}

// openLoaded opens a table with indexes over a new memory store, inserts the
// benchRecords customers and applies the changes that queued, so that the
// indexes are complete and the queue empty.
func openLoaded(b *testing.B, indexes []it.Index[Customer]) *it.Table[Customer] {
	b.Helper()
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), lifecycleSchema(indexes))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchBase() {
		if _, err := tbl.Insert(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	drain(b, tbl, it.MaintainerOptions{})
	runtime.GC() // of the loading's garbage, not to be timed
	return tbl
}

// drain makes ApplyPending passes until no change is pending, and returns
// how many changes it applied.
func drain(b *testing.B, tbl *it.Table[Customer], opts it.MaintainerOptions) int {
	b.Helper()
	ctx := context.Background()
	applied := 0
	for {
		n, err := tbl.ApplyPending(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		applied += n
		lag, err := tbl.Lag(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if lag.Pending == 0 {
			return applied
		}
		if n == 0 {
			b.Fatalf("a maintainer pass applied nothing, %d changes pending", lag.Pending)
		}
	}
}

// keyMover makes the updates of the benchmarks: it cycles through the
// loaded customers, giving each a town and a surname it did not have in the
// round before, so that every update moves the record's key in both
// indexes. Its count goes on across the runs of a benchmark on one table.
type keyMover struct {
	n               int
	customers       []Customer
	towns, surnames []string
}

func newKeyMover() *keyMover {
	return &keyMover{customers: benchBase(), towns: benchTownNames(), surnames: benchSurnameNames()}
}

func (m *keyMover) next() Customer {
	i, round := m.n%benchRecords, m.n/benchRecords+1
	m.n++
	c := m.customers[i]
	c.Town = m.towns[(i%benchTowns+round)%benchTowns]
	c.LastName = m.surnames[(i/benchTowns+round)%benchSurnames]
	return c
}

// BenchmarkEventualWrite measures the write latency of eventual indexes:
// updates that move a record's keys, on a table of benchRecords customers
// with no index (fact-only, the baseline), with two Eventual indexes
// (eventual: no maintainer runs, the queue grows by one change a write) and
// with the same two indexes Synchronous, for context. Target: eventual
// ns/op at most 1.3x fact-only, reported as x-fact-only.
func BenchmarkEventualWrite(b *testing.B) {
	ctx := context.Background()
	var factOnly float64 // ns/op of the last fact-only run
	for _, m := range []struct {
		name    string
		indexes []it.Index[Customer]
	}{
		{"fact-only", nil},
		{"eventual", lifecycleIndexes(it.Eventual)},
		{"synchronous", lifecycleIndexes(it.Synchronous)},
	} {
		var tbl *it.Table[Customer]
		var mover *keyMover
		b.Run(m.name, func(b *testing.B) {
			if tbl == nil {
				tbl, mover = openLoaded(b, m.indexes), newKeyMover()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := tbl.Upsert(ctx, mover.next()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if m.indexes == nil {
				factOnly = ns
			} else if factOnly > 0 {
				b.ReportMetric(ns/factOnly, "x-fact-only")
			}
			drain(b, tbl, it.MaintainerOptions{}) // the next run starts from an empty queue
		})
	}
}

// BenchmarkMaintainer measures the maintainer's throughput: b.N updates
// that move a record's keys are queued on a table of benchRecords customers
// with two Eventual indexes, then ApplyPending passes, with the BatchSize of
// the sub-benchmark, run until the queue is empty. An op is one change;
// changes/s and mutations/s are reported.
//
// Mutations are the index entries a pass deletes and puts. A record changed
// k times (k = 1 while b.N <= benchRecords) is applied as one group: it
// deletes the 2 entries (one an index) of each of its k earlier versions,
// all different, and puts the 2 entries of the current one, 2k+2 in all;
// so b.N changes to min(b.N, benchRecords) records make 2*b.N +
// 2*min(b.N, benchRecords) mutations, 4 a change for b.N <= benchRecords.
func BenchmarkMaintainer(b *testing.B) {
	ctx := context.Background()
	var tbl *it.Table[Customer]
	var mover *keyMover
	for _, size := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("batch-%d", size), func(b *testing.B) {
			if tbl == nil {
				tbl, mover = openLoaded(b, lifecycleIndexes(it.Eventual)), newKeyMover()
			}
			for range b.N {
				if _, err := tbl.Upsert(ctx, mover.next()); err != nil {
					b.Fatal(err)
				}
			}
			if lag, err := tbl.Lag(ctx); err != nil || lag.Pending != b.N {
				b.Fatalf("%d changes queued, want %d (%v)", lag.Pending, b.N, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			applied := drain(b, tbl, it.MaintainerOptions{BatchSize: size})
			b.StopTimer()
			if applied != b.N {
				b.Fatalf("applied %d changes, want %d", applied, b.N)
			}
			secs := b.Elapsed().Seconds()
			mutations := 2*b.N + 2*min(b.N, benchRecords)
			b.ReportMetric(float64(b.N)/secs, "changes/s")
			b.ReportMetric(float64(mutations)/secs, "mutations/s")
		})
	}
}

// BenchmarkBackfill measures Build: backfillRecords customers are loaded
// into a table with no index, which is then opened again with a keys-only
// (Town, LastName) index; the index starts write-only, and Build, timed,
// makes it readable. Each op loads a new store, outside the timer, and
// builds once: run it with -benchtime=1x. Reports records/s.
func BenchmarkBackfill(b *testing.B) {
	if testing.Short() {
		b.Skip("loads 1,000,000 records")
	}
	ctx := context.Background()
	index := []it.Index[Customer]{lifecycleIndexes(it.Synchronous)[0]}
	b.ReportAllocs()
	b.StopTimer()
	for range b.N {
		store := it.NewMemoryStore()
		facts, err := it.Open(ctx, store, lifecycleSchema(nil))
		if err != nil {
			b.Fatal(err)
		}
		for i := range backfillRecords {
			if _, err := facts.Upsert(ctx, benchCustomer(i)); err != nil {
				b.Fatal(err)
			}
		}
		tbl, err := it.Open(ctx, store, lifecycleSchema(index))
		if err != nil {
			b.Fatal(err)
		}
		if st, err := tbl.IndexStatus(ctx); err != nil || st[0].State != it.IndexWriteOnly {
			b.Fatalf("index status %+v, %v: want write-only", st, err)
		}
		runtime.GC() // of the loading's garbage
		b.StartTimer()
		if err := tbl.Build(ctx, it.BuildOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st, err := tbl.IndexStatus(ctx); err != nil || st[0].State != it.IndexReadable || st[0].Done != backfillRecords {
			b.Fatalf("index status %+v, %v: want readable with %d records done", st, err, backfillRecords)
		}
	}
	b.ReportMetric(float64(b.N*backfillRecords)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkVerify measures Verify on a table of benchRecords customers with
// two synchronous indexes of each strategy (openBenchTable), and requires
// it to find no drift. An op is one record verified: a run makes
// ceil(b.N/benchRecords) passes, one for -benchtime=20000x, and ns/op,
// B/op and allocs/op are per record verified. Reports records/s and
// entries/s.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	for _, st := range strategies {
		var tbl *it.Table[Customer]
		b.Run(st.name, func(b *testing.B) {
			if tbl == nil {
				tbl = openBenchTable(b, st.s, st.proj, &it.BinaryCodec{})
			}
			passes := (b.N + benchRecords - 1) / benchRecords
			var records, entries int64
			var before, after runtime.MemStats
			b.ReportAllocs()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range passes {
				rep, err := tbl.Verify(ctx, it.VerifyOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Total() != 0 || rep.Pending != 0 {
					b.Fatalf("drift %v, %d records pending: %v", rep.Drift, rep.Pending, rep.Samples)
				}
				records += rep.Records
				entries += rep.Entries
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			if records != int64(passes*benchRecords) || entries != 2*records {
				b.Fatalf("verified %d records and %d entries in %d passes", records, entries, passes)
			}
			elapsed := b.Elapsed()
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(records), "ns/op")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(records), "B/op")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(records), "allocs/op")
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(entries)/elapsed.Seconds(), "entries/s")
		})
	}
}

// BenchmarkEventualRead measures what the stale check costs a read of an
// eventual full-copy index: a lookup (one record) and a 100-record range,
// on a Synchronous index (the baseline), on an Eventual one with an empty
// queue (the check is one Scan of the queue, limit 1), and on an Eventual
// one with a change pending (every result is then fetched from the fact
// table and checked, as a normalized read does).
func BenchmarkEventualRead(b *testing.B) {
	ctx := context.Background()
	fullCopy := func(c it.Consistency) []it.Index[Customer] {
		ix := lifecycleIndexes(c)
		for i := range ix {
			ix[i].Strategy = it.FullCopy
		}
		return ix
	}
	base, towns := benchBase(), benchTownNames()
	for _, m := range []struct {
		name    string
		c       it.Consistency
		pending bool
	}{
		{"synchronous", it.Synchronous, false},
		{"eventual-empty-queue", it.Eventual, false},
		{"eventual-change-pending", it.Eventual, true},
	} {
		var tbl *it.Table[Customer]
		setup := func(b *testing.B) {
			if tbl != nil {
				return
			}
			tbl = openLoaded(b, fullCopy(m.c))
			if m.pending { // a change to a record no query reads
				c := base[0]
				c.Town = "Nowhere"
				if _, err := tbl.Upsert(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		}
		read := func(b *testing.B, q it.Query, want int) {
			n := 0
			for _, err := range tbl.Find(ctx, q) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != want {
				b.Fatalf("%+v read %d records, want %d", q, n, want)
			}
		}
		b.Run(m.name+"/lookup", func(b *testing.B) {
			setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				c := base[1+i%(benchRecords-1)]
				read(b, it.Query{Index: "town_lastname", Eq: it.Tuple{c.Town, c.LastName}}, 1)
			}
		})
		b.Run(m.name+"/range100", func(b *testing.B) {
			setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				read(b, it.Query{Index: "town_lastname", Eq: it.Tuple{towns[i%benchTowns]}, Limit: 100}, 100)
			}
		})
	}
}
