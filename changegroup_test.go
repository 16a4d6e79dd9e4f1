package indextable_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// TestReplayedChangesAreHarmless puts change records back after they were
// applied, older than the record's current state, and applies them again:
// the indexes stay as the record is.
func TestReplayedChangesAreHarmless(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: eventualIndexes(personIndexes())})
	require.NoError(t, err)
	queue := func() map[string]string {
		out := map[string]string{}
		for k, v := range storeDump(t, s) {
			if tup, _ := kv.DecodeTuple([]byte(k)); tup[1] == int64(3) {
				out[k] = v
			}
		}
		return out
	}
	var replay []map[string]string
	for i, town := range []string{"R", "S", "T"} {
		_, err := tbl.Upsert(ctx, person{ID: 1, Town: town, Name: "A", Tags: []string{town}, Score: i})
		require.NoError(t, err)
		replay = append(replay, queue())
		_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
	}
	indexed := storeDump(t, s)
	for _, changes := range replay {
		var b kv.Batch
		for k, v := range changes {
			b.Put([]byte(k), []byte(v))
		}
		require.NoError(t, s.Apply(ctx, &b))
		n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		require.Equal(t, len(changes), n)
		require.Equal(t, indexed, storeDump(t, s))
	}
	model := map[int]person{1: {ID: 1, Town: "T", Name: "A", Tags: []string{"T"}, Score: 2}}
	for _, ix := range personIndexes() {
		checkIndex(t, tbl, model, ix.Name, nil)
	}
}

// hookedStore is a memory store with a bounded atomicity scope, which it
// enforces, and hooks into a maintainer applying in steps: afterMarker runs
// once, right after the marker is written (a batch of an expectation and
// one put into the queue), and beforeMutations once, before the first
// batch without an expectation (the first piece of mutations).
type hookedStore struct {
	*it.MemoryStore
	scope                        kv.Atomicity
	afterMarker, beforeMutations func()
}

func (s *hookedStore) Atomicity() kv.Atomicity { return s.scope }

func (s *hookedStore) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.scope.Allows(b); err != nil {
		return err
	}
	ops := b.Ops()
	if f := s.beforeMutations; f != nil && !slices.ContainsFunc(ops, func(op kv.Op) bool { return !op.IsWrite() }) {
		s.beforeMutations = nil
		f()
	}
	err := s.MemoryStore.Apply(ctx, b)
	if f := s.afterMarker; f != nil && err == nil && len(ops) == 2 && !ops[0].IsWrite() && ops[1].Kind == kv.OpPut {
		if k, ok := kv.ParseKey(ops[1].Key); ok && k.Space == kv.SpaceQueue {
			s.afterMarker = nil
			f()
		}
	}
	return err
}

// tenTagsQueued returns a table over a store of 8 operations a batch that
// holds record 1 with ten tags: too many for one batch, so the update fell
// back to the queue, and a maintainer must apply it in steps.
func tenTagsQueued(t *testing.T) (*hookedStore, *it.Table[person], []string) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{MaxOps: 8}}
	tbl := openWith(t, s, it.Index[person]{Name: "tags", Fields: []string{"Tags"}, MultiValued: true})
	_, err := tbl.Insert(ctx, person{ID: 1})
	require.NoError(t, err)
	ten := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	_, err = tbl.Update(ctx, person{ID: 1, Tags: ten}) // too big: falls back
	require.NoError(t, err)
	return s, tbl, ten
}

// TestApplyInStepsRacingASynchronousWrite: on a bounded store, a write that
// fits (so queues nothing) lands between the maintainer's read of a record
// and its mutations, which put back an entry the write removed. The marker
// the maintainer wrote first makes the next pass delete it.
func TestApplyInStepsRacingASynchronousWrite(t *testing.T) {
	ctx := context.Background()
	s, tbl, ten := tenTagsQueued(t)
	s.beforeMutations = func() {
		_, err := tbl.Update(ctx, person{ID: 1, Tags: ten[:9]}) // fits: synchronous
		require.NoError(t, err)
	}
	storetest.Drain(t, tbl)
	require.Empty(t, collect(t, tbl, it.Query{Index: "tags", Eq: it.Tuple{"j"}, Covered: true}))
	requireNoDrift(t, tbl)
}

// TestManyChangesOfOneRecordOnABoundedStore: more changes of one record
// than one batch can remove are applied over several batches, and a
// record whose changes cannot be applied does not hold up the others.
func TestManyChangesOfOneRecordOnABoundedStore(t *testing.T) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{MaxOps: 20}}
	tbl := openWith(t, s, it.Index[person]{Name: "town", Fields: []string{"Town"}, Consistency: it.Eventual})
	for i := range 15 {
		_, err := tbl.Upsert(ctx, person{ID: 1, Town: fmt.Sprint("T", i)})
		require.NoError(t, err)
		_, err = tbl.Upsert(ctx, person{ID: 2, Town: fmt.Sprint("T", i)})
		require.NoError(t, err)
	}
	storetest.Drain(t, tbl)
	require.Equal(t, []person{{ID: 1, Town: "T14"}, {ID: 2, Town: "T14"}}, collect(t, tbl, it.Query{Index: "town"}))

	// A change record that does not decode is logged and left.
	var b kv.Batch
	b.Put(mustKey(t, "people", 3, 0, 7), []byte{0xEE})
	require.NoError(t, s.Apply(ctx, &b))
	_, err := tbl.Upsert(ctx, person{ID: 1, Town: "U"})
	require.NoError(t, err)
	var logged syncBuffer
	n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Contains(t, logged.String(), "change record cannot be read")
}

// TestApplyInStepsUnderAByteBound: with a bound on batch bytes, the
// marker's own size decides whether applying in steps fits; every change is
// applied and no marker is left, whatever the record's size.
func TestApplyInStepsUnderAByteBound(t *testing.T) {
	ctx := context.Background()
	queued, refused := 0, 0
	for maxBytes := 300; maxBytes <= 1500; maxBytes += 10 {
		s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{MaxBytes: maxBytes}}
		// Each tag's entry is a full copy: the synchronous batch is many
		// copies of the record, the maintainer's few.
		tbl := openWith(t, s, it.Index[person]{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.FullCopy})
		for i := range 4 {
			p := person{ID: 1, Tags: []string{"a", "b", "c", "d", "e", fmt.Sprint(i)}, Note: strings.Repeat("n", 10*i)}
			_, err := tbl.Upsert(ctx, p)
			if errors.Is(err, it.ErrInvalidBatch) {
				refused++ // refused whole: nothing to apply
				continue
			}
			require.NoError(t, err, "MaxBytes %d", maxBytes)
		}
		lag, err := tbl.Lag(ctx)
		require.NoError(t, err)
		queued += lag.Pending
		storetest.Drain(t, tbl)
		requireNoDrift(t, tbl)
	}
	t.Logf("%d changes queued, %d writes refused", queued, refused)
	require.Positive(t, queued)
	require.Positive(t, refused)
}

// TestOldestChangesOfARecordGoFirst: when not all of a record's changes
// fit one batch, the maintainer applies the oldest; it took the first by
// change ID, which is random, so a change could be passed over pass after
// pass while younger ones went.
func TestOldestChangesOfARecordGoFirst(t *testing.T) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{MaxOps: 20}}
	tbl := openWith(t, s, it.Index[person]{Name: "town", Fields: []string{"Town"}, Consistency: it.Eventual})
	for i := range 15 {
		_, err := tbl.Upsert(ctx, person{ID: 1, Town: fmt.Sprint("T", i)})
		require.NoError(t, err)
	}
	queued := func() map[string]int64 {
		out := map[string]int64{}
		for k := range queuedChanges(t, s) {
			v, err := s.Get(ctx, []byte(k))
			require.NoError(t, err)
			ns, n := binary.Uvarint(v[1:])
			require.Positive(t, n)
			out[k] = int64(ns)
		}
		return out
	}
	before := queued()
	n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Positive(t, n)
	after := queued()
	require.Len(t, after, len(before)-n)
	for gone, at := range before {
		if _, ok := after[gone]; ok {
			continue
		}
		for _, left := range after {
			require.LessOrEqual(t, at, left, "a change was applied before an older one")
		}
	}
	storetest.Drain(t, tbl)
	require.Equal(t, []person{{ID: 1, Town: "T14"}}, collect(t, tbl, it.Query{Index: "town"}))
}

// TestOvertakenApplyInStepsTradesItsChangesForItsMarker: on a bounded store,
// a write that lands while a record's mutations go in pieces makes the
// last step conflict. The change records go all the same (their mutations
// are in), and the marker stays for the version read; they stayed too,
// so a record under constant writes kept every change it ever queued.
func TestOvertakenApplyInStepsTradesItsChangesForItsMarker(t *testing.T) {
	ctx := context.Background()
	s, tbl, ten := tenTagsQueued(t)
	queued := queuedChanges(t, s)
	require.Len(t, queued, 1)
	s.beforeMutations = func() {
		_, err := tbl.Update(ctx, person{ID: 1, Tags: ten[:9]}) // fits: synchronous
		require.NoError(t, err)
	}
	n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	now := queuedChanges(t, s)
	require.Len(t, now, 1, "the marker alone")
	for k := range queued {
		require.False(t, now[k], "the change record stays")
	}
	storetest.Drain(t, tbl)
	require.Empty(t, collect(t, tbl, it.Query{Index: "tags", Eq: it.Tuple{"j"}, Covered: true}))
	requireNoDrift(t, tbl)
}
