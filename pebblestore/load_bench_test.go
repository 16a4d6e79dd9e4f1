package pebblestore_test

import (
	"context"
	"encoding/binary"
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
	"github.com/stretchr/testify/require"
)

// BenchmarkLoad measures Table.Load of loadRecords customers (the core's
// benchmark data set, fixture.Bench, binary codec) into an empty table on
// a durable store (pebblestore.Options' default: each batch waits for the
// write-ahead log's fsync), against raw, in the same run. An op is one
// whole load; each reports ns/record. Names are BenchmarkLoad/raw,
// BenchmarkLoad/raw-indexed/<strategy> and BenchmarkLoad/<strategy>/<way>:
//
//   - raw: the records written as plain Pebble batches of benchRawLoad
//     (1,000) records, each committed with pebble.Sync: the fact keys and
//     values as the table stores them (rawWriter.record), no index, no
//     read. Issue 21's target compares Load with it.
//   - raw-indexed/<strategy>: the same batches with, beside each record,
//     its entries in the two indexes of fixture.Schema of the strategy
//     (keys-only, full-copy), keys and values built by hand as a table
//     writes them (rawWriter.set): three keys a record, no read. The floor
//     of any load that writes the same keys.
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
//
// The store has pebblestore.Open's defaults but for the flags
// -pebblebench.cache and -pebblebench.memtable (see BenchmarkPebble).
func BenchmarkLoad(b *testing.B) {
	recs := loadRecordsOnce()
	b.Run("raw", func(b *testing.B) {
		benchLoadOps(b, func(store *pebblestore.Store) { loadRaw(b, store, recs, nil) })
	})
	for _, st := range loadStrategies {
		b.Run("raw-indexed/"+st.name, func(b *testing.B) {
			benchLoadOps(b, func(store *pebblestore.Store) { loadRaw(b, store, recs, &st) })
		})
	}
	for _, st := range loadStrategies {
		schema := fixture.Schema(st.s, st.proj, &indextable.BinaryCodec{})
		b.Run(st.name+"/indexed", func(b *testing.B) {
			benchLoadOps(b, func(store *pebblestore.Store) { loadTable(b, store, schema, recs, false) })
		})
		b.Run(st.name+"/then-build", func(b *testing.B) {
			benchLoadOps(b, func(store *pebblestore.Store) { loadTable(b, store, schema, recs, true) })
		})
	}
}

// loadStrategies are the strategies of the benchmarked loads.
var loadStrategies = []benchStrategy{benchStrategies[0], benchStrategies[2]}

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
		store, err := pebblestore.Open(dir, benchOptions(false))
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

// loadRaw writes recs to store's database as rawLoad does, with the
// entries of the indexes of strategy st (none if nil), timed.
func loadRaw(b *testing.B, store *pebblestore.Store, recs []fixture.Customer, st *benchStrategy) {
	w := newRawWriter(b, st)
	b.StartTimer()
	rawLoad(b, store.DB(), w, recs)
	b.StopTimer()
}

// rawLoad writes recs to db with w in batches of benchRawLoad records,
// each committed with pebble.Sync.
func rawLoad(tb testing.TB, db *pebble.DB, w *rawWriter, recs []fixture.Customer) {
	for batch := range slices.Chunk(recs, benchRawLoad) {
		pb := db.NewBatch()
		for i := range batch {
			w.set(tb, pb, &batch[i])
		}
		if err := pb.Commit(pebble.Sync); err != nil {
			tb.Fatal(err)
		}
		pb.Close()
	}
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

// openNoSync opens a store in a temporary directory of t, without fsync,
// closed when t ends.
func openNoSync(t *testing.T) *pebblestore.Store {
	store, err := pebblestore.Open(t.TempDir(), pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	return store
}

// TestLoadRawIndexed: what BenchmarkLoad's raw-indexed writes by hand is
// what Load writes, for each strategy: the same records loaded both ways
// leave the same facts and entries, keys and values, but for the
// incarnation of each fact's version (random, and checked to be an
// insert's). The table's own keys (catalog, usage, record type) are left
// out; anything else a Load wrote would differ.
func TestLoadRawIndexed(t *testing.T) {
	ctx := context.Background()
	recs := fixture.Bench.Customers(0, 40)
	for _, st := range loadStrategies {
		t.Run(st.name, func(t *testing.T) {
			loaded := openNoSync(t)
			tbl, err := indextable.Open(ctx, loaded, fixture.Schema(st.s, st.proj, &indextable.BinaryCodec{}))
			require.NoError(t, err)
			rep, err := tbl.Load(ctx, slices.Values(recs), indextable.LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, len(recs), rep.Inserted)

			hand := openNoSync(t)
			rawLoad(t, hand.DB(), newRawWriter(t, &st), recs)

			want := loadStored(t, loaded.DB(), 1)
			require.Len(t, want, 3*len(recs), "a fact and two entries a record")
			require.Equal(t, want, loadStored(t, hand.DB(), 1))
		})
	}
}

// loadStored returns db's keys and values in key order, without a table's
// catalog, usage and record type, each fact's version cut off once
// checked to be of the given count of writes of the record (1: an
// insert's) and of an odd incarnation. It reads from 0x01 on: a table's
// keys start with 0x02, and the store's format marker with 0x00.
func loadStored(t *testing.T, db *pebble.DB, writes uint64) [][2]string {
	iter, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{0x01}})
	require.NoError(t, err)
	defer iter.Close()
	var out [][2]string
	for valid := iter.First(); valid; valid = iter.Next() {
		k, ok := kv.ParseKey(iter.Key())
		require.True(t, ok, "key %q", iter.Key())
		v, err := iter.ValueAndErr()
		require.NoError(t, err)
		switch k.Space {
		case kv.SpaceCatalog, kv.SpaceUsage, kv.SpaceRecordType:
			continue
		case kv.SpaceRecords:
			version, n := binary.Uvarint(v)
			require.Positive(t, n, "fact %q", iter.Key())
			require.Equal(t, 1<<32|writes, version&(1<<33-1), "fact %q: version %#x is not of write %d of an odd incarnation", iter.Key(), version, writes)
			v = v[n:]
		}
		out = append(out, [2]string{string(iter.Key()), string(v)})
	}
	require.NoError(t, iter.Error())
	return out
}
