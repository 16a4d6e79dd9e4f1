package indextable

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"math"
	"sort"
	"sync"
	"unsafe"

	"github.com/google/btree"
	"github.com/indextable/indextable/kv"
)

// MemoryStore is the default Store: an ordered in-memory B-tree guarded by a
// read/write mutex. It is safe for concurrent use and its Atomicity is
// unbounded: any valid batch applies all-or-nothing.
//
// Apply copies every key and value it stores, and stored slices are never
// modified afterwards, so Get, GetMany and Scan return them without
// copying; callers must not modify them (as Store says).
type MemoryStore struct {
	mu     sync.RWMutex
	tree   *btree.BTreeG[memItem] // nil once closed
	chunks sync.Pool              // *[]memItem of capacity memChunk, for Scan
	// expected is the stored item an expectation last read (p nil: none),
	// kept under mu until a batch writes its key: every write of a table
	// on an unbounded store expects the one schema version key, which so
	// costs no tree lookup.
	expected memItem
	undo     []memUndo // Apply's, kept for the next batch
}

// memItem is one stored pair: its key and value are the two parts of one
// allocation at p. Kept as a pointer and two lengths, an item takes 16 bytes
// of a tree node rather than the 48 of two slices.
type memItem struct {
	p          *byte
	klen, vlen uint32
}

// memKey returns the item that a lookup of key compares with. A key too
// long to be stored (see memMaxLen) is cut to memMaxLen bytes, which no
// stored key is equal to and none lies between, so a lookup of it misses
// and a scan from it starts where it would.
func memKey(key []byte) memItem {
	return memItem{p: unsafe.SliceData(key), klen: uint32(min(uint64(len(key)), memMaxLen))}
}

func (it memItem) key() []byte { return unsafe.Slice(it.p, it.klen) }

// value returns the item's value; nil for a lookup key or a missing item,
// else non-nil even when empty. A slice at its end keeps the start of the
// allocation as its pointer, so it never points past it.
func (it memItem) value() []byte {
	if it.p == nil {
		return nil
	}
	return unsafe.Slice(it.p, uint(it.klen)+uint(it.vlen))[it.klen:]
}

func memLess(a, b memItem) bool { return bytes.Compare(a.key(), b.key()) < 0 }

const (
	memDegree     = 32 // B-tree degree
	memChunk      = 64 // most entries Scan collects under one read lock
	memFirstChunk = 4  // entries in a scan's first chunk

	memMaxLen uint64 = math.MaxUint32 // keys and values are shorter
)

var (
	_ kv.StableStore = (*MemoryStore)(nil)

	errMemClosed   = fmt.Errorf("memory store: %w", ErrClosed)
	errMemNotFound = fmt.Errorf("memory store: %w", ErrNotFound)
)

// NewMemoryStore returns a new, empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{tree: btree.NewG(memDegree, memLess)}
}

func memCtxErr(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("memory store: %w", checkContext(ctx))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory store: %w", err)
	}
	return nil
}

// Get returns the value stored under key, or an error wrapping
// ErrNotFound.
func (m *MemoryStore) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := memCtxErr(ctx); err != nil {
		return nil, err
	}
	m.mu.RLock()
	if m.tree == nil {
		m.mu.RUnlock()
		return nil, errMemClosed
	}
	it, ok := m.tree.Get(memKey(key))
	m.mu.RUnlock()
	if !ok {
		return nil, errMemNotFound // no key in it: a miss is common and must be cheap
	}
	return it.value(), nil // never nil: Apply stores an empty value as an empty slice
}

// GetMany appends the values stored under keys to dst, in the order of
// keys, with nil for each absent key. It reads all keys under one read
// lock, so the values are consistent with each other.
func (m *MemoryStore) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if err := memCtxErr(ctx); err != nil {
		return dst, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.tree == nil {
		return dst, errMemClosed
	}
	for _, k := range keys {
		it, _ := m.tree.Get(memKey(k))
		dst = append(dst, it.value()) // nil when absent
	}
	return dst, nil
}

// Scan yields the entries of r. It collects up to 64 entries at a time
// under the read lock and yields them with the lock released, so the loop
// body may read and write the store; each chunk resumes after the last key
// yielded. The yielded slices are the store's own and must not be modified.
func (m *MemoryStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		// Chunks grow from memFirstChunk to memChunk entries, so a short scan
		// (a point lookup through an index) costs little; a scan with a Limit
		// starts with a chunk of that many, up to memChunk.
		pooled, _ := m.chunks.Get().(*[]memItem)
		if pooled == nil {
			pooled = new([]memItem)
			*pooled = make([]memItem, 0, memChunk)
		}
		defer m.chunks.Put(pooled)
		chunk := *pooled
		defer clear(chunk[:cap(chunk)]) // drop references to stored data
		after, left, n := r.After, r.Limit, memFirstChunk
		if r.Limit > 0 {
			// The caller said how many entries it needs: no guess to make.
			n = min(r.Limit, memChunk)
		}
		for {
			if err := memCtxErr(ctx); err != nil {
				yield(kv.Entry{}, err)
				return
			}
			if r.Limit > 0 && left < n {
				n = left
			}
			var err error
			if chunk, err = m.scanChunk(r, after, chunk[:0], n); err != nil {
				yield(kv.Entry{}, err)
				return
			}
			for _, it := range chunk {
				if !yield(kv.Entry{Key: it.key(), Value: it.value()}, nil) {
					return
				}
			}
			left -= len(chunk)
			if len(chunk) < n || (r.Limit > 0 && left == 0) {
				return
			}
			after = chunk[len(chunk)-1].key()
			n = min(2*n, memChunk)
		}
	}
}

// scanChunk appends to dst up to n entries of r that come strictly after
// after in scan order (from the start of r when after is nil).
func (m *MemoryStore) scanChunk(r kv.ScanRange, after []byte, dst []memItem, n int) ([]memItem, error) {
	// The walk starts at pivot, skipping a key equal to it when skip is set,
	// and stops at stop (exclusive both ways: End going up, below Start going
	// down).
	var pivot, stop []byte
	skip := false
	if r.Reverse {
		pivot, stop = r.End, r.Start
		if after != nil && (pivot == nil || bytes.Compare(after, pivot) < 0) {
			pivot = after
		}
		skip = pivot != nil
	} else {
		pivot, stop = r.Start, r.End
		if after != nil && (pivot == nil || bytes.Compare(after, pivot) >= 0) {
			pivot, skip = after, true
		}
	}
	// The walk collects n entries whatever their keys; those past stop are
	// cut off after it, by a binary search of the chunk (keys in walk order
	// pass stop once), so an entry's key is read only if the search reads it.
	start := len(dst)
	visit := func(it memItem) bool {
		if skip {
			skip = false
			if bytes.Equal(it.key(), pivot) {
				return true
			}
		}
		dst = append(dst, it)
		return len(dst)-start < n
	}
	if err := m.walk(r.Reverse, pivot, visit); err != nil {
		return dst, err
	}
	if stop == nil {
		return dst, nil
	}
	walked := dst[start:]
	past := sort.Search(len(walked), func(i int) bool {
		c := bytes.Compare(walked[i].key(), stop)
		return (!r.Reverse && c >= 0) || (r.Reverse && c < 0)
	})
	clear(walked[past:]) // drop references to stored data
	return dst[:start+past], nil
}

// walk visits the stored items from pivot (from the first or, in reverse,
// the last when nil), under the read lock.
func (m *MemoryStore) walk(reverse bool, pivot []byte, visit func(memItem) bool) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.tree == nil:
		return errMemClosed
	case reverse && pivot == nil:
		m.tree.Descend(visit)
	case reverse:
		m.tree.DescendLessOrEqual(memKey(pivot), visit)
	case pivot == nil:
		m.tree.Ascend(visit)
	default:
		m.tree.AscendGreaterOrEqual(memKey(pivot), visit)
	}
	return nil
}

// Apply applies b atomically. Under the write lock it checks every
// expectation before any write can be seen; a failed expectation returns an
// error wrapping ErrConflict that names the key, and nothing is applied.
//
// In a batch of up to memFuseOps operations, an expectation on a key the
// batch writes is checked against what the write replaces, so that an
// insert (which expects its record absent) or an update (which expects the
// record it read) finds the record's key in the tree once, not twice; a
// failed one undoes the writes made before it, still under the lock.
func (m *MemoryStore) Apply(ctx context.Context, b *kv.Batch) error {
	if err := memCtxErr(ctx); err != nil {
		return err
	}
	ops := b.Ops()
	for _, op := range ops {
		if uint64(len(op.Key)) >= memMaxLen || uint64(len(op.Value)) >= memMaxLen {
			return fmt.Errorf("%w: memory store: a key or value of %d bytes (at most 4 GiB - 2)", ErrInvalidBatch, max(len(op.Key), len(op.Value)))
		}
	}
	if err := kv.CheckBatch(b); err != nil {
		return err
	}
	fuse := len(ops) <= memFuseOps
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tree == nil {
		return errMemClosed
	}
	for _, op := range ops {
		if op.IsWrite() || fuse && writes(ops, op.Key) {
			continue
		}
		if err := kv.CheckExpectation(op, m.current(op.Key).value()); err != nil {
			return fmt.Errorf("memory store: %w", err)
		}
	}
	undo := m.undo[:0]
	defer func() {
		clear(undo) // drop references to stored data
		m.undo = undo[:0]
	}()
	for _, op := range ops {
		if !op.IsWrite() {
			continue
		}
		if m.expected.p != nil && bytes.Equal(op.Key, m.expected.key()) {
			m.expected = memItem{}
		}
		var old memItem
		if op.Kind == kv.OpPut {
			buf := make([]byte, max(len(op.Key)+len(op.Value), 1)) // p is never nil
			copy(buf[copy(buf, op.Key):], op.Value)
			old, _ = m.tree.ReplaceOrInsert(memItem{p: &buf[0], klen: uint32(len(op.Key)), vlen: uint32(len(op.Value))})
		} else {
			old, _ = m.tree.Delete(memKey(op.Key))
		}
		if !fuse {
			continue
		}
		undo = append(undo, memUndo{key: op.Key, old: old})
		if err := checkFused(ops, op.Key, old.value()); err != nil {
			m.rollBack(undo)
			return fmt.Errorf("memory store: %w", err)
		}
	}
	return nil
}

// memFuseOps is the most operations of a batch whose expectations Apply
// checks at the writes of their keys (see Apply): finding them is a scan
// of the batch for each expectation.
const memFuseOps = 16

// memUndo is what a write of a batch replaced: old (p nil: nothing) at key.
type memUndo struct {
	key []byte
	old memItem
}

// writes reports whether ops put or delete key.
func writes(ops []kv.Op, key []byte) bool {
	for _, op := range ops {
		if op.IsWrite() && bytes.Equal(op.Key, key) {
			return true
		}
	}
	return false
}

// checkFused checks the expectations of ops on key, which a write found
// holding current (nil: absent).
func checkFused(ops []kv.Op, key, current []byte) error {
	for _, op := range ops {
		if !op.IsWrite() && bytes.Equal(op.Key, key) {
			if err := kv.CheckExpectation(op, current); err != nil {
				return err
			}
		}
	}
	return nil
}

// current returns the stored item at key (p nil: none), from the item an
// expectation last read when it is key's.
func (m *MemoryStore) current(key []byte) memItem {
	if it := m.expected; it.p != nil && bytes.Equal(key, it.key()) {
		return it
	}
	it, _ := m.tree.Get(memKey(key))
	if it.p != nil {
		m.expected = it
	}
	return it
}

// rollBack undoes the writes of undo, the last first.
func (m *MemoryStore) rollBack(undo []memUndo) {
	m.expected = memItem{}
	for i := len(undo) - 1; i >= 0; i-- {
		if u := undo[i]; u.old.p != nil {
			m.tree.ReplaceOrInsert(u.old)
		} else {
			m.tree.Delete(memKey(u.key))
		}
	}
}

// StableValues returns true: Apply copies what it stores into memory that
// is never written again, so what reads return may be kept
// (kv.StableStore).
func (m *MemoryStore) StableValues() bool { return true }

// Atomicity returns the zero Atomicity: any batch applies atomically.
func (m *MemoryStore) Atomicity() kv.Atomicity { return kv.Atomicity{} }

// Close drops the stored data. Later calls return ErrClosed; a second Close
// returns nil.
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	m.tree, m.expected = nil, memItem{}
	m.mu.Unlock()
	return nil
}

// Len returns the number of stored keys; 0 once closed.
func (m *MemoryStore) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.tree == nil {
		return 0
	}
	return m.tree.Len()
}
