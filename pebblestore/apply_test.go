package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catalogKey returns a catalog key of table "t", which Apply caches when
// a batch expects it.
func catalogKey(t *testing.T, name string) []byte {
	k, err := kv.EncodeTuple("t", int64(kv.SpaceCatalog), name)
	require.NoError(t, err)
	return k
}

// recordKey returns the key of record pk of table "t".
func recordKey(t *testing.T, pk string) []byte {
	k, err := kv.EncodeTuple("t", int64(kv.SpaceRecords), pk)
	require.NoError(t, err)
	return k
}

// isCached reports whether s caches key, and its cached value.
func isCached(s *Store, key []byte) ([]byte, bool) {
	st := &s.stripes[s.stripeOf(key)]
	st.Lock()
	defer st.Unlock()
	return st.cached(key)
}

// TestApplyCachesExpectedCatalogKeys: the values of expected catalog keys
// are cached, and every write of a key, a compare-and-set's included,
// drops it, so that an expectation never passes on a value the key no
// longer holds; other keys are not cached.
func TestApplyCachesExpectedCatalogKeys(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	k, other := catalogKey(t, ""), catalogKey(t, "ix")
	rec := recordKey(t, "pk")
	v1, v2 := []byte("v1"), []byte("v2")
	for _, step := range []struct {
		name     string
		ops      []kv.Op
		conflict bool
		cached   bool   // whether k is cached after the batch
		value    []byte // its cached value
	}{
		{"absent, read", []kv.Op{{Kind: kv.OpExpectAbsent, Key: k}, {Kind: kv.OpPut, Key: other, Value: v1}}, false, true, nil},
		{"absent, cached", []kv.Op{{Kind: kv.OpExpectAbsent, Key: k}}, false, true, nil},
		{"put drops it", []kv.Op{{Kind: kv.OpPut, Key: k, Value: v1}}, false, false, nil},
		{"absent, stale if cached", []kv.Op{{Kind: kv.OpExpectAbsent, Key: k}}, true, true, v1},
		{"value, cached", []kv.Op{{Kind: kv.OpExpectValue, Key: k, Value: v1}}, false, true, v1},
		{"compare-and-set", []kv.Op{{Kind: kv.OpExpectValue, Key: k, Value: v1}, {Kind: kv.OpPut, Key: k, Value: v2}}, false, false, nil},
		{"old value, stale if cached", []kv.Op{{Kind: kv.OpExpectValue, Key: k, Value: v1}}, true, true, v2},
		{"a failed batch writes nothing", []kv.Op{{Kind: kv.OpExpectValue, Key: k, Value: v1}, {Kind: kv.OpPut, Key: k, Value: v1}}, true, true, v2},
		{"delete drops it", []kv.Op{{Kind: kv.OpDelete, Key: k}}, false, false, nil},
		{"deleted value", []kv.Op{{Kind: kv.OpExpectValue, Key: k, Value: v2}}, true, true, nil},
		{"a record is not cached", []kv.Op{{Kind: kv.OpExpectAbsent, Key: rec}}, false, true, nil},
	} {
		err := s.Apply(ctx, kv.NewBatch(step.ops...))
		if step.conflict {
			require.ErrorIs(t, err, kv.ErrConflict, step.name)
		} else {
			require.NoError(t, err, step.name)
		}
		v, ok := isCached(s, k)
		require.Equal(t, step.cached, ok, step.name)
		require.Equal(t, step.value, v, step.name)
	}
	_, ok := isCached(s, rec)
	assert.False(t, ok, "a record key is cached")
	v, ok := isCached(s, other)
	assert.False(t, ok, "a key only written is cached")
	assert.Nil(t, v)
}

// TestApplyUsesGetsRead: a key's value that Get read is cached until a
// batch writes the key, a copy of its own, and not at all when a batch
// wrote the key while Get read it, or when it is large.
func TestApplyUsesGetsRead(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	r, absent, big := recordKey(t, "r"), recordKey(t, "absent"), recordKey(t, "big")
	v1, v2 := []byte("v1"), []byte("v2")
	apply := func(ops ...kv.Op) error { return s.Apply(ctx, kv.NewBatch(ops...)) }
	require.NoError(t, apply(kv.Op{Kind: kv.OpPut, Key: r, Value: v1},
		kv.Op{Kind: kv.OpPut, Key: big, Value: make([]byte, maxLastValue+1)}))

	got, err := s.Get(ctx, r)
	require.NoError(t, err)
	v, ok := isCached(s, r)
	require.True(t, ok, "Get's read is cached")
	require.Equal(t, v1, v)
	got[0] = 'x' // the caller's copy
	require.NoError(t, apply(kv.Op{Kind: kv.OpExpectValue, Key: r, Value: v1}), "the cache has a copy of its own")
	require.ErrorIs(t, apply(kv.Op{Kind: kv.OpExpectValue, Key: r, Value: got}), kv.ErrConflict)

	require.NoError(t, apply(kv.Op{Kind: kv.OpPut, Key: r, Value: v2}))
	_, ok = isCached(s, r)
	require.False(t, ok, "a write drops the cached read")
	require.ErrorIs(t, apply(kv.Op{Kind: kv.OpExpectValue, Key: r, Value: v1}), kv.ErrConflict, "stale")

	// A batch that writes the key while Get reads it: Get must not cache
	// the value it read before.
	st := &s.stripes[s.stripeOf(r)]
	seq := st.writes.Load()
	require.NoError(t, apply(kv.Op{Kind: kv.OpPut, Key: r, Value: v1}))
	st.noteRead(r, v2, seq)
	_, ok = isCached(s, r)
	require.False(t, ok, "a read older than a write is cached")
	require.ErrorIs(t, apply(kv.Op{Kind: kv.OpExpectValue, Key: r, Value: v2}), kv.ErrConflict, "stale")

	_, err = s.Get(ctx, absent)
	require.ErrorIs(t, err, kv.ErrNotFound)
	v, ok = isCached(s, absent)
	require.True(t, ok, "an absent key's read is cached")
	require.Nil(t, v)
	require.NoError(t, apply(kv.Op{Kind: kv.OpExpectAbsent, Key: absent}, kv.Op{Kind: kv.OpPut, Key: absent, Value: v1}))
	require.ErrorIs(t, apply(kv.Op{Kind: kv.OpExpectAbsent, Key: absent}), kv.ErrConflict, "stale")

	// An empty value is present, cached or not.
	empty := recordKey(t, "empty")
	require.NoError(t, apply(kv.Op{Kind: kv.OpPut, Key: empty, Value: []byte{}}))
	_, err = s.Get(ctx, empty)
	require.NoError(t, err)
	v, ok = isCached(s, empty)
	require.True(t, ok)
	require.NotNil(t, v, "an empty value reads as absent")
	require.NoError(t, apply(kv.Op{Kind: kv.OpExpectValue, Key: empty, Value: []byte{}}))
	require.ErrorIs(t, apply(kv.Op{Kind: kv.OpExpectAbsent, Key: empty}), kv.ErrConflict)

	_, err = s.Get(ctx, big)
	require.NoError(t, err)
	_, ok = isCached(s, big)
	require.False(t, ok, "a large value is cached")
}

// TestApplyCacheConcurrent: concurrent compare-and-sets of a key, a
// catalog key or a record, each expecting the value it read with Get, lose
// no increment and never stall on a stale cached value.
func TestApplyCacheConcurrent(t *testing.T) {
	for _, space := range []kv.KeySpace{kv.SpaceCatalog, kv.SpaceRecords} {
		t.Run(strconv.Itoa(int(space)), func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(t.TempDir(), Options{NoSync: true})
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			k, err := kv.EncodeTuple("t", int64(space), "k")
			require.NoError(t, err)
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: k, Value: []byte("0")})))
			const workers, each, attempts = 4, 50, 100_000
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- increment(ctx, s, k, each, attempts)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err, "a worker could not make its increments")
			}
			v, err := s.Get(ctx, k)
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(workers*each), string(v), "increments lost")
		})
	}
}

// increment adds 1 to the number under k n times, each a Get and a batch
// that expects what it read, retried on conflict, in at most attempts
// tries.
func increment(ctx context.Context, s *Store, k []byte, n, attempts int) error {
	done := 0
	for range attempts {
		if done == n {
			return nil
		}
		cur, err := s.Get(ctx, k)
		if err != nil {
			return err
		}
		i, _ := strconv.Atoi(string(cur))
		err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: k, Value: cur},
			kv.Op{Kind: kv.OpPut, Key: k, Value: []byte(strconv.Itoa(i + 1))}))
		switch {
		case err == nil:
			done++
		case !errors.Is(err, kv.ErrConflict):
			return err
		}
	}
	if done < n {
		return fmt.Errorf("%d increments of %d in %d attempts", done, n, attempts)
	}
	return nil
}

// TestExpectAbsentEveryLevel: an expectation that a key is absent sees the
// key wherever Pebble keeps it (the memtable, a flushed table, the last
// level after a compaction, whose bloom filters it reads), and sees it
// deleted when a tombstone hides it; a key that only starts another is
// absent.
func TestExpectAbsentEveryLevel(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		move    func(*testing.T, *Store) // where the key's value ends up
		deleted bool                     // then delete it, in the memtable
	}{
		{"memtable", func(*testing.T, *Store) {}, false},
		{"flushed", func(t *testing.T, s *Store) { require.NoError(t, s.DB().Flush()) }, false},
		{"compacted", compactAll, false},
		{"compacted, then deleted", compactAll, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir(), Options{NoSync: true})
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			k, prefix := recordKey(t, "k"), recordKey(t, "p")
			longer := append(slices.Clone(prefix), 'x')
			var ops []kv.Op
			for i := range 200 { // enough keys for a bloom filter to matter
				ops = append(ops, kv.Op{Kind: kv.OpPut, Key: recordKey(t, strconv.Itoa(i)), Value: []byte("v")})
			}
			ops = append(ops, kv.Op{Kind: kv.OpPut, Key: longer, Value: []byte("v")}, kv.Op{Kind: kv.OpPut, Key: k, Value: []byte("v")})
			require.NoError(t, s.Apply(ctx, kv.NewBatch(ops...)))
			tc.move(t, s)
			if tc.deleted {
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpDelete, Key: k})))
			}
			err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: k}))
			if tc.deleted {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, kv.ErrConflict)
			}
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: recordKey(t, "absent")})))
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: prefix})),
				"only a longer key starts with it")
		})
	}
}

// compactAll flushes s's database and compacts it into its last level.
func compactAll(t *testing.T, s *Store) {
	db := s.DB()
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(context.Background(), []byte{0}, []byte{0xff}, true))
	m := db.Metrics()
	require.Positive(t, m.Levels[6].TablesCount, "nothing in the last level")
}

// reviewKeys returns the keys the randomized tests use: catalog keys,
// which Apply caches, records, and raw keys that are prefixes of one
// another, hold 0x00 and 0xff, or are empty.
func reviewKeys(t *testing.T) [][]byte {
	var keys [][]byte
	for i := range 12 {
		keys = append(keys, catalogKey(t, "c"+strconv.Itoa(i)))
	}
	for i := range 6 {
		keys = append(keys, recordKey(t, "r"+strconv.Itoa(i)))
	}
	prefix := catalogKey(t, "c1")
	keys = append(keys, append(bytes.Clone(prefix), 0), append(bytes.Clone(prefix), 0xff))
	for _, raw := range []string{"", "\x00", "\x00\x00", "\xff", "\xff\xff", "a", "a\x00", "ab"} {
		keys = append(keys, []byte(raw))
	}
	return keys
}

// reviewValue returns a random value: nil (stored empty), empty, small,
// at and past the size Get caches.
func reviewValue(rng *rand.Rand) []byte {
	var v []byte
	switch rng.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		v = make([]byte, maxLastValue)
	case 3:
		v = make([]byte, maxLastValue+1+rng.IntN(3000))
	default:
		v = make([]byte, 1+rng.IntN(8))
	}
	for i := range v {
		v[i] = byte(rng.IntN(3))
	}
	return v
}

// model is the reference state: present keys and their values.
type model map[string][]byte

// expectation returns an expectation of key that holds in m, or, if
// wrong, one that fails.
func (m model) expectation(rng *rand.Rand, key []byte, wrong bool) kv.Op {
	v, ok := m[string(key)]
	switch {
	case ok && !wrong:
		return kv.Op{Kind: kv.OpExpectValue, Key: key, Value: v}
	case !ok && !wrong:
		return kv.Op{Kind: kv.OpExpectAbsent, Key: key}
	case ok && rng.IntN(2) == 0:
		return kv.Op{Kind: kv.OpExpectAbsent, Key: key}
	case ok:
		return kv.Op{Kind: kv.OpExpectValue, Key: key, Value: append(bytes.Clone(v), 1)}
	}
	return kv.Op{Kind: kv.OpExpectValue, Key: key, Value: reviewValue(rng)}
}

// openReview opens a store in dir whose commits fail while s.wo is
// pebble.Sync (Pebble refuses to sync a batch with its WAL disabled).
func openReview(t *testing.T, dir string) *Store {
	po := &pebble.Options{DisableWAL: true}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	s, err := Open(dir, Options{NoSync: true, Pebble: po})
	require.NoError(t, err)
	return s
}

// TestApplyModelRandom checks Get, GetMany and Apply against a model map,
// through random batches of expectations (holding or not), puts and
// deletes, Gets that fill the caches, commits that fail, flushes,
// compactions into the last level, and reopens.
func TestApplyModelRandom(t *testing.T) {
	ctx := context.Background()
	keys := reviewKeys(t)
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 22))
			dir := t.TempDir()
			s := openReview(t, dir)
			defer func() { require.NoError(t, s.Close()) }()
			m := model{}
			for step := range 2000 {
				where := fmt.Sprintf("seed %d step %d", seed, step)
				switch r := rng.IntN(100); {
				case r < 35:
					k := keys[rng.IntN(len(keys))]
					v, err := s.Get(ctx, k)
					want, ok := m[string(k)]
					if !ok {
						require.ErrorIs(t, err, kv.ErrNotFound, "%s: Get %q", where, k)
						continue
					}
					require.NoError(t, err, where)
					require.NotNil(t, v, "%s: Get %q of a present key", where, k)
					require.True(t, bytes.Equal(want, v), "%s: Get %q", where, k)
				case r < 38:
					ks := [][]byte{keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]}
					vs, err := s.GetMany(ctx, ks, nil)
					require.NoError(t, err, where)
					for i, k := range ks {
						want, ok := m[string(k)]
						require.Equal(t, ok, vs[i] != nil, "%s: GetMany %q", where, k)
						require.True(t, bytes.Equal(want, vs[i]), where)
					}
				case r < 40:
					require.NoError(t, s.DB().Flush(), where)
				case r < 41:
					require.NoError(t, s.DB().Compact(ctx, []byte{0}, []byte{0xff, 0xff, 0xff}, true), where)
				case r < 42:
					require.NoError(t, s.DB().Flush(), where) // the WAL is off
					require.NoError(t, s.Close(), where)
					s = openReview(t, dir)
				default:
					applyRandom(t, ctx, rng, s, m, keys, where)
				}
			}
		})
	}
}

// applyRandom applies a random batch to s and m, and checks its outcome:
// a conflict iff an expectation fails, else a failed commit when it makes
// one fail, else success.
func applyRandom(t *testing.T, ctx context.Context, rng *rand.Rand, s *Store, m model, keys [][]byte, where string) {
	var ops []kv.Op
	conflict := false
	written := map[string]bool{}
	for range 1 + rng.IntN(12) {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(4) {
		case 0, 1:
			wrong := rng.IntN(8) == 0
			conflict = conflict || wrong
			ops = append(ops, m.expectation(rng, k, wrong))
		case 2:
			if !written[string(k)] {
				written[string(k)] = true
				v := reviewValue(rng)
				if len(k) == 0 && len(v) > 8 {
					// Pebble's invariant checks (on under -race) panic on a
					// block that ends at the empty key.
					v = v[:8]
				}
				ops = append(ops, kv.Op{Kind: kv.OpPut, Key: k, Value: v})
			}
		default:
			if !written[string(k)] {
				written[string(k)] = true
				ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: k})
			}
		}
	}
	fail := rng.IntN(6) == 0
	if fail {
		s.wo = pebble.Sync
	}
	err := s.Apply(ctx, kv.NewBatch(ops...))
	s.wo = pebble.NoSync
	switch {
	case conflict:
		require.ErrorIs(t, err, kv.ErrConflict, "%s: %s", where, describe(ops))
		return
	case fail:
		require.Error(t, err, where)
		require.NotErrorIs(t, err, kv.ErrConflict, "%s: %s", where, describe(ops))
		return
	}
	require.NoError(t, err, "%s: %s", where, describe(ops))
	for _, op := range ops {
		switch op.Kind {
		case kv.OpPut:
			m[string(op.Key)] = append([]byte{}, op.Value...)
		case kv.OpDelete:
			delete(m, string(op.Key))
		}
	}
}

// sameStripeKeys returns n record keys of s that share one stripe, and
// n catalog keys that share another.
func sameStripeKeys(t *testing.T, s *Store, n int) (records, catalog [][]byte) {
	find := func(space kv.KeySpace) [][]byte {
		var out [][]byte
		var want int = -1
		for i := 0; len(out) < n; i++ {
			k, err := kv.EncodeTuple("t", int64(space), "k"+strconv.Itoa(i))
			require.NoError(t, err)
			if want < 0 {
				want = int(s.stripeOf(k))
			}
			if int(s.stripeOf(k)) == want {
				out = append(out, k)
			}
		}
		return out
	}
	return find(kv.SpaceRecords), find(kv.SpaceCatalog)
}

// TestApplyCacheMoreCatalogKeysThanRoom: a stripe with more expected
// catalog keys than it caches still sees every write of each.
func TestApplyCacheMoreCatalogKeysThanRoom(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, keys := sameStripeKeys(t, s, 2*maxKnown)
	for _, k := range keys {
		require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: k})))
	}
	for i, k := range keys {
		require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: k, Value: []byte{byte(i)}})))
	}
	for i, k := range keys {
		require.ErrorIs(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: k})), kv.ErrConflict, "key %d", i)
		require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: k, Value: []byte{byte(i)}})), "key %d", i)
	}
}

// TestApplyCacheConcurrentClaims: workers take and release claims on keys
// (expect absent and put; expect their own value and delete), seeding the
// caches with Gets, on keys that share stripes; no two ever hold one claim
// at once, and every release succeeds.
func TestApplyCacheConcurrentClaims(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	records, catalog := sameStripeKeys(t, s, 3)
	keys := append(records, catalog...)
	owners := make([]atomic.Int64, len(keys))
	const workers, rounds = 4, 1500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- claimLoop(ctx, s, keys, owners, int64(w+1), rounds)
		}()
	}
	wg.Add(1)
	go func() { // keeps moving keys out of the memtable
		defer wg.Done()
		for range 20 {
			if err := s.DB().Flush(); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// claimLoop is one worker of TestApplyCacheConcurrentClaims.
func claimLoop(ctx context.Context, s *Store, keys [][]byte, owners []atomic.Int64, id int64, rounds int) error {
	rng := rand.New(rand.NewPCG(uint64(id), 1))
	me := []byte(strconv.FormatInt(id, 10))
	for range rounds {
		i := rng.IntN(len(keys))
		k := keys[i]
		if _, err := s.Get(ctx, k); err == nil {
			continue // held by someone; the read is cached
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		err := s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: k}, kv.Op{Kind: kv.OpPut, Key: k, Value: me}))
		if errors.Is(err, kv.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		if prev := owners[i].Swap(id); prev != 0 {
			return fmt.Errorf("worker %d claimed key %d that worker %d holds", id, i, prev)
		}
		// Read our own claim (caching it), then release it.
		v, err := s.Get(ctx, k)
		if err != nil || !bytes.Equal(v, me) {
			return fmt.Errorf("worker %d reads its claim of key %d as %q, %v", id, i, v, err)
		}
		owners[i].Store(0)
		err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: k, Value: me}, kv.Op{Kind: kv.OpDelete, Key: k}))
		if err != nil {
			return fmt.Errorf("worker %d releases key %d: %w", id, i, err)
		}
	}
	return nil
}

// TestApplyCacheConcurrentTransfers: workers move units between accounts
// (in one stripe, and across stripes) with batches that expect the
// balances their Gets read, in both key orders; the total never changes
// and no batch deadlocks.
func TestApplyCacheConcurrentTransfers(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	records, catalog := sameStripeKeys(t, s, 3)
	accounts := append(records, catalog...)
	for i := range 4 {
		accounts = append(accounts, recordKey(t, "other"+strconv.Itoa(i)))
	}
	const start = 1000
	var ops []kv.Op
	for _, k := range accounts {
		ops = append(ops, kv.Op{Kind: kv.OpPut, Key: k, Value: []byte(strconv.Itoa(start))})
	}
	require.NoError(t, s.Apply(ctx, kv.NewBatch(ops...)))
	const workers, rounds = 4, 1500
	var wg sync.WaitGroup
	var moved atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- transferLoop(ctx, s, accounts, uint64(w), rounds, &moved)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, k := range accounts {
		v, err := s.Get(ctx, k)
		require.NoError(t, err)
		n, err := strconv.Atoi(string(v))
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, start*len(accounts), total, "units created or lost")
	require.Positive(t, moved.Load(), "no transfer succeeded")
}

// transferLoop is one worker of TestApplyCacheConcurrentTransfers.
func transferLoop(ctx context.Context, s *Store, accounts [][]byte, seed uint64, rounds int, moved *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(seed, 2))
	for range rounds {
		a, b := rng.IntN(len(accounts)), rng.IntN(len(accounts))
		if a == b {
			continue
		}
		va, err := s.Get(ctx, accounts[a])
		if err != nil {
			return err
		}
		vb, err := s.Get(ctx, accounts[b])
		if err != nil {
			return err
		}
		na, _ := strconv.Atoi(string(va))
		nb, _ := strconv.Atoi(string(vb))
		batch := kv.NewBatch(
			kv.Op{Kind: kv.OpExpectValue, Key: accounts[a], Value: va},
			kv.Op{Kind: kv.OpExpectValue, Key: accounts[b], Value: vb},
			kv.Op{Kind: kv.OpPut, Key: accounts[a], Value: []byte(strconv.Itoa(na - 1))},
			kv.Op{Kind: kv.OpPut, Key: accounts[b], Value: []byte(strconv.Itoa(nb + 1))})
		switch err := s.Apply(ctx, batch); {
		case err == nil:
			moved.Add(1)
		case !errors.Is(err, kv.ErrConflict):
			return err
		}
	}
	return nil
}

// describe names ops briefly: kinds, keys and value sizes.
func describe(ops []kv.Op) string {
	var b bytes.Buffer
	for _, op := range ops {
		fmt.Fprintf(&b, "%v %q (%d bytes); ", op.Kind, op.Key, len(op.Value))
	}
	return b.String()
}
