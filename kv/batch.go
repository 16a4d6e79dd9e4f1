package kv

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"unsafe"
)

// OpKind is the kind of one batch operation.
type OpKind uint8

// Batch operation kinds.
const (
	// OpPut stores Value under Key.
	OpPut OpKind = iota + 1
	// OpDelete removes Key; deleting an absent key is not an error.
	OpDelete
	// OpExpectValue requires Key to hold exactly Value when the batch applies.
	OpExpectValue
	// OpExpectAbsent requires Key to be absent when the batch applies.
	OpExpectAbsent
)

// String names the kind.
func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpExpectValue:
		return "expect-value"
	case OpExpectAbsent:
		return "expect-absent"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one operation of a Batch.
type Op struct {
	Kind  OpKind // what the operation does
	Key   []byte // the key it writes or checks
	Value []byte // the value it puts or expects
}

// IsWrite reports whether the operation changes the store.
func (o Op) IsWrite() bool { return o.Kind == OpPut || o.Kind == OpDelete }

// Batch is an ordered list of writes and expectations that a Store applies
// atomically. Expectations are checked before any write, so an expectation
// and a write may name the same key (compare-and-set); no key may be written
// twice. A Batch does not copy keys or values: leave them unmodified until
// Apply returns. The zero Batch is empty and ready to use, and a nil *Batch
// reads as an empty one.
type Batch struct {
	ops []Op
}

// NewBatch returns a batch of ops, in order. The batch keeps ops, not a
// copy: operations added later may use its spare capacity, and Ops returns
// it.
func NewBatch(ops ...Op) *Batch { return &Batch{ops: ops} }

// Put adds a write of value under key.
func (b *Batch) Put(key, value []byte) { b.ops = append(b.ops, Op{OpPut, key, value}) }

// Delete adds the removal of key.
func (b *Batch) Delete(key []byte) { b.ops = append(b.ops, Op{Kind: OpDelete, Key: key}) }

// ExpectValue adds the condition that key holds exactly value.
func (b *Batch) ExpectValue(key, value []byte) {
	b.ops = append(b.ops, Op{OpExpectValue, key, value})
}

// ExpectAbsent adds the condition that key is absent.
func (b *Batch) ExpectAbsent(key []byte) { b.ops = append(b.ops, Op{Kind: OpExpectAbsent, Key: key}) }

// Add adds ops, in order, whatever their kinds.
func (b *Batch) Add(ops ...Op) { b.ops = append(b.ops, ops...) }

// Ops returns the operations in the order they were added. The slice is the
// batch's own: a change to an element changes the batch.
func (b *Batch) Ops() []Op {
	if b == nil {
		return nil
	}
	return b.ops
}

// Len returns the number of operations.
func (b *Batch) Len() int { return len(b.Ops()) }

// Writes returns the number of puts and deletes (see Atomicity.MaxWrites).
func (b *Batch) Writes() int {
	n := 0
	for _, op := range b.Ops() {
		if op.IsWrite() {
			n++
		}
	}
	return n
}

// Bytes returns the bytes of the operations' keys and values (see
// Atomicity.MaxBytes).
func (b *Batch) Bytes() int {
	n := 0
	for _, op := range b.Ops() {
		n += len(op.Key) + len(op.Value)
	}
	return n
}

// Reset empties the batch for reuse.
func (b *Batch) Reset() { b.ops = b.ops[:0] }

// CheckExpectation reports whether expectation op holds while its key holds
// current (nil when the key is absent, non-nil when present, even empty):
// nil, or an error wrapping ErrConflict that names the key. Stores call it
// for the OpExpectValue and OpExpectAbsent operations of a batch.
func CheckExpectation(op Op, current []byte) error {
	switch {
	case op.Kind == OpExpectAbsent && current != nil:
		return fmt.Errorf("%w: key %q is present", ErrConflict, op.Key)
	case op.Kind == OpExpectValue && (current == nil || !bytes.Equal(current, op.Value)):
		return fmt.Errorf("%w: key %q does not hold the expected value", ErrConflict, op.Key)
	}
	return nil
}

// CheckBatch validates b for any Store: it reports an error wrapping
// ErrInvalidBatch for an unknown operation kind or a key written twice.
// Stores call it at the start of Apply; it allocates nothing for a batch
// of up to 64 writes, and reuses maps for larger ones.
func CheckBatch(b *Batch) error {
	ops := b.Ops()
	var room [64]int32
	writes := room[:0] // the indexes of the writes in ops, while they fit
	n := 0
	for i, op := range ops {
		switch op.Kind {
		case OpPut, OpDelete:
			if n++; n <= len(room) {
				writes = append(writes, int32(i))
			}
		case OpExpectValue, OpExpectAbsent:
		default:
			return fmt.Errorf("%w: operation %d has unknown kind %v", ErrInvalidBatch, i, op.Kind)
		}
	}
	switch {
	case n > len(room):
		return checkKeysOnce(ops, n)
	case n <= 8:
		for j, w := range writes {
			for _, prev := range writes[:j] {
				if bytes.Equal(ops[prev].Key, ops[w].Key) {
					return errWrittenTwice(ops[w].Key)
				}
			}
		}
	default:
		slices.SortFunc(writes, func(x, y int32) int { return bytes.Compare(ops[x].Key, ops[y].Key) })
		for j := 1; j < len(writes); j++ {
			if k := ops[writes[j]].Key; bytes.Equal(ops[writes[j-1]].Key, k) {
				return errWrittenTwice(k)
			}
		}
	}
	return nil
}

// checkKeysOnce reports a key that two of the n writes of ops write.
func checkKeysOnce(ops []Op, n int) error {
	// The keys, unchanged while the map holds them, index it uncopied.
	seen, _ := seenKeys.Get().(map[string]struct{})
	if seen == nil {
		seen = make(map[string]struct{}, n)
	}
	defer func() {
		clear(seen) // it keeps no key
		seenKeys.Put(seen)
	}()
	for _, op := range ops {
		if !op.IsWrite() {
			continue
		}
		k := op.Key
		if _, dup := seen[unsafe.String(unsafe.SliceData(k), len(k))]; dup {
			return errWrittenTwice(k)
		}
		seen[unsafe.String(unsafe.SliceData(k), len(k))] = struct{}{}
	}
	return nil
}

// seenKeys holds maps for checkKeysOnce, empty: a bulk load checks a
// batch of thousands of writes at a time.
var seenKeys sync.Pool

func errWrittenTwice(key []byte) error {
	return fmt.Errorf("%w: key %q written twice", ErrInvalidBatch, key)
}
