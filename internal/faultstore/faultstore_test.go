package faultstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	bg     = context.Background()
	allOps = []faultstore.Op{faultstore.Get, faultstore.GetMany, faultstore.Scan, faultstore.Apply}
)

// TestConformance shows that a Store with no fault set is transparent.
func TestConformance(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) kv.Store {
		return faultstore.New(indextable.NewMemoryStore())
	})
}

// newStore returns a fault store over a memory store holding key "k".
func newStore(t *testing.T) *faultstore.Store {
	t.Helper()
	inner := indextable.NewMemoryStore()
	var b kv.Batch
	b.Put([]byte("k"), []byte("v"))
	require.NoError(t, inner.Apply(bg, &b))
	t.Cleanup(func() { _ = inner.Close() })
	return faultstore.New(inner)
}

// call makes one call of op through s; the i-th Apply puts key "a<i>".
func call(s kv.Store, op faultstore.Op, i int) error {
	switch op {
	case faultstore.Get:
		_, err := s.Get(bg, []byte("k"))
		return err
	case faultstore.GetMany:
		vals, err := s.GetMany(bg, [][]byte{[]byte("k"), []byte("absent")}, nil)
		if err == nil && len(vals) != 2 {
			return fmt.Errorf("GetMany returned %d values", len(vals))
		}
		return err
	case faultstore.Scan:
		for _, err := range s.Scan(bg, kv.ScanRange{}) {
			if err != nil {
				return err
			}
		}
		return nil
	case faultstore.Apply:
		var b kv.Batch
		b.Put(applyKey(i), []byte("v"))
		return s.Apply(bg, &b)
	}
	panic(op)
}

func applyKey(i int) []byte { return []byte(fmt.Sprintf("a%d", i)) }

func has(t *testing.T, s kv.Store, key []byte) bool {
	t.Helper()
	_, err := s.Get(bg, key)
	if err != nil {
		require.ErrorIs(t, err, kv.ErrNotFound)
		return false
	}
	return true
}

func TestOpString(t *testing.T) {
	for op, want := range map[faultstore.Op]string{
		faultstore.Get: "Get", faultstore.GetMany: "GetMany", faultstore.Scan: "Scan",
		faultstore.Apply: "Apply", faultstore.Op(9): "Op(9)",
	} {
		assert.Equal(t, want, op.String())
	}
}

func TestFailAt(t *testing.T) {
	for _, op := range allOps {
		t.Run(op.String(), func(t *testing.T) {
			s := newStore(t)
			require.NoError(t, call(s, op, 0), "before any fault point")
			s.FailAt(op, 2) // counted from now: calls 1 and 3 succeed
			for i := 1; i <= 3; i++ {
				err := call(s, op, i)
				if i != 2 {
					require.NoError(t, err, "call %d", i)
					continue
				}
				require.ErrorIs(t, err, faultstore.ErrInjected, "call %d", i)
				require.NotErrorIs(t, err, faultstore.ErrCrashed)
				assert.Contains(t, err.Error(), fmt.Sprintf("%v call 3", op)) // the 3rd since New
			}
			assert.False(t, s.Crashed())
			assert.Equal(t, 4, s.Calls(op))
			for _, other := range allOps {
				if other != op {
					require.NoError(t, call(s, other, 10), "%v is unaffected", other)
				}
			}
			if op == faultstore.Apply {
				inner := s.Inner()
				assert.True(t, has(t, inner, applyKey(1)))
				assert.False(t, has(t, inner, applyKey(2)), "the failed batch was applied")
				assert.True(t, has(t, inner, applyKey(3)))
			}
		})
	}
}

func TestFailAtSeveral(t *testing.T) {
	s := newStore(t)
	s.FailAt(faultstore.Apply, 1)
	s.FailAt(faultstore.Apply, 3)
	s.FailAt(faultstore.Apply, 3) // the same call twice: it fails once
	s.FailAt(faultstore.Get, 2)

	want := []bool{true, false, true, false, false} // Apply calls 1..5 fail?
	for i, fail := range want {
		err := call(s, faultstore.Apply, i+1)
		if fail {
			require.ErrorIs(t, err, faultstore.ErrInjected, "Apply %d", i+1)
			assert.False(t, has(t, s.Inner(), applyKey(i+1)))
		} else {
			require.NoError(t, err, "Apply %d", i+1)
			assert.True(t, has(t, s.Inner(), applyKey(i+1)))
		}
	}
	require.NoError(t, call(s, faultstore.Get, 0))
	require.ErrorIs(t, call(s, faultstore.Get, 0), faultstore.ErrInjected)
	require.NoError(t, call(s, faultstore.Get, 0))
	assert.False(t, s.Crashed())
}

// requireCrashed checks that every call of every kind fails with ErrCrashed.
func requireCrashed(t *testing.T, s *faultstore.Store) {
	t.Helper()
	require.True(t, s.Crashed())
	for _, op := range allOps {
		before := s.Calls(op)
		err := call(s, op, 100)
		require.ErrorIs(t, err, faultstore.ErrCrashed, "%v after the crash", op)
		assert.Equal(t, before+1, s.Calls(op), "a failed call is counted")
	}
	assert.False(t, has(t, s.Inner(), applyKey(100)), "an Apply after the crash reached the store")
	require.ErrorIs(t, s.Close(), faultstore.ErrCrashed)
}

func TestCrashAt(t *testing.T) {
	type test struct {
		op      faultstore.Op
		applied bool
	}
	var tests []test
	for _, op := range allOps {
		tests = append(tests, test{op, false}, test{op, true})
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/applied=%v", tc.op, tc.applied), func(t *testing.T) {
			s := newStore(t)
			require.NoError(t, call(s, tc.op, 0))
			s.CrashAt(tc.op, 2, tc.applied)
			require.NoError(t, call(s, tc.op, 1))
			assert.False(t, s.Crashed())

			err := call(s, tc.op, 2)
			require.ErrorIs(t, err, faultstore.ErrCrashed)
			require.NotErrorIs(t, err, faultstore.ErrInjected)
			assert.Contains(t, err.Error(), fmt.Sprintf("%v call 3", tc.op))
			requireCrashed(t, s)

			// Restart over the inner store, which kept what was applied.
			restarted := faultstore.New(s.Inner())
			assert.False(t, restarted.Crashed())
			assert.True(t, has(t, restarted, []byte("k")))
			if tc.op == faultstore.Apply {
				assert.True(t, has(t, restarted, applyKey(1)))
				assert.Equal(t, tc.applied, has(t, restarted, applyKey(2)),
					"the crashing batch is applied exactly when applied is set")
			}
			for _, op := range allOps {
				require.NoError(t, call(restarted, op, 200), "%v after the restart", op)
			}
		})
	}
}

func TestCrashAtAppliedConflict(t *testing.T) {
	// The crashing batch fails in the inner store: the caller still sees only
	// the crash, and nothing is applied.
	s := newStore(t)
	s.CrashAt(faultstore.Apply, 1, true)
	var b kv.Batch
	b.ExpectAbsent([]byte("k"))
	b.Put([]byte("new"), []byte("v"))
	err := s.Apply(bg, &b)
	require.ErrorIs(t, err, faultstore.ErrCrashed)
	require.NotErrorIs(t, err, kv.ErrConflict)
	assert.False(t, has(t, s.Inner(), []byte("new")))
	requireCrashed(t, s)
}

// TestCrashDuringScan crashes the store from another goroutine while a scan
// is in its loop body: the scan's next pair is ErrCrashed, and its last.
func TestCrashDuringScan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    int // keys in the store
		crashAt int // the entry whose loop body waits for the crash
	}{
		{"first", 10, 1},
		{"middle", 200, 100},
		{"last", 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := indextable.NewMemoryStore()
			t.Cleanup(func() { _ = inner.Close() })
			var b kv.Batch
			for i := range tc.keys {
				b.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v"))
			}
			require.NoError(t, inner.Apply(bg, &b))
			s := faultstore.New(inner)
			s.CrashAt(faultstore.Apply, 1, false)

			reached, crashed := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-reached
				err := call(s, faultstore.Apply, 1)
				assert.ErrorIs(t, err, faultstore.ErrCrashed)
				close(crashed)
			}()

			entries := 0
			var errs []error
			for _, err := range s.Scan(bg, kv.ScanRange{}) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				require.Empty(t, errs, "an entry after the scan's error")
				if entries++; entries == tc.crashAt {
					close(reached)
					<-crashed
				}
			}
			wg.Wait()
			assert.Equal(t, tc.crashAt, entries, "entries yielded")
			require.Len(t, errs, 1)
			require.ErrorIs(t, errs[0], faultstore.ErrCrashed)
			requireCrashed(t, s)
		})
	}
}

func TestScanIteratedAfterCrash(t *testing.T) {
	s := newStore(t)
	seq := s.Scan(bg, kv.ScanRange{}) // the call is made before the crash
	s.CrashAt(faultstore.Get, 1, false)
	require.ErrorIs(t, call(s, faultstore.Get, 0), faultstore.ErrCrashed)
	var errs []error
	for _, err := range seq {
		require.Error(t, err, "an entry after the crash")
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], faultstore.ErrCrashed)
}

func TestCalls(t *testing.T) {
	s := newStore(t)
	for _, op := range allOps {
		assert.Zero(t, s.Calls(op))
	}
	counts := map[faultstore.Op]int{faultstore.Get: 3, faultstore.GetMany: 1, faultstore.Scan: 2, faultstore.Apply: 4}
	s.FailAt(faultstore.Get, 2)
	s.FailAt(faultstore.Apply, 4)
	for op, n := range counts {
		for i := range n {
			_ = call(s, op, i)
		}
	}
	// An iterated scan sequence counts as the one call that made it.
	seq := s.Scan(bg, kv.ScanRange{})
	for range seq {
	}
	for range seq {
	}
	counts[faultstore.Scan]++
	for op, n := range counts {
		assert.Equal(t, n, s.Calls(op), "%v", op)
	}

	s.CrashAt(faultstore.GetMany, 1, false)
	for _, op := range allOps {
		_ = call(s, op, 0)
		counts[op]++
	}
	assert.True(t, s.Crashed())
	for op, n := range counts {
		assert.Equal(t, n, s.Calls(op), "%v, after the crash", op)
	}
}

type boundedStore struct{ *indextable.MemoryStore }

func (boundedStore) Atomicity() kv.Atomicity { return kv.Atomicity{MaxOps: 3} }

func TestAtomicity(t *testing.T) {
	s := faultstore.New(boundedStore{indextable.NewMemoryStore()})
	t.Cleanup(func() { _ = s.Inner().Close() })
	assert.Equal(t, 3, s.Atomicity().MaxOps)
	s.CrashAt(faultstore.Get, 1, false)
	_ = call(s, faultstore.Get, 0)
	require.True(t, s.Crashed())
	assert.Equal(t, 3, s.Atomicity().MaxOps, "Atomicity never fails")
}

func TestBadCallNumber(t *testing.T) {
	s := newStore(t)
	assert.Panics(t, func() { s.FailAt(faultstore.Get, 0) })
	assert.Panics(t, func() { s.CrashAt(faultstore.Apply, -1, true) })
}
