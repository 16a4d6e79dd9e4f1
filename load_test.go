package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// city is the record of the load tests: its first primary key field,
// Country, is its partition on a partitioned store.
type city struct {
	Country string
	ID      int
	Name    string
	Pop     int
	Code    string // unique within its country
}

func cityIndexes() []it.Index[city] {
	return []it.Index[city]{
		{Name: "name", Fields: []string{"Name"}},                                        // inter-partition
		{Name: "pop", Fields: []string{"Country", "Pop"}, Strategy: it.FullCopy},        // intra-partition
		{Name: "code", Fields: []string{"Country", "Code"}, Unique: true, Sparse: true}, // intra-partition
	}
}

func openCities(t testing.TB, s kv.Store) *it.Table[city] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[city]{SchemaLease: countLease, Name: "cities", PrimaryKey: []string{"Country", "ID"}, Indexes: cityIndexes()})
	require.NoError(t, err)
	return tbl
}

// cities returns n cities, of three countries in turn.
func cities(n int) []city {
	out := make([]city, n)
	for i := range out {
		out[i] = city{Country: []string{"fr", "it", "no"}[i%3], ID: i, Name: fmt.Sprint("c", i%50), Pop: i * 7 % 1000, Code: fmt.Sprint("k", i)}
	}
	return out
}

// loadStores are the stores the load tests run on: the memory store, one
// whose atomicity scope is a partition, and one with Azure's limits too.
var loadStores = []struct {
	name  string
	store func() kv.Store
}{
	{"memory", func() kv.Store { return it.NewMemoryStore() }},
	{"partitioned", func() kv.Store { return partitionedStore(it.NewMemoryStore()) }},
	{"azure's limits", func() kv.Store { return limited{it.NewMemoryStore()} }},
}

// countingStore counts the batches applied to a store that put records
// (a maintainer's do not).
type countingStore struct {
	kv.Store
	applies atomic.Int64
}

func (s *countingStore) Apply(ctx context.Context, b *kv.Batch) error {
	for _, op := range b.Ops() {
		if k, ok := kv.ParseKey(op.Key); ok && op.Kind == kv.OpPut && k.Space == kv.SpaceRecords {
			s.applies.Add(1)
			break
		}
	}
	return s.Store.Apply(ctx, b)
}

// requireCities checks that tbl holds exactly want, through its indexes
// too, once its queue drained, and that Verify finds nothing.
func requireCities(t *testing.T, tbl *it.Table[city], want []city) {
	t.Helper()
	ctx := context.Background()
	storetest.Drain(t, tbl)
	n, err := tbl.Count(ctx, it.Query{})
	require.NoError(t, err)
	require.Equal(t, len(want), n)
	for _, c := range want {
		got, err := tbl.Get(ctx, c.Country, c.ID)
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	byName := map[string]int{}
	for _, c := range want {
		byName[c.Name]++
	}
	for name, n := range byName {
		got, err := tbl.Count(ctx, it.Query{Index: "name", Eq: it.Tuple{name}})
		require.NoError(t, err)
		require.Equal(t, n, got, name)
	}
	rep, err := tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "%v", rep.Samples)
}

// TestLoad: Load writes the records in batches, a partition's records
// together, and the indexes hold them; progress counts every batch.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		store   kv.Store
		opts    it.LoadOptions
		applies int64 // the batches of 3,000 records
	}{
		{"memory", it.NewMemoryStore(), it.LoadOptions{}, 3},
		{"memory, batches of 256", it.NewMemoryStore(), it.LoadOptions{BatchRecords: 256}, 12},
		// Three partitions, of 1,000 records each; entries of the name
		// index follow through the queue.
		{"partitioned", partitionedStore(it.NewMemoryStore()), it.LoadOptions{}, 3},
		// At most 99 operations a batch: Load tries 33 records (each takes
		// at least 3), which take 6 each (the record's expectation and put,
		// its change record for the name index, by the fallback rule, and
		// its two intra-partition entries, one unique and guarded), so it
		// writes them 16 to a batch: 33 as 16+16+1, then 967 as 61 batches,
		// in each country.
		{"azure's limits", limited{it.NewMemoryStore()}, it.LoadOptions{}, 3 * 64},
		// At most 99 writes a batch, expectations aside, as azstore
		// counts: Load tries 49 records (each takes at least 2), which
		// write 4 each, so it writes them 24 to a batch: 49 as 24+24+1,
		// then 951 as 40 batches, in each country.
		{"azure's limits, counting writes", writesLimited{it.NewMemoryStore()}, it.LoadOptions{}, 3 * 43},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &countingStore{Store: tc.store}
			tbl := openCities(t, s)
			want := cities(3000)
			var seen []it.LoadProgress
			tc.opts.Progress = func(p it.LoadProgress) { seen = append(seen, p) }
			before := s.applies.Load()
			rep, err := tbl.Load(ctx, slices.Values(want), tc.opts)
			require.NoError(t, err)
			require.Equal(t, it.LoadProgress{Read: 3000, Inserted: 3000}, rep.LoadProgress)
			require.Empty(t, rep.Refusals)
			require.Equal(t, tc.applies, s.applies.Load()-before, "batches")
			require.NotEmpty(t, seen)
			require.Equal(t, rep.LoadProgress, seen[len(seen)-1])
			require.True(t, slices.IsSortedFunc(seen, func(a, b it.LoadProgress) int { return a.Inserted - b.Inserted }))
			requireCities(t, tbl, want)
		})
	}
}

// TestLoadResumes: a load run again, after one that stopped half way
// (canceled, or failing), counts what is there as present and finishes.
func TestLoadResumes(t *testing.T) {
	ctx := context.Background()
	want := cities(2000)
	tbl := openCities(t, it.NewMemoryStore())
	rep, err := tbl.Load(ctx, slices.Values(want[:700]), it.LoadOptions{BatchRecords: 100})
	require.NoError(t, err)
	require.Equal(t, 700, rep.Inserted)
	rep, err = tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 100})
	require.NoError(t, err)
	require.Equal(t, it.LoadProgress{Read: 2000, Inserted: 1300, Present: 700}, rep.LoadProgress)
	requireCities(t, tbl, want)
}

// TestLoadFaults: a load whose store fails, or crashes, at any call
// leaves whole batches, and a load run again, on the store as the fault
// left it, finishes it: every record is there once, with its entries.
func TestLoadFaults(t *testing.T) {
	ctx := context.Background()
	want := cities(60)
	opts := it.LoadOptions{BatchRecords: 8}
	for _, mode := range loadStores[:2] {
		t.Run(mode.name, func(t *testing.T) {
			fs0 := faultstore.New(mode.store())
			tbl := openCities(t, fs0)
			before := fs0.Calls(faultstore.Apply)
			_, err := tbl.Load(ctx, slices.Values(want), opts)
			require.NoError(t, err)
			applies := fs0.Calls(faultstore.Apply) - before
			for n := 1; n <= applies; n++ {
				for _, fault := range []string{"crash", "crash-applied", "fail"} {
					name := fmt.Sprintf("Apply %d, %s", n, fault)
					inner := mode.store()
					fs := faultstore.New(inner)
					tbl := openCities(t, fs)
					if fault == "fail" {
						fs.FailAt(faultstore.Apply, n)
					} else {
						fs.CrashAt(faultstore.Apply, n, fault == "crash-applied")
					}
					_, err := tbl.Load(ctx, slices.Values(want), opts)
					require.Error(t, err, name)
					expireLeases(t, inner)
					tbl = openCities(t, inner)
					rep, err := tbl.Load(ctx, slices.Values(want), opts)
					require.NoError(t, err, name)
					require.Equal(t, len(want), rep.Inserted+rep.Present, name)
					require.Zero(t, rep.Refused, name)
					requireCities(t, tbl, want)
				}
			}
		})
	}
}

// TestLoadRefusals: records Load cannot insert are refused one by one,
// with their position and why; LoadSkip goes on, LoadStop ends the load.
func TestLoadRefusals(t *testing.T) {
	ctx := context.Background()
	held := city{Country: "fr", ID: 1, Name: "Paris", Code: "P"}
	load := []city{
		{Country: "fr", ID: 2, Name: "Lyon", Code: "L"},
		held, // present: the table holds it as given
		{Country: "fr", ID: 1, Name: "Pariss", Code: "P"},   // 2: the table holds another record with its key
		{Country: "fr", ID: 3, Name: "Nice", Code: "P"},     // 3: code P is taken by a record of the table
		{Country: "fr", ID: 4, Name: "Metz", Code: "M"},     //
		{Country: "fr", ID: 5, Name: "Metz bis", Code: "M"}, // 5: code M is taken by an earlier record of the load
		{Country: "fr", ID: 2, Name: "Lyon", Code: "L"},     // present: the same as an earlier record
		{Country: "fr", ID: 4, Name: "Metz 2", Code: "M"},   // 7: an earlier record of the load has its key
		{Country: "fr", ID: 6, Name: "Caen", Code: "C"},
	}
	refused := map[int]error{2: it.ErrExists, 3: it.ErrUniqueViolation, 5: it.ErrUniqueViolation, 7: it.ErrExists}
	for _, size := range []int{1, 3, 100} {
		t.Run(fmt.Sprint("batches of ", size), func(t *testing.T) {
			tbl := openCities(t, it.NewMemoryStore())
			_, err := tbl.Insert(ctx, held)
			require.NoError(t, err)
			rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: size})
			require.NoError(t, err)
			require.Equal(t, it.LoadProgress{Read: 9, Inserted: 3, Present: 2, Refused: 4}, rep.LoadProgress)
			got := map[int]error{}
			for _, f := range rep.Refusals {
				got[f.Position] = f.Err
				require.Equal(t, it.Tuple{load[f.Position].Country, load[f.Position].ID}, f.PrimaryKey)
			}
			require.Len(t, got, len(refused))
			for pos, want := range refused {
				require.ErrorIs(t, got[pos], want, "record %d", pos)
			}
			requireCities(t, tbl, []city{held, load[0], load[4], load[8]})
		})
	}
	t.Run("stop", func(t *testing.T) {
		tbl := openCities(t, it.NewMemoryStore())
		_, err := tbl.Insert(ctx, held)
		require.NoError(t, err)
		rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{BatchRecords: 1})
		require.ErrorIs(t, err, it.ErrExists)
		require.ErrorContains(t, err, "record 2")
		// Record 3 was read, and its batch built, while record 2's committed.
		require.Equal(t, it.LoadProgress{Read: 4, Inserted: 1, Present: 1, Refused: 1}, rep.LoadProgress)
		require.Len(t, rep.Refusals, 1)
		requireCities(t, tbl, []city{held, load[0]})
	})
	t.Run("too large for the store", func(t *testing.T) {
		tbl := openCities(t, limited{it.NewMemoryStore()})
		load := []city{{Country: "fr", ID: 1, Name: string(make([]byte, 800<<10))}, {Country: "fr", ID: 2, Name: "ok"}}
		rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{OnRefused: it.LoadSkip})
		require.NoError(t, err)
		require.Equal(t, it.LoadProgress{Read: 2, Inserted: 1, Refused: 1}, rep.LoadProgress)
		require.ErrorIs(t, rep.Refusals[0].Err, it.ErrInvalidBatch)
		requireCities(t, tbl, load[1:])
	})
}

// TestLoadArguments: bad options are refused before anything is read.
func TestLoadArguments(t *testing.T) {
	ctx := context.Background()
	tbl := openCities(t, it.NewMemoryStore())
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		ctx  context.Context
		seq  iter.Seq[city]
		opts it.LoadOptions
	}{
		{"nil context", nilCtx, slices.Values(cities(1)), it.LoadOptions{}},
		{"nil sequence", ctx, nil, it.LoadOptions{}},
		{"negative batch", ctx, slices.Values(cities(1)), it.LoadOptions{BatchRecords: -1}},
		{"unknown policy", ctx, slices.Values(cities(1)), it.LoadOptions{OnRefused: 7}},
	} {
		_, err := tbl.Load(tc.ctx, tc.seq, tc.opts)
		require.ErrorIs(t, err, it.ErrInvalidArgument, tc.name)
	}
	n, err := tbl.Count(ctx, it.Query{})
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestLoadReadsUniqueKeysTogether: a batch reads the unique keys its
// records take in one call, not one call a record (on Azure, a request
// each).
func TestLoadReadsUniqueKeysTogether(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(it.NewMemoryStore())
	tbl := openCities(t, fs)
	gets, getManys := fs.Calls(faultstore.Get), fs.Calls(faultstore.GetMany)
	rep, err := tbl.Load(ctx, slices.Values(cities(300)), it.LoadOptions{BatchRecords: 100})
	require.NoError(t, err)
	require.Equal(t, 300, rep.Inserted)
	require.Equal(t, 0, fs.Calls(faultstore.Get)-gets)
	require.Equal(t, 3, fs.Calls(faultstore.GetMany)-getManys)
}

//  of issue 21 (transactions and Table.Load): each test shows a
// finding, or an attack that held.

// twoKeys is a record with two unique indexes, both within its partition
// (P leads each key).
type twoKeys struct {
	P  string
	ID int
	A  string
	B  string
}

func openTwoKeys(t testing.TB, s kv.Store) *it.Table[twoKeys] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[twoKeys]{SchemaLease: countLease, Name: "twokeys", PrimaryKey: []string{"P", "ID"},
		Indexes: []it.Index[twoKeys]{
			{Name: "a", Fields: []string{"P", "A"}, Unique: true, Sparse: true},
			{Name: "b", Fields: []string{"P", "B"}, Unique: true, Sparse: true},
		}})
	require.NoError(t, err)
	return tbl
}

// loadOutcome is what a load left: its report's counts, the positions it
// refused, and the records the table holds.
type loadOutcome struct {
	Progress it.LoadProgress
	Refused  []int
	Held     []twoKeys
}

func loadTwoKeys(t *testing.T, held []twoKeys, load []twoKeys, size int) loadOutcome {
	t.Helper()
	ctx := context.Background()
	tbl := openTwoKeys(t, it.NewMemoryStore())
	for _, r := range held {
		_, err := tbl.Insert(ctx, r)
		require.NoError(t, err)
	}
	rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: size})
	require.NoError(t, err)
	out := loadOutcome{Progress: rep.LoadProgress}
	for _, f := range rep.Refusals {
		out.Refused = append(out.Refused, f.Position)
	}
	slices.Sort(out.Refused)
	for r, err := range tbl.Find(ctx, it.Query{}) {
		require.NoError(t, err)
		out.Held = append(out.Held, r)
	}
	rv, err := tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rv.Total(), "%v", rv.Samples)
	return out
}

// TestLoadPresentTwinOfRefused: a record given twice in one batch
// whose first copy the commit refuses (a unique key the table holds) is
// counted Present the second time, though the table does not hold it;
// in batches of one, both copies are refused. Present must mean "held by
// the table as given".
func TestLoadPresentTwinOfRefused(t *testing.T) {
	held := []twoKeys{{P: "p", ID: 1, A: "a1", B: "taken"}}
	x := twoKeys{P: "p", ID: 2, A: "a2", B: "taken"}
	load := []twoKeys{x, x}
	want := loadOutcome{Progress: it.LoadProgress{Read: 2, Refused: 2}, Refused: []int{0, 1}, Held: held}
	for _, size := range []int{1, 10} {
		t.Run(fmt.Sprint("batches of ", size), func(t *testing.T) {
			require.Equal(t, want, loadTwoKeys(t, held, load, size))
		})
	}
}

// TestLoadTwinOfPresentDifferent: a record given twice in one batch
// whose first copy the table holds with other values (refused, ErrExists)
// counts as Present the second time.
func TestLoadTwinOfPresentDifferent(t *testing.T) {
	held := []twoKeys{{P: "p", ID: 1, A: "old"}}
	x := twoKeys{P: "p", ID: 1, A: "new"}
	want := loadOutcome{Progress: it.LoadProgress{Read: 2, Refused: 2}, Refused: []int{0, 1}, Held: held}
	for _, size := range []int{1, 10} {
		t.Run(fmt.Sprint("batches of ", size), func(t *testing.T) {
			require.Equal(t, want, loadTwoKeys(t, held, []twoKeys{x, x}, size))
		})
	}
}

// TestLoadSameKeyAfterRefused: a record whose primary key an earlier
// record of its batch has is refused ("an earlier record of the load has
// its primary key") even when that earlier record was refused and the
// table holds neither; in batches of one, the second is inserted. What a
// load keeps must not depend on BatchRecords.
func TestLoadSameKeyAfterRefused(t *testing.T) {
	held := []twoKeys{{P: "p", ID: 1, A: "a1", B: "taken"}}
	load := []twoKeys{
		{P: "p", ID: 2, A: "a2", B: "taken"}, // refused: b "taken" is held
		{P: "p", ID: 2, A: "a2", B: "free"},  // its key is free: the first was refused
	}
	want := loadOutcome{Progress: it.LoadProgress{Read: 2, Inserted: 1, Refused: 1}, Refused: []int{0}, Held: append(slices.Clone(held), load[1])}
	for _, size := range []int{1, 10} {
		t.Run(fmt.Sprint("batches of ", size), func(t *testing.T) {
			require.Equal(t, want, loadTwoKeys(t, held, load, size))
		})
	}
}

// TestLoadUniqueKeyAfterRefused: a record that takes a unique key
// that an earlier record of its batch takes is refused, even when that
// earlier record is refused for another unique key and never written; in
// batches of one it is inserted.
func TestLoadUniqueKeyAfterRefused(t *testing.T) {
	held := []twoKeys{{P: "p", ID: 1, A: "a1", B: "taken"}}
	load := []twoKeys{
		{P: "p", ID: 2, A: "shared", B: "taken"}, // refused: b "taken" is held
		{P: "p", ID: 3, A: "shared", B: "free"},  // a "shared" is free: the first was refused
	}
	want := loadOutcome{Progress: it.LoadProgress{Read: 2, Inserted: 1, Refused: 1}, Refused: []int{0}, Held: append(slices.Clone(held), load[1])}
	for _, size := range []int{1, 10} {
		t.Run(fmt.Sprint("batches of ", size), func(t *testing.T) {
			require.Equal(t, want, loadTwoKeys(t, held, load, size))
		})
	}
}

// doc is a record whose Body may be large: its one index is within its
// partition.
type doc struct {
	P    string
	ID   int
	Tag  string
	Body string
}

// TestLoadBatchesRecoverAfterLargeRecords: a few records too large
// to share a batch shrink every later batch of the load for good (split
// sets loader.size and nothing raises it again): on a store with Azure's
// limits, 5 records of 500 KB and then 600 small ones of one partition take
// 152 batches (4 records each), where the small ones fit about 24 a batch
// (99 operations). The issue asks for <= 0.1 requests a record for records
// that share partitions.
func TestLoadBatchesRecoverAfterLargeRecords(t *testing.T) {
	ctx := context.Background()
	s := &countingStore{Store: limited{it.NewMemoryStore()}}
	tbl, err := it.Open(ctx, s, it.Schema[doc]{SchemaLease: countLease, Name: "docs", PrimaryKey: []string{"P", "ID"},
		Indexes: []it.Index[doc]{{Name: "tag", Fields: []string{"P", "Tag"}}}})
	require.NoError(t, err)
	var load []doc
	for i := range 5 {
		load = append(load, doc{P: "p", ID: i, Tag: "big", Body: strings.Repeat("x", 500<<10)})
	}
	for i := 5; i < 605; i++ {
		load = append(load, doc{P: "p", ID: i, Tag: fmt.Sprint("t", i%7)})
	}
	before := s.applies.Load()
	rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, it.LoadProgress{Read: 605, Inserted: 605}, rep.LoadProgress)
	applies := s.applies.Load() - before
	t.Logf("%d batches for %d records", applies, len(load))
	require.LessOrEqual(t, applies, int64(0.1*float64(len(load))), "batches")
}

// TestLoadCanceled: a load whose ctx is canceled part way returns
// ctx's error, and run again it finishes; the counts of the finished run
// add up.
func TestLoadCanceled(t *testing.T) {
	want := cities(900)
	for _, mode := range loadStores {
		t.Run(mode.name, func(t *testing.T) {
			tbl := openCities(t, mode.store())
			ctx, cancel := context.WithCancel(context.Background())
			batches := 0
			rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 30, Progress: func(it.LoadProgress) {
				if batches++; batches == 3 {
					cancel()
				}
			}})
			require.ErrorIs(t, err, context.Canceled)
			require.Less(t, rep.Inserted, len(want))
			rep, err = tbl.Load(context.Background(), slices.Values(want), it.LoadOptions{BatchRecords: 30})
			require.NoError(t, err)
			require.Equal(t, rep.Read, rep.Inserted+rep.Present+rep.Refused)
			require.Equal(t, len(want), rep.Read)
			require.Zero(t, rep.Refused)
			requireCities(t, tbl, want)
		})
	}
}

// TestLoadSharded: on a ShardedStore a load groups records by shard
// (each batch one shard's), and the table ends as loaded, its indexes
// clean.
func TestLoadSharded(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []struct {
		name   string
		shards func() []kv.Store
		opts   []it.ShardOption
	}{
		{"memory shards", func() []kv.Store {
			return []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()}
		}, nil},
		{"limited shards, indexes by hash", func() []kv.Store {
			return []kv.Store{limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}}
		}, []it.ShardOption{it.WithIndexSharding(it.ShardByHash)}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			s, err := it.OpenShardedStore(ctx, mode.shards(), mode.opts...)
			require.NoError(t, err)
			tbl := openCities(t, s)
			want := cities(1500)
			rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{OnRefused: it.LoadSkip})
			require.NoError(t, err)
			for _, f := range rep.Refusals {
				t.Logf("refused %d: %v", f.Position, f.Err)
			}
			require.Equal(t, it.LoadProgress{Read: 1500, Inserted: 1500}, rep.LoadProgress)
			requireCities(t, tbl, want)
			rep, err = tbl.Load(ctx, slices.Values(want), it.LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, it.LoadProgress{Read: 1500, Present: 1500}, rep.LoadProgress)
		})
	}
}

// openCitiesLeased opens the cities of s with a short schema lease, so
// that lifecycle changes on a partitioned store need not wait out an hour.
func openCitiesLeased(t testing.TB, s kv.Store, ixs []it.Index[city]) *it.Table[city] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[city]{SchemaLease: testLease, Name: "cities", PrimaryKey: []string{"Country", "ID"}, Indexes: ixs})
	require.NoError(t, err)
	return tbl
}

// TestLoadLifecycleRace: a load on one handle while another handle
// disables, enables, builds and repairs the table's indexes, one step a
// batch, and a third opens it with one more index (a schema change): the
// load finishes, and every handle finds the table clean. Run with -race.
func TestLoadLifecycleRace(t *testing.T) {
	ctx := context.Background()
	for _, mode := range loadStores {
		t.Run(mode.name, func(t *testing.T) {
			s := mode.store()
			loader, other := openCitiesLeased(t, s, cityIndexes()), openCitiesLeased(t, s, cityIndexes())
			want := cities(900)
			done, tick := make(chan struct{}), make(chan struct{}, 1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-done:
						return
					case <-tick:
					}
					ix := []string{"pop", "code", "name"}[i/5%3]
					switch i % 5 {
					case 0:
						require.NoError(t, other.DisableIndex(ctx, ix))
					case 1:
						require.NoError(t, other.EnableIndex(ctx, ix))
					case 2:
						require.NoError(t, other.Build(ctx, it.BuildOptions{}))
					case 3:
						_, err := other.Repair(ctx, it.VerifyOptions{})
						require.NoError(t, err)
					case 4:
						if i == 9 {
							more := append(cityIndexes(), it.Index[city]{Name: "pop_name", Fields: []string{"Pop", "Name"}})
							require.NoError(t, openCitiesLeased(t, s, more).Build(ctx, it.BuildOptions{}))
						}
					}
				}
			}()
			rep, err := loader.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 30, Progress: func(it.LoadProgress) {
				select {
				case tick <- struct{}{}:
				default:
				}
			}})
			close(done)
			wg.Wait()
			require.NoError(t, err)
			require.Equal(t, it.LoadProgress{Read: 900, Inserted: 900}, rep.LoadProgress)
			require.NoError(t, other.Build(ctx, it.BuildOptions{}))
			requireCities(t, other, want)
			requireCities(t, loader, want)
		})
	}
}

// TestLoadRacesWriters: a load racing single writes, transactions
// and a maintainer, on a partitioned store with Azure's limits (eventual
// entries through a hinted queue): each record ends as one writer left
// it, refusals are of taken keys, the counts add up, and the indexes
// agree.
func TestLoadRacesWriters(t *testing.T) {
	ctx := context.Background()
	for _, mode := range loadStores {
		t.Run(mode.name, func(t *testing.T) {
			s := mode.store()
			tbl, writer := openCities(t, s), openCities(t, s)
			want := cities(900)
			mctx, stopMaintainer := context.WithCancel(ctx)
			var wg, mwg sync.WaitGroup
			wg.Add(2)
			mwg.Add(1)
			go func() {
				defer mwg.Done()
				err := writer.RunMaintainer(mctx, it.MaintainerOptions{})
				if !errors.Is(err, context.Canceled) {
					require.NoError(t, err)
				}
			}()
			go func() { // single writes, from the end
				defer wg.Done()
				for i := len(want) - 1; i >= 0; i -= 5 {
					c := want[i]
					c.Name, c.Code = "single", "s"+c.Code
					_, err := writer.Upsert(ctx, c)
					require.NoError(t, err)
				}
			}()
			go func() { // transactions of two records of one country
				defer wg.Done()
				for i := 3; i+3 < len(want); i += 11 {
					a, b := want[i], want[i+3]
					err := it.Transact(ctx, s, func(tx *it.Tx) error {
						for _, c := range []city{a, b} {
							c.Name, c.Code = "tx", "t"+c.Code
							if _, err := writer.In(tx).Upsert(ctx, c); err != nil {
								return err
							}
						}
						return nil
					})
					require.NoError(t, err)
				}
			}()
			rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: 24})
			wg.Wait()
			for _, f := range rep.Refusals {
				require.ErrorIs(t, f.Err, it.ErrExists, "record %d", f.Position)
			}
			require.NoError(t, err)
			require.Equal(t, rep.Read, rep.Inserted+rep.Present+rep.Refused)
			stopMaintainer()
			mwg.Wait()
			var final []city
			for _, c := range want {
				got, err := tbl.Get(ctx, c.Country, c.ID)
				require.NoError(t, err)
				require.Contains(t, []string{c.Name, "single", "tx"}, got.Name)
				final = append(final, got)
			}
			requireCities(t, tbl, final)
		})
	}
}

// TestLoadStoreErrorSaysWhere: a store error that ends a load says
// it was the load's, of which table, at which record or batch: it reads
// "commit: faultstore: ..." with neither.
func TestLoadStoreErrorSaysWhere(t *testing.T) {
	ctx := context.Background()
	fs := faultstore.New(it.NewMemoryStore())
	tbl := openCities(t, fs)
	fs.FailAt(faultstore.Apply, 2)
	rep, err := tbl.Load(ctx, slices.Values(cities(300)), it.LoadOptions{BatchRecords: 100})
	require.Error(t, err)
	t.Logf("%v", err)
	require.Equal(t, 100, rep.Inserted)
	require.ErrorContains(t, err, `table "cities"`)
	require.ErrorContains(t, err, "Load")
}

// TestLoadEventual: a load into a table whose indexes are eventual,
// run twice, on a store of one scope and on a partitioned one (hinted
// changes): the second run finds every record present, and once the
// queue drains the indexes agree.
func TestLoadEventual(t *testing.T) {
	ctx := context.Background()
	for _, s := range []kv.Store{it.NewMemoryStore(), partitionedStore(it.NewMemoryStore())} {
		ixs := cityIndexes()
		for i := range ixs {
			if !ixs[i].Unique {
				ixs[i].Consistency = it.Eventual
			}
		}
		tbl, err := it.Open(ctx, s, it.Schema[city]{SchemaLease: countLease, Name: "cities", PrimaryKey: []string{"Country", "ID"}, Indexes: ixs})
		require.NoError(t, err)
		want := cities(600)
		rep, err := tbl.Load(ctx, slices.Values(want[:400]), it.LoadOptions{BatchRecords: 50})
		require.NoError(t, err)
		require.Equal(t, it.LoadProgress{Read: 400, Inserted: 400}, rep.LoadProgress)
		rep, err = tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 64})
		require.NoError(t, err)
		require.Equal(t, it.LoadProgress{Read: 600, Inserted: 200, Present: 400}, rep.LoadProgress)
		requireCities(t, tbl, want)
	}
}

// applyGate is a store whose Apply waits for its gate to open and counts
// the Apply calls that started and ended.
type applyGate struct {
	kv.Store
	gate           chan struct{}
	started, ended atomic.Int32
}

func (g *applyGate) Apply(ctx context.Context, b *kv.Batch) error {
	g.started.Add(1)
	defer g.ended.Add(1)
	if g.gate != nil { // nil until the load starts
		<-g.gate
		for range 100 { // let a caller that does not wait run ahead
			runtime.Gosched()
		}
	}
	return g.Store.Apply(ctx, b)
}

// placed is a record whose primary key is out of reach when its embedded
// pointer is nil.
type placed struct {
	*Spot
	Name string
}

type Spot struct {
	Country string
	ID      int
}

// TestLoadEndsItsBatches checks that Load, which applies a batch while it
// builds the next, returns only once that apply has ended, also when a
// record ends the load before it reaches a batch.
func TestLoadEndsItsBatches(t *testing.T) {
	store := &applyGate{Store: it.NewMemoryStore()}
	tbl, err := it.Open(context.Background(), store, it.Schema[placed]{SchemaLease: countLease, Name: "places", PrimaryKey: []string{"Country", "ID"}})
	require.NoError(t, err)
	store.gate = make(chan struct{})
	seq := func(yield func(placed) bool) {
		if !yield(placed{Spot: &Spot{"fr", 1}}) {
			return
		}
		close(store.gate) // the first batch is applying, or about to
		yield(placed{Name: "nowhere"})
	}
	started := store.started.Load()
	rep, err := tbl.Load(context.Background(), seq, it.LoadOptions{BatchRecords: 1})
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.Equal(t, started+1, store.started.Load(), "the first batch was applied")
	require.Equal(t, store.started.Load(), store.ended.Load(), "Load returned while an apply ran")
	require.Equal(t, it.LoadProgress{Read: 2, Inserted: 1, Refused: 1}, rep.LoadProgress)
}

// panicStore is a store whose Apply panics once panics is set.
type panicStore struct {
	kv.Store
	panics bool
}

func (s *panicStore) Apply(ctx context.Context, b *kv.Batch) error {
	if s.panics {
		panic("the store's bug")
	}
	return s.Store.Apply(ctx, b)
}

// TestLoadStorePanic checks that a panic of the store, in the goroutine
// that applies a batch, reaches Load's caller.
func TestLoadStorePanic(t *testing.T) {
	store := &panicStore{Store: it.NewMemoryStore()}
	tbl := openCities(t, store)
	store.panics = true
	require.PanicsWithValue(t, "the store's bug", func() {
		_, _ = tbl.Load(context.Background(), slices.Values([]city{{Country: "fr", ID: 1, Code: "A"}}), it.LoadOptions{})
	})
}

// parkedIn returns the stack of a goroutine parked on a lock (a mutex or
// a semaphore) whose stack names every one of frames, or "".
func parkedIn(frames ...string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(head, "semacquire") && !strings.Contains(head, "sync.") {
			continue
		}
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return g
		}
	}
	return ""
}

// stuckPolls is how many polls in a row must find a goroutine parked in
// the same place before a test calls it stuck: a lock that anyone
// releases lets it run between two polls.
const stuckPolls = 200

// waitOrStuck waits for done, and fails the test with the stuck
// goroutine's stack when one parked in frames stays parked, poll after
// poll, while done does not come: no progress, not a time budget.
func waitOrStuck(t *testing.T, done <-chan struct{}, frames ...string) {
	t.Helper()
	stuck := 0
	for {
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
		}
		g := parkedIn(frames...)
		if g == "" {
			stuck = 0
			continue
		}
		if stuck++; stuck == stuckPolls {
			t.Fatalf("no progress over %d polls; stuck goroutine:\n%s", stuckPolls, g)
		}
	}
}

// TestLoadProgressChangesIndexes: a Progress callback that changes the
// table's indexes (DisableIndex takes the drain lock exclusively) must
// not wait behind the load's own next batch, prepared and holding the
// drain lock shared while the callback runs.
func TestLoadProgressChangesIndexes(t *testing.T) {
	ctx := context.Background()
	tbl := openCities(t, it.NewMemoryStore())
	done := make(chan struct{})
	var rep it.LoadReport
	var err error
	disabled := false
	go func() {
		defer close(done)
		rep, err = tbl.Load(ctx, slices.Values(cities(90)), it.LoadOptions{BatchRecords: 30, Progress: func(it.LoadProgress) {
			if !disabled {
				disabled = true
				require.NoError(t, tbl.DisableIndex(ctx, "pop"))
			}
		}})
	}()
	waitOrStuck(t, done, "switchState", "Load")
	require.NoError(t, err)
	require.Equal(t, it.LoadProgress{Read: 90, Inserted: 90}, rep.LoadProgress)
}

// TestLoadProgressWritesWhileIndexesChange: a Progress callback that
// writes a record to the table (a checkpoint, say) while another
// goroutine disables an index: the disabling waits for the load's next
// batch, prepared and holding the drain lock shared, and the callback's
// write waits behind the disabling (Go's RWMutex lets no new reader in
// while a writer waits): a deadlock, unless the callback runs with
// nothing held.
func TestLoadProgressWritesWhileIndexesChange(t *testing.T) {
	ctx := context.Background()
	tbl := openCities(t, it.NewMemoryStore())
	done, disableDone := make(chan struct{}), make(chan struct{})
	var rep it.LoadReport
	var err error
	first := true
	go func() {
		defer close(done)
		rep, err = tbl.Load(ctx, slices.Values(cities(90)), it.LoadOptions{BatchRecords: 30, Progress: func(it.LoadProgress) {
			if !first {
				return
			}
			first = false
			go func() {
				defer close(disableDone)
				require.NoError(t, tbl.DisableIndex(ctx, "pop"))
			}()
			// Write once the disabling ended or waits for the drain lock.
			for parkedIn("switchState") == "" {
				select {
				case <-disableDone:
				case <-time.After(time.Millisecond):
					continue
				}
				break
			}
			_, err := tbl.Insert(ctx, city{Country: "zz", ID: 1, Name: "checkpoint", Code: "cp"})
			require.NoError(t, err)
		}})
	}()
	waitOrStuck(t, done, "writeRecordAt", "Load")
	<-disableDone
	require.NoError(t, err)
	require.Equal(t, it.LoadProgress{Read: 90, Inserted: 90}, rep.LoadProgress)
}

// panicOnce is a store whose next Apply, once armed, panics.
type panicOnce struct {
	kv.Store
	armed atomic.Bool
}

func (s *panicOnce) Apply(ctx context.Context, b *kv.Batch) error {
	if s.armed.CompareAndSwap(true, false) {
		panic("the store's bug")
	}
	return s.Store.Apply(ctx, b)
}

// disableAfter runs f, which panics, recovers, and then disables an index
// of tbl: that must not wait for a drain lock that the panicking load
// left held.
func disableAfter(t *testing.T, tbl *it.Table[city], f func()) {
	t.Helper()
	require.Panics(t, f)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = tbl.DisableIndex(context.Background(), "pop")
	}()
	waitOrStuck(t, done, "switchState", "disableAfter")
	require.NoError(t, err)
}

// TestLoadStorePanicReleasesLocks: a panic of the store in the
// goroutine that applies batch N reaches the caller; batch N+1, prepared
// meanwhile, holds the table's drain lock, and must let it go: a program
// that recovers the panic (a server's handler) can change the table's
// indexes after.
func TestLoadStorePanicReleasesLocks(t *testing.T) {
	store := &panicOnce{Store: it.NewMemoryStore()}
	tbl := openCities(t, store)
	disableAfter(t, tbl, func() {
		store.armed.Store(true)
		_, _ = tbl.Load(context.Background(), slices.Values(cities(2)), it.LoadOptions{BatchRecords: 1})
	})
}

// TestLoadProgressPanicReleasesLocks: a Progress callback that panics
// leaves no drain lock held behind it.
func TestLoadProgressPanicReleasesLocks(t *testing.T) {
	tbl := openCities(t, it.NewMemoryStore())
	disableAfter(t, tbl, func() {
		_, _ = tbl.Load(context.Background(), slices.Values(cities(3)), it.LoadOptions{BatchRecords: 1, Progress: func(it.LoadProgress) {
			panic("the callback's bug")
		}})
	})
}

// raceStores are the stores of the race tests: the load tests' and a
// store bounded by its writes, and a sharded one of bounded shards.
var raceStores = append([]struct {
	name  string
	store func() kv.Store
}{
	{"writes limited", func() kv.Store { return writesLimited{it.NewMemoryStore()} }},
	{"sharded", func() kv.Store {
		s, err := it.OpenShardedStore(context.Background(), []kv.Store{limited{it.NewMemoryStore()}, writesLimited{it.NewMemoryStore()}})
		if err != nil {
			panic(err)
		}
		return s
	}},
}, loadStores...)

// TestLoadRacesUniqueWriters: a load racing writers that take the
// unique keys of its records (other primary keys, the same codes), that
// write some of its records as given, a maintainer, SaveUsage and
// Repair: every code ends with one record, a record refused is refused
// for its code, the counts add up exactly and the indexes agree.
func TestLoadRacesUniqueWriters(t *testing.T) {
	ctx := context.Background()
	for _, mode := range raceStores {
		for _, size := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s, batches of %d", mode.name, size), func(t *testing.T) {
				s := mode.store()
				tbl, writer := openCities(t, s), openCities(t, s)
				want := cities(450)
				mctx, stop := context.WithCancel(ctx)
				var wg, bg sync.WaitGroup
				bg.Add(1)
				go func() { // a maintainer, usage and repair, until the end
					defer bg.Done()
					go func() { _ = writer.RunMaintainer(mctx, it.MaintainerOptions{}) }()
					for mctx.Err() == nil {
						_ = writer.SaveUsage(mctx)
						_, _ = writer.Repair(mctx, it.VerifyOptions{})
					}
				}()
				wg.Add(2)
				go func() { // takers of codes: i%7 == 0
					defer wg.Done()
					for i := len(want) - 1; i >= 0; i-- {
						if i%7 == 0 {
							c := want[i]
							c.ID += 10000
							_, err := writer.Insert(ctx, c)
							if err != nil {
								require.ErrorIs(t, err, it.ErrUniqueViolation)
							}
						}
					}
				}()
				go func() { // the load's own records, as given: i%5 == 1
					defer wg.Done()
					for i := range want {
						if i%5 == 1 && i%7 != 0 {
							err := it.Transact(ctx, s, func(tx *it.Tx) error {
								_, err := writer.In(tx).Upsert(ctx, want[i])
								return err
							})
							require.NoError(t, err)
						}
					}
				}()
				rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: size})
				wg.Wait()
				require.NoError(t, err)
				refused := map[int]bool{}
				for _, f := range rep.Refusals {
					require.Zero(t, f.Position%7, "record %d: %v", f.Position, f.Err)
					require.ErrorIs(t, f.Err, it.ErrUniqueViolation, "record %d", f.Position)
					refused[f.Position] = true
				}
				require.Equal(t, it.LoadProgress{Read: 450, Inserted: rep.Inserted, Present: rep.Present, Refused: len(refused)}, rep.LoadProgress)
				require.Equal(t, 450, rep.Inserted+rep.Present+rep.Refused)
				stop()
				bg.Wait()
				var final []city
				for i, c := range want {
					got, err := tbl.Get(ctx, c.Country, c.ID)
					if refused[i] {
						require.ErrorIs(t, err, it.ErrNotFound, "record %d", i)
						c.ID += 10000
						got, err = tbl.Get(ctx, c.Country, c.ID)
					}
					require.NoError(t, err, "record %d", i)
					require.Equal(t, c, got)
					final = append(final, got)
				}
				n, err := tbl.Count(ctx, it.Query{})
				require.NoError(t, err)
				require.Equal(t, len(final), n, "a code taken twice, or a record both loaded and taken")
				requireCities(t, tbl, final)
			})
		}
	}
}

// TestLoadStoreClosed: a store closed while a load runs (by its
// Progress, or by another goroutine) ends the load with ErrClosed, its
// counts those of the batches that committed before, the batch applying
// while Progress ran included.
func TestLoadStoreClosed(t *testing.T) {
	ctx := context.Background()
	for _, mode := range raceStores {
		t.Run(mode.name, func(t *testing.T) {
			s := mode.store()
			tbl := openCities(t, s)
			inserted := -1
			rep, err := tbl.Load(ctx, slices.Values(cities(300)), it.LoadOptions{BatchRecords: 10, Progress: func(p it.LoadProgress) {
				if inserted < 0 && p.Inserted >= 50 {
					inserted = p.Inserted
					require.NoError(t, s.Close())
				}
			}})
			require.ErrorIs(t, err, it.ErrClosed)
			// Progress runs while the next batch applies, which may commit
			// before the close; none after it does.
			require.GreaterOrEqual(t, rep.Inserted, inserted)
			require.LessOrEqual(t, rep.Inserted, inserted+10, "a batch committed after the close")
			require.Less(t, rep.Read, 300)
		})
		t.Run(mode.name+", racing", func(t *testing.T) {
			s := mode.store()
			tbl := openCities(t, s)
			go func() {
				runtime.Gosched()
				_ = s.Close()
			}()
			rep, err := tbl.Load(ctx, slices.Values(cities(300)), it.LoadOptions{BatchRecords: 10})
			if err != nil {
				require.ErrorIs(t, err, it.ErrClosed)
			}
			require.LessOrEqual(t, rep.Inserted, rep.Read)
		})
	}
}

// TestLoadFaultCounts: a load whose store fails batch N, while
// N+1 is prepared, reports as inserted exactly the records the table
// holds, leaves N+1 unwritten, and a load run again finishes it.
func TestLoadFaultCounts(t *testing.T) {
	ctx := context.Background()
	want := cities(60)
	for _, mode := range raceStores {
		t.Run(mode.name, func(t *testing.T) {
			fs0 := faultstore.New(mode.store())
			tbl := openCities(t, fs0)
			before := fs0.Calls(faultstore.Apply)
			_, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 8})
			require.NoError(t, err)
			applies := fs0.Calls(faultstore.Apply) - before
			for n := 1; n <= applies; n++ {
				fs := faultstore.New(mode.store())
				tbl := openCities(t, fs)
				fs.FailAt(faultstore.Apply, n)
				var progress []it.LoadProgress
				rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 8, Progress: func(p it.LoadProgress) { progress = append(progress, p) }})
				require.ErrorIs(t, err, faultstore.ErrInjected, "Apply %d", n)
				held, err := tbl.Count(ctx, it.Query{})
				require.NoError(t, err)
				require.Equal(t, held, rep.Inserted, "Apply %d", n)
				require.Zero(t, rep.Present+rep.Refused)
				if len(progress) > 0 {
					require.Equal(t, rep.Inserted, progress[len(progress)-1].Inserted)
				}
				rep, err = tbl.Load(ctx, slices.Values(want), it.LoadOptions{BatchRecords: 8})
				require.NoError(t, err, "Apply %d", n)
				require.Equal(t, it.LoadProgress{Read: 60, Inserted: 60 - held, Present: held}, rep.LoadProgress)
				requireCities(t, tbl, want)
			}
		})
	}
}

// TestLoadSeqCallsTable: a sequence that changes the table's indexes,
// builds them and writes to the table between its records does not
// deadlock with the batch the load applies meanwhile.
func TestLoadSeqCallsTable(t *testing.T) {
	ctx := context.Background()
	tbl := openCitiesLeased(t, it.NewMemoryStore(), cityIndexes())
	want := cities(200)
	seq := func(yield func(city) bool) {
		for i, c := range want {
			switch i % 40 {
			case 10:
				require.NoError(t, tbl.DisableIndex(ctx, "pop"))
			case 20:
				require.NoError(t, tbl.EnableIndex(ctx, "pop"))
			case 30:
				require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
			case 35:
				_, err := tbl.Insert(ctx, city{Country: "zz", ID: i, Code: fmt.Sprint("z", i)})
				require.NoError(t, err)
			}
			if !yield(c) {
				return
			}
		}
	}
	done := make(chan struct{})
	var rep it.LoadReport
	var err error
	go func() {
		defer close(done)
		rep, err = tbl.Load(ctx, seq, it.LoadOptions{BatchRecords: 7})
	}()
	waitOrStuck(t, done, "Load")
	require.NoError(t, err)
	require.Equal(t, it.LoadProgress{Read: 200, Inserted: 200}, rep.LoadProgress)
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	rv, err := tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rv.Total())
}

// TestLoadSeqPanicEndsBatches: a sequence that panics unwinds Load
// only once the batch it applies has ended, as a return would.
func TestLoadSeqPanicEndsBatches(t *testing.T) {
	store := &applyGate{Store: it.NewMemoryStore()}
	tbl := openCities(t, store)
	store.gate = make(chan struct{})
	started := store.started.Load()
	seq := func(yield func(city) bool) {
		if !yield(city{Country: "fr", ID: 1, Code: "a"}) {
			return
		}
		for store.started.Load() == started { // until the first batch applies
			runtime.Gosched()
		}
		close(store.gate)
		panic("the sequence's bug")
	}
	running := false
	require.Panics(t, func() {
		defer func() { running = store.started.Load() != store.ended.Load() }()
		_, _ = tbl.Load(context.Background(), seq, it.LoadOptions{BatchRecords: 1})
	})
	require.False(t, running, "Load unwound while an apply ran")
}

// TestLoadAdjacentBatches: batch N+1, planned while N applies,
// takes N's primary keys and unique keys: the same record counts as
// present, another with its key or its code is refused, as when each
// batch was planned after the one before committed.
func TestLoadAdjacentBatches(t *testing.T) {
	ctx := context.Background()
	a := city{Country: "fr", ID: 1, Name: "a", Code: "X"}
	load := []city{
		a, a, // present
		{Country: "fr", ID: 1, Name: "a2", Code: "Y"}, // 2: its key is taken
		{Country: "fr", ID: 2, Name: "b", Code: "X"},  // 3: its code is taken
		{Country: "fr", ID: 3, Name: "c", Code: "Z"},
	}
	for _, mode := range raceStores {
		for _, size := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s, batches of %d", mode.name, size), func(t *testing.T) {
				tbl := openCities(t, mode.store())
				rep, err := tbl.Load(ctx, slices.Values(load), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: size})
				require.NoError(t, err)
				require.Equal(t, it.LoadProgress{Read: 5, Inserted: 2, Present: 1, Refused: 2}, rep.LoadProgress)
				require.Len(t, rep.Refusals, 2)
				require.Equal(t, 2, rep.Refusals[0].Position)
				require.ErrorIs(t, rep.Refusals[0].Err, it.ErrExists)
				require.Equal(t, 3, rep.Refusals[1].Position)
				require.ErrorIs(t, rep.Refusals[1].Err, it.ErrUniqueViolation)
				requireCities(t, tbl, []city{a, load[4]})
			})
		}
	}
}
