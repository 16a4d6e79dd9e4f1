package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

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
	rec, err := kv.EncodeTuple("t", int64(kv.SpaceRecords), "pk")
	require.NoError(t, err)
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
	key := func(pk string) []byte {
		k, err := kv.EncodeTuple("t", int64(kv.SpaceRecords), pk)
		require.NoError(t, err)
		return k
	}
	r, absent, big := key("r"), key("absent"), key("big")
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
	empty := key("empty")
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
			key := func(pk string) []byte {
				k, err := kv.EncodeTuple("t", int64(kv.SpaceRecords), pk)
				require.NoError(t, err)
				return k
			}
			k, prefix := key("k"), key("p")
			longer := append(slices.Clone(prefix), 'x')
			var ops []kv.Op
			for i := range 200 { // enough keys for a bloom filter to matter
				ops = append(ops, kv.Op{Kind: kv.OpPut, Key: key(strconv.Itoa(i)), Value: []byte("v")})
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
			require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: key("absent")})))
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
