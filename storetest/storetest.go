// Package storetest implements a conformance suite for implementations of
// kv.Store, in the manner of testing/fstest.
//
// A backend's tests call TestStore with a function that opens a new, empty
// store:
//
//	func TestPebbleStore(t *testing.T) {
//		storetest.TestStore(t, func(t *testing.T) kv.Store {
//			s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Each check is a subtest run on its own store, so `go test -run
// 'TestPebbleStore/Batch'` selects a group. The suite is deterministic, and
// it respects the store's Atomicity: multi-key batches use keys of one
// partition, and a check whose batch the scope cannot hold is skipped.
// A store that deadlocks fails the suite instead of hanging: a check that
// makes no progress (no store call of its returns) for two minutes is
// called deadlocked, however long it runs while it makes progress, so that
// a slow machine cannot fail it.
//
// A store that keeps its data also runs TestStoreReopen: the suite's
// check of extreme keys and values (the empty key holding megabytes, its
// neighbours, its deletion) with the store closed and reopened between
// writes and reads.
//
// Beyond the Store contract, the suite runs tables on a backend's stores:
// TestShardedTable a table over a ShardedStore of its shards, against a
// map of what the table should hold, and TestLimits a table whose records
// straddle the limits the store declares. Drain, for a backend's own table
// tests, runs a table's maintainer until nothing is left queued.
package storetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStore runs the conformance suite against stores made by newStore; each
// subtest gets a new, empty store and the suite closes it.
func TestStore(t *testing.T, newStore func(t *testing.T) kv.Store) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { within(t, "Close", func(func()) error { return s.Close() }) })
			tc.run(t, s)
		})
	}
}

var suite = []struct {
	name string
	run  func(*testing.T, kv.Store)
}{
	{"GetPutDelete", testGetPutDelete},
	{"EmptyValue", testEmptyValue},
	{"EmptyKey", testEmptyKey},
	{"ExtremeKeys", testExtremeKeys},
	{"Order", testOrder},
	{"Bounds", testBounds},
	{"RandomRanges", testRandomRanges},
	{"Resume", testResume},
	{"StopEarly", testStopEarly},
	{"BatchPutDelete", testBatchPutDelete},
	{"BatchDuplicateKey", testBatchDuplicateKey},
	{"BatchUnknownKind", testBatchUnknownKind},
	{"BatchExpectValue", testBatchExpectValue},
	{"BatchExpectAbsent", testBatchExpectAbsent},
	{"BatchCompareAndSet", testBatchCompareAndSet},
	{"BatchConflictAppliesNothing", testBatchConflictAppliesNothing},
	{"BatchEmpty", testBatchEmpty},
	{"ConcurrentCompareAndSet", testConcurrentCompareAndSet},
	{"ConcurrentWritesAndScans", testConcurrentWritesAndScans},
	{"ScanBodyWrites", testScanBodyWrites},
	{"Context", testContext},
	{"NilContext", testNilContext},
	{"Closed", testClosed},
	{"NoAliasing", testNoAliasing},
	{"KeptValues", testKeptValues},
	{"Atomicity", testAtomicity},
}

// stallLimit is how long a step may go without progress before the suite
// calls the store deadlocked. A step is judged by its progress, not by its
// total time, which a busy machine stretches without bound (a disk store's
// concurrent checks under the race detector take minutes there, Pebble
// turning on its invariant checks too); no single call of a working store
// takes this long.
const stallLimit = 2 * time.Minute

var bg = context.Background()

// within runs fn on its own goroutine and fails t if fn returns an error,
// or, as deadlocked, if stallLimit passes with no progress: fn calls
// progress each time it gets further, a store call of its having returned
// (a step of one call need not). fn must not call t.FailNow (or require).
func within(t *testing.T, what string, fn func(progress func()) error) {
	t.Helper()
	var calls atomic.Int64
	done := make(chan error, 1)
	go func() { done <- fn(func() { calls.Add(1) }) }()
	tick := time.NewTicker(stallLimit / 8)
	defer tick.Stop()
	err := await(done, calls.Load, tick.C, time.Now(), stallLimit)
	if errors.Is(err, errStalled) {
		require.FailNowf(t, "store deadlocked", "%s: %v", what, err)
	}
	require.NoError(t, err, what)
}

// errStalled reports a step that made no progress for its limit.
var errStalled = errors.New("stalled")

// await returns the error a step sends on done, or errStalled once a tick
// finds that progress, the count of the step's progress calls, has not
// grown for limit since start or its last growth.
func await(done <-chan error, progress func() int64, ticks <-chan time.Time, start time.Time, limit time.Duration) error {
	seen, since := progress(), start
	for {
		select {
		case err := <-done:
			return err
		case now := <-ticks:
			if n := progress(); n != seen {
				seen, since = n, now
			} else if now.Sub(since) >= limit {
				return fmt.Errorf("%w: no progress for %v (after %d steps)", errStalled, limit, n)
			}
		}
	}
}

// pair is a scanned entry, as strings for readable comparisons.
type pair struct{ Key, Value string }

// bs returns s as a non-nil byte slice ("" is the empty key, not a nil bound).
func bs(s string) []byte { return append([]byte{}, s...) }

// val is the value bulk-filled keys are stored with.
func val(key []byte) []byte { return append([]byte("v:"), key...) }

func put(t *testing.T, s kv.Store, key, value []byte) {
	t.Helper()
	var b kv.Batch
	b.Put(key, value)
	require.NoError(t, s.Apply(bg, &b))
}

func del(t *testing.T, s kv.Store, key []byte) {
	t.Helper()
	var b kv.Batch
	b.Delete(key)
	require.NoError(t, s.Apply(bg, &b))
}

func get(t *testing.T, s kv.Store, key []byte) []byte {
	t.Helper()
	v, err := s.Get(bg, key)
	require.NoError(t, err, "Get %q", key)
	return v
}

func requireValue(t *testing.T, s kv.Store, key []byte, want string) {
	t.Helper()
	require.Equal(t, want, string(get(t, s, key)), "value of %q", key)
}

func requireAbsent(t *testing.T, s kv.Store, keys ...[]byte) {
	t.Helper()
	for _, k := range keys {
		_, err := s.Get(bg, k)
		require.ErrorIs(t, err, kv.ErrNotFound, "Get %q", k)
	}
}

func apply(t *testing.T, s kv.Store, b *kv.Batch) {
	t.Helper()
	require.NoError(t, s.Apply(bg, b))
}

// requireAllowed skips t when s's atomicity scope cannot hold b.
func requireAllowed(t *testing.T, s kv.Store, b *kv.Batch) {
	t.Helper()
	if err := s.Atomicity().Allows(b); err != nil {
		t.Skipf("the store's atomicity scope does not allow the batch: %v", err)
	}
}

func unbounded(a kv.Atomicity) bool {
	return a.Partition == nil && a.MaxOps == 0 && a.MaxWrites == 0 && a.MaxBytes == 0 && a.MaxKeyBytes == 0 && a.MaxValueBytes == 0
}

// batchSize returns want, or less when s's scope allows fewer operations
// or fewer writes.
func batchSize(s kv.Store, want int) int {
	a := s.Atomicity()
	for _, m := range []int{a.MaxOps, a.MaxWrites} {
		if m > 0 && m < want {
			want = m
		}
	}
	return want
}

// scopeKeys returns n ascending keys starting with prefix that lie in one
// partition of s's atomicity scope, so one batch may write them together.
func scopeKeys(t *testing.T, s kv.Store, prefix string, n int) [][]byte {
	t.Helper()
	part := s.Atomicity().Partition
	groups := map[string][][]byte{}
	for i := range 64 * n {
		k := fmt.Appendf(nil, "%s%06d", prefix, i)
		p := ""
		if part != nil {
			p = string(part(k))
		}
		groups[p] = append(groups[p], k)
		if len(groups[p]) == n {
			return groups[p]
		}
	}
	t.Skipf("found no %d keys with prefix %q in one partition", n, prefix)
	return nil
}

// putAll stores val(k) under every key, in as few batches as the store's
// atomicity scope allows.
func putAll(t *testing.T, s kv.Store, keys [][]byte) {
	t.Helper()
	a := s.Atomicity()
	batchOf := func(keys [][]byte) *kv.Batch {
		var b kv.Batch
		for _, k := range keys {
			b.Put(k, val(k))
		}
		return &b
	}
	if unbounded(a) {
		apply(t, s, batchOf(keys))
		return
	}
	start := 0
	for i := range keys {
		if i > start && a.Allows(batchOf(keys[start:i+1])) != nil {
			apply(t, s, batchOf(keys[start:i]))
			start = i
		}
	}
	apply(t, s, batchOf(keys[start:]))
}

// scan returns copies of the entries of r, failing t on an error.
func scan(t *testing.T, s kv.Store, r kv.ScanRange) []pair {
	t.Helper()
	got := []pair{}
	for e, err := range s.Scan(bg, r) {
		require.NoError(t, err, "scan %s", fmtRange(r))
		got = append(got, pair{string(e.Key), string(e.Value)})
	}
	return got
}

// reference returns the entries of r among keys, each holding val(key),
// computed with ScanRange.Contains; sorted must be in ascending order.
func reference(sorted [][]byte, r kv.ScanRange) []pair {
	want := []pair{}
	for i := range sorted {
		k := sorted[i]
		if r.Reverse {
			k = sorted[len(sorted)-1-i]
		}
		if r.Limit > 0 && len(want) == r.Limit {
			break
		}
		if r.Contains(k) {
			want = append(want, pair{string(k), string(val(k))})
		}
	}
	return want
}

func q(b []byte) string {
	if b == nil {
		return "nil"
	}
	return strconv.Quote(string(b))
}

func fmtRange(r kv.ScanRange) string {
	return fmt.Sprintf("{Start:%s End:%s Reverse:%v Limit:%d After:%s}", q(r.Start), q(r.End), r.Reverse, r.Limit, q(r.After))
}

// randKeys returns n distinct random keys of up to maxLen bytes drawn from
// alphabet, sorted.
func randKeys(rng *rand.Rand, n int, alphabet []byte, maxLen int) [][]byte {
	seen := map[string]bool{}
	keys := make([][]byte, 0, n)
	for len(keys) < n {
		k := randKey(rng, alphabet, maxLen)
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

func randKey(rng *rand.Rand, alphabet []byte, maxLen int) []byte {
	k := make([]byte, rng.IntN(maxLen+1))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}

func testGetPutDelete(t *testing.T, s kv.Store) {
	a, b, c := bs("a"), bs("b"), bs("c")
	requireAbsent(t, s, a)
	put(t, s, a, bs("1"))
	requireValue(t, s, a, "1")
	put(t, s, a, bs("2"))
	requireValue(t, s, a, "2")
	put(t, s, b, bs("3"))
	del(t, s, a)
	requireAbsent(t, s, a)
	requireValue(t, s, b, "3")
	del(t, s, a) // deleting an absent key is not an error

	vals, err := s.GetMany(bg, [][]byte{b, a, b, c}, nil)
	require.NoError(t, err)
	require.Equal(t, [][]byte{bs("3"), nil, bs("3"), nil}, vals)
	vals, err = s.GetMany(bg, nil, nil)
	require.NoError(t, err)
	require.Empty(t, vals)
	vals, err = s.GetMany(bg, [][]byte{a, b}, [][]byte{bs("kept")})
	require.NoError(t, err)
	require.Equal(t, [][]byte{bs("kept"), nil, bs("3")}, vals, "GetMany appends to dst")
}

func testEmptyValue(t *testing.T, s kv.Store) {
	e, n, absent := bs("empty"), bs("nil"), bs("absent")
	put(t, s, e, []byte{})
	put(t, s, n, nil) // a nil value stores an empty value too
	for _, k := range [][]byte{e, n} {
		v := get(t, s, k)
		require.NotNil(t, v, "Get %q: a present empty value must be non-nil", k)
		require.Empty(t, v)
	}
	requireAbsent(t, s, absent)

	vals, err := s.GetMany(bg, [][]byte{e, absent, n}, nil)
	require.NoError(t, err)
	require.Len(t, vals, 3)
	require.NotNil(t, vals[0], "GetMany: a present empty value must be non-nil")
	require.Empty(t, vals[0])
	require.Nil(t, vals[1], "GetMany: an absent key must give nil")
	require.NotNil(t, vals[2], "GetMany: a present empty value must be non-nil")
	require.Empty(t, vals[2])

	require.Equal(t, []pair{{"empty", ""}, {"nil", ""}}, scan(t, s, kv.ScanRange{}))
}

func testEmptyKey(t *testing.T, s kv.Store) {
	empty := []byte{}
	put(t, s, empty, bs("e"))
	put(t, s, bs("\x00"), bs("z"))
	put(t, s, bs("a"), bs("a"))
	requireValue(t, s, empty, "e")
	requireValue(t, s, nil, "e") // nil and empty name the same key

	all := []pair{{"", "e"}, {"\x00", "z"}, {"a", "a"}}
	require.Equal(t, all, scan(t, s, kv.ScanRange{}))
	require.Equal(t, []pair{all[2], all[1], all[0]}, scan(t, s, kv.ScanRange{Reverse: true}))
	require.Equal(t, all, scan(t, s, kv.ScanRange{Start: empty}))
	require.Empty(t, scan(t, s, kv.ScanRange{End: empty}))
	require.Empty(t, scan(t, s, kv.ScanRange{End: empty, Reverse: true}))
	require.Equal(t, all[1:], scan(t, s, kv.ScanRange{After: empty}))
	require.Empty(t, scan(t, s, kv.ScanRange{After: empty, Reverse: true}))
	require.Equal(t, []pair{all[0]}, scan(t, s, kv.ScanRange{After: bs("\x00"), Reverse: true}))

	// Scans that stop at the empty key and resume from it, whatever a
	// store's chunk sizes: with up to 80 more keys after it.
	want := slices.Clone(all)
	for i := range 80 {
		k := fmt.Sprintf("k%02d", i)
		put(t, s, bs(k), bs(k))
		want = append(want, pair{k, k})
		require.Equal(t, want, scan(t, s, kv.ScanRange{}), "%d keys", len(want))
		down := slices.Clone(want)
		slices.Reverse(down)
		require.Equal(t, down, scan(t, s, kv.ScanRange{Reverse: true}), "%d keys", len(want))
	}
	for i := range 80 {
		del(t, s, bs(fmt.Sprintf("k%02d", i)))
	}

	del(t, s, empty)
	requireAbsent(t, s, empty)
	require.Equal(t, all[1:], scan(t, s, kv.ScanRange{}))
}

func testOrder(t *testing.T, s kv.Store) {
	rng := rand.New(rand.NewPCG(1, 1))
	keys := randKeys(rng, 300, []byte{0x00, 0x01, 'a', 0x7f, 0x80, 0xfe, 0xff}, 6)
	// Add keys that are prefixes and extensions of one another.
	seen := map[string]bool{}
	for _, k := range keys {
		seen[string(k)] = true
	}
	for _, k := range keys[:50] {
		for _, x := range [][]byte{k[:len(k)/2], append(bytes.Clone(k), 0x00), append(bytes.Clone(k), 0xff)} {
			if !seen[string(x)] {
				seen[string(x)] = true
				keys = append(keys, x)
			}
		}
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	putAll(t, s, keys)

	slices.SortFunc(keys, bytes.Compare)
	require.Equal(t, reference(keys, kv.ScanRange{}), scan(t, s, kv.ScanRange{}))
	require.Equal(t, reference(keys, kv.ScanRange{Reverse: true}), scan(t, s, kv.ScanRange{Reverse: true}))

	vals, err := s.GetMany(bg, keys, nil)
	require.NoError(t, err)
	for i, k := range keys {
		require.Equal(t, val(k), vals[i], "GetMany %q", k)
	}
}

func testBounds(t *testing.T, s kv.Store) {
	keys := [][]byte{bs("a"), bs("b"), bs("c"), bs("d")}
	putAll(t, s, keys)
	for _, tc := range []struct {
		name string
		r    kv.ScanRange
		want string // the keys, concatenated
	}{
		{"all", kv.ScanRange{}, "abcd"},
		{"start inclusive", kv.ScanRange{Start: bs("b")}, "bcd"},
		{"end exclusive", kv.ScanRange{End: bs("c")}, "ab"},
		{"start and end", kv.ScanRange{Start: bs("b"), End: bs("d")}, "bc"},
		{"absent bounds", kv.ScanRange{Start: bs("bb"), End: bs("cc")}, "c"},
		{"start equals end", kv.ScanRange{Start: bs("b"), End: bs("b")}, ""},
		{"start after end", kv.ScanRange{Start: bs("d"), End: bs("b")}, ""},
		{"bounds past the keys", kv.ScanRange{Start: bs("e")}, ""},
		{"limit", kv.ScanRange{Limit: 2}, "ab"},
		{"largest limit", kv.ScanRange{Limit: math.MaxInt}, "abcd"},
		{"reverse largest limit", kv.ScanRange{Limit: math.MaxInt, Reverse: true}, "dcba"},
		{"after", kv.ScanRange{After: bs("b")}, "cd"},
		{"after before start", kv.ScanRange{Start: bs("c"), After: bs("a")}, "cd"},
		{"after at end", kv.ScanRange{End: bs("c"), After: bs("c")}, ""},
		{"reverse", kv.ScanRange{Reverse: true}, "dcba"},
		{"reverse start and end", kv.ScanRange{Start: bs("b"), End: bs("d"), Reverse: true}, "cb"},
		{"reverse start equals end", kv.ScanRange{Start: bs("b"), End: bs("b"), Reverse: true}, ""},
		{"reverse start after end", kv.ScanRange{Start: bs("d"), End: bs("b"), Reverse: true}, ""},
		{"reverse limit", kv.ScanRange{Limit: 2, Reverse: true}, "dc"},
		{"reverse after", kv.ScanRange{After: bs("c"), Reverse: true}, "ba"},
		{"reverse after past end", kv.ScanRange{End: bs("c"), After: bs("d"), Reverse: true}, "ba"},
	} {
		var got string
		for _, e := range scan(t, s, tc.r) {
			got += e.Key
		}
		assert.Equal(t, tc.want, got, "%s: scan %s", tc.name, fmtRange(tc.r))
	}
}

func testRandomRanges(t *testing.T, s kv.Store) {
	rng := rand.New(rand.NewPCG(2, 2))
	// A small alphabet makes random bounds hit stored keys often.
	alphabet := []byte{0x00, 'a', 'b', 0xff}
	keys := randKeys(rng, 150, alphabet, 4)
	putAll(t, s, keys)
	bound := func(nilPct int) []byte {
		switch p := rng.IntN(100); {
		case p < nilPct:
			return nil
		case p < nilPct+(100-nilPct)/2:
			return keys[rng.IntN(len(keys))]
		default:
			return randKey(rng, alphabet, 4)
		}
	}
	for range 400 {
		r := kv.ScanRange{Start: bound(25), End: bound(25), Reverse: rng.IntN(2) == 0, After: bound(40)}
		if rng.IntN(2) == 0 {
			r.Limit = 1 + rng.IntN(20)
		}
		require.Equal(t, reference(keys, r), scan(t, s, r), "scan %s", fmtRange(r))
	}
}

func testResume(t *testing.T, s kv.Store) {
	rng := rand.New(rand.NewPCG(3, 3))
	keys := randKeys(rng, 200, []byte{0x00, 'a', 'b', 'c', 0xff}, 5)
	putAll(t, s, keys)
	for _, r := range []kv.ScanRange{{}, {Start: bs("a")}, {End: bs("b")}, {Start: bs("a\x00"), End: bs("c")}} {
		for _, reverse := range []bool{false, true} {
			for _, limit := range []int{1, 3, 7, 64, 65, 500} {
				r.Reverse, r.Limit, r.After = reverse, limit, nil
				want := reference(keys, kv.ScanRange{Start: r.Start, End: r.End, Reverse: reverse})
				got := []pair{}
				for pages := 0; ; pages++ {
					require.LessOrEqual(t, pages, len(keys)+1, "paging %s does not end", fmtRange(r))
					page := scan(t, s, r)
					require.LessOrEqual(t, len(page), limit, "scan %s", fmtRange(r))
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					r.After = bs(page[len(page)-1].Key)
				}
				require.Equal(t, want, got, "paging %s", fmtRange(r))
			}
		}
	}
}

func testStopEarly(t *testing.T, s kv.Store) {
	keys := scopeKeys(t, s, "k", 200)
	putAll(t, s, keys)
	for _, reverse := range []bool{false, true} {
		for _, stop := range []int{1, 3, 64, 65} {
			n := 0
			for _, err := range s.Scan(bg, kv.ScanRange{Reverse: reverse}) {
				require.NoError(t, err)
				if n++; n == stop {
					break
				}
			}
			require.Equal(t, stop, n)
			within(t, "a write after a stopped scan", func(func()) error {
				var b kv.Batch
				b.Put(bs("x"), bs("x"))
				return s.Apply(bg, &b)
			})
			requireValue(t, s, bs("x"), "x")
			require.Len(t, scan(t, s, kv.ScanRange{Reverse: reverse}), len(keys)+1)
		}
	}
}

func testBatchPutDelete(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "b", 4)
	put(t, s, k[0], bs("0"))
	put(t, s, k[1], bs("1"))
	var b kv.Batch
	b.Put(k[2], bs("2"))
	b.Delete(k[0])
	b.Put(k[1], bs("1'"))
	b.Delete(k[3]) // absent
	requireAllowed(t, s, &b)
	apply(t, s, &b)
	requireAbsent(t, s, k[0], k[3])
	requireValue(t, s, k[1], "1'")
	requireValue(t, s, k[2], "2")
}

func testBatchDuplicateKey(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "d", batchSize(s, 12))
	put(t, s, k[0], bs("old"))
	var b kv.Batch
	b.Put(k[1], bs("new"))
	b.Put(k[0], bs("new"))
	b.Put(k[1], bs("again"))
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a key put twice")

	b.Reset()
	b.Put(k[0], bs("new"))
	b.Delete(k[0])
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a key put and deleted")

	b.Reset()
	for _, key := range k[1:] {
		b.Put(key, bs("new"))
	}
	b.Delete(k[1])
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a key written twice in a batch of %d", b.Len())

	requireValue(t, s, k[0], "old")
	requireAbsent(t, s, k[1:]...)
}

func testBatchUnknownKind(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "u", 2)
	for _, kind := range []kv.OpKind{0, 200} {
		var b kv.Batch
		b.Put(k[0], bs("v"))
		b.Put(k[1], bs("v"))
		b.Ops()[1].Kind = kind // the only way to build an invalid operation
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "kind %v", kind)
		requireAbsent(t, s, k...)
	}
}

func testBatchExpectValue(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "e", 4)
	have, empty, absent, out := k[0], k[1], k[2], k[3]
	put(t, s, have, bs("value"))
	put(t, s, empty, []byte{})
	for _, tc := range []struct {
		key, value []byte
		ok         bool
	}{
		{have, bs("value"), true},
		{have, bs("other"), false},
		{have, bs("valu"), false},
		{have, nil, false},
		{empty, []byte{}, true},
		{empty, nil, true},
		{empty, bs("x"), false},
		{absent, []byte{}, false},
		{absent, nil, false},
	} {
		var b kv.Batch
		b.ExpectValue(tc.key, tc.value)
		b.Put(out, tc.value)
		requireAllowed(t, s, &b)
		err := s.Apply(bg, &b)
		if tc.ok {
			require.NoError(t, err, "expect %q = %s", tc.key, q(tc.value))
			requireValue(t, s, out, string(tc.value))
			del(t, s, out)
		} else {
			require.ErrorIs(t, err, kv.ErrConflict, "expect %q = %s", tc.key, q(tc.value))
			requireAbsent(t, s, out)
		}
	}
	requireValue(t, s, have, "value")
	requireValue(t, s, empty, "")
	requireAbsent(t, s, absent)
}

func testBatchExpectAbsent(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "a", 3)
	present, absent, out := k[0], k[1], k[2]
	put(t, s, present, bs("p"))

	var b kv.Batch
	b.ExpectAbsent(present)
	b.Put(out, bs("x"))
	requireAllowed(t, s, &b)
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrConflict)
	requireAbsent(t, s, out)

	b.Reset()
	b.ExpectAbsent(absent)
	b.Put(out, bs("x"))
	apply(t, s, &b)
	requireValue(t, s, out, "x")

	// Insert if absent: succeeds once.
	b.Reset()
	b.ExpectAbsent(absent)
	b.Put(absent, bs("1"))
	apply(t, s, &b)
	b.Reset()
	b.ExpectAbsent(absent)
	b.Put(absent, bs("2"))
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrConflict)
	requireValue(t, s, absent, "1")
}

func testBatchCompareAndSet(t *testing.T, s kv.Store) {
	key := bs("cas")
	put(t, s, key, bs("1"))
	var b kv.Batch
	b.ExpectValue(key, bs("1"))
	b.Put(key, bs("2"))
	requireAllowed(t, s, &b)
	apply(t, s, &b)
	requireValue(t, s, key, "2")
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrConflict, "the same compare-and-set again")
	requireValue(t, s, key, "2")

	b.Reset()
	b.ExpectValue(key, bs("2"))
	b.Delete(key)
	apply(t, s, &b)
	requireAbsent(t, s, key)
}

func testBatchConflictAppliesNothing(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "c", batchSize(s, 50))
	guard, rest := k[0], k[1:]
	put(t, s, guard, bs("g"))
	for _, expect := range []func(*kv.Batch){
		func(b *kv.Batch) { b.ExpectValue(guard, bs("not g")) },
		func(b *kv.Batch) { b.ExpectAbsent(guard) },
	} {
		var b kv.Batch
		for _, key := range rest[:len(rest)-1] {
			b.Put(key, bs("v"))
		}
		b.Delete(guard)
		expect(&b) // the failing expectation comes last
		requireAllowed(t, s, &b)
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrConflict)
		requireValue(t, s, guard, "g")
		requireAbsent(t, s, rest...)
		require.Equal(t, []pair{{string(guard), "g"}}, scan(t, s, kv.ScanRange{}))
	}
}

func testBatchEmpty(t *testing.T, s kv.Store) {
	apply(t, s, &kv.Batch{})
	put(t, s, bs("k"), bs("v"))
	var b kv.Batch
	b.ExpectValue(bs("k"), bs("v"))
	b.ExpectAbsent(bs("k2"))
	requireAllowed(t, s, &b)
	apply(t, s, &b) // expectations only
	require.Equal(t, []pair{{"k", "v"}}, scan(t, s, kv.ScanRange{}))
}

func testConcurrentCompareAndSet(t *testing.T, s kv.Store) {
	const workers, increments = 4, 25
	key := bs("counter")
	put(t, s, key, bs("0"))
	within(t, "concurrent compare-and-set", func(progress func()) error {
		errc := make(chan error, workers)
		for range workers {
			go func() {
				errc <- func() error {
					for i := 0; i < increments; {
						v, err := s.Get(bg, key)
						if err != nil {
							return err
						}
						n, err := strconv.Atoi(string(v))
						if err != nil {
							return err
						}
						var b kv.Batch
						b.ExpectValue(key, v)
						b.Put(key, strconv.AppendInt(nil, int64(n+1), 10))
						switch err := s.Apply(bg, &b); {
						case errors.Is(err, kv.ErrConflict): // lost the race: retry
						case err != nil:
							return err
						default:
							i++
							progress() // only a won race: conflicts forever are no progress
						}
					}
					return nil
				}()
			}()
		}
		for range workers {
			if err := <-errc; err != nil {
				return err
			}
		}
		return nil
	})
	requireValue(t, s, key, strconv.Itoa(workers*increments))
}

// sealed returns a value that encodes key, n and a checksum of both.
func sealed(key []byte, n uint64) []byte {
	v := binary.BigEndian.AppendUint64(bytes.Clone(key), n)
	return binary.BigEndian.AppendUint32(v, crc32.ChecksumIEEE(v))
}

// checkSealed reports whether value is a sealed value of key.
func checkSealed(key, value []byte) error {
	if len(value) != len(key)+12 || !bytes.HasPrefix(value, key) ||
		binary.BigEndian.Uint32(value[len(key)+8:]) != crc32.ChecksumIEEE(value[:len(key)+8]) {
		return fmt.Errorf("torn entry: key %q holds %q", key, value)
	}
	return nil
}

func testConcurrentWritesAndScans(t *testing.T, s kv.Store) {
	const writers, scanners, scans = 2, 2, 300
	keys := scopeKeys(t, s, "w", 40)
	for _, k := range keys {
		put(t, s, k, sealed(k, 0))
	}
	size := batchSize(s, 8)
	// The writers run until the scanners are done, so only the scanners
	// report progress: a scanner that hangs while the writers go on is a
	// deadlock, and so is a writer that hangs once the scanners are done.
	within(t, "concurrent writes and scans", func(progress func()) error {
		var stop atomic.Bool // set when the scanners are done
		errc := make(chan error, writers+scanners)
		for w := range writers {
			go func() {
				rng := rand.New(rand.NewPCG(4, uint64(w)))
				errc <- func() error {
					for n := uint64(w) << 32; !stop.Load(); n++ {
						var b kv.Batch
						for _, i := range rng.Perm(len(keys))[:size] {
							if rng.IntN(4) == 0 {
								b.Delete(keys[i])
							} else {
								b.Put(keys[i], sealed(keys[i], n))
							}
						}
						if err := s.Apply(bg, &b); err != nil {
							return err
						}
					}
					return nil
				}()
			}()
		}
		for i := range scanners {
			reverse := i%2 == 1
			go func() {
				errc <- func() error {
					var prev []byte
					for range scans {
						first := true
						for e, err := range s.Scan(bg, kv.ScanRange{Reverse: reverse}) {
							if err != nil {
								return err
							}
							progress()
							if err := checkSealed(e.Key, e.Value); err != nil {
								return err
							}
							if c := bytes.Compare(e.Key, prev); !first && (c == 0 || (c < 0) != reverse) {
								return fmt.Errorf("scan (reverse %v) yielded %q after %q", reverse, e.Key, prev)
							}
							prev, first = append(prev[:0], e.Key...), false
						}
					}
					return nil
				}()
			}()
		}
		var first error
		for range writers + scanners {
			if err := <-errc; err != nil && first == nil {
				first = err
			}
			stop.Store(true) // the first to finish (a scanner, or a failure) stops the writers
		}
		return first
	})
}

func testScanBodyWrites(t *testing.T, s kv.Store) {
	for _, prefix := range []string{"f", "r"} {
		reverse := prefix == "r"
		keys := scopeKeys(t, s, prefix, 150)
		putAll(t, s, keys)
		r := kv.ScanRange{Start: bs(prefix), End: bs(prefix + "\xff"), Reverse: reverse}
		var got []pair
		within(t, "a scan whose loop body writes", func(progress func()) error {
			i := 0
			for e, err := range s.Scan(bg, r) {
				if err != nil {
					return err
				}
				progress()
				got = append(got, pair{string(e.Key), string(e.Value)})
				// Write outside the range, and to the key just yielded.
				key := bytes.Clone(e.Key)
				var b kv.Batch
				b.Put(append([]byte("z"), key...), bs("copy"))
				if err := s.Apply(bg, &b); err != nil {
					return err
				}
				progress()
				b.Reset()
				if i%2 == 0 {
					b.Delete(key)
				} else {
					b.Put(key, bs("changed"))
				}
				if err := s.Apply(bg, &b); err != nil {
					return err
				}
				if _, err := s.Get(bg, key); i%2 == 0 && !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("Get %q after its delete: %v", key, err)
				}
				i++
			}
			return nil
		})
		want := reference(keys, r)
		require.Equal(t, want, got)
		for i, e := range want {
			requireValue(t, s, bs("z"+e.Key), "copy")
			if i%2 == 0 {
				requireAbsent(t, s, bs(e.Key))
			} else {
				requireValue(t, s, bs(e.Key), "changed")
			}
		}
	}
}

func testContext(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "x", 2)
	key, other := k[0], k[1]
	put(t, s, key, bs("v"))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	requireRefused(t, s, ctx, key, other, context.Canceled)

	expired, cancel := context.WithDeadline(bg, time.Unix(0, 0))
	defer cancel()
	_, err := s.Get(expired, key)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Get")

	// Cancelled in the middle of a long scan: the scan ends with the
	// context's error, having yielded at most the entries it had in hand
	// (a page), not the rest of the range.
	const n = 2000
	many := scopeKeys(t, s, "long", n)
	for i := 0; i < n; {
		var b kv.Batch
		for size := batchSize(s, n); i < n && b.Len() < size; i++ {
			b.Put(many[i], bs("v"))
		}
		apply(t, s, &b)
	}
	ctx, cancel = context.WithCancel(bg)
	defer cancel()
	entries, errs := 0, 0
	for _, err := range s.Scan(ctx, kv.ScanRange{}) {
		if err != nil {
			require.ErrorIs(t, err, context.Canceled, "Scan")
			errs++
			continue
		}
		require.Zero(t, errs, "Scan yielded an entry after its error")
		if entries++; entries == 1 {
			cancel()
		}
	}
	require.Equal(t, 1, errs, "a scan cancelled midway ends with one error")
	require.Less(t, entries, n/2, "a cancelled scan stops early")
}

// requireScanError checks that seq yields no entries and then exactly one
// error, wrapping target.
func requireScanError(t *testing.T, seq iter.Seq2[kv.Entry, error], target error) {
	t.Helper()
	var errs []error
	for e, err := range seq {
		if err == nil {
			require.Failf(t, "scan yielded an entry", "key %q", e.Key)
		}
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "scan errors")
	require.ErrorIs(t, errs[0], target)
}

// testNilContext: every call refuses a nil context with
// ErrInvalidArgument, and changes nothing.
func testNilContext(t *testing.T, s kv.Store) {
	k := scopeKeys(t, s, "n", 2)
	key, other := k[0], k[1]
	put(t, s, key, bs("v"))
	var noContext context.Context
	requireRefused(t, s, noContext, key, other, kv.ErrInvalidArgument)
}

// requireRefused checks that every call with ctx fails with an error
// wrapping target and changes nothing: key keeps its value "v", and other
// stays absent.
func requireRefused(t *testing.T, s kv.Store, ctx context.Context, key, other []byte, target error) {
	t.Helper()
	_, err := s.Get(ctx, key)
	require.ErrorIs(t, err, target, "Get")
	_, err = s.GetMany(ctx, [][]byte{key}, nil)
	require.ErrorIs(t, err, target, "GetMany")
	var b kv.Batch
	b.Put(other, bs("v"))
	b.Delete(key)
	require.ErrorIs(t, s.Apply(ctx, &b), target, "Apply")
	requireAbsent(t, s, other)
	requireValue(t, s, key, "v")
	requireScanError(t, s.Scan(ctx, kv.ScanRange{}), target)
}

func testClosed(t *testing.T, s kv.Store) {
	key := bs("k")
	put(t, s, key, bs("v"))
	require.NoError(t, s.Close())

	_, err := s.Get(bg, key)
	require.ErrorIs(t, err, kv.ErrClosed, "Get")
	_, err = s.GetMany(bg, [][]byte{key}, nil)
	require.ErrorIs(t, err, kv.ErrClosed, "GetMany")
	var b kv.Batch
	b.Put(key, bs("w"))
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrClosed, "Apply")
	requireScanError(t, s.Scan(bg, kv.ScanRange{}), kv.ErrClosed)
	// A range that holds nothing is no exception.
	requireScanError(t, s.Scan(bg, kv.ScanRange{Start: bs("b"), End: bs("a")}), kv.ErrClosed)
	requireScanError(t, s.Scan(bg, kv.ScanRange{End: bs("b"), After: bs("c")}), kv.ErrClosed)
	require.NoError(t, s.Close(), "second Close")
}

func testNoAliasing(t *testing.T, s kv.Store) {
	key, value := bs("key"), bs("value")
	var b kv.Batch
	b.Put(key, value)
	apply(t, s, &b)
	key[0], value[0] = 'X', 'X'
	requireValue(t, s, bs("key"), "value")
	requireAbsent(t, s, key)
	require.Equal(t, []pair{{"key", "value"}}, scan(t, s, kv.ScanRange{}))
}

// testKeptValues: a value that Get or GetMany returned stays as it was
// while the store goes on, as Store says (the caller may keep it): through
// writes of its key and of others, and through more reads. Tables decode a
// Get's record in place, sharing that memory.
func testKeptValues(t *testing.T, s kv.Store) {
	a, b := bs("kept-a"), bs("kept-b")
	put(t, s, a, bs("value-a1"))
	put(t, s, b, bs("value-b1"))
	got := get(t, s, a)
	many, err := s.GetMany(bg, [][]byte{a, b}, nil)
	require.NoError(t, err)
	for i := range 4 {
		put(t, s, a, fmt.Appendf(nil, "VALUE-A%d", i+2)) // as long as the first
		put(t, s, b, fmt.Appendf(nil, "VALUE-B%d", i+2))
		get(t, s, a)
		_, err := s.GetMany(bg, [][]byte{b, a}, nil)
		require.NoError(t, err)
	}
	del(t, s, a)
	get(t, s, b)
	require.Equal(t, "value-a1", string(got), "a value Get returned")
	require.Equal(t, []string{"value-a1", "value-b1"}, []string{string(many[0]), string(many[1])}, "values GetMany returned")
}

// testWritesBound checks the MaxWrites of scope a: a batch of one write
// more is refused and applies nothing, whether the one more is a put or a
// delete; a batch of MaxWrites writes applies with as many expectations
// besides, of the keys it puts absent or of other keys' values, or, when
// one of them fails, applies nothing.
func testWritesBound(t *testing.T, s kv.Store, a kv.Atomicity) {
	n := a.MaxWrites
	keys := scopeKeys(t, s, "w", 2*n+1)
	puts, others := keys[:n+1], keys[n+1:]
	putAll(t, s, others)
	var b kv.Batch
	for _, k := range puts {
		b.Put(k, bs("v"))
	}
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "%d puts, MaxWrites %d", n+1, n)
	b.Reset()
	for _, k := range puts[:n] {
		b.Put(k, bs("v"))
	}
	b.Delete(others[0])
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "%d puts and a delete, MaxWrites %d", n, n)
	requireAbsent(t, s, puts...)
	requireValue(t, s, others[0], string(val(others[0])))

	b.Reset()
	for _, k := range puts[:n] {
		b.ExpectAbsent(k)
		b.Put(k, bs("v"))
	}
	if a.Allows(&b) != nil {
		return // MaxOps bounds it too
	}
	apply(t, s, &b)
	requireValue(t, s, puts[0], "v")
	requireValue(t, s, puts[n-1], "v")

	// Deletes of all but one key put, a put of one more, and the values of
	// the other keys expected, the last one wrongly, then rightly.
	batch := func(last []byte) *kv.Batch {
		var b kv.Batch
		for _, k := range puts[:n-1] {
			b.Delete(k)
		}
		b.Put(puts[n], bs("v"))
		for _, k := range others[:n-1] {
			b.ExpectValue(k, val(k))
		}
		b.ExpectValue(others[n-1], last)
		return &b
	}
	require.ErrorIs(t, s.Apply(bg, batch(bs("not"))), kv.ErrConflict, "the last of %d expectations fails", n)
	requireValue(t, s, puts[0], "v")
	requireAbsent(t, s, puts[n])
	apply(t, s, batch(val(others[n-1])))
	requireAbsent(t, s, puts[:n-1]...)
	requireValue(t, s, puts[n-1], "v")
	requireValue(t, s, puts[n], "v")
}

func testAtomicity(t *testing.T, s kv.Store) {
	a := s.Atomicity()
	if unbounded(a) {
		t.Skip("the store's atomicity scope is unbounded")
	}
	if a.MaxOps > 0 {
		keys := scopeKeys(t, s, "m", a.MaxOps+1)
		var b kv.Batch
		for _, k := range keys {
			b.Put(k, bs("v"))
		}
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "%d operations, MaxOps %d", b.Len(), a.MaxOps)
		requireAbsent(t, s, keys...)

		b.Reset()
		for _, k := range keys[:a.MaxOps] {
			b.Put(k, bs("v"))
		}
		if a.Allows(&b) == nil {
			apply(t, s, &b)
			requireValue(t, s, keys[0], "v")
		}
	}
	if a.MaxWrites > 0 {
		testWritesBound(t, s, a)
	}
	if a.Partition != nil {
		byPart := map[string][]byte{}
		for i := range 1000 {
			k := fmt.Appendf(nil, "%02x/p%06d", i%256, i)
			byPart[string(a.Partition(k))] = k
			if len(byPart) == 2 {
				break
			}
		}
		require.Len(t, byPart, 2, "found no keys in two partitions")
		var b kv.Batch
		var keys [][]byte
		for _, k := range byPart {
			b.Put(k, bs("v"))
			keys = append(keys, k)
		}
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "keys in two partitions")
		requireAbsent(t, s, keys...)
	}
	if a.MaxBytes > 0 {
		var b kv.Batch
		b.Put(bs("big"), make([]byte, a.MaxBytes))
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a batch over MaxBytes %d", a.MaxBytes)
		requireAbsent(t, s, bs("big"))
	}
	if a.MaxKeyBytes > 0 {
		testKeyBound(t, s, a.MaxKeyBytes)
	}
	if a.MaxValueBytes > 0 {
		var b kv.Batch
		b.Put(bs("large"), make([]byte, a.MaxValueBytes+1))
		require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a value over MaxValueBytes %d", a.MaxValueBytes)
		requireAbsent(t, s, bs("large"))
		value := bytes.Repeat([]byte{0xA5, 0, 0xFF}, a.MaxValueBytes/3+1)[:a.MaxValueBytes]
		b.Reset()
		b.Put(bs("large"), value)
		apply(t, s, &b)
		got, err := s.Get(bg, bs("large"))
		require.NoError(t, err)
		require.True(t, bytes.Equal(value, got), "a value of MaxValueBytes %d reads back", a.MaxValueBytes)
	}
}

// testKeyBound checks that s stores and orders keys of max bytes, the
// longest it holds, refuses longer ones, and finds a longer one absent.
func testKeyBound(t *testing.T, s kv.Store, max int) {
	long := func(last byte) []byte {
		k := bytes.Repeat([]byte{'k', 0, 0xFF}, max/3+1)[:max]
		k[max-1] = last
		return k
	}
	lo, hi, over := long(1), long(2), append(long(1), 0)
	var b kv.Batch
	b.Put(over, bs("v"))
	require.ErrorIs(t, s.Apply(bg, &b), kv.ErrInvalidBatch, "a key over MaxKeyBytes %d", max)
	b.Reset()
	b.Put(hi, bs("hi"))
	apply(t, s, &b)
	b.Reset()
	b.Put(lo, bs("lo"))
	apply(t, s, &b)
	requireValue(t, s, lo, "lo")
	requireValue(t, s, hi, "hi")
	require.Equal(t, []pair{{string(lo), "lo"}, {string(hi), "hi"}}, scan(t, s, kv.ScanRange{Start: lo, End: append(hi, 0)}))
	_, err := s.Get(bg, over)
	require.ErrorIs(t, err, kv.ErrNotFound)
	b.Reset()
	b.ExpectAbsent(over)
	b.Delete(over)
	apply(t, s, &b)
}
