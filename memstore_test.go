package indextable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/indextable/indextable"
	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

func TestMemoryStore(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) kv.Store { return indextable.NewMemoryStore() })
}

// memBoundedStore gives a MemoryStore a bounded atomicity scope, like Azure
// Table storage's, so the suite's scope-aware paths run too.
type memBoundedStore struct{ *indextable.MemoryStore }

func firstBytePartition(key []byte) []byte { return key[:min(len(key), 1)] }

var memBoundedScope = kv.Atomicity{Partition: firstBytePartition, MaxOps: 10, MaxBytes: 1 << 10}

func (memBoundedStore) Atomicity() kv.Atomicity { return memBoundedScope }

func (s memBoundedStore) Apply(ctx context.Context, b *kv.Batch) error {
	if err := memBoundedScope.Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

func TestMemoryStoreBoundedScope(t *testing.T) {
	storetest.TestStore(t, func(*testing.T) kv.Store { return memBoundedStore{indextable.NewMemoryStore()} })
}

func TestMemoryStoreLenAndConflict(t *testing.T) {
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), nil)
	require.NoError(t, s.Apply(ctx, &b))
	require.Equal(t, 2, s.Len())

	b.Reset()
	b.Delete([]byte("a"))
	b.ExpectAbsent([]byte("b"))
	err := s.Apply(ctx, &b)
	require.ErrorIs(t, err, indextable.ErrConflict)
	require.ErrorContains(t, err, `"b"`, "the error names the key")
	require.Equal(t, 2, s.Len())

	require.NoError(t, s.Close())
	require.Zero(t, s.Len())
}

const memBenchKeys = 100_000

// memBenchStore returns a MemoryStore holding memBenchKeys keys, and the keys.
func memBenchStore(b *testing.B) (*indextable.MemoryStore, [][]byte) {
	s := indextable.NewMemoryStore()
	b.Cleanup(func() { s.Close() })
	keys := make([][]byte, memBenchKeys)
	var batch kv.Batch
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%08d", i)
		batch.Put(keys[i], fmt.Appendf(nil, "value%08d", i))
	}
	require.NoError(b, s.Apply(context.Background(), &batch))
	b.ReportAllocs()
	b.ResetTimer()
	return s, keys
}

// memSpread maps i to a key index in a scattered order.
func memSpread(i, n int) int { return i * 7919 % n }

func BenchmarkMemoryStoreGet(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	for i := range b.N {
		if _, err := s.Get(ctx, keys[memSpread(i, memBenchKeys)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryStoreScan100(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	for i := range b.N {
		n := 0
		for _, err := range s.Scan(ctx, kv.ScanRange{Start: keys[memSpread(i, memBenchKeys-100)], Limit: 100}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 100 {
			b.Fatalf("scanned %d entries, want 100", n)
		}
	}
}

func BenchmarkMemoryStoreApply(b *testing.B) {
	s, keys := memBenchStore(b)
	ctx := context.Background()
	value := []byte("new value")
	var batch kv.Batch
	for i := range b.N {
		batch.Reset()
		batch.Put(keys[memSpread(i, memBenchKeys)], value)
		if err := s.Apply(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemoryStoreExpectsWhatWasLastWritten: the store keeps the item an
// expectation last read; a batch that writes its key must not leave the
// old value to the next expectation.
func TestMemoryStoreExpectsWhatWasLastWritten(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	k := []byte("version")
	apply := func(build func(b *kv.Batch)) error {
		var b kv.Batch
		build(&b)
		return s.Apply(ctx, &b)
	}
	require.NoError(t, apply(func(b *kv.Batch) { b.Put(k, []byte("1")) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")); b.Put([]byte("other"), nil) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")); b.Put(k, []byte("2")) }))
	require.ErrorIs(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("1")) }), it.ErrConflict)
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("2")) }))
	require.NoError(t, apply(func(b *kv.Batch) { b.Delete(k) }))
	require.ErrorIs(t, apply(func(b *kv.Batch) { b.ExpectValue(k, []byte("2")) }), it.ErrConflict)
	require.NoError(t, apply(func(b *kv.Batch) { b.ExpectAbsent(k) }))
}

// memModel is a reference for a MemoryStore: key to value, presence apart
// from an empty value.
type memModel map[string]string

// holds reports whether the expectation op holds in m.
func (m memModel) holds(op kv.Op) bool {
	v, ok := m[string(op.Key)]
	if op.Kind == kv.OpExpectAbsent {
		return !ok
	}
	return ok && v == string(op.Value)
}

// requireStoreIs checks that s holds exactly m, byte for byte, through a
// full scan both ways, GetMany and Get (of every key of keys).
func requireStoreIs(t *testing.T, s *indextable.MemoryStore, m memModel, keys [][]byte, step int) {
	t.Helper()
	ctx := context.Background()
	want := make([]string, 0, len(m))
	for k := range m {
		want = append(want, k)
	}
	slices.Sort(want)
	for _, reverse := range []bool{false, true} {
		got := []string{}
		for e, err := range s.Scan(ctx, kv.ScanRange{Reverse: reverse}) {
			require.NoError(t, err)
			require.Equal(t, m[string(e.Key)], string(e.Value), "step %d: value of %q", step, e.Key)
			got = append(got, string(e.Key))
		}
		if reverse {
			slices.Reverse(got)
		}
		require.Equal(t, want, got, "step %d: keys (reverse %v)", step, reverse)
	}
	values, err := s.GetMany(ctx, keys, nil)
	require.NoError(t, err)
	for i, k := range keys {
		v, ok := m[string(k)]
		if !ok {
			require.Nil(t, values[i], "step %d: %q is absent", step, k)
			continue
		}
		require.NotNil(t, values[i], "step %d: %q is present", step, k)
		require.Equal(t, v, string(values[i]), "step %d: %q", step, k)
		got, err := s.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, v, string(got))
	}
}

// TestReviewMemoryStoreApplyMatchesModel applies random batches (sizes
// around the fused limit of 16 operations, several expectations on one
// key, expectations on keys the batch deletes or puts, in any order of
// the operations) to a MemoryStore and to a map: a batch applies exactly
// when every expectation holds before it, and a refused one leaves the
// store byte for byte as it was, including to the expectations of the
// batches after it.
func TestReviewMemoryStoreApplyMatchesModel(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 22))
			keys := [][]byte{{}} // the empty key too
			for i := range 20 {
				keys = append(keys, fmt.Appendf(nil, "k%02d", i))
			}
			values := []string{"", "a", "b", "cc", "a\x00"}
			s := indextable.NewMemoryStore()
			m := memModel{}
			sizes := []int{1, 2, 3, 4, 8, 15, 16, 17, 18, 30}
			for step := range 1500 {
				size := sizes[rng.IntN(len(sizes))]
				nw := 1 + rng.IntN(min(size, len(keys)))
				if rng.IntN(10) == 0 {
					nw = 0 // expectations only
				}
				written := slices.Clone(keys)
				rng.Shuffle(len(written), func(i, j int) { written[i], written[j] = written[j], written[i] })
				written = written[:nw]
				var ops []kv.Op
				for _, k := range written {
					if rng.IntN(3) == 0 {
						ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: k})
					} else {
						ops = append(ops, kv.Op{Kind: kv.OpPut, Key: k, Value: []byte(values[rng.IntN(len(values))])})
					}
				}
				for len(ops) < size || len(ops) == 0 {
					k := keys[rng.IntN(len(keys))]
					if nw > 0 && rng.IntN(3) > 0 {
						k = written[rng.IntN(nw)]
					}
					// Usually what holds, so that batches apply.
					v, ok := m[string(k)]
					switch r := rng.IntN(20); {
					case r == 0:
						ok = !ok
					case r == 1:
						v = values[rng.IntN(len(values))]
					}
					if ok {
						ops = append(ops, kv.Op{Kind: kv.OpExpectValue, Key: k, Value: []byte(v)})
					} else {
						ops = append(ops, kv.Op{Kind: kv.OpExpectAbsent, Key: k})
					}
				}
				rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
				ok := true
				for _, op := range ops {
					if !op.IsWrite() && !m.holds(op) {
						ok = false
					}
				}
				err := s.Apply(ctx, kv.NewBatch(ops...))
				if !ok {
					require.ErrorIs(t, err, indextable.ErrConflict, "step %d: %v", step, ops)
				} else {
					require.NoError(t, err, "step %d: %v", step, ops)
					for _, op := range ops {
						switch op.Kind {
						case kv.OpPut:
							m[string(op.Key)] = string(op.Value)
						case kv.OpDelete:
							delete(m, string(op.Key))
						}
					}
				}
				requireStoreIs(t, s, m, keys, step)
			}
		})
	}
}

// TestReviewMemoryStoreRollBackThenExpect: a batch of up to 16 operations
// that fails on its last key's expectation undoes its earlier writes (an
// insert, a replacement, a delete), and the expectations of the next
// batches see the store as it was, through the cache of the last
// expectation's item too.
func TestReviewMemoryStoreRollBackThenExpect(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{4, 16, 17} {
		t.Run(fmt.Sprint(n, " ops"), func(t *testing.T) {
			s := indextable.NewMemoryStore()
			require.NoError(t, s.Apply(ctx, kv.NewBatch(
				kv.Op{Kind: kv.OpPut, Key: []byte("a"), Value: []byte("a0")},
				kv.Op{Kind: kv.OpPut, Key: []byte("b"), Value: []byte("b0")},
				kv.Op{Kind: kv.OpPut, Key: []byte("z"), Value: []byte("z0")},
			)))
			// The cache holds a's item.
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: []byte("a"), Value: []byte("a0")})))
			ops := []kv.Op{
				{Kind: kv.OpPut, Key: []byte("a"), Value: []byte("a1")},
				{Kind: kv.OpExpectValue, Key: []byte("a"), Value: []byte("a0")},
				{Kind: kv.OpDelete, Key: []byte("b")},
				{Kind: kv.OpExpectValue, Key: []byte("b"), Value: []byte("b0")},
				{Kind: kv.OpPut, Key: []byte("c"), Value: []byte("c1")},
				{Kind: kv.OpExpectAbsent, Key: []byte("c")},
			}
			for i := len(ops); i < n-2; i++ {
				ops = append(ops, kv.Op{Kind: kv.OpExpectAbsent, Key: fmt.Appendf(nil, "m%02d", i)})
			}
			ops = append(ops,
				kv.Op{Kind: kv.OpPut, Key: []byte("z"), Value: []byte("z1")},
				kv.Op{Kind: kv.OpExpectValue, Key: []byte("z"), Value: []byte("wrong")})
			require.Len(t, ops, max(n, 8))
			require.ErrorIs(t, s.Apply(ctx, kv.NewBatch(ops...)), indextable.ErrConflict)
			m := memModel{"a": "a0", "b": "b0", "z": "z0"}
			keys := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("z")}
			requireStoreIs(t, s, m, keys, 0)
			for _, k := range []string{"a", "b", "z"} {
				require.ErrorIs(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: []byte(k), Value: []byte(k + "1")})), indextable.ErrConflict, k)
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: []byte(k), Value: []byte(k + "0")})), k)
			}
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("c")})))
		})
	}
}

// TestReviewMemoryStoreScanMatchesReference scans stores of sizes around
// the chunk sizes (4 first, 64 at most) with every combination of bounds
// on, between and beyond keys, After, Limit and Reverse.
func TestReviewMemoryStoreScanMatchesReference(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 1, 3, 4, 5, 8, 63, 64, 65, 68, 128, 129, 200} {
		s := indextable.NewMemoryStore()
		var sorted [][]byte
		var b kv.Batch
		for i := range n {
			k := fmt.Appendf(nil, "k%03d", 2*i) // odd numbers lie between keys
			sorted = append(sorted, k)
			b.Put(k, append([]byte("v"), k...))
		}
		if n > 0 {
			require.NoError(t, s.Apply(ctx, &b))
		}
		var bounds [][]byte
		for _, i := range []int{-1, 0, 1, 3, 4, 5, 7, 8, 9, 63, 64, 65, 67, 68, 69, 127, 128, 129, 131, 132, 199, 200, 400} {
			if i <= 2*n+1 {
				bounds = append(bounds, fmt.Appendf(nil, "k%03d", i))
			}
		}
		bounds = append(bounds, nil, []byte{}, []byte("l"))
		limits := []int{-1, 0, 1, 3, 4, 5, 12, 63, 64, 65, 128, 1000}
		rng := rand.New(rand.NewPCG(uint64(n), 64))
		for _, start := range bounds {
			for _, end := range bounds {
				// Every After would be too slow under -race: none, one on
				// the bounds' keys and one anywhere.
				for _, after := range [][]byte{nil, bounds[rng.IntN(len(bounds))], fmt.Appendf(nil, "k%03d", rng.IntN(2*n+2))} {
					for _, limit := range []int{0, limits[rng.IntN(len(limits))]} {
						for _, reverse := range []bool{false, true} {
							r := kv.ScanRange{Start: start, End: end, After: after, Limit: limit, Reverse: reverse}
							var want []string
							for i := range sorted {
								k := sorted[i]
								if reverse {
									k = sorted[len(sorted)-1-i]
								}
								if limit > 0 && len(want) == limit {
									break
								}
								if r.Contains(k) {
									want = append(want, string(k))
								}
							}
							var got []string
							for e, err := range s.Scan(ctx, r) {
								require.NoError(t, err)
								require.Equal(t, "v"+string(e.Key), string(e.Value))
								got = append(got, string(e.Key))
							}
							if !slices.Equal(want, got) {
								require.Equal(t, want, got, "n %d, range %+v", n, r)
							}
						}
					}
				}
			}
		}
	}
}

// TestReviewMemoryStoreScanUnderWrites scans while writers (and the scan's
// own loop body) insert and delete the keys between stable ones, with
// batches that apply and batches refused after earlier writes: every scan
// yields keys in strict order within its range, every stable key of the
// range up to where it stopped, and only values that were stored.
func TestReviewMemoryStoreScanUnderWrites(t *testing.T) {
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	const n = 300
	stable := func(i int) []byte { return fmt.Appendf(nil, "k%04d", 2*i) }
	volatile := func(i int) []byte { return fmt.Appendf(nil, "k%04d", 2*i+1) }
	var b kv.Batch
	for i := range n {
		b.Put(stable(i), append([]byte("s"), stable(i)...))
	}
	require.NoError(t, s.Apply(ctx, &b))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				var ops []kv.Op
				size := []int{2, 16, 17, 20}[rng.IntN(4)]
				base := rng.IntN(n - size)
				for j := range size {
					k := volatile(base + j)
					if rng.IntN(2) == 0 {
						ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: k})
					} else {
						ops = append(ops, kv.Op{Kind: kv.OpPut, Key: k, Value: append([]byte("v"), k...)})
					}
				}
				if rng.IntN(2) == 0 { // refused after its writes, when fused
					ops = append(ops, kv.Op{Kind: kv.OpExpectValue, Key: ops[len(ops)-1].Key, Value: []byte("never")})
				}
				err := s.Apply(ctx, kv.NewBatch(ops...))
				if err != nil && !errors.Is(err, indextable.ErrConflict) {
					panic(err)
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for range 400 {
		lo, hi := rng.IntN(2*n+2), rng.IntN(2*n+2)
		r := kv.ScanRange{Reverse: rng.IntN(2) == 0}
		if rng.IntN(4) > 0 {
			r.Start = fmt.Appendf(nil, "k%04d", min(lo, hi))
		}
		if rng.IntN(4) > 0 {
			r.End = fmt.Appendf(nil, "k%04d", max(lo, hi))
		}
		if rng.IntN(3) == 0 {
			r.After = fmt.Appendf(nil, "k%04d", rng.IntN(2*n+2))
		}
		if rng.IntN(2) == 0 {
			r.Limit = []int{1, 3, 4, 5, 64, 65, 130}[rng.IntN(7)]
		}
		var got [][]byte
		for e, err := range s.Scan(ctx, r) {
			require.NoError(t, err)
			require.True(t, r.Contains(e.Key), "%q outside %+v", e.Key, r)
			prefix := "v"
			if (e.Key[len(e.Key)-1]-'0')%2 == 0 {
				prefix = "s"
			}
			require.Equal(t, prefix+string(e.Key), string(e.Value))
			if len(got) > 0 {
				c := bytes.Compare(got[len(got)-1], e.Key)
				require.True(t, (!r.Reverse && c < 0) || (r.Reverse && c > 0), "order: %q then %q in %+v", got[len(got)-1], e.Key, r)
			}
			got = append(got, bytes.Clone(e.Key))
			if rng.IntN(8) == 0 { // the loop body writes too
				k := fmt.Appendf(nil, "k%04d", 2*rng.IntN(n)+1)
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: k, Value: append([]byte("v"), k...)})))
			}
		}
		if r.Limit > 0 {
			require.LessOrEqual(t, len(got), r.Limit)
		}
		// Every stable key of the range up to the last yielded (to the
		// range's end when the scan was not cut by its Limit).
		var want [][]byte
		for i := range n {
			k := stable(i)
			if !r.Contains(k) {
				continue
			}
			if r.Limit > 0 && len(got) == r.Limit {
				last := got[len(got)-1]
				if c := bytes.Compare(k, last); (!r.Reverse && c > 0) || (r.Reverse && c < 0) {
					continue
				}
			}
			want = append(want, k)
		}
		var gotStable [][]byte
		for _, k := range got {
			if (k[len(k)-1]-'0')%2 == 0 {
				gotStable = append(gotStable, k)
			}
		}
		if r.Reverse {
			slices.Reverse(gotStable)
		}
		require.Equal(t, want, gotStable, "%+v", r)
	}
	close(stop)
	wg.Wait()
}

// TestReviewMemoryStoreAtomicUnderRollBacks moves tokens between keys with
// batches whose expectations come after their writes (fused, rolled back
// on a wrong guess) or are many (checked first); readers of every key
// under one read lock always count every token once.
func TestReviewMemoryStoreAtomicUnderRollBacks(t *testing.T) {
	ctx := context.Background()
	s := indextable.NewMemoryStore()
	const slots, tokens = 12, 4
	key := func(i int) []byte { return fmt.Appendf(nil, "slot%02d", i) }
	var keys [][]byte
	for i := range slots {
		keys = append(keys, key(i))
	}
	var b kv.Batch
	for i := range tokens {
		b.Put(key(i), fmt.Appendf(nil, "t%d", i))
	}
	require.NoError(t, s.Apply(ctx, &b))
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var dst [][]byte
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				dst, err = s.GetMany(ctx, keys, dst[:0])
				if err != nil {
					panic(err)
				}
				seen := map[string]int{}
				for _, v := range dst {
					if v != nil {
						seen[string(v)]++
					}
				}
				if len(seen) != tokens {
					panic(fmt.Sprintf("tokens seen: %v", seen))
				}
				for v, c := range seen {
					if c != 1 {
						panic(fmt.Sprintf("token %s seen %d times", v, c))
					}
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range 3000 {
				from, to := rng.IntN(slots), rng.IntN(slots)
				if from == to {
					continue
				}
				tok := fmt.Appendf(nil, "t%d", rng.IntN(tokens)) // a guess
				ops := []kv.Op{
					{Kind: kv.OpDelete, Key: key(from)},
					{Kind: kv.OpPut, Key: key(to), Value: tok},
					{Kind: kv.OpExpectValue, Key: key(from), Value: tok},
					{Kind: kv.OpExpectAbsent, Key: key(to)},
				}
				// Padding to the fused limit, or past it.
				pad := []int{0, 12, 13, 20}[rng.IntN(4)]
				for j := range pad {
					ops = append(ops, kv.Op{Kind: kv.OpExpectAbsent, Key: fmt.Appendf(nil, "pad%02d", j)})
				}
				if rng.IntN(2) == 0 {
					ops[0], ops[1] = ops[1], ops[0]
				}
				err := s.Apply(ctx, kv.NewBatch(ops...))
				if err != nil && !errors.Is(err, indextable.ErrConflict) {
					panic(err)
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	got, err := s.GetMany(ctx, keys, nil)
	require.NoError(t, err)
	var toks []string
	for _, v := range got {
		if v != nil {
			toks = append(toks, string(v))
		}
	}
	slices.Sort(toks)
	require.Equal(t, []string{"t0", "t1", "t2", "t3"}, toks)
}
