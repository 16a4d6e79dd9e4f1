package pebblestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indextable/indextable/kv"
)

// stripe is one of a store's 256 locks, chosen by a hash of the key, and
// a cache of the values of some of its keys, which spares Apply a read of
// an expected key:
//
//   - known: the catalog keys (kv.SpaceCatalog) among its keys that batches
//     expected, with their values as last read (nil: absent). A table's
//     every write expects its schema version, a catalog key.
//   - the last key of the stripe that Get read, and its value: a table's
//     update reads its record, then expects it to hold what it read.
//
// Every write to the database goes through Apply (Open holds the
// directory's lock), which holds the stripes of its keys while it checks
// the expectations and commits, and before unlocking forgets the keys it
// wrote, whether the commit succeeded or not, and counts a write in
// writes; so a cached value is the stored one whenever the lock is free.
// Get reads without the lock: it caches what it read only if it can take
// the lock at once and no Apply on the stripe ended since its read began
// (writes unchanged), which would have found the value it read stale.
type stripe struct {
	sync.Mutex
	known  map[string][]byte
	writes atomic.Uint64 // Applies that ended holding the lock

	lastKey, lastValue []byte // Get's last read, if lastValid
	lastValid          bool
	lastPresent        bool // whether lastKey held lastValue or was absent
}

// maxKnown is how many catalog keys a stripe caches at most: a table has
// one an index, and its schema version.
const maxKnown = 8

// maxLastValue is the largest value a stripe keeps of Get's last read.
const maxLastValue = 4 << 10

// cached returns the cached value of key, nil if absent, and whether the
// stripe caches it. The caller holds the stripe's lock.
func (st *stripe) cached(key []byte) ([]byte, bool) {
	if st.lastValid && bytes.Equal(st.lastKey, key) {
		switch {
		case !st.lastPresent:
			return nil, true
		case st.lastValue == nil: // present and empty, never grown
			return []byte{}, true
		}
		return st.lastValue, true
	}
	if len(st.known) == 0 {
		return nil, false
	}
	v, ok := st.known[string(key)]
	return v, ok
}

// remember caches a copy of v (nil: absent) as the value of key, if key is
// a catalog key and the stripe has room. The caller holds the stripe's
// lock.
func (st *stripe) remember(key, v []byte) {
	if len(st.known) >= maxKnown {
		return
	}
	if k, ok := kv.ParseKey(key); !ok || k.Space != kv.SpaceCatalog {
		return
	}
	if st.known == nil {
		st.known = make(map[string][]byte, maxKnown)
	}
	if v != nil {
		v = append(make([]byte, 0, len(v)), v...)
	}
	st.known[string(key)] = v
}

// noteRead keeps v (nil: absent) as the value of key that Get read, if
// no Apply ended on the stripe since writes was seq, the lock is free, and
// v is small enough.
func (st *stripe) noteRead(key, v []byte, seq uint64) {
	if len(v) > maxLastValue || !st.TryLock() {
		return
	}
	if st.writes.Load() == seq {
		st.lastKey = append(st.lastKey[:0], key...)
		st.lastValue = append(st.lastValue[:0], v...)
		st.lastValid, st.lastPresent = true, v != nil
	}
	st.Unlock()
}

// forget drops the cached value of key, if any. The caller holds the
// stripe's lock.
func (st *stripe) forget(key []byte) {
	if st.lastValid && bytes.Equal(st.lastKey, key) {
		st.lastValid = false
	}
	if len(st.known) > 0 {
		delete(st.known, string(key))
	}
}

// Apply applies b as one Pebble batch. It locks the stripes of b's keys
// (256 locks, chosen by a hash of the key), checks every expectation, and
// commits the writes; a failed expectation returns an error wrapping
// kv.ErrConflict that names the key, and nothing is written.
// Batches on other stripes commit at the same time, and Pebble syncs them
// together. The commit is durable unless the store was opened with NoSync.
// An expectation of a catalog key (a table's schema version, which every
// write of a table expects), or of the key that Get last read on its
// stripe (the record an update read), is checked against the value cached
// in the stripe, which any batch that writes the key drops (see stripe).
// A store opened read-only returns an error wrapping ErrReadOnly for a
// batch that is not empty.
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	// A done context and a closed store come first, as the Store contract
	// has them.
	if _, err := s.open(ctx); err != nil {
		return err
	}
	s.mu.RUnlock()
	if err := kv.CheckBatch(b); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	ops := b.Ops()
	if n := batchBytes(ops); n >= maxBatchBytes {
		return fmt.Errorf("pebblestore: %w: %d bytes of writes, and a Pebble batch holds less than 4 GiB",
			kv.ErrInvalidBatch, n)
	}
	if len(ops) == 0 {
		return nil
	}
	if s.readOnly {
		return fmt.Errorf("%w: a batch of %d operations", ErrReadOnly, len(ops))
	}
	var room, lockRoom [16]uint8
	of := s.stripesOf(ops, room[:0])
	locked := s.lockStripes(of, lockRoom[:0])
	defer s.unlockStripes(locked)
	db, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.checkExpectations(db, ops, of); err != nil {
		return err
	}
	pb := db.NewBatch()
	defer pb.Close()
	for _, op := range ops {
		switch op.Kind {
		case kv.OpPut:
			err = pb.Set(encodeKey(op.Key), op.Value, nil)
		case kv.OpDelete:
			err = pb.Delete(encodeKey(op.Key), nil)
		}
		if err != nil {
			return fmt.Errorf("pebblestore: batch: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	err = pb.Commit(s.wo)
	// Whether or not the commit succeeded, the cache no longer knows what
	// the keys it wrote hold, nor may a read that began before it cache
	// what it read.
	for i, op := range ops {
		if op.IsWrite() {
			s.stripes[of[i]].forget(op.Key)
		}
	}
	for _, i := range locked {
		s.stripes[i].writes.Add(1)
	}
	if err != nil {
		return fmt.Errorf("pebblestore: commit: %w", err)
	}
	return nil
}

// iterateAt is how many expectations checkExpectations reads with one
// iterator, in key order, rather than a Get each: a Get builds an
// iterator of its own.
const iterateAt = 8

// checkExpectations checks the expectations among ops against db, whose
// stripes (of, by op) the caller holds: from the stripes' caches where
// they know the key, else read, and cached if a catalog key.
func (s *Store) checkExpectations(db *pebble.DB, ops []kv.Op, of []uint8) error {
	var room [iterateAt]int
	expect := room[:0] // the indexes in ops of the expectations to read
	for i, op := range ops {
		if op.IsWrite() {
			continue
		}
		if v, ok := s.stripes[of[i]].cached(op.Key); ok {
			if err := kv.CheckExpectation(op, v); err != nil {
				return fmt.Errorf("pebblestore: %w", err)
			}
			continue
		}
		expect = append(expect, i)
	}
	check := func(i int, v []byte) error {
		s.stripes[of[i]].remember(ops[i].Key, v)
		if err := kv.CheckExpectation(ops[i], v); err != nil {
			return fmt.Errorf("pebblestore: %w", err)
		}
		return nil
	}
	if len(expect) < iterateAt {
		var buf []byte
		for _, i := range expect {
			var v []byte
			var err error
			key := encodeKey(ops[i].Key)
			if ops[i].Kind == kv.OpExpectAbsent {
				v, err = getLikelyAbsent(db, key, buf[:0])
			} else {
				v, err = get(db, key, buf[:0])
			}
			if err != nil {
				return err
			}
			if v != nil {
				buf = v
			}
			if err := check(i, v); err != nil {
				return err
			}
		}
		return nil
	}
	slices.SortFunc(expect, func(a, b int) int { return bytes.Compare(ops[a].Key, ops[b].Key) })
	it, err := db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("pebblestore: get: %w", err)
	}
	err = func() error {
		for _, i := range expect {
			op := ops[i]
			var v []byte // nil: absent
			key := encodeKey(op.Key)
			if it.SeekGE(key) && bytes.Equal(it.Key(), key) {
				var err error
				if v, err = it.ValueAndErr(); err != nil {
					return fmt.Errorf("pebblestore: get: %w", err)
				}
				if v == nil {
					v = []byte{}
				}
			}
			if err := check(i, v); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := errors.Join(it.Error(), it.Close()); err == nil && cerr != nil {
		err = fmt.Errorf("pebblestore: get: %w", cerr)
	}
	return err
}

// maxBatchBytes is the size that a Pebble batch must stay below: Pebble
// panics rather than grow one to it.
const maxBatchBytes = math.MaxUint32

// batchBytes returns at least the size of ops' writes in a Pebble batch:
// its header, and for each write what Pebble reserves for it, its kind, key
// (one byte more than the kv key's at most, see encodeKey) and value and
// two lengths of up to 5 bytes.
func batchBytes(ops []kv.Op) uint64 {
	n := uint64(12)
	for _, op := range ops {
		if op.IsWrite() {
			n += 2 + 2*binary.MaxVarintLen32 + uint64(len(op.Key)) + uint64(len(op.Value))
		}
	}
	return n
}

// stripeOf returns the stripe of key.
func (s *Store) stripeOf(key []byte) uint8 {
	return uint8(maphash.Bytes(s.seed, key) % stripeCount)
}

// stripesOf appends to dst the stripe of each of ops' keys, in the order
// of ops, and returns it.
func (s *Store) stripesOf(ops []kv.Op, dst []uint8) []uint8 {
	for _, op := range ops {
		dst = append(dst, s.stripeOf(op.Key))
	}
	return dst
}

// lockStripes locks the stripes of, each once, in ascending order so that
// two batches cannot deadlock, and returns them for unlockStripes,
// appended to dst.
func (s *Store) lockStripes(of, dst []uint8) []uint8 {
	stripes := append(dst, of...)
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		s.stripes[i].Lock()
	}
	return stripes
}

func (s *Store) unlockStripes(stripes []uint8) {
	for _, i := range stripes {
		s.stripes[i].Unlock()
	}
}

// getLikelyAbsent is get for a key that is likely absent, such as the
// record an insert expects absent: it consults the bloom filters of every
// level, the last one's included, which a Get skips (they are large, and
// spare nothing when the key is present), so that the absent key costs no
// data block search in the last level. Like get, it takes a Pebble key.
func getLikelyAbsent(db *pebble.DB, key, dst []byte) ([]byte, error) {
	it, err := db.NewIter(&pebble.IterOptions{UseL6Filters: true})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: get: %w", err)
	}
	var v []byte
	if it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key) {
		if v, err = it.ValueAndErr(); err == nil {
			if dst == nil {
				dst = make([]byte, 0, len(v))
			}
			v = append(dst, v...)
		}
	}
	if err = errors.Join(err, it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("pebblestore: get: %w", err)
	}
	return v, nil
}
