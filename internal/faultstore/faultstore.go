// Package faultstore wraps a kv.Store and injects faults into it,
// so tests can simulate a store call failing and the process crashing
// between, or in the middle of, its writes.
//
// FailAt makes one chosen call fail with ErrInjected. CrashAt simulates the
// process dying at a chosen call: that call, and every call after it, fails
// with ErrCrashed, while the wrapped store keeps what was applied before the
// crash. A test "restarts" by wrapping Inner again (or using it directly)
// and checks that what it finds there is consistent.
//
// Calls are counted per Op from New, and fault points are set relative to
// the count when they are set: FailAt(Apply, 1) fails the next Apply.
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/indextable/indextable/kv"
)

// Op is a kind of store call.
type Op int

// The kinds of store call that faults can be injected into.
const (
	// Get is a call of Store.Get.
	Get Op = iota
	// GetMany is a call of Store.GetMany.
	GetMany
	// Scan is a call of Store.Scan; the call is counted, and its fault
	// decided, when Scan is called, not when the sequence is iterated.
	Scan
	// Apply is a call of Store.Apply.
	Apply

	numOps = iota
)

// String names the op.
func (op Op) String() string {
	switch op {
	case Get:
		return "Get"
	case GetMany:
		return "GetMany"
	case Scan:
		return "Scan"
	case Apply:
		return "Apply"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

var (
	// ErrInjected is wrapped by the error of a call that FailAt made fail
	// once.
	ErrInjected = errors.New("faultstore: injected fault")
	// ErrCrashed is wrapped by the error of the call that CrashAt chose and
	// of every call after it.
	ErrCrashed = errors.New("faultstore: process crashed")
)

// point is a pending fault: the at-th call of op since New.
type point struct {
	op      Op
	at      int
	crash   bool
	applied bool
}

// Store is a kv.Store that passes calls through to the store it
// wraps, except for those that FailAt and CrashAt choose. It is safe for
// concurrent use.
type Store struct {
	inner kv.Store

	mu      sync.Mutex
	calls   [numOps]int
	points  []point
	crashed bool
}

var _ kv.Store = (*Store)(nil)

// New wraps inner, with no faults set.
func New(inner kv.Store) *Store { return &Store{inner: inner} }

// Inner returns the wrapped store. After a crash it holds what was applied
// before the crash (and the crashing batch, for CrashAt with applied set),
// so a test restarts by wrapping it again or using it directly.
func (s *Store) Inner() kv.Store { return s.inner }

// FailAt makes the nth call of op, counted from now (1 is the next one),
// fail once with an error wrapping ErrInjected, without reaching the inner
// store. Several points may be pending at once. It panics if n < 1.
func (s *Store) FailAt(op Op, n int) { s.add(op, n, false, false) }

// CrashAt simulates the process dying at the nth call of op, counted from
// now (1 is the next one). When applied is false that call does not reach
// the inner store; when true and op is Apply, the batch is applied to the
// inner store but the caller still gets ErrCrashed: the acknowledgement is
// lost (for other ops applied is ignored). From that call on, every call of
// every kind fails with an error wrapping ErrCrashed, and scans already
// running yield ErrCrashed at their next entry. It panics if n < 1.
func (s *Store) CrashAt(op Op, n int, applied bool) { s.add(op, n, true, applied) }

func (s *Store) add(op Op, n int, crash, applied bool) {
	if n < 1 {
		panic(fmt.Sprintf("faultstore: call number %d of %v, want >= 1", n, op))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points = append(s.points, point{op: op, at: s.calls[op] + n, crash: crash, applied: applied})
}

// Crashed reports whether a crash point has been reached.
func (s *Store) Crashed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

// Calls returns how many calls of op were made since New, failed ones
// included.
func (s *Store) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// begin counts a call of op and decides its fate. It returns a nil error
// when the call should go through to the inner store; otherwise the error
// to return, and applyAnyway when the call must still reach the inner
// store (a crash with applied set, for Apply only). The returned n is the
// call's number.
func (s *Store) begin(op Op) (n int, applyAnyway bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	n = s.calls[op]
	if s.crashed {
		return n, false, crashedErr(op, n)
	}
	var hit point
	found := false
	kept := s.points[:0] // the points not reached by this call
	for _, p := range s.points {
		switch {
		case p.op != op || p.at != n:
			kept = append(kept, p)
		case !found || (p.crash && !hit.crash): // a crash wins over a failure
			hit, found = p, true
		}
	}
	s.points = kept
	switch {
	case !found:
		return n, false, nil
	case hit.crash:
		s.crashed = true
		return n, hit.applied && op == Apply, crashedErr(op, n)
	default:
		return n, false, fmt.Errorf("%w: %v call %d", ErrInjected, op, n)
	}
}

// crashErr returns the error for call n of op when the store has crashed,
// or nil.
func (s *Store) crashErr(op Op, n int) error {
	if s.Crashed() {
		return crashedErr(op, n)
	}
	return nil
}

func crashedErr(op Op, n int) error { return fmt.Errorf("%w: %v call %d", ErrCrashed, op, n) }

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	if _, _, err := s.begin(Get); err != nil {
		return nil, err
	}
	return s.inner.Get(ctx, key)
}

// GetMany implements kv.Store.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if _, _, err := s.begin(GetMany); err != nil {
		return dst, err
	}
	return s.inner.GetMany(ctx, keys, dst)
}

// Scan implements kv.Store. Once the store has crashed the scan
// yields ErrCrashed, as its last pair, in place of its next entry or of its
// normal end.
func (s *Store) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	n, _, err := s.begin(Scan)
	if err != nil {
		return func(yield func(kv.Entry, error) bool) { yield(kv.Entry{}, err) }
	}
	return func(yield func(kv.Entry, error) bool) {
		if err := s.crashErr(Scan, n); err != nil {
			yield(kv.Entry{}, err)
			return
		}
		for e, err := range s.inner.Scan(ctx, r) {
			if cerr := s.crashErr(Scan, n); cerr != nil {
				yield(kv.Entry{}, cerr)
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
		if err := s.crashErr(Scan, n); err != nil {
			yield(kv.Entry{}, err)
		}
	}
}

// Apply implements kv.Store.
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	_, applyAnyway, err := s.begin(Apply)
	if applyAnyway {
		if ierr := s.inner.Apply(ctx, b); ierr != nil {
			return fmt.Errorf("%w (inner store: %v)", err, ierr)
		}
		return err
	}
	if err != nil {
		return err
	}
	return s.inner.Apply(ctx, b)
}

// Atomicity implements kv.Store: it is the inner store's.
func (s *Store) Atomicity() kv.Atomicity { return s.inner.Atomicity() }

// Close implements kv.Store. After a crash it returns an error
// wrapping ErrCrashed and leaves the inner store open, for the test to
// reuse; otherwise it closes the inner store.
func (s *Store) Close() error {
	if s.Crashed() {
		return fmt.Errorf("%w: Close", ErrCrashed)
	}
	return s.inner.Close()
}
