// Package countingstore wraps a Store and counts the calls made to it, so
// examples and tests can show what a read or a write costs in lookups.
package countingstore

import (
	"context"
	"iter"
	"sync/atomic"

	"github.com/indextable/indextable/kv"
)

// Counts is a snapshot of the calls made through a Store.
type Counts struct {
	Gets        int64 // Get calls
	GetManys    int64 // GetMany calls
	ManyKeys    int64 // keys asked for by GetMany
	Scans       int64 // Scan calls
	ScanEntries int64 // entries yielded by scans
	Applies     int64 // Apply calls
	Ops         int64 // operations in applied batches
}

// Lookups is the number of store round trips for reads: gets, batched gets
// and scans.
func (c Counts) Lookups() int64 { return c.Gets + c.GetManys + c.Scans }

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{c.Gets - o.Gets, c.GetManys - o.GetManys, c.ManyKeys - o.ManyKeys,
		c.Scans - o.Scans, c.ScanEntries - o.ScanEntries, c.Applies - o.Applies, c.Ops - o.Ops}
}

// Store is a kv.Store that counts the calls made to the one it
// wraps.
type Store struct {
	kv.Store
	gets, getManys, manyKeys, scans, scanEntries, applies, ops atomic.Int64
}

// New wraps s.
func New(s kv.Store) *Store { return &Store{Store: s} }

// Counts returns the calls counted so far.
func (s *Store) Counts() Counts {
	return Counts{s.gets.Load(), s.getManys.Load(), s.manyKeys.Load(), s.scans.Load(),
		s.scanEntries.Load(), s.applies.Load(), s.ops.Load()}
}

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

// GetMany implements kv.Store.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	s.getManys.Add(1)
	s.manyKeys.Add(int64(len(keys)))
	return s.Store.GetMany(ctx, keys, dst)
}

// Scan implements kv.Store.
func (s *Store) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	s.scans.Add(1)
	return func(yield func(kv.Entry, error) bool) {
		for e, err := range s.Store.Scan(ctx, r) {
			if err == nil {
				s.scanEntries.Add(1)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// Apply implements kv.Store.
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	s.applies.Add(1)
	s.ops.Add(int64(b.Len()))
	return s.Store.Apply(ctx, b)
}
