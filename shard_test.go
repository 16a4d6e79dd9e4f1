package indextable_test

import (
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// newShardedMemory returns a ShardedStore over n memory stores, each
// counted.
func newShardedMemory(t testing.TB, n int, opts ...it.ShardOption) *it.ShardedStore {
	t.Helper()
	shards := make([]kv.Store, n)
	for i := range shards {
		shards[i] = countingstore.New(it.NewMemoryStore())
	}
	s, err := it.OpenShardedStore(context.Background(), shards, opts...)
	require.NoError(t, err)
	return s
}

// holder holds a store in an interface field, so its type is comparable
// while its value may not be.
type holder struct{ kv.Store }

type uncomparable struct {
	*it.MemoryStore
	_ []int
}

func TestShardedStore(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			storetest.TestStore(t, func(t *testing.T) kv.Store { return newShardedMemory(t, n) })
		})
	}
	// Every shard is held to the tightest bounds, whatever the order.
	for name, unbounded := range map[string]int{"bounded shards first": 2, "bounded shards last": 0} {
		t.Run(name, func(t *testing.T) {
			storetest.TestStore(t, func(t *testing.T) kv.Store {
				shards := []kv.Store{memBoundedStore{it.NewMemoryStore()}, memBoundedStore{it.NewMemoryStore()}}
				shards = slices.Insert(shards, unbounded, kv.Store(it.NewMemoryStore()))
				s, err := it.OpenShardedStore(context.Background(), shards)
				require.NoError(t, err)
				return s
			})
		})
	}
}

// TestShardedStoreCombinesBounds: a sharded store's bounds are the
// tightest of its shards', each counted as the shards count it (MaxOps
// every operation, MaxWrites puts and deletes), and its Apply holds every
// shard to them.
func TestShardedStoreCombinesBounds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		shards []kv.Atomicity
		want   kv.Atomicity
	}{
		{"unbounded", []kv.Atomicity{{}, {}}, kv.Atomicity{}},
		{"operations of one, writes of another", []kv.Atomicity{{MaxOps: 300}, {MaxWrites: 99}}, kv.Atomicity{MaxOps: 300, MaxWrites: 99}},
		{"the fewest writes", []kv.Atomicity{{MaxWrites: 99, MaxBytes: 1 << 20}, {}, {MaxWrites: 20}}, kv.Atomicity{MaxWrites: 20, MaxBytes: 1 << 20}},
		{"one shard", []kv.Atomicity{{MaxWrites: 7}}, kv.Atomicity{MaxWrites: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards := make([]kv.Store, len(tc.shards))
			for i, a := range tc.shards {
				shards[i] = scopedStore{it.NewMemoryStore(), a}
			}
			s, err := it.OpenShardedStore(ctx, shards)
			require.NoError(t, err)
			got := s.Atomicity()
			got.Partition = nil
			require.Equal(t, tc.want, got)
			if tc.want.MaxWrites == 0 {
				return
			}
			// Keys of one shard: MaxWrites puts, each expected absent, and
			// as many more expectations apply; one put more does not.
			var keys [][]byte
			for i := 0; len(keys) < 2*tc.want.MaxWrites+1; i++ {
				if k := fmt.Appendf(nil, "k%05d", i); s.ShardOf(k) == 0 {
					keys = append(keys, k)
				}
			}
			var b kv.Batch
			for _, k := range keys[:tc.want.MaxWrites+1] {
				b.Put(k, nil)
			}
			require.ErrorIs(t, s.Apply(ctx, &b), it.ErrInvalidBatch)
			require.ErrorContains(t, s.Apply(ctx, &b), fmt.Sprintf("%d puts and deletes", tc.want.MaxWrites+1))
			b.Reset()
			for i, k := range keys[:tc.want.MaxWrites] {
				b.ExpectAbsent(k)
				b.Put(k, nil)
				b.ExpectAbsent(keys[tc.want.MaxWrites+1+i])
			}
			require.NoError(t, s.Apply(ctx, &b))
			_, err = s.Get(ctx, keys[0])
			require.NoError(t, err)
		})
	}
}

// TestModelSharded is the model test over 4 shards, under each rule of
// index sharding.
func TestModelSharded(t *testing.T) {
	t.Run("leading", func(t *testing.T) { testModel(t, it.JSONCodec{}, names, modeShardedLeading) })
	t.Run("hash", func(t *testing.T) { testModel(t, &it.BinaryCodec{}, names, modeShardedHash) })
}

func TestOpenShardedStoreRejects(t *testing.T) {
	m := it.NewMemoryStore()
	for name, c := range map[string]struct {
		shards []kv.Store
		opts   []it.ShardOption
	}{
		"no shards":             {},
		"a nil shard":           {shards: []kv.Store{m, nil}},
		"a repeat":              {shards: []kv.Store{m, it.NewMemoryStore(), m}},
		"too many":              {shards: make([]kv.Store, 1<<16+1)},
		"an unknown rule":       {shards: []kv.Store{m}, opts: []it.ShardOption{it.WithIndexSharding(7)}},
		"an unknown index rule": {shards: []kv.Store{m}, opts: []it.ShardOption{it.WithShardedIndex("t", "i", 2)}},
		// Stores whose values cannot be compared are told apart, not a panic.
		"a repeat, uncomparable": {shards: []kv.Store{m, holder{uncomparable{it.NewMemoryStore(), nil}}, holder{uncomparable{it.NewMemoryStore(), nil}}, m}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := it.OpenShardedStore(context.Background(), c.shards, c.opts...)
			require.ErrorIs(t, err, it.ErrInvalidSharding)
		})
	}
	_, err := it.ShardFor(0, "x")
	require.ErrorIs(t, err, it.ErrInvalidSharding)
	_, err = it.ShardFor(4, struct{}{})
	require.ErrorIs(t, err, it.ErrUnsupportedType)
}

// TestShardFor pins the placement function: these vectors must never
// change, or stores written by one version misplace keys for another.
func TestShardFor(t *testing.T) {
	for _, c := range []struct {
		v    any
		n    int
		want int
	}{
		{"C01", 1, 0}, {"C01", 4, 0}, {"C02", 4, 1}, {"C03", 4, 1}, {"Redmond", 4, 3}, {"Seattle", 4, 0},
		{int64(1), 4, 2}, {"C01", 1000, 308}, {"Redmond", 1000, 167},
	} {
		got, err := it.ShardFor(c.n, c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "ShardFor(%d, %#v)", c.n, c.v)
	}
}

// scanLog records, for a store, the key spaces its scans started in and the
// keys it was asked to get.
type scanLog struct {
	kv.Store
	mu     sync.Mutex
	spaces []kv.KeySpace
	gets   [][]byte
}

func (s *scanLog) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	space := kv.SpaceOther
	if k, ok := kv.ParseKey(r.Start); ok {
		space = k.Space
	}
	s.mu.Lock()
	s.spaces = append(s.spaces, space)
	s.mu.Unlock()
	return s.Store.Scan(ctx, r)
}

func (s *scanLog) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	s.mu.Lock()
	s.gets = append(s.gets, keys...)
	s.mu.Unlock()
	return s.Store.GetMany(ctx, keys, dst)
}

func (s *scanLog) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spaces, s.gets = nil, nil
}

func (s *scanLog) scansOf(space kv.KeySpace) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sp := range s.spaces {
		if sp == space {
			n++
		}
	}
	return n
}

// TestTownQueryTouchesOneIndexShard: under ShardByLeadingKey, all of a
// town's index entries lie on the shard its name hashes to, so a Town query
// scans that index shard alone and fetches each record from its own shard;
// under ShardByHash the same query scans every shard.
func TestTownQueryTouchesOneIndexShard(t *testing.T) {
	ctx := context.Background()
	towns := []string{"Redmond", "Seattle", "Bellevue", "Kirkland"}
	for _, rule := range []it.IndexSharding{it.ShardByLeadingKey, it.ShardByHash} {
		for _, strategy := range []it.Strategy{it.FullCopy, it.KeysOnly} {
			t.Run(fmt.Sprintf("%v/%v", rule, strategy), func(t *testing.T) {
				logs := make([]*scanLog, 4)
				shards := make([]kv.Store, len(logs))
				for i := range logs {
					logs[i] = &scanLog{Store: it.NewMemoryStore()}
					shards[i] = logs[i]
				}
				s, err := it.OpenShardedStore(context.Background(), shards, it.WithIndexSharding(rule))
				require.NoError(t, err)
				tbl, err := it.Open(ctx, s, it.Schema[fixture.Customer]{SchemaLease: testLease, Name: "customers", PrimaryKey: []string{"ID"},
					Indexes: []it.Index[fixture.Customer]{{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: strategy}}})
				require.NoError(t, err)
				var want []string
				for i := range 40 {
					c := fixture.Customer{ID: fmt.Sprintf("C%02d", i), Town: towns[i%4], LastName: fmt.Sprintf("L%02d", 39-i)}
					_, err := tbl.Insert(ctx, c)
					require.NoError(t, err)
					if c.Town == "Redmond" {
						want = append([]string{c.ID}, want...) // by LastName
					}
				}
				storetest.Drain(t, tbl)
				for _, l := range logs {
					l.reset()
				}
				var got []string
				for c, err := range tbl.Find(ctx, it.Query{Index: "town_lastname", Eq: it.Tuple{"Redmond"}}) {
					require.NoError(t, err)
					got = append(got, c.ID)
				}
				require.Equal(t, want, got)

				home, err := it.ShardFor(4, "Redmond")
				require.NoError(t, err)
				var scanned []int
				fetched := 0
				for i, l := range logs {
					if l.scansOf(kv.SpaceIndex) > 0 {
						scanned = append(scanned, i)
					}
					for _, k := range l.gets {
						require.Equal(t, i, s.ShardOf(k), "a record fetched from another shard than its own")
						key, ok := kv.ParseKey(k)
						require.True(t, ok)
						id, _, err := kv.DecodeElement(key.Lead)
						require.NoError(t, err)
						want, err := it.ShardFor(4, id)
						require.NoError(t, err)
						require.Equal(t, want, i)
						fetched++
					}
				}
				if rule == it.ShardByLeadingKey {
					require.Equal(t, []int{home}, scanned, "index shards scanned")
				} else {
					require.Equal(t, []int{0, 1, 2, 3}, scanned, "index shards scanned")
				}
				if strategy == it.KeysOnly {
					require.Equal(t, len(want), fetched, "records fetched")
				} else {
					require.Zero(t, fetched, "a full-copy read fetches no record")
				}
			})
		}
	}
}

// TestShardedScanMatchesOneStore: scans of every shape (bounds, Limit,
// After, Reverse) over keys of every space return from 4 shards what one
// store holding the same keys returns, through pages of several sizes.
func TestShardedScanMatchesOneStore(t *testing.T) {
	ctx := context.Background()
	for _, rule := range []it.IndexSharding{it.ShardByLeadingKey, it.ShardByHash} {
		sharded := newShardedMemory(t, 4, it.WithIndexSharding(rule))
		one := it.NewMemoryStore()
		r := rand.New(rand.NewPCG(7, uint64(rule)))
		var keys [][]byte
		for i := range 3000 {
			var k []byte
			switch i % 6 {
			case 0:
				k = mustKey(t, "t", 0, r.IntN(500))
			case 1:
				k = mustKey(t, "t", 1, "ix", 1, names[r.IntN(len(names))], r.IntN(500))
			case 2:
				k = mustKey(t, "t", 5, "ix", 1, r.IntN(50), r.IntN(500))
			case 3:
				k = mustKey(t, "t", 3, r.IntN(500), r.IntN(9))
			case 4:
				k = mustKey(t, "u", 1, "ix", 2, r.IntN(30))
			default:
				k = fmt.Appendf(nil, "raw%05d", r.IntN(100000))
			}
			keys = append(keys, k)
			for _, s := range []kv.Store{sharded, one} {
				var b kv.Batch
				b.Put(k, fmt.Appendf(nil, "v%d", i))
				require.NoError(t, s.Apply(ctx, &b))
			}
		}
		pick := func() []byte {
			if r.IntN(5) == 0 {
				return nil
			}
			k := keys[r.IntN(len(keys))]
			return k[:r.IntN(len(k)+1)]
		}
		for range 400 {
			sr := kv.ScanRange{Start: pick(), End: pick(), Reverse: r.IntN(2) == 0, Limit: r.IntN(3)*r.IntN(200) - r.IntN(2)}
			if r.IntN(3) == 0 {
				sr.After = pick()
			}
			require.Equal(t, dump(t, one.Scan(ctx, sr)), dump(t, sharded.Scan(ctx, sr)), "%+v", sr)
		}
		var b kv.Batch
		want, err := one.GetMany(ctx, keys[:500], nil)
		require.NoError(t, err)
		got, err := sharded.GetMany(ctx, keys[:500], [][]byte{[]byte("kept")})
		require.NoError(t, err)
		require.Equal(t, append([][]byte{[]byte("kept")}, want...), got)
		b.Put(mustKey(t, "t", 0, 1), nil)
		b.Put(mustKey(t, "t", 0, 2), nil)
		if sharded.ShardOf(b.Ops()[0].Key) != sharded.ShardOf(b.Ops()[1].Key) {
			require.ErrorIs(t, sharded.Apply(ctx, &b), it.ErrInvalidBatch)
			require.Error(t, sharded.Atomicity().Allows(&b))
		}
	}
}

func dump(t *testing.T, seq iter.Seq2[kv.Entry, error]) []string {
	t.Helper()
	var out []string
	for e, err := range seq {
		require.NoError(t, err)
		out = append(out, string(e.Key)+"="+string(e.Value))
	}
	return out
}

// The shard of a record among 4 is a function of its first primary key
// component alone, the same in every process and version.
func ExampleShardFor() {
	for _, id := range []any{"C01", "C02", "Redmond", int64(1)} {
		shard, err := it.ShardFor(4, id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%#v: shard %d\n", id, shard)
	}
	// Output:
	// "C01": shard 0
	// "C02": shard 1
	// "Redmond": shard 3
	// 1: shard 2
}

// openKept opens a ShardedStore over shards that it does not close.
func openKept(ctx context.Context, shards []kv.Store, opts ...it.ShardOption) (*it.ShardedStore, error) {
	kept := make([]kv.Store, len(shards))
	for i, sh := range shards {
		kept[i] = holder{sh}
	}
	return it.OpenShardedStore(ctx, kept, opts...)
}

// TestShardLayoutIsKept: each shard keeps the layout it was opened with, out
// of sight, and a store reopened over its shards in another order or count,
// or with other index rules, is refused before it misplaces anything.
func TestShardLayoutIsKept(t *testing.T) {
	ctx := context.Background()
	mems := []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()}
	open := func(shards []kv.Store, opts ...it.ShardOption) (*it.ShardedStore, error) {
		return openKept(ctx, shards, opts...)
	}
	s, err := open(mems, it.WithShardedIndex("customers", "lastname", it.ShardByHash))
	require.NoError(t, err)
	var b kv.Batch
	b.Put([]byte("k"), []byte("v"))
	require.NoError(t, s.Apply(ctx, &b))
	require.Equal(t, []string{"k=v"}, dump(t, s.Scan(ctx, kv.ScanRange{})))
	require.Equal(t, []string{"k=v"}, dump(t, s.Scan(ctx, kv.ScanRange{Reverse: true, Limit: 1})))
	layout := []byte("\xff\xffindextable shard layout")
	_, err = s.Get(ctx, layout)
	require.ErrorIs(t, err, it.ErrNotFound)
	vals, err := s.GetMany(ctx, [][]byte{[]byte("k"), layout}, nil)
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("v"), nil}, vals)
	b.Reset()
	b.Put(layout, []byte("x"))
	require.ErrorIs(t, s.Apply(ctx, &b), it.ErrInvalidBatch)
	v, err := mems[1].Get(ctx, layout)
	require.NoError(t, err)
	require.Equal(t, `shard 1 of 3; index tables by leading key, index "lastname" of table "customers" by hash`, string(v))

	_, err = open(mems, it.WithShardedIndex("customers", "lastname", it.ShardByHash))
	require.NoError(t, err, "the same layout")
	_, err = open(mems, it.WithShardedIndex("customers", "lastname", it.ShardByHash), it.WithShardedIndex("customers", "town", it.ShardByLeadingKey))
	require.NoError(t, err, "the same layout, with a rule that is the default")
	for name, c := range map[string]struct {
		shards []kv.Store
		opts   []it.ShardOption
	}{
		"without the index rule": {shards: mems},
		"another default rule":   {shards: mems, opts: []it.ShardOption{it.WithIndexSharding(it.ShardByHash), it.WithShardedIndex("customers", "lastname", it.ShardByHash)}},
		"another order":          {shards: []kv.Store{mems[1], mems[0], mems[2]}, opts: []it.ShardOption{it.WithShardedIndex("customers", "lastname", it.ShardByHash)}},
		"a shard more":           {shards: append(slices.Clone(mems), it.NewMemoryStore()), opts: []it.ShardOption{it.WithShardedIndex("customers", "lastname", it.ShardByHash)}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := open(c.shards, c.opts...)
			require.ErrorIs(t, err, it.ErrInvalidSharding)
		})
	}
}

// TestUniqueIndexOverShards (issue 16, item 6): a unique index whose
// entries a sharded store would put on other shards than their records is
// refused when the table opens, under either rule. Before, writes whose
// record and key shared a shard were kept, and a record whose other index
// then moved its entries to another shard could not be deleted, nor its
// email cleared. A unique index that leads with the primary key keeps its
// entries with their records: every record that a write kept can then be
// updated, its email cleared and deleted, wherever its other entries lie.
func TestUniqueIndexOverShards(t *testing.T) {
	ctx := context.Background()
	for _, rule := range []it.IndexSharding{it.ShardByLeadingKey, it.ShardByHash} {
		s := newShardedMemory(t, 4, it.WithIndexSharding(rule))
		_, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"},
			Indexes: []it.Index[person]{indexByName("town"), {Name: "email", Fields: []string{"Email"}, Unique: true}}})
		require.ErrorIs(t, err, it.ErrInvalidSchema, rule)
		require.ErrorContains(t, err, `unique index "email"`)

		tbl := openWith(t, s, indexByName("town"), intraIndexes[1])
		towns := []string{"R", "S", "T", "U", "V", "W"}
		for id := range 40 {
			_, err := tbl.Insert(ctx, person{ID: id, Town: towns[id%len(towns)], Email: fmt.Sprint("e", id)})
			require.NoError(t, err)
		}
		for id := range 40 {
			// The town entry moves, maybe to another shard; the email stays.
			_, err := tbl.Update(ctx, person{ID: id, Town: towns[(id+1)%len(towns)], Email: fmt.Sprint("e", id)})
			require.NoError(t, err, "record %d", id)
			if id%2 == 0 {
				_, err = tbl.Update(ctx, person{ID: id, Town: towns[(id+2)%len(towns)]})
				require.NoError(t, err, "clear the email of record %d", id)
			}
			require.NoError(t, tbl.Delete(ctx, it.Tuple{id}), "record %d", id)
		}
		storetest.Drain(t, tbl)
		requireNoDrift(t, tbl)
		n, err := tbl.Count(ctx, it.Query{Index: "town"})
		require.NoError(t, err)
		require.Zero(t, n)
	}
}

// TestDropOnShardsIsOneBatchPerShard: dropping an index deletes its entries
// in a batch per shard, not key by key, though neighbouring keys lie on
// different shards.
func TestDropOnShardsIsOneBatchPerShard(t *testing.T) {
	ctx := context.Background()
	s := newShardedMemory(t, 4)
	tbl := openWith(t, s, indexByName("town"))
	for i := range 500 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	storetest.Drain(t, tbl)
	applies := func() (n int64) {
		for i := range s.Shards() {
			n += s.Shard(i).(*countingstore.Store).Counts().Applies
		}
		return n
	}
	before := applies()
	dropped := openWith(t, s) // drops the town index
	require.NoError(t, dropped.Build(ctx, it.BuildOptions{}), "deletes its entries once no handle may read them")
	require.LessOrEqual(t, applies()-before, int64(12))
	require.Empty(t, dump(t, s.Scan(ctx, kv.ScanRange{Start: mustKey(t, "people", 1), End: mustKey(t, "people", 2)})))
}

// TestShardedScanReadsNoFurther: a merged scan whose Limit the first pages
// fill asks no shard for another page, and a scan's range is the same each
// time it is ranged over.
func TestShardedScanReadsNoFurther(t *testing.T) {
	ctx := context.Background()
	s := newShardedMemory(t, 2)
	put := func(k []byte) {
		var b kv.Batch
		b.Put(k, k)
		require.NoError(t, s.Apply(ctx, &b))
	}
	// With Limit 40 a shard's first page is 28 entries: the 40th key is
	// the 28th of shard 0, and 12 of shard 1 come before it.
	var on [2]int
	for i := 0; on[0] < 28+50 || on[1] < 12+50; i++ {
		k := fmt.Appendf(nil, "k%05d", i)
		sh := s.ShardOf(k)
		if on[0] < 28 && sh == 1 && on[1] == 12 {
			continue
		}
		put(k)
		on[sh]++
	}
	scans := func() (n [2]int64) {
		for i := range n {
			n[i] = s.Shard(i).(*countingstore.Store).Counts().Scans
		}
		return n
	}
	before := scans()
	seq := s.Scan(ctx, kv.ScanRange{Limit: 40})
	first := dump(t, seq)
	require.Len(t, first, 40)
	after := scans()
	require.Equal(t, [2]int64{1, 1}, [2]int64{after[0] - before[0], after[1] - before[1]}, "scans of each shard")
	require.Equal(t, first, dump(t, seq), "ranged again")

	one := newShardedMemory(t, 1)
	for _, k := range []string{"a", "b", "c"} {
		var b kv.Batch
		b.Put([]byte(k), nil)
		require.NoError(t, one.Apply(ctx, &b))
	}
	seq = one.Scan(ctx, kv.ScanRange{Limit: 2})
	require.Len(t, dump(t, seq), 2)
	require.Len(t, dump(t, seq), 2, "ranged again")
}

// limitStore records the limits of the scans asked of it.
type limitStore struct {
	kv.Store
	mu     sync.Mutex
	limits []int
}

func (s *limitStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	s.mu.Lock()
	s.limits = append(s.limits, r.Limit)
	s.mu.Unlock()
	return s.Store.Scan(ctx, r)
}

// TestShardedScanTakesAnyLimit checks that a scan, of one shard or merged,
// passes on no limit a shard could take for none (a negative one, from
// adding to math.MaxInt) and returns what one store does.
func TestShardedScanTakesAnyLimit(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 3} {
		shards := make([]kv.Store, n)
		for i := range shards {
			shards[i] = &limitStore{Store: it.NewMemoryStore()}
		}
		s, err := it.OpenShardedStore(ctx, shards)
		require.NoError(t, err)
		one := it.NewMemoryStore()
		for i := range 10 {
			for _, st := range []kv.Store{s, one} {
				var b kv.Batch
				b.Put(fmt.Appendf(nil, "k%d", i), nil)
				require.NoError(t, st.Apply(ctx, &b))
			}
		}
		for _, limit := range []int{0, 1, 9, 10, 11, math.MaxInt - 1, math.MaxInt} {
			for _, reverse := range []bool{false, true} {
				r := kv.ScanRange{Limit: limit, Reverse: reverse}
				require.Equal(t, dump(t, one.Scan(ctx, r)), dump(t, s.Scan(ctx, r)), "%d shards, %+v", n, r)
			}
		}
		for i, sh := range shards {
			for _, limit := range sh.(*limitStore).limits {
				require.GreaterOrEqual(t, limit, 0, "%d shards: shard %d was asked for a negative limit", n, i)
			}
		}
	}
}

// TestIsShard: a shard of a ShardedStore says which shard of how many it
// is; a plain store and the ShardedStore itself are no shard.
func TestIsShard(t *testing.T) {
	ctx := context.Background()
	mems := []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()}
	kept := make([]kv.Store, len(mems))
	for i, m := range mems {
		kept[i] = holder{m}
	}
	s, err := it.OpenShardedStore(ctx, kept, it.WithShardedIndex("customers", "lastname", it.ShardByHash))
	require.NoError(t, err)
	for i, m := range mems {
		index, count, ok, err := it.IsShard(ctx, m)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, []int{i, 3}, []int{index, count})
	}
	for name, st := range map[string]kv.Store{"a plain store": it.NewMemoryStore(), "the sharded store": s} {
		_, _, ok, err := it.IsShard(ctx, st)
		require.NoError(t, err, name)
		require.False(t, ok, name)
	}

	bad := it.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte("\xff\xffindextable shard layout"), []byte("shard 3 of 2"))
	require.NoError(t, bad.Apply(ctx, &b))
	_, _, ok, err := it.IsShard(ctx, bad)
	require.ErrorIs(t, err, it.ErrInvalidSharding)
	require.False(t, ok)
}

// TestWithStoredLayout: a store reopened with the rules its first shard's
// layout record holds places keys as the store that wrote it; its shards
// are still checked.
func TestWithStoredLayout(t *testing.T) {
	ctx := context.Background()
	mems := []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()}
	open := func(shards []kv.Store, opts ...it.ShardOption) (*it.ShardedStore, error) {
		return openKept(ctx, shards, opts...)
	}
	s, err := open(mems, it.WithIndexSharding(it.ShardByHash),
		it.WithShardedIndex("customers", "town, \"or\" name", it.ShardByLeadingKey), it.WithShardedIndex("orders", "day", it.ShardByLeadingKey))
	require.NoError(t, err)
	r, err := open(mems, it.WithStoredLayout())
	require.NoError(t, err)
	for _, ix := range []string{"town, \"or\" name", "lastname"} {
		for i := range 50 {
			key, err := kv.EncodeTuple("customers", int64(1), ix, int64(1), fmt.Sprint("v", i), int64(i))
			require.NoError(t, err)
			require.Equal(t, s.ShardOf(key), r.ShardOf(key), "%s %d", ix, i)
		}
	}

	_, err = open([]kv.Store{mems[1], mems[0], mems[2]}, it.WithStoredLayout())
	require.ErrorIs(t, err, it.ErrInvalidSharding, "another order")
	_, err = open([]kv.Store{it.NewMemoryStore(), mems[1]}, it.WithStoredLayout())
	require.ErrorIs(t, err, it.ErrInvalidSharding, "no record on the first shard")
}
