package indextable_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
)

// The sharded benchmarks load shardBenchRecords customers of bench_test.go
// (200 a town, each with its own surname) into tables with one composite
// (Town, LastName) index, on one memory store and on ShardedStores of
// shardBenchShards memory stores. Run them with:
//
//	go test -run='^$' -bench=BenchmarkSharded -benchtime=2000x -count=5 .
const (
	shardBenchRecords = 20_000
	shardBenchShards  = 4
	// shardApplyEvery is how many inserts the insert benchmark makes
	// between two maintainer passes.
	shardApplyEvery = 256
	// shardProbeOps is how many operations, untimed, measure the shards
	// that one operation reads from.
	shardProbeOps = benchTowns
)

// A shardLayout is the store of a benchmark table: one memory store
// (shards 0), or a ShardedStore of shards memory stores whose index tables
// are sharded by rule.
type shardLayout struct {
	name   string
	shards int
	rule   it.IndexSharding
}

var shardLayouts = []shardLayout{
	{"single", 0, 0},
	{"leading4", shardBenchShards, it.ShardByLeadingKey},
	{"hash4", shardBenchShards, it.ShardByHash},
}

var shardStrategies = []struct {
	name string
	s    it.Strategy
}{
	{"keys", it.KeysOnly},
	{"full", it.FullCopy},
}

// shardBench is a loaded benchmark table and the counted stores under it:
// the single store, or each shard.
type shardBench struct {
	tbl    *it.Table[Customer]
	stores []*countingstore.Store
}

// openShardBench opens a table of layout l with a (Town, LastName) index of
// strategy s, inserts the first shardBenchRecords customers, applies the
// changes that queued, and checks that every town reads back complete.
func openShardBench(b *testing.B, l shardLayout, s it.Strategy) *shardBench {
	b.Helper()
	ctx := context.Background()
	sb := &shardBench{}
	var store kv.Store
	if l.shards == 0 {
		c := countingstore.New(it.NewMemoryStore())
		sb.stores, store = append(sb.stores, c), c
	} else {
		shards := make([]kv.Store, l.shards)
		for i := range shards {
			c := countingstore.New(it.NewMemoryStore())
			sb.stores, shards[i] = append(sb.stores, c), c
		}
		ss, err := it.OpenShardedStore(ctx, shards, it.WithIndexSharding(l.rule))
		if err != nil {
			b.Fatal(err)
		}
		store = ss
	}
	tbl, err := it.Open(ctx, store, it.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Codec:      &it.BinaryCodec{},
		Indexes: []it.Index[Customer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: s},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	sb.tbl = tbl
	for _, c := range benchBase()[:shardBenchRecords] {
		if _, err := tbl.Insert(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	drain(b, tbl, it.MaintainerOptions{})
	for i, town := range benchTownNames() {
		n, err := tbl.Count(ctx, it.Query{Index: "town_lastname", Eq: it.Tuple{town}})
		if err != nil {
			b.Fatal(err)
		}
		if want := shardBenchRecords / benchTowns; n != want {
			b.Fatalf("%s: town %s has %d index entries, want %d", l.name, town, n, want)
		}
		if i == 0 {
			if err := sb.range100(ctx, town); err != nil {
				b.Fatalf("%s: %v", l.name, err)
			}
		}
	}
	runtime.GC() // of the loading's garbage, not to be timed
	return sb
}

// range100 reads the first 100 customers of town, by surname.
func (sb *shardBench) range100(ctx context.Context, town string) error {
	n := 0
	for _, err := range sb.tbl.Find(ctx, it.Query{Index: "town_lastname", Eq: it.Tuple{town}, Limit: 100}) {
		if err != nil {
			return err
		}
		n++
	}
	if n != 100 {
		return fmt.Errorf("range read %d records, want 100", n)
	}
	return nil
}

// counts returns the calls that the table's stores have served, summed.
func (sb *shardBench) counts() countingstore.Counts {
	var sum countingstore.Counts
	for _, s := range sb.stores {
		c := s.Counts()
		sum = countingstore.Counts{
			Gets: sum.Gets + c.Gets, GetManys: sum.GetManys + c.GetManys, ManyKeys: sum.ManyKeys + c.ManyKeys,
			Scans: sum.Scans + c.Scans, ScanEntries: sum.ScanEntries + c.ScanEntries,
			Applies: sum.Applies + c.Applies, Ops: sum.Ops + c.Ops,
		}
	}
	return sum
}

// measureRead times b.N calls of op, the i-th with i, and reports per op
// the store calls made (scans/op; lookups/op, counting gets, batched gets
// and scans, each shard's separately) and, from shardProbeOps more calls
// outside the timing, how many of the stores served a read (shards/op).
func (sb *shardBench) measureRead(b *testing.B, op func(i int) error) {
	b.ReportAllocs()
	before := sb.counts()
	b.ResetTimer()
	for i := range b.N {
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	d := sb.counts().Sub(before)
	b.ReportMetric(float64(d.Scans)/float64(b.N), "scans/op")
	b.ReportMetric(float64(d.Lookups())/float64(b.N), "lookups/op")

	touched := 0
	prev := make([]int64, len(sb.stores))
	for i := range shardProbeOps {
		for j, s := range sb.stores {
			prev[j] = s.Counts().Lookups()
		}
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		for j, s := range sb.stores {
			if s.Counts().Lookups() > prev[j] {
				touched++
			}
		}
	}
	b.ReportMetric(float64(touched)/shardProbeOps, "shards/op")
}

// applyAll makes maintainer passes until one applies nothing, and returns
// how many changes they applied.
func applyAll(b *testing.B, tbl *it.Table[Customer]) int {
	applied := 0
	for {
		n, err := tbl.ApplyPending(context.Background(), it.MaintainerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return applied
		}
		applied += n
	}
}

// BenchmarkSharded compares a table on a ShardedStore of four memory stores
// with the same table on one memory store, the baseline, each loaded with
// shardBenchRecords customers over benchTowns towns and one (Town,
// LastName) index:
//
//   - range100/{keys,full}/{single,leading4,hash4}: the first 100 customers
//     of a town, Find with Eq {town} and Limit 100, through a KeysOnly index
//     (the entries, then the records by GetMany, which a ShardedStore fans
//     out to the records' shards) and a FullCopy index, with the index
//     tables sharded by leading key (a town on one shard) and by hash (a
//     town on every shard, read by merging four scans).
//   - get/{single,sharded4}: Table.Get by primary key.
//   - insert/{single,leading4,hash4}: Table.Insert of new customers. On a
//     ShardedStore an insert whose index entry lies on another shard than
//     its record queues the entry for a maintainer: each op includes its
//     share of an ApplyPending pass made every shardApplyEvery inserts and
//     of the passes that empty the queue at the end, all timed, so that
//     ns/op is the whole cost of an insert that reaches its index.
//     applied/op is the share of inserts that went through the queue.
//
// Besides ns/op, the read benchmarks report the store calls one op makes:
// scans/op and lookups/op (gets, batched gets and scans), summed over the
// shards, and shards/op, how many shards served part of one read.
func BenchmarkSharded(b *testing.B) {
	ctx := context.Background()
	base, towns := benchBase()[:shardBenchRecords], benchTownNames()
	tables := map[string]*shardBench{} // by strategy/layout
	for _, st := range shardStrategies {
		for _, l := range shardLayouts {
			tables[st.name+"/"+l.name] = openShardBench(b, l, st.s)
		}
	}

	for _, st := range shardStrategies {
		for _, l := range shardLayouts {
			sb := tables[st.name+"/"+l.name]
			b.Run("range100/"+st.name+"/"+l.name, func(b *testing.B) {
				sb.measureRead(b, func(i int) error { return sb.range100(ctx, towns[i%benchTowns]) })
			})
		}
	}

	for _, l := range []struct{ name, table string }{{"single", "keys/single"}, {"sharded4", "keys/leading4"}} {
		sb := tables[l.table]
		b.Run("get/"+l.name, func(b *testing.B) {
			sb.measureRead(b, func(i int) error {
				_, err := sb.tbl.Get(ctx, base[i%shardBenchRecords].ID)
				return err
			})
		})
	}

	for _, l := range shardLayouts {
		sb := tables["keys/"+l.name]
		next := benchRecords // past benchBase, which the table holds part of
		b.Run("insert/"+l.name, func(b *testing.B) {
			b.ReportAllocs()
			fresh := freshCustomers(b, &next)
			before := sb.counts()
			applied := 0
			b.ResetTimer()
			for i := range b.N {
				if _, err := sb.tbl.Insert(ctx, fresh()); err != nil {
					b.Fatal(err)
				}
				if (i+1)%shardApplyEvery == 0 {
					n, err := sb.tbl.ApplyPending(ctx, it.MaintainerOptions{})
					if err != nil {
						b.Fatal(err)
					}
					applied += n
				}
			}
			applied += applyAll(b, sb.tbl)
			b.StopTimer()
			d := sb.counts().Sub(before)
			b.ReportMetric(float64(applied)/float64(b.N), "applied/op")
			b.ReportMetric(float64(d.Applies)/float64(b.N), "batches/op")
		})
	}
}

// BenchmarkShardOf is what deriving a record's shard from its key costs a
// read: the FNV-1a and Jump Consistent Hash of its first primary key
// component, found by walking the key's first elements.
func BenchmarkShardOf(b *testing.B) {
	s, err := it.OpenShardedStore(context.Background(), []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
	if err != nil {
		b.Fatal(err)
	}
	key, err := kv.EncodeTuple("customers", 0, "C0012345")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.ShardOf(key)
	}
}
