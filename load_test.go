package indextable_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

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
	for _, mode := range []struct {
		name  string
		store func() kv.Store
	}{
		{"memory", func() kv.Store { return it.NewMemoryStore() }},
		{"partitioned", func() kv.Store { return partitionedStore(it.NewMemoryStore()) }},
	} {
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
		require.Equal(t, it.LoadProgress{Read: 3, Inserted: 1, Present: 1, Refused: 1}, rep.LoadProgress)
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

// TestLoadConcurrentWriters: a load racing single writes of the same
// records: each record ends as one of its writers left it, and the indexes
// agree.
func TestLoadConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openCities(t, s)
	want := cities(3000)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := len(want) - 1; i >= 0; i -= 7 {
			c := want[i]
			c.Name = "single"
			c.Code = "s" + c.Code
			_, err := tbl.Upsert(ctx, c)
			require.NoError(t, err)
		}
	}()
	rep, err := tbl.Load(ctx, slices.Values(want), it.LoadOptions{OnRefused: it.LoadSkip, BatchRecords: 64})
	wg.Wait()
	require.NoError(t, err)
	t.Logf("%+v", rep.LoadProgress)
	for _, f := range rep.Refusals {
		require.ErrorIs(t, f.Err, it.ErrExists)
	}
	var final []city
	for _, c := range want {
		got, err := tbl.Get(ctx, c.Country, c.ID)
		require.NoError(t, err)
		final = append(final, got)
	}
	requireCities(t, tbl, final)
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
