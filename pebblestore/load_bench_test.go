package pebblestore_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

// BenchmarkLoad measures Table.Load of loadRecords customers (the core's
// benchmark data set, fixture.Bench, binary codec) into an empty table on
// a durable store (pebblestore.Options' default: each batch waits for the
// write-ahead log's fsync), against raw, in the same run. An op is one
// whole load; each reports ns/record. Names are BenchmarkLoad/raw and
// BenchmarkLoad/<strategy>/<way>:
//
//   - raw: the records written as plain Pebble batches of benchRawLoad
//     (1,000) records, each committed with pebble.Sync: the fact keys and
//     values as the table stores them (rawRecord), no index, no read.
//   - <strategy>/indexed: Load into a table with the two indexes of
//     fixture.Schema, both of the strategy, in its default batches (1,000
//     records).
//   - <strategy>/then-build: Load into the table without indexes, then
//     Open with the indexes (they start write-only) and Build them.
//
// Each op starts from a new store in a new directory, made with the timer
// stopped, and closes and removes it untimed. Use -benchtime=1x and repeat
// with -count, as `make bench-pebble` does:
//
//	go test -run='^$' -bench='^BenchmarkLoad$' -benchmem -benchtime=1x -count=5 .
func BenchmarkLoad(b *testing.B) {
	recs := loadRecordsOnce()
	b.Run("raw", func(b *testing.B) {
		benchLoadOps(b, func(store *pebblestore.Store) { loadRaw(b, store, recs) })
	})
	for _, st := range []benchStrategy{benchStrategies[0], benchStrategies[2]} {
		schema := fixture.Schema(st.s, st.proj, &indextable.BinaryCodec{})
		b.Run(st.name+"/indexed", func(b *testing.B) {
			benchLoadOps(b, func(store *pebblestore.Store) { loadTable(b, store, schema, recs, false) })
		})
		b.Run(st.name+"/then-build", func(b *testing.B) {
			benchLoadOps(b, func(store *pebblestore.Store) { loadTable(b, store, schema, recs, true) })
		})
	}
}

// loadRecords is how many customers a load writes.
const loadRecords = 100_000

// loadRecordsOnce returns the customers of a load, made once.
var loadRecordsOnce = sync.OnceValue(func() []fixture.Customer { return fixture.Bench.Customers(0, loadRecords) })

// benchLoadOps runs load b.N times, timed, each on a new durable store
// opened after a garbage collection with the timer stopped, and reports
// ns/record.
func benchLoadOps(b *testing.B, load func(*pebblestore.Store)) {
	b.ReportAllocs()
	b.StopTimer()
	for range b.N {
		dir, err := os.MkdirTemp("", "pebblestore-load-*")
		if err != nil {
			b.Fatal(err)
		}
		store, err := pebblestore.Open(dir, pebblestore.Options{CacheSize: *benchCacheMiB << 20})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		load(store)
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*loadRecords), "ns/record")
}

// loadRaw writes recs to store's database in batches of benchRawLoad
// records, each committed with pebble.Sync, timed.
func loadRaw(b *testing.B, store *pebblestore.Store, recs []fixture.Customer) {
	s := &benchState{codec: &indextable.BinaryCodec{}}
	var err error
	if s.prefix, err = kv.EncodeTuple(benchTable, 0); err != nil {
		b.Fatal(err)
	}
	db := store.DB()
	var key, val []byte
	b.StartTimer()
	for batch := range slices.Chunk(recs, benchRawLoad) {
		pb := db.NewBatch()
		for i := range batch {
			key, val = s.rawRecord(b, key, val, &batch[i])
			if err := pb.Set(key, val, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := pb.Commit(pebble.Sync); err != nil {
			b.Fatal(err)
		}
		pb.Close()
	}
	b.StopTimer()
}

// loadTable loads recs into a new table of schema on store, timed: with
// its indexes, or without them and then builds them (thenBuild).
func loadTable(b *testing.B, store *pebblestore.Store, schema indextable.Schema[fixture.Customer], recs []fixture.Customer, thenBuild bool) {
	ctx := context.Background()
	first := schema
	if thenBuild {
		first.Indexes = nil
	}
	tbl, err := indextable.Open(ctx, store, first)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	rep, err := tbl.Load(ctx, slices.Values(recs), indextable.LoadOptions{})
	if err == nil && thenBuild {
		if tbl, err = indextable.Open(ctx, store, schema); err == nil {
			err = tbl.Build(ctx, indextable.BuildOptions{})
		}
	}
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Inserted != len(recs) || rep.Refused != 0 {
		b.Fatalf("loaded %+v of %d records", rep.LoadProgress, len(recs))
	}
	st, err := tbl.IndexStatus(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range st {
		if s.State != indextable.IndexReadable || s.Done < int64(len(recs)) && thenBuild {
			b.Fatalf("index %q: %v with %d records done", s.Name, s.State, s.Done)
		}
	}
}
