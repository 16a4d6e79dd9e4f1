package indextable_test

// Reads and writes reuse pooled memory: a Get's scratch, a reader and its
// bound loop bodies, a single write's arena and batch. These tests check
// that no record, key or batch handed out shares memory that a later call
// reuses, under concurrent, re-entrant and failing calls.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

type reuseName string

type reuseInner struct {
	Label string
	Nums  []int
}

type ReuseEmb struct {
	Extra string
}

// reuseRec is a record the binary codec does not decode exactly (slices,
// a map, a pointer), so a write decodes what it stores, in place when no
// Key func may keep it.
type reuseRec struct {
	ID    int
	Name  reuseName
	Town  string
	Email string
	Tags  []string
	Attrs map[string]string
	Ptr   *string
	Inner reuseInner
	ReuseEmb
	Blob []byte
}

func reuseMake(id, ver int) reuseRec {
	s := fmt.Sprintf("ptr-%d-%d", id, ver)
	tags := []string{fmt.Sprintf("tag%d", id%5), fmt.Sprintf("v%d", ver%3)}
	if ver%4 == 3 {
		tags = append(tags, fmt.Sprintf("long-tag-%d-%d-%s", id, ver, strings.Repeat("x", ver%40)))
	}
	email := ""
	if ver%2 == 0 {
		email = fmt.Sprintf("u%d-%d@example.com", id, ver)
	}
	return reuseRec{
		ID: id, Name: reuseName(fmt.Sprintf("name-%d-%d", id, ver)), Town: fmt.Sprintf("town%d", (id+ver)%4),
		Email: email, Tags: tags, Attrs: map[string]string{"v": fmt.Sprint(ver), "id": fmt.Sprint(id)},
		Ptr: &s, Inner: reuseInner{Label: fmt.Sprintf("label-%d-%d", id, ver), Nums: []int{id, ver}},
		ReuseEmb: ReuseEmb{Extra: fmt.Sprintf("extra-%d-%d-%s", id, ver, strings.Repeat("y", (id*7+ver)%90))},
		Blob:     []byte(fmt.Sprintf("blob-%d-%d", id, ver)),
	}
}

// reuseConsistent reports whether every field of r tells the same (id, ver).
func reuseConsistent(r reuseRec) error {
	var id, ver int
	if _, err := fmt.Sscanf(string(r.Name), "name-%d-%d", &id, &ver); err != nil {
		return fmt.Errorf("name %q: %v", r.Name, err)
	}
	if id != r.ID {
		return fmt.Errorf("name %q of record %d", r.Name, r.ID)
	}
	want := reuseMake(id, ver)
	if !reuseEqual(want, r) {
		return fmt.Errorf("record %d torn: got %+v, want %+v", r.ID, r, want)
	}
	return nil
}

func reuseEqual(a, b reuseRec) bool {
	pa, pb := "", ""
	if a.Ptr != nil {
		pa = *a.Ptr
	}
	if b.Ptr != nil {
		pb = *b.Ptr
	}
	return a.ID == b.ID && a.Name == b.Name && a.Town == b.Town && a.Email == b.Email &&
		slices.Equal(a.Tags, b.Tags) && fmt.Sprint(a.Attrs) == fmt.Sprint(b.Attrs) && pa == pb &&
		a.Inner.Label == b.Inner.Label && slices.Equal(a.Inner.Nums, b.Inner.Nums) &&
		a.Extra == b.Extra && string(a.Blob) == string(b.Blob)
}

// reuseIndexes have no Key func, so that a single write decodes its stored
// record in place, from its arena.
func reuseIndexes(keyFunc, partitioned bool) []it.Index[reuseRec] {
	email := it.Index[reuseRec]{Name: "email", Fields: []string{"Email"}, Unique: true, Sparse: true}
	if partitioned {
		email.Fields = []string{"ID", "Email"}
	}
	ixs := []it.Index[reuseRec]{
		{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.FullCopy},
		{Name: "town", Fields: []string{"Town"}},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.Partial, Projection: []string{"Tags", "Extra"}},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.FullCopy},
		email,
		{Name: "extra", Fields: []string{"Extra"}, Strategy: it.Partial, Projection: []string{"Name"}},
	}
	if keyFunc {
		ixs = append(ixs, it.Index[reuseRec]{Name: "label", Key: func(r reuseRec) []it.Tuple {
			return []it.Tuple{{r.Inner.Label}}
		}, Strategy: it.FullCopy})
	}
	return ixs
}

// reuseScope is a small, partitioned atomicity scope, which makes writes
// fall back to the queue.
var reuseScope = kv.Atomicity{Partition: firstBytePartition, MaxOps: 16, MaxBytes: 3 << 10}

type reuseStore struct {
	name string
	new  func(t *testing.T) kv.Store
}

func reuseStores() []reuseStore {
	return []reuseStore{
		{"memory", func(*testing.T) kv.Store { return it.NewMemoryStore() }},
		{"unstable", func(*testing.T) kv.Store { return struct{ kv.Store }{it.NewMemoryStore()} }},
		{"bounded", func(*testing.T) kv.Store { return l16store{it.NewMemoryStore(), reuseScope} }},
		{"sharded", func(t *testing.T) kv.Store {
			s, err := it.OpenShardedStore(context.Background(), []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
			require.NoError(t, err)
			return s
		}},
	}
}

func reuseCodecs() []it.Codec { return []it.Codec{&it.BinaryCodec{}, it.JSONCodec{}} }

func reuseOpen(t *testing.T, s kv.Store, c it.Codec, keyFunc bool) *it.Table[reuseRec] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[reuseRec]{SchemaLease: countLease, Name: "reuse",
		PrimaryKey: []string{"ID"}, Codec: c, Indexes: reuseIndexes(keyFunc, s.Atomicity().Partition != nil)})
	require.NoError(t, err)
	return tbl
}

// TestReuseGetReturnsIndependentRecords: records returned by Get, and
// by Find, do not change when later Gets, Finds and writes reuse pooled
// memory.
func TestReuseGetReturnsIndependentRecords(t *testing.T) {
	ctx := context.Background()
	for _, st := range reuseStores() {
		for _, c := range reuseCodecs() {
			t.Run(fmt.Sprintf("%s/%T", st.name, c), func(t *testing.T) {
				tbl := reuseOpen(t, st.new(t), c, false)
				const n = 30
				for id := range n {
					_, err := tbl.Insert(ctx, reuseMake(id, 0))
					require.NoError(t, err)
				}
				_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
				require.NoError(t, err)
				var got []reuseRec
				for id := range n {
					r, err := tbl.Get(ctx, id)
					require.NoError(t, err)
					got = append(got, r)
				}
				var found []reuseRec
				for r, err := range tbl.Find(ctx, it.Query{Index: "town_name"}) {
					require.NoError(t, err)
					found = append(found, r)
				}
				for r, err := range tbl.Find(ctx, it.Query{Index: "name"}) {
					require.NoError(t, err)
					found = append(found, r)
				}
				// Overwrite everything, and read it all again.
				for id := range n {
					_, err := tbl.Update(ctx, reuseMake(id, 1))
					require.NoError(t, err)
					r, err := tbl.Get(ctx, id)
					require.NoError(t, err)
					require.True(t, reuseEqual(reuseMake(id, 1), r))
				}
				for r, err := range tbl.Find(ctx, it.Query{Index: "tags", Eq: it.Tuple{"v1"}}) {
					require.NoError(t, err)
					require.NoError(t, reuseConsistent(r))
				}
				for id, r := range got {
					require.True(t, reuseEqual(reuseMake(id, 0), r), "Get's record %d changed: %+v", id, r)
				}
				require.Len(t, found, 2*n)
				for _, r := range found {
					require.True(t, reuseEqual(reuseMake(r.ID, 0), r), "Find's record %d changed: %+v", r.ID, r)
				}
				requireNoDrift(t, tbl)
			})
		}
	}
}

// TestReuseConcurrentSingleWrites: goroutines write, read and delete
// the same few records at once (conflicts and retries, unique keys taken
// and freed, fallbacks on a bounded store), and every record read is whole;
// at the end the table matches a model of the last writes and Verify finds
// no drift.
func TestReuseConcurrentSingleWrites(t *testing.T) {
	ctx := context.Background()
	for _, st := range reuseStores() {
		for _, c := range reuseCodecs() {
			for _, keyFunc := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%T/key=%t", st.name, c, keyFunc), func(t *testing.T) {
					s := st.new(t)
					tbl := reuseOpen(t, s, c, keyFunc)
					const ids, workers, rounds = 6, 4, 150
					var wg sync.WaitGroup
					var failed atomic.Value
					fail := func(err error) { failed.CompareAndSwap(nil, err) }
					for w := range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							r := rand.New(rand.NewPCG(uint64(w), 22))
							for i := range rounds {
								id := r.IntN(ids)
								ver := w*1000 + i
								rec := reuseMake(id, ver)
								if r.IntN(3) == 0 {
									rec.Email = fmt.Sprintf("shared%d@example.com", r.IntN(3)) // a unique key others want
								}
								var err error
								switch r.IntN(6) {
								case 0:
									_, err = tbl.Insert(ctx, rec)
								case 1, 2:
									_, err = tbl.Upsert(ctx, rec)
								case 3:
									_, err = tbl.Update(ctx, rec)
								case 4:
									err = tbl.Delete(ctx, id)
								case 5:
									var got reuseRec
									var v it.Version
									got, v, err = tbl.GetVersioned(ctx, id)
									if err == nil {
										if cerr := reuseConsistentLoose(got); cerr != nil {
											fail(cerr)
											return
										}
										_, err = tbl.Update(ctx, rec, it.IfVersion(v))
									}
								}
								if err != nil && !errors.Is(err, it.ErrExists) && !errors.Is(err, it.ErrNotFound) &&
									!errors.Is(err, it.ErrConflict) && !errors.Is(err, it.ErrUniqueViolation) && !errors.Is(err, it.ErrInvalidBatch) {
									fail(fmt.Errorf("write: %w", err))
									return
								}
								if r.IntN(4) == 0 {
									for got, err := range tbl.Find(ctx, it.Query{Index: "town_name", Stale: true}) {
										if err != nil {
											fail(err)
											return
										}
										if cerr := reuseConsistentLoose(got); cerr != nil {
											fail(cerr)
											return
										}
									}
								}
							}
						}()
					}
					wg.Wait()
					if err, _ := failed.Load().(error); err != nil {
						t.Fatal(err)
					}
					_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
					require.NoError(t, err)
					requireNoDrift(t, tbl)
					for id := range ids {
						got, err := tbl.Get(ctx, id)
						if errors.Is(err, it.ErrNotFound) {
							continue
						}
						require.NoError(t, err)
						require.NoError(t, reuseConsistentLoose(got))
					}
				})
			}
		}
	}
}

// reuseConsistentLoose is reuseConsistent for a record whose Email a test may
// have replaced.
func reuseConsistentLoose(r reuseRec) error {
	if strings.HasPrefix(r.Email, "shared") {
		var id, ver int
		if _, err := fmt.Sscanf(string(r.Name), "name-%d-%d", &id, &ver); err == nil {
			r.Email = reuseMake(id, ver).Email
		}
	}
	return reuseConsistent(r)
}

type reuseKey struct {
	Region string
	N      int64
}

type reuseComposite struct {
	Region reuseName
	N      int64
	U      uint16
	F      float64
	P      *string
	B      bool
	Note   string
}

// TestReuseGetKeyKinds: Get by primary keys of every kind, given as
// the field's type, other types that convert, and wrong kinds, whose
// errors the log shows for comparison with the version before.
func TestReuseGetKeyKinds(t *testing.T) {
	ctx := context.Background()
	for _, c := range reuseCodecs() {
		t.Run(fmt.Sprintf("%T", c), func(t *testing.T) {
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[reuseComposite]{SchemaLease: countLease, Name: "comp",
				PrimaryKey: []string{"Region", "N", "U", "F", "B"}, Codec: c,
				Indexes: []it.Index[reuseComposite]{{Name: "note", Fields: []string{"Note"}}, {Name: "p", Fields: []string{"P", "Region"}}}})
			require.NoError(t, err)
			p := "pp"
			rec := reuseComposite{Region: "eu", N: 7, U: 3, F: 1.5, P: &p, B: true, Note: "hello"}
			_, err = tbl.Insert(ctx, rec)
			require.NoError(t, err)
			named := reuseName("eu")
			for _, pk := range [][]any{
				{"eu", 7, 3, 1.5, true},
				{named, int64(7), uint16(3), 1.5, true},
				{&named, 7.0, 3.0, 1.5, true},
				{it.Tuple{"eu", 7, 3, 1.5, true}},
				{"eu", uint8(7), int8(3), float32(1.5), true},
			} {
				got, err := tbl.Get(ctx, pk...)
				require.NoError(t, err, "%v", pk)
				require.Equal(t, rec.Note, got.Note)
				require.Equal(t, "pp", *got.P)
			}
			for _, pk := range [][]any{
				{"eu", 7, 3, 1.5},
				{7, 7, 3, 1.5, true},
				{"eu", "7", 3, 1.5, true},
				{"eu", 7.5, 3, 1.5, true},
				{"eu", 7, 3, "1.5", true},
				{"eu", 7, 3, 1.5, 1},
				{[]byte("eu"), 7, 3, 1.5, true},
				{"eu", 7, -1, 1.5, true},
				{"eu", 7, 3, 1.5, nil},
				{nil, 7, 3, 1.5, true},
				{"us", 7, 3, 1.5, true},
				{[]string{"eu"}, 7, 3, 1.5, true},
				{(*string)(nil), 7, 3, 1.5, true},
				{"eu", (*int)(nil), 3, 1.5, true},
			} {
				_, err := tbl.Get(ctx, pk...)
				require.Error(t, err)
				t.Logf("KIND %T %v: %v", c, pk, err)
				err = tbl.Delete(ctx, pk...)
				require.Error(t, err)
				t.Logf("KIND-DELETE %T %v: %v", c, pk, err)
			}
			for _, q := range []it.Query{
				{Index: "note", Eq: it.Tuple{"hello"}},
				{Index: "note", Eq: it.Tuple{reuseName("hello")}},
				{Index: "note", Eq: it.Tuple{7}},
				{Index: "note", Lower: it.Inclusive("h")},
				{Index: "p", Eq: it.Tuple{"pp"}},
				{Index: "p", Eq: it.Tuple{"pp", "eu"}},
				{Index: "p", Eq: it.Tuple{"pp", named}},
				{Index: "p", Eq: it.Tuple{"pp", 3}},
				{Index: "p", Eq: it.Tuple{nil}},
				{Where: map[string]any{"Note": "hello"}},
				{Where: map[string]any{"Region": "eu"}},
				{Where: map[string]any{"Region": named}},
				{Where: map[string]any{"P": "pp"}},
				{Where: map[string]any{"Note": 3}},
			} {
				n := 0
				var ferr error
				for _, err := range tbl.Find(ctx, q) {
					if err != nil {
						ferr = err
						break
					}
					n++
				}
				t.Logf("QUERY %T %+v: %d %v", c, q, n, ferr)
			}
		})
	}
}

// TestReuseReentrantFindBodies: a Find's loop body that reads and
// writes the same table (Get, nested Find that breaks, Insert, Update,
// Delete), breaks, or panics; each read sees whole records and the table
// ends with no drift.
func TestReuseReentrantFindBodies(t *testing.T) {
	ctx := context.Background()
	for _, st := range reuseStores() {
		for _, c := range reuseCodecs() {
			t.Run(fmt.Sprintf("%s/%T", st.name, c), func(t *testing.T) {
				tbl := reuseOpen(t, st.new(t), c, false)
				for id := range 40 {
					_, err := tbl.Insert(ctx, reuseMake(id, 0))
					require.NoError(t, err)
				}
				_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
				require.NoError(t, err)
				for _, q := range []it.Query{
					{}, {Index: "town_name"}, {Index: "town"}, {Index: "name", Limit: 7}, {Index: "tags", Eq: it.Tuple{"v0"}},
					{Index: "town", Covered: true}, {Index: "extra", Limit: 70}, {Index: "town", Limit: 3},
				} {
					seen := 0
					for r, err := range tbl.Find(ctx, q) {
						require.NoError(t, err)
						if q.Covered {
							continue
						}
						require.NoError(t, reuseConsistent(r), "%+v", q)
						seen++
						// A nested read that stops early.
						for inner, err := range tbl.Find(ctx, it.Query{Index: "town", Eq: it.Tuple{r.Town}}) {
							require.NoError(t, err)
							require.NoError(t, reuseConsistent(inner))
							break
						}
						g, err := tbl.Get(ctx, r.ID)
						if err == nil {
							require.NoError(t, reuseConsistent(g))
						}
						// Writes of other records, and of this one.
						_, err = tbl.Upsert(ctx, reuseMake(r.ID, 1+seen))
						require.NoError(t, err)
						_, err = tbl.Insert(ctx, reuseMake(1000+seen, seen))
						if err != nil {
							require.ErrorIs(t, err, it.ErrExists)
						}
						_ = tbl.Delete(ctx, 1000+seen-1)
						require.NoError(t, reuseConsistent(r), "record yielded changed under the loop body's writes")
						if seen == 12 {
							break
						}
					}
					// A loop body that panics leaves the table usable.
					func() {
						defer func() { _ = recover() }()
						for range tbl.Find(ctx, q) {
							panic("loop body")
						}
					}()
				}
				_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
				require.NoError(t, err)
				requireNoDrift(t, tbl)
				for r, err := range tbl.Find(ctx, it.Query{Index: "town_name"}) {
					require.NoError(t, err)
					require.NoError(t, reuseConsistent(r))
				}
			})
		}
	}
}

// reusePanicCodec panics encoding or decoding a record whose Town is
// "boom", as a faulty codec might.
type reusePanicCodec struct{ it.BinaryCodec }

func (c *reusePanicCodec) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*reuseRec); ok && r.Town == "boom" {
		panic("codec boom")
	}
	return c.BinaryCodec.Marshal(v)
}

func (c *reusePanicCodec) AppendMarshal(dst []byte, v any) ([]byte, error) {
	if r, ok := v.(*reuseRec); ok && r.Town == "boom" {
		panic("codec boom")
	}
	return c.BinaryCodec.AppendMarshal(dst, v)
}

// TestReusePanicsMidWrite: a write whose codec or Key func panics
// leaves the pooled write buffers usable: the writes after it are whole.
func TestReusePanicsMidWrite(t *testing.T) {
	ctx := context.Background()
	var keyBoom atomic.Bool
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[reuseRec]{SchemaLease: countLease, Name: "p",
		PrimaryKey: []string{"ID"}, Codec: &reusePanicCodec{},
		Indexes: append(reuseIndexes(false, false), it.Index[reuseRec]{Name: "k", Key: func(r reuseRec) []it.Tuple {
			if keyBoom.Load() && r.ID%2 == 1 {
				panic("key boom")
			}
			return []it.Tuple{{string(r.Name)}}
		}})})
	require.NoError(t, err)
	for i := range 200 {
		rec := reuseMake(i%20, i)
		switch i % 5 {
		case 1:
			rec.Town = "boom"
			require.Panics(t, func() { _, _ = tbl.Upsert(ctx, rec) })
			continue
		case 2:
			keyBoom.Store(true)
			_, err := tbl.Upsert(ctx, rec)
			keyBoom.Store(false)
			if rec.ID%2 == 1 {
				require.ErrorIs(t, err, it.ErrInvalidKey)
				continue
			}
			require.NoError(t, err)
		default:
			_, err := tbl.Upsert(ctx, rec)
			require.NoError(t, err)
		}
		got, err := tbl.Get(ctx, rec.ID)
		require.NoError(t, err)
		require.True(t, reuseEqual(rec, got))
	}
	requireNoDrift(t, tbl)
}

// TestReuseKeyFuncWrites: a Key func that writes to another table of
// the store, and keeps the records and the tuples it returns.
func TestReuseKeyFuncWrites(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	other := reuseOpen(t, s, &it.BinaryCodec{}, false)
	var kept []reuseRec
	var tuples []it.Tuple
	var mu sync.Mutex
	tbl, err := it.Open(ctx, s, it.Schema[reuseRec]{SchemaLease: countLease, Name: "kf",
		PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: append(reuseIndexes(false, false), it.Index[reuseRec]{Name: "k", Key: func(r reuseRec) []it.Tuple {
			if _, err := other.Upsert(ctx, r); err != nil {
				panic(err)
			}
			tu := it.Tuple{r.Extra, []byte(r.Blob), string(r.Name)}
			mu.Lock()
			kept, tuples = append(kept, r), append(tuples, tu)
			mu.Unlock()
			return []it.Tuple{tu}
		}})})
	require.NoError(t, err)
	for i := range 100 {
		_, err := tbl.Upsert(ctx, reuseMake(i%10, i))
		require.NoError(t, err)
	}
	for _, r := range kept {
		require.NoError(t, reuseConsistent(r))
	}
	for _, tu := range tuples {
		require.Len(t, tu, 3)
		var id, ver int
		_, err := fmt.Sscanf(tu[2].(string), "name-%d-%d", &id, &ver)
		require.NoError(t, err)
		want := reuseMake(id, ver)
		require.Equal(t, want.Extra, tu[0])
		require.Equal(t, want.Blob, tu[1])
	}
	requireNoDrift(t, tbl)
	requireNoDrift(t, other)
}

// reuseKeepingStore keeps copies of the keys and values of every batch it
// applies, as the store contract allows, and checks after each Apply that
// the copies of the batches before are intact, and that what it read of
// the last batch (before returning) still matches its copy while it is
// applied.
type reuseKeepingStore struct {
	kv.Store
	mu   sync.Mutex
	last []kv.Op // the last batch, as given (not copied): must not change during Apply
	copy []kv.Op
}

func (s *reuseKeepingStore) Apply(ctx context.Context, b *kv.Batch) error {
	ops := b.Ops()
	cp := make([]kv.Op, len(ops))
	for i, op := range ops {
		cp[i] = kv.Op{Kind: op.Kind, Key: slices.Clone(op.Key), Value: slices.Clone(op.Value)}
	}
	err := s.Store.Apply(ctx, b)
	for i, op := range ops {
		if string(op.Key) != string(cp[i].Key) || string(op.Value) != string(cp[i].Value) {
			panic(fmt.Sprintf("batch changed during Apply at op %d", i))
		}
	}
	return err
}

// TestReuseBatchStableDuringApply: nothing changes a batch while a
// store applies it, with writers running at once.
func TestReuseBatchStableDuringApply(t *testing.T) {
	ctx := context.Background()
	tbl := reuseOpen(t, &reuseKeepingStore{Store: it.NewMemoryStore()}, &it.BinaryCodec{}, false)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				_, _ = tbl.Upsert(ctx, reuseMake((w*7+i)%12, i))
				if i%3 == 0 {
					_ = tbl.Delete(ctx, (w+i)%12)
				}
			}
		}()
	}
	wg.Wait()
	requireNoDrift(t, tbl)
}

// reuseStopScanStore's Scan keeps calling its loop body after it returned
// false, and calls it once more with an error.
type reuseStopScanStore struct{ kv.Store }

func (s reuseStopScanStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		stopped := false
		s.Store.Scan(ctx, r)(func(e kv.Entry, err error) bool {
			stopped = !yield(e, err) || stopped
			return true
		})
		if stopped {
			yield(kv.Entry{}, errors.New("late error"))
		}
	}
}

// TestReuseReadsIgnoreLateCalls: a read that stopped (break, Limit,
// error) yields nothing more when the store goes on calling it, even with
// an error; and FindPage and Count stay right.
func TestReuseReadsIgnoreLateCalls(t *testing.T) {
	ctx := context.Background()
	tbl := reuseOpen(t, reuseStopScanStore{it.NewMemoryStore()}, &it.BinaryCodec{}, false)
	for id := range 100 {
		_, err := tbl.Insert(ctx, reuseMake(id, 0))
		require.NoError(t, err)
	}
	for _, q := range []it.Query{{}, {Index: "town_name"}, {Index: "town"}, {Index: "town", Covered: true}, {Index: "name"}} {
		for _, limit := range []int{1, 5, 64, 65, 70} {
			q.Limit = limit
			n := 0
			for _, err := range tbl.Find(ctx, q) {
				require.NoError(t, err, "%+v", q)
				n++
			}
			require.Equal(t, limit, n, "%+v", q)
			page, cur, err := tbl.FindPage(ctx, q)
			require.NoError(t, err)
			require.Len(t, page, limit)
			require.NotEmpty(t, cur)
		}
	}
}

// TestReusePendingOverReusingScan: reads of Eventual indexes whose
// changes are pending (decodeIfPending, checked reads), with Limits
// (rounds) and Where filters, over a store whose scan reuses its memory,
// while the loop body writes: every record is whole and matches the query.
func TestReusePendingOverReusingScan(t *testing.T) {
	ctx := context.Background()
	for _, c := range reuseCodecs() {
		t.Run(fmt.Sprintf("%T", c), func(t *testing.T) {
			ixs := []it.Index[reuseRec]{
				{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.FullCopy, Consistency: it.Eventual},
				{Name: "town", Fields: []string{"Town"}, Consistency: it.Eventual},
				{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.Partial, Projection: []string{"Name", "Extra"}, Consistency: it.Eventual},
			}
			tbl, err := it.Open(ctx, reusingStore{it.NewMemoryStore()}, it.Schema[reuseRec]{SchemaLease: countLease, Name: "pend",
				PrimaryKey: []string{"ID"}, Codec: c, Indexes: ixs})
			require.NoError(t, err)
			model := map[int]reuseRec{}
			for id := range 60 {
				model[id] = reuseMake(id, 0)
				_, err := tbl.Insert(ctx, model[id])
				require.NoError(t, err)
			}
			_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
			require.NoError(t, err)
			// Changes pending for a third of the records: moved, or gone.
			for id := 0; id < 60; id += 3 {
				if id%2 == 0 {
					model[id] = reuseMake(id, 1)
					_, err = tbl.Update(ctx, model[id])
				} else {
					delete(model, id)
					err = tbl.Delete(ctx, id)
				}
				require.NoError(t, err)
			}
			for _, q := range []it.Query{
				{Index: "town_name", Eq: it.Tuple{"town1"}},
				{Index: "town_name", Eq: it.Tuple{"town1"}, Limit: 3},
				{Index: "town_name", Limit: 5, Where: map[string]any{"Town": "town2"}},
				{Index: "town", Eq: it.Tuple{"town1"}, Limit: 4},
				{Index: "town", Eq: it.Tuple{"town2"}, Covered: true, Limit: 6},
				{Index: "tags", Eq: it.Tuple{"v0"}, Covered: true},
				{Index: "tags", Eq: it.Tuple{"v0"}, Covered: true, Limit: 2},
				{Index: "tags", Eq: it.Tuple{"v1"}},
			} {
				// At least the unchanged records that match (their entries are
				// exact), at most every record that matches.
				least, most := 0, 0
				for id, r := range model {
					switch {
					case q.Index == "tags" && !slices.Contains(r.Tags, q.Eq[0].(string)):
					case q.Index != "tags" && len(q.Eq) > 0 && r.Town != q.Eq[0]:
					case q.Where != nil && r.Town != q.Where["Town"]:
					default:
						most++
						if id%3 != 0 {
							least++
						}
					}
				}
				if q.Limit > 0 {
					least, most = min(least, q.Limit), min(most, q.Limit)
				}
				n := 0
				for r, err := range tbl.Find(ctx, q) {
					require.NoError(t, err, "%+v", q)
					n++
					m, ok := model[r.ID]
					require.True(t, ok, "%+v: record %d is gone", q, r.ID)
					switch {
					case q.Covered && q.Index == "tags":
						require.Equal(t, m.Name, r.Name, "%+v", q)
						require.Equal(t, m.Extra, r.Extra, "%+v", q)
					case q.Covered:
						require.Equal(t, m.Town, r.Town, "%+v", q)
					default:
						require.True(t, reuseEqual(m, r), "%+v: got %+v, want %+v", q, r, m)
					}
					// A write in the loop body, to a record the read is done with.
					_, err = tbl.Upsert(ctx, reuseMake(500+n, n))
					require.NoError(t, err)
					model[500+n] = reuseMake(500+n, n)
					require.NoError(t, tbl.Delete(ctx, 500+n))
					delete(model, 500+n)
				}
				require.GreaterOrEqual(t, n, least, "%+v", q)
				require.LessOrEqual(t, n, most, "%+v", q)
				t.Logf("PENDING %T %+v: %d", c, q, n)
			}
		})
	}
}

// TestReusePulledReads: two reads of one table pulled step by step
// (iter.Pull) and interleaved with Gets and writes, one stopped early:
// each yields its own records, whole.
func TestReusePulledReads(t *testing.T) {
	ctx := context.Background()
	tbl := reuseOpen(t, reusingStore{it.NewMemoryStore()}, &it.BinaryCodec{}, false)
	for id := range 150 {
		_, err := tbl.Insert(ctx, reuseMake(id, 0))
		require.NoError(t, err)
	}
	next1, stop1 := iter.Pull2(tbl.Find(ctx, it.Query{Index: "town_name", Eq: it.Tuple{"town1"}}))
	next2, stop2 := iter.Pull2(tbl.Find(ctx, it.Query{Index: "town", Eq: it.Tuple{"town2"}, Limit: 70}))
	defer stop2()
	n1, n2 := 0, 0
	for i := 0; ; i++ {
		r1, err1, ok1 := next1()
		r2, err2, ok2 := next2()
		if ok1 {
			require.NoError(t, err1)
			require.Equal(t, "town1", r1.Town)
			require.NoError(t, reuseConsistent(r1))
			n1++
		}
		if ok2 {
			require.NoError(t, err2)
			require.Equal(t, "town2", r2.Town)
			require.NoError(t, reuseConsistent(r2))
			n2++
		}
		g, err := tbl.Get(ctx, i%150)
		require.NoError(t, err)
		require.NoError(t, reuseConsistent(g))
		_, err = tbl.Upsert(ctx, reuseMake(1000+i, i))
		require.NoError(t, err)
		if n1 == 20 {
			stop1()
		}
		if !ok1 && !ok2 || i > 200 {
			break
		}
		if ok1 {
			require.NoError(t, reuseConsistent(r1), "a pulled record changed")
		}
		if ok2 {
			require.NoError(t, reuseConsistent(r2), "a pulled record changed")
		}
	}
	require.Equal(t, 20, n1)
	require.GreaterOrEqual(t, n2, 37) // and the records inserted under it meanwhile, that the scan reached
	require.LessOrEqual(t, n2, 70)
}
