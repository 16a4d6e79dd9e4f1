package pebblestore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/stretchr/testify/require"
)

// BenchmarkPebble measures the Index Table pattern on Pebble at 100,000 and
// 1,000,000 customers: a table with two indexes of one strategy, a
// composite (Town, LastName) and a LastName index, against "raw", the same
// records written to the same kind of store as plain Pebble batches
// (primary key to the record, encoded with the table's codec, no index),
// in the same run. Names are BenchmarkPebble/<records>/<strategy or
// raw>/<op>:
//
//   - disk: after loading the records, a Flush and a full Compact, the live
//     sstable (and blob file) bytes divided by the number of records, as
//     disk-B/record (and x-raw, the ratio to raw's, when raw ran first):
//     the space the indexes cost; kv-B/record is the same before
//     compression (keys and values as stored). Its ns/op means nothing.
//   - lookup: an exact Town+LastName match (one record).
//   - range100: the first 100 customers of a town in LastName order.
//   - get: a read by primary key (raw: a db.Get and a decode).
//   - insert-nosync, insert-sync: inserts of new customers into the loaded
//     table, on a store opened with NoSync or with durable commits (raw: one
//     Pebble batch of one Set a record, committed with NoSync or Sync).
//     Compare a strategy with raw at the same setting; nosync is the strict
//     comparison (the CPU and LSM cost), sync what a default store gives.
//     Raw also has insert-checked-nosync: a db.Get of the key before the
//     batch, the least an insert that refuses a taken key must do.
//   - update-nosync: an update of a loaded customer that moves both its
//     index keys (fixture.Population.Moved), on a store opened with NoSync.
//
// Beside raw, raw-indexed/<strategy> (keys-only, full-copy) is the floor of
// a table of that strategy: its records and their entries in the two
// indexes loaded and written by hand, keys and values as the table writes
// them (rawWriter, checked by TestLoadRawIndexed), so that its LSM holds
// what the table's does; see benchRawIndexed for its get, insert-nosync
// and update-nosync. Issue 22's targets compare each strategy's NoSync
// insert and update and its get with them.
//
// Each (records, strategy) is loaded once per process, with NoSync commits
// (concurrent Inserts for a table, batches of 1,000 for raw), on first use,
// and reused by its sub-benchmarks; its directory is removed when they are
// done. Reads run before inserts. The binary codec is used throughout.
//
//	go test -run='^$' -bench='Pebble/100k' -benchmem -benchtime=2000x -count=6 .
//	go test -run='^$' -bench='Pebble/1M' -benchmem -benchtime=2000x -count=3 .
//
// -short skips the 1,000,000-record cases. The store has the defaults of
// pebblestore.Open unless -pebblebench.cache gives a block cache size in
// MiB, or -pebblebench.memtable a memtable size in MiB.
func BenchmarkPebble(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"100k", 100_000}, {"1M", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) {
			if testing.Short() && size.n > 100_000 {
				b.Skip("1,000,000 records: skipped under -short")
			}
			var rawDisk float64 // raw's disk bytes a record, once measured
			b.Run("raw", func(b *testing.B) {
				s := newBenchState(b, size.n, nil, false)
				s.onLoad = func() { rawDisk = s.diskPerRecord() }
				benchRaw(b, s)
			})
			for _, st := range loadStrategies {
				b.Run("raw-indexed/"+st.name, func(b *testing.B) {
					benchRawIndexed(b, newBenchState(b, size.n, &st, true))
				})
			}
			for i := range benchStrategies {
				st := &benchStrategies[i]
				b.Run(st.name, func(b *testing.B) {
					s := newBenchState(b, size.n, st, false)
					s.rawDisk = &rawDisk
					benchIndexed(b, s)
				})
			}
		})
	}
}

var (
	benchCacheMiB = flag.Int64("pebblebench.cache", 0,
		"BenchmarkPebble and BenchmarkLoad: the Pebble block cache in MiB (0: pebblestore.Open's default)")
	benchMemTableMiB = flag.Int64("pebblebench.memtable", 0,
		"BenchmarkPebble and BenchmarkLoad: Options.MemTableSize in MiB (0: Pebble's default)")
)

// benchOptions returns the options of a benchmark's store: pebblestore's
// defaults but NoSync, and the flags' cache and memtable sizes.
func benchOptions(noSync bool) pebblestore.Options {
	return pebblestore.Options{NoSync: noSync, CacheSize: *benchCacheMiB << 20, MemTableSize: *benchMemTableMiB << 20}
}

const (
	benchTable   = "customers"
	benchTowns   = fixture.BenchTowns // n/100 customers a town
	benchStride  = 999_983
	benchRawLoad = 1000 // records a raw load batch
)

type benchStrategy struct {
	name string
	s    indextable.Strategy
	proj []string
}

var benchStrategies = []benchStrategy{
	{"keys-only", indextable.KeysOnly, nil},
	{"partial", indextable.Partial, []string{"FirstName"}},
	{"full-copy", indextable.FullCopy, nil},
}

// benchPopulation returns the data set of n records: n/benchTowns
// surnames, so that a (Town, LastName) pair names one customer, and a
// surname benchTowns of them, one in each town. Surnames have five digits,
// as in the records the published numbers were measured on.
func benchPopulation(n int) fixture.Population {
	return fixture.Population{Towns: benchTowns, Surnames: n / benchTowns, Digits: 5}
}

// benchState is one (records, strategy) data set: its store, table (nil
// for raw) and what the benchmarks need to address its records.
type benchState struct {
	n           int
	pop         fixture.Population
	st          *benchStrategy // nil for raw
	hand        bool           // raw-indexed: st's keys written by hand, no table
	dir         string
	store       *pebblestore.Store
	noSync      bool
	table       *indextable.Table[fixture.Customer]
	raw         *rawWriter // raw's records
	towns       []string
	surnameList []string
	diskBytes   uint64 // live sstable and blob bytes after a full compaction
	kvBytes     int64  // the keys and values, uncompressed
	next        int    // the number of the next customer to insert
	probe       int    // the position of the next read in the read order
	moves       int    // the updates made, which pick where they move records
	loaded      bool
	onLoad      func()
	rawDisk     *float64
}

// newBenchState returns the data set of n records: raw's if st is nil, a
// table's of strategy st, or raw-indexed's of st if hand is set.
func newBenchState(b *testing.B, n int, st *benchStrategy, hand bool) *benchState {
	s := &benchState{n: n, pop: benchPopulation(n), st: st, next: n, hand: hand, raw: newRawWriter(b, nil)}
	if hand {
		s.raw = newRawWriter(b, st)
	}
	b.Cleanup(func() {
		if s.store != nil {
			if err := s.store.Close(); err != nil {
				b.Error(err)
			}
		}
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	})
	return s
}

// load loads the data set on first use.
func (s *benchState) load(b *testing.B) {
	if s.loaded {
		return
	}
	s.loaded = true
	ctx := context.Background()
	var err error
	s.towns, s.surnameList = s.pop.TownNames(), s.pop.SurnameNames()
	if s.dir, err = os.MkdirTemp("", "pebblestore-bench-*"); err != nil {
		b.Fatal(err)
	}
	s.open(b, true)
	if s.table == nil {
		db := s.store.DB()
		for start := 0; start < s.n; start += benchRawLoad {
			pb := db.NewBatch()
			for i := start; i < min(start+benchRawLoad, s.n); i++ {
				c := s.pop.Customer(i)
				s.raw.set(b, pb, &c)
			}
			if err := pb.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			pb.Close()
		}
	} else {
		var (
			next atomic.Int64
			wg   sync.WaitGroup
			errs = make(chan error, 1)
		)
		for range 2 * runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= s.n {
						return
					}
					if _, err := s.table.Insert(ctx, s.pop.Customer(i)); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
	}
	db := s.store.DB()
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	first, last, _ := benchScan(b, db)
	if err := db.Compact(ctx, first, append(last, 0), true); err != nil {
		b.Fatal(err)
	}
	m := db.Metrics()
	s.diskBytes = m.Table.Local.LiveSize + m.BlobFiles.Local.LiveSize
	// The scan also warms the block cache, as far as it holds the data.
	_, _, s.kvBytes = benchScan(b, db)
	if s.onLoad != nil {
		s.onLoad()
	}
	runtime.GC() // of the loading's garbage, not to be timed
}

// warmRecords reads every record of s's store, so that a get starts with
// them in the block cache as far as it holds them, whatever read ran
// before it: a table's range reads its index entries, which may evict the
// records, and raw's gets run right after the load.
func (s *benchState) warmRecords(b *testing.B) {
	iter, err := s.store.DB().NewIter(&pebble.IterOptions{LowerBound: s.raw.prefix})
	if err != nil {
		b.Fatal(err)
	}
	for valid := iter.First(); valid && bytes.HasPrefix(iter.Key(), s.raw.prefix); valid = iter.Next() {
		if _, err := iter.ValueAndErr(); err != nil {
			b.Fatal(err)
		}
	}
	if err := iter.Close(); err != nil {
		b.Fatal(err)
	}
}

// benchScan reads every entry of db and returns the first and last keys
// and the bytes of all keys and values.
func benchScan(b *testing.B, db *pebble.DB) (first, last []byte, size int64) {
	iter, err := db.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		if first == nil {
			first = append([]byte(nil), iter.Key()...)
		}
		v, err := iter.ValueAndErr()
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(iter.Key()) + len(v))
	}
	if iter.Last() {
		last = append([]byte(nil), iter.Key()...)
	}
	if err := iter.Close(); err != nil {
		b.Fatal(err)
	}
	if first == nil {
		b.Fatal("the store is empty")
	}
	return first, last, size
}

// open opens the store (and the table) with NoSync set to noSync, closing
// what was open unless it has that setting already.
func (s *benchState) open(b *testing.B, noSync bool) {
	if s.store != nil {
		if s.noSync == noSync {
			return
		}
		if err := s.store.Close(); err != nil {
			b.Fatal(err)
		}
		s.store = nil
	}
	store, err := pebblestore.Open(s.dir, benchOptions(noSync))
	if err != nil {
		b.Fatal(err)
	}
	s.store, s.noSync = store, noSync
	if s.st != nil && !s.hand {
		if s.table, err = indextable.Open(context.Background(), store, fixture.Schema(s.st.s, s.st.proj, &indextable.BinaryCodec{})); err != nil {
			b.Fatal(err)
		}
	}
}

// rawWriter builds by hand, for the raw baselines, what a table of
// fixture.Schema with the binary codec writes for a new customer: its fact
// key and value (record) and, given a keys-only or full-copy strategy, its
// entries in the schema's two indexes (set). TestLoadRawIndexed checks
// both against what a table writes.
type rawWriter struct {
	codec    indextable.BinaryCodec
	prefix   []byte     // of the fact keys: the table's fact space
	indexes  []rawIndex // none without a strategy
	fullCopy bool
	key, val []byte // the last record's
	entry    []byte // scratch of set
}

// rawIndex is one index of fixture.Schema as rawWriter writes it.
type rawIndex struct {
	prefix []byte                           // of its entries, generation 1
	fields []func(*fixture.Customer) string // its key fields, in order
}

// customerFields are the fields an index of fixture.Schema may have.
var customerFields = map[string]func(*fixture.Customer) string{
	"ID":        func(c *fixture.Customer) string { return c.ID },
	"FirstName": func(c *fixture.Customer) string { return c.FirstName },
	"LastName":  func(c *fixture.Customer) string { return c.LastName },
	"Town":      func(c *fixture.Customer) string { return c.Town },
	"Email":     func(c *fixture.Customer) string { return c.Email },
	"Phone":     func(c *fixture.Customer) string { return c.Phone },
}

// newRawWriter returns the rawWriter of a new table, with the indexes of
// fixture.Schema of strategy st, or none if st is nil: the indexes of a
// new table, both in their first generation, in the index space.
func newRawWriter(tb testing.TB, st *benchStrategy) *rawWriter {
	w := &rawWriter{}
	var err error
	if w.prefix, err = kv.EncodeTuple(benchTable, int64(kv.SpaceRecords)); err != nil {
		tb.Fatal(err)
	}
	if st == nil {
		return w
	}
	if st.s != indextable.KeysOnly && st.s != indextable.FullCopy {
		tb.Fatalf("raw: no %s entries by hand", st.name)
	}
	w.fullCopy = st.s == indextable.FullCopy
	for _, ix := range fixture.Schema(st.s, st.proj, &w.codec).Indexes {
		ri := rawIndex{}
		if ri.prefix, err = kv.EncodeTuple(benchTable, int64(kv.SpaceIndex), ix.Name, int64(1)); err != nil {
			tb.Fatal(err)
		}
		for _, f := range ix.Fields {
			get, ok := customerFields[f]
			if !ok {
				tb.Fatalf("raw: index %q: no field %q", ix.Name, f)
			}
			ri.fields = append(ri.fields, get)
		}
		w.indexes = append(w.indexes, ri)
	}
	return w
}

// record returns the fact key and value of c as the table stores them: the
// record's version, a random incarnation as an insert makes, then its
// codec encoding. They hold until the next call.
func (w *rawWriter) record(tb testing.TB, c *fixture.Customer) (key, val []byte) {
	return w.versioned(tb, c, uint64(rand.Uint32()|1)<<32|1)
}

// versioned is record with the given version.
func (w *rawWriter) versioned(tb testing.TB, c *fixture.Customer, version uint64) (key, val []byte) {
	w.key = w.factKey(c.ID)
	w.val = binary.AppendUvarint(w.val[:0], version)
	var err error
	if w.val, err = w.codec.AppendMarshal(w.val, c); err != nil {
		tb.Fatal(err)
	}
	return w.key, w.val
}

// factKey returns the fact key of the record of primary key id, in w.key's
// memory.
func (w *rawWriter) factKey(id string) []byte {
	return tuple.AppendString(append(w.key[:0], w.prefix...), id)
}

// set adds to pb c's fact (record) and its entries in w's indexes: each
// the index's prefix, then its key fields and the primary key as tuple
// elements, with no value (keys-only) or the record's codec encoding
// (full-copy).
func (w *rawWriter) set(tb testing.TB, pb *pebble.Batch, c *fixture.Customer) {
	w.put(tb, pb, c, uint64(rand.Uint32()|1)<<32|1)
}

// put is set with the given version.
func (w *rawWriter) put(tb testing.TB, pb *pebble.Batch, c *fixture.Customer, version uint64) {
	key, val := w.versioned(tb, c, version)
	if err := pb.Set(key, val, nil); err != nil {
		tb.Fatal(err)
	}
	var value []byte
	if w.fullCopy {
		_, n := binary.Uvarint(val)
		value = val[n:]
	}
	w.entries(tb, c, key[len(w.prefix):], func(e []byte) error { return pb.Set(e, value, nil) })
}

// entries calls fn with each entry key of c, whose primary key is pk (a
// tuple element), in w's indexes; the key holds until the next call.
func (w *rawWriter) entries(tb testing.TB, c *fixture.Customer, pk []byte, fn func([]byte) error) {
	for _, ix := range w.indexes {
		e := append(w.entry[:0], ix.prefix...)
		for _, get := range ix.fields {
			e = tuple.AppendString(e, get(c))
		}
		w.entry = append(e, pk...)
		if err := fn(w.entry); err != nil {
			tb.Fatal(err)
		}
	}
}

// update adds to pb the update of the record stored as old (its fact
// value) to c, which has its primary key: the deletion of old's entries,
// then c's fact with the next version and its entries, as put writes them.
func (w *rawWriter) update(tb testing.TB, pb *pebble.Batch, old []byte, c *fixture.Customer) {
	version, n := binary.Uvarint(old)
	var prev fixture.Customer
	if n <= 0 {
		tb.Fatalf("fact %q: no version", old)
	}
	if err := w.codec.Unmarshal(old[n:], &prev); err != nil {
		tb.Fatal(err)
	}
	pk := w.factKey(c.ID)[len(w.prefix):]
	w.entries(tb, &prev, pk, func(e []byte) error { return pb.Delete(e, nil) })
	w.put(tb, pb, c, version+1)
}

// pick returns the numbers of the next n loaded customers to read: a walk
// with a large stride, so that reads scatter over the data set and a repeat
// run does not read the same records again.
// pickIDs returns the IDs of n records that pick chooses.
func (s *benchState) pickIDs(n int) []string {
	ids := make([]string, n)
	for i, j := range s.pick(n) {
		ids[i] = s.pop.Customer(j).ID
	}
	return ids
}

func (s *benchState) pick(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = int(uint64(s.probe) * benchStride % uint64(s.n))
		s.probe++
	}
	return out
}

func (s *benchState) diskPerRecord() float64 { return float64(s.diskBytes) / float64(s.n) }

// fresh returns n customers not yet in the store. Their IDs fall between
// those of the loaded customers, scattered as random IDs would be, not
// after them all: a key past the end of the fact table would let Pebble
// rule it out of every sstable by its bounds alone.
func (s *benchState) fresh(n int) []fixture.Customer {
	out := make([]fixture.Customer, n)
	for i := range out {
		k := s.next + i
		out[i] = s.pop.Customer(k)
		out[i].ID = fmt.Sprintf("C%07d.%d", uint64(k)*benchStride%uint64(s.n), k)
	}
	s.next += n
	return out
}

func benchDisk(b *testing.B, s *benchState) {
	b.Run("disk", func(b *testing.B) {
		s.load(b)
		b.ResetTimer()
		for range b.N {
		}
		b.ReportMetric(s.diskPerRecord(), "disk-B/record")
		b.ReportMetric(float64(s.kvBytes)/float64(s.n), "kv-B/record")
		if s.rawDisk != nil && *s.rawDisk > 0 {
			b.ReportMetric(s.diskPerRecord() / *s.rawDisk, "x-raw")
		}
	})
}

func benchRaw(b *testing.B, s *benchState) {
	benchDisk(b, s)
	b.Run("get", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		ids := s.pickIDs(b.N)
		db := s.store.DB()
		s.warmRecords(b)
		var (
			key []byte
			rec fixture.Customer
			err error
		)
		b.ReportAllocs()
		b.ResetTimer()
		for _, id := range ids {
			if key, err = kv.AppendElement(append(key[:0], s.raw.prefix...), id); err != nil {
				b.Fatal(err)
			}
			v, closer, err := db.Get(key)
			if err != nil {
				b.Fatal(err)
			}
			_, n := binary.Uvarint(v)
			if err := s.raw.codec.Unmarshal(v[n:], &rec); err != nil {
				b.Fatal(err)
			}
			closer.Close()
		}
	})
	for _, v := range []struct {
		name             string
		durable, checked bool
	}{
		{benchInsertName(false), false, false},
		{"insert-checked-nosync", false, true},
		{benchInsertName(true), true, false},
	} {
		b.Run(v.name, func(b *testing.B) {
			s.load(b)
			s.open(b, !v.durable)
			wo := pebble.NoSync
			if v.durable {
				wo = pebble.Sync
			}
			recs := s.fresh(b.N)
			db := s.store.DB()
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range recs {
				key, val := s.raw.record(b, &recs[i])
				if v.checked {
					_, closer, err := db.Get(key)
					if err == nil {
						closer.Close()
						b.Fatalf("key %q exists", key)
					}
					if !errors.Is(err, pebble.ErrNotFound) {
						b.Fatal(err)
					}
				}
				pb := db.NewBatch()
				if err := pb.Set(key, val, nil); err != nil {
					b.Fatal(err)
				}
				if err := pb.Commit(wo); err != nil {
					b.Fatal(err)
				}
				pb.Close()
			}
		})
	}
}

// benchRawIndexed runs raw-indexed's benchmarks: the floor of a table of
// s.st on the same data, its keys and values written and read by hand as
// the table writes them (rawWriter), with NoSync commits.
//
//   - get: a db.Get of the fact key, its value copied out (as a Get that
//     hands it over must: Pebble reuses its memory), and closed.
//   - insert-nosync: one batch of the record and its two entries.
//   - update-nosync: a db.Get of the record, copied out and decoded, then
//     one batch of the deletion of its two entries, the moved record and its
//     two new entries.
func benchRawIndexed(b *testing.B, s *benchState) {
	b.Run("get", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		ids := s.pickIDs(b.N)
		db := s.store.DB()
		s.warmRecords(b)
		b.ReportAllocs()
		b.ResetTimer()
		for _, id := range ids {
			v, closer, err := db.Get(s.raw.factKey(id))
			if err != nil {
				b.Fatal(err)
			}
			benchSink = append([]byte(nil), v...)
			closer.Close()
		}
	})
	b.Run("insert-nosync", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		recs := s.fresh(b.N)
		db := s.store.DB()
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range recs {
			pb := db.NewBatch()
			s.raw.set(b, pb, &recs[i])
			if err := pb.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			pb.Close()
		}
	})
	b.Run("update-nosync", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		recs := s.moved(b.N)
		db := s.store.DB()
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range recs {
			v, closer, err := db.Get(s.raw.factKey(recs[i].ID))
			if err != nil {
				b.Fatal(err)
			}
			old := append([]byte(nil), v...)
			closer.Close()
			pb := db.NewBatch()
			s.raw.update(b, pb, old, &recs[i])
			if err := pb.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			pb.Close()
		}
	})
}

// benchSink keeps a benchmark's result alive.
var benchSink []byte

// moved returns n loaded customers, as pick chooses them, each moved to
// another town and surname (fixture.Population.Moved): updates that move
// both their index keys.
func (s *benchState) moved(n int) []fixture.Customer {
	out := make([]fixture.Customer, n)
	for i, j := range s.pick(n) {
		out[i] = s.pop.Moved(s.pop.Customer(j), s.moves)
		s.moves++
	}
	return out
}

func benchInsertName(durable bool) string {
	if durable {
		return "insert-sync"
	}
	return "insert-nosync"
}

func benchIndexed(b *testing.B, s *benchState) {
	ctx := context.Background()
	benchDisk(b, s)
	b.Run("lookup", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		picks := s.pick(b.N)
		found := 0
		b.ReportAllocs()
		b.ResetTimer()
		for _, j := range picks {
			q := indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{s.towns[j%benchTowns], s.surnameList[(j/benchTowns)%s.pop.Surnames]}}
			for _, err := range s.table.Find(ctx, q) {
				if err != nil {
					b.Fatal(err)
				}
				found++
			}
		}
		b.StopTimer()
		if found < b.N {
			b.Fatalf("%d lookups found %d records", b.N, found)
		}
		b.ReportMetric(float64(found)/float64(b.N), "records/op")
	})
	b.Run("range100", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		picks := s.pick(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for _, j := range picks {
			n := 0
			q := indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{s.towns[j%benchTowns]}, Limit: 100}
			for _, err := range s.table.Find(ctx, q) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 100 {
				b.Fatalf("range read %d records", n)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		s.load(b)
		s.open(b, true)
		ids := s.pickIDs(b.N)
		s.warmRecords(b)
		b.ReportAllocs()
		b.ResetTimer()
		for _, id := range ids {
			if _, err := s.table.Get(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, durable := range []bool{false, true} {
		b.Run(benchInsertName(durable), func(b *testing.B) {
			s.load(b)
			s.open(b, !durable)
			recs := s.fresh(b.N)
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range recs {
				if _, err := s.table.Insert(ctx, recs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
		if !durable {
			b.Run("update-nosync", func(b *testing.B) {
				s.load(b)
				s.open(b, true)
				recs := s.moved(b.N)
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range recs {
					if _, err := s.table.Update(ctx, recs[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestRawIndexedUpdate: what raw-indexed's update writes by hand is what
// Update writes, for each strategy: the same records loaded both ways,
// then moved both ways (both their index keys), leave the same facts and
// entries, keys and values, the facts' versions those of a second write.
func TestRawIndexedUpdate(t *testing.T) {
	ctx := context.Background()
	pop := benchPopulation(400)
	recs := pop.Customers(0, 40)
	for _, st := range loadStrategies {
		t.Run(st.name, func(t *testing.T) {
			loaded := openNoSync(t)
			tbl, err := indextable.Open(ctx, loaded, fixture.Schema(st.s, st.proj, &indextable.BinaryCodec{}))
			require.NoError(t, err)
			_, err = tbl.Load(ctx, slices.Values(recs), indextable.LoadOptions{})
			require.NoError(t, err)

			hand := openNoSync(t)
			w := newRawWriter(t, &st)
			rawLoad(t, hand.DB(), w, recs)

			for i, c := range recs {
				moved := pop.Moved(c, i)
				require.NotEqual(t, c.Town, moved.Town)
				_, err := tbl.Update(ctx, moved)
				require.NoError(t, err)

				old, closer, err := hand.DB().Get(w.factKey(c.ID))
				require.NoError(t, err)
				old = slices.Clone(old)
				require.NoError(t, closer.Close())
				pb := hand.DB().NewBatch()
				w.update(t, pb, old, &moved)
				require.NoError(t, pb.Commit(pebble.NoSync))
				require.NoError(t, pb.Close())
			}
			want := loadStored(t, loaded.DB(), 2)
			require.Len(t, want, 3*len(recs), "a fact and two entries a record")
			require.Equal(t, want, loadStored(t, hand.DB(), 2))
		})
	}
}
