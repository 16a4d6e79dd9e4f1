package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
)

// Store is the ordered key/value store beneath every table: tables and
// their index tables are written to a Store as plain byte keys, and a
// backend implements only this narrow interface.
//
// Keys are arbitrary byte strings (the empty key included) ordered by
// bytes.Compare. Implementations must be safe for concurrent use, must copy
// any key or value they keep, and must honour ctx on every call: a call made
// with a done context returns an error that wraps ctx.Err(). After Close
// every call returns an error that wraps ErrClosed. A Store's methods must
// not write to a table that is stored in it: a table calls them while it
// holds a lock that its writes wait for (see Table.DisableIndex).
//
// Package storetest holds the conformance suite every Store must pass.
type Store interface {
	// Get returns the value stored under key, or an error wrapping
	// ErrNotFound. A present empty value is returned as a non-nil empty
	// slice. The caller may keep the value but must not modify it, so a
	// store may return memory it shares.
	Get(ctx context.Context, key []byte) ([]byte, error)

	// GetMany looks up several keys in one call and appends their values to
	// dst, in the order of keys, with nil for each key that is absent; it
	// returns the extended slice, so a caller can reuse one across calls.
	// Values are read-only, as with Get.
	GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error)

	// Scan yields the entries of r in key order (descending when r.Reverse).
	// An entry's Key and Value are valid only until the loop body returns;
	// copy them to keep them. The loop body may call the store, writes
	// included. A scan is not a snapshot, but every yielded entry is a value
	// that was stored under its key. An error is yielded once, as the last
	// pair.
	Scan(ctx context.Context, r ScanRange) iter.Seq2[Entry, error]

	// Apply applies every operation of b, or none of them. A failed
	// expectation makes Apply return an error wrapping ErrConflict; a batch
	// that Atomicity does not allow, or that writes one key twice, returns an
	// error wrapping ErrInvalidBatch. An error wrapping ErrConflict or
	// ErrInvalidBatch means that nothing of b was applied, which callers
	// rely on to run a write again: a store that cannot tell whether b
	// applied (its answer was lost, and a resend failed an expectation
	// that b itself satisfied) must find out, or return another error.
	// Apply does not keep b.
	Apply(ctx context.Context, b *Batch) error

	// Atomicity says which batches Apply can make atomic.
	Atomicity() Atomicity

	// Close releases the store. Calls after Close return ErrClosed; a second
	// Close returns nil.
	Close() error
}

// StableStore is implemented by a Store whose returned memory is never
// modified or reused: every value of Get and GetMany and every Key and Value
// that Scan yields may be kept for good. Tables then decode records whose
// strings share that memory instead of copying it, as they do on every
// store for what Get returns, which Store lets a caller keep.
// indextable.MemoryStore is one.
//
// A type that embeds a StableStore inherits StableValues: if it overrides
// Get, GetMany or Scan to return memory of its own, it must override
// StableValues too.
type StableStore interface {
	Store
	// StableValues reports whether returned memory may be kept (a wrapper
	// reports what the store it wraps does).
	StableValues() bool
}

// Store errors. Implementations wrap them with what was wrong. Package
// indextable declares the same values under the same names, for its users'
// errors.Is.
var (
	// ErrNotFound reports that a key, or a record, does not exist.
	ErrNotFound = errors.New("indextable: not found")
	// ErrClosed reports a call on a closed Store or table.
	ErrClosed = errors.New("indextable: closed")
	// ErrConflict reports a failed expectation: a value changed since it was
	// read, so the write was not applied.
	ErrConflict = errors.New("indextable: conflict")
	// ErrInvalidBatch reports a batch that the store cannot apply atomically
	// or that touches one key twice.
	ErrInvalidBatch = errors.New("indextable: invalid batch")
	// ErrInvalidArgument reports an argument a call cannot use at all: a
	// store returns it for a nil context (storetest checks that).
	ErrInvalidArgument = errors.New("indextable: invalid argument")
	// ErrReadOnly reports a write to a store opened for reading only (for
	// tools); like ErrClosed, no retry helps.
	ErrReadOnly = errors.New("indextable: read-only store")
)

// Entry is one key/value pair yielded by Store.Scan.
type Entry struct {
	Key   []byte // the entry's key
	Value []byte // its value
}

// ScanRange selects the keys of a scan: Start <= key < End, in ascending
// order, or descending when Reverse is set.
type ScanRange struct {
	// Start is the inclusive lower bound; nil scans from the first key.
	Start []byte
	// End is the exclusive upper bound; nil scans to the last key.
	End []byte
	// Reverse scans from the highest key down.
	Reverse bool
	// Limit stops the scan after that many entries; 0 or less means no
	// limit.
	Limit int
	// After resumes a scan: when non-nil, only keys strictly after it in scan
	// order are yielded (strictly below it when Reverse).
	After []byte
}

// Contains reports whether key lies within r's bounds and after r.After.
func (r ScanRange) Contains(key []byte) bool {
	if r.Start != nil && bytes.Compare(key, r.Start) < 0 {
		return false
	}
	if r.End != nil && bytes.Compare(key, r.End) >= 0 {
		return false
	}
	if r.After != nil {
		c := bytes.Compare(key, r.After)
		if (!r.Reverse && c <= 0) || (r.Reverse && c >= 0) {
			return false
		}
	}
	return true
}

// Atomicity describes the atomicity scope of a Store: which batches its
// Apply can make all-or-nothing. The zero value means any batch of any size
// (an embedded store such as the in-memory one or Pebble). A store whose
// transactions are bounded, such as Azure Table storage's entity group
// transactions (one partition, at most 100 entities written, 4 MiB), fills
// in the bounds, and the index manager plans its writes with Allows. A
// batch's operations are bounded two ways: MaxOps counts every operation,
// for a store whose transactions count their checks too; MaxWrites counts
// puts and deletes, for a store that checks expectations by reading.
type Atomicity struct {
	// Partition, when set, maps a key to its partition; only operations
	// whose keys share one partition can be applied together. A table
	// needs one partition for a record's key and its change records'
	// keys (see KeySpace), which a write commits together, and one for
	// each of its catalog and lease spaces.
	Partition func(key []byte) []byte
	// MaxOps is the most operations in one batch, expectations included;
	// 0 means no bound.
	MaxOps int
	// MaxWrites is the most puts and deletes in one batch; 0 means no
	// bound. Expectations do not count: a batch may hold any number of
	// them besides (within MaxOps, if that is set too).
	MaxWrites int
	// MaxBytes is the most key and value bytes in one batch; 0 means no
	// bound.
	MaxBytes int
	// MaxKeyBytes and MaxValueBytes bound the key and the value of each
	// put; 0 means no bound. A key longer than MaxKeyBytes is never
	// present, so expecting it absent or deleting it is allowed. Tables
	// check their keys and records against them before they write (see
	// Limits of a store in package indextable's documentation), so that
	// a maintainer never meets a key or value it cannot store.
	MaxKeyBytes, MaxValueBytes int
}

// Allows returns nil when a store with this scope can apply b atomically,
// or an error wrapping ErrInvalidBatch that says why not.
func (a Atomicity) Allows(b *Batch) error {
	ops := b.Ops()
	if a.MaxOps > 0 && len(ops) > a.MaxOps {
		return fmt.Errorf("%w: %d operations, atomicity scope allows %d", ErrInvalidBatch, len(ops), a.MaxOps)
	}
	if a.MaxWrites > 0 && len(ops) > a.MaxWrites {
		if writes := b.Writes(); writes > a.MaxWrites {
			return fmt.Errorf("%w: %d puts and deletes, atomicity scope allows %d", ErrInvalidBatch, writes, a.MaxWrites)
		}
	}
	if a.MaxBytes > 0 {
		if n := b.Bytes(); n > a.MaxBytes {
			return fmt.Errorf("%w: %d bytes, atomicity scope allows %d", ErrInvalidBatch, n, a.MaxBytes)
		}
	}
	if a.MaxKeyBytes > 0 || a.MaxValueBytes > 0 {
		for _, op := range ops {
			if op.Kind != OpPut {
				continue
			}
			if a.MaxKeyBytes > 0 && len(op.Key) > a.MaxKeyBytes {
				return fmt.Errorf("%w: a key of %d bytes, the store holds keys of at most %d", ErrInvalidBatch, len(op.Key), a.MaxKeyBytes)
			}
			if a.MaxValueBytes > 0 && len(op.Value) > a.MaxValueBytes {
				return fmt.Errorf("%w: a value of %d bytes, the store holds values of at most %d", ErrInvalidBatch, len(op.Value), a.MaxValueBytes)
			}
		}
	}
	if a.Partition != nil && len(ops) > 1 {
		first := a.Partition(ops[0].Key)
		for _, op := range ops[1:] {
			if p := a.Partition(op.Key); !bytes.Equal(p, first) {
				return fmt.Errorf("%w: keys in partitions %q and %q, atomicity scope is one partition", ErrInvalidBatch, first, p)
			}
		}
	}
	return nil
}
