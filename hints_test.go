package indextable_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// hintTable opens a table of people on s, whose town index lies in the
// towns' partitions, so that every write queues a change.
func hintTable(t *testing.T, s kv.Store) *it.Table[person] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[person]{SchemaLease: countLease, Name: "people", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[person]{{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy}}})
	require.NoError(t, err)
	return tbl
}

// keysIn returns the keys of s in key space space.
func keysIn(t *testing.T, s kv.Store, space kv.KeySpace) [][]byte {
	t.Helper()
	var keys [][]byte
	for e, err := range s.Scan(context.Background(), kv.ScanRange{}) {
		require.NoError(t, err)
		if k, ok := kv.ParseKey(e.Key); ok && k.Space == space {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// aged returns the value of a hint (see hints.go) written at when.
func aged(when time.Time) []byte {
	return binary.AppendUvarint([]byte{1, 0}, uint64(when.UnixNano()))
}

// TestHintComesFirst: a change's hint is written before its batch, so no
// fault leaves a queued change that nothing points to. When the hint
// fails, the write fails and wrote nothing; when the batch fails after the
// hint, the hint is one without a change: reads, Lag and WaitIndexed see
// no change, a maintainer leaves it while its writer may still commit,
// and removes it once it is older than a minute.
func TestHintComesFirst(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	inner := partitionedStore(mem)
	fs := faultstore.New(inner)
	tbl := hintTable(t, fs)
	p := person{ID: 1, Town: "Oslo"}

	fs.FailAt(faultstore.Apply, 1) // the hint
	_, err := tbl.Insert(ctx, p)
	require.ErrorIs(t, err, faultstore.ErrInjected)
	require.Empty(t, keysIn(t, mem, kv.SpaceHints))
	require.Empty(t, keysIn(t, mem, kv.SpaceQueue))
	require.Empty(t, keysIn(t, mem, kv.SpaceRecords))

	fs.CrashAt(faultstore.Apply, 2, false) // the batch, after its hint
	_, err = tbl.Insert(ctx, p)
	require.ErrorIs(t, err, faultstore.ErrCrashed)
	hints := keysIn(t, mem, kv.SpaceHints)
	require.Len(t, hints, 1, "the hint of a change never committed")
	require.Empty(t, keysIn(t, mem, kv.SpaceQueue))

	after := hintTable(t, inner) // the process restarted
	lag, err := after.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, it.Lag{}, lag)
	require.NoError(t, after.WaitIndexed(ctx))
	got := collect(t, after, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}})
	require.Empty(t, got)

	n, err := after.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, keysIn(t, mem, kv.SpaceHints), 1, "a young hint: its writer may still commit")

	var b kv.Batch
	b.Put(hints[0], aged(time.Now().Add(-2*time.Minute)))
	require.NoError(t, mem.Apply(ctx, &b))
	_, err = after.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Empty(t, keysIn(t, mem, kv.SpaceHints), "an old hint without a change")

	// The same write goes through, and its hint goes with its change.
	_, err = after.Insert(ctx, p)
	require.NoError(t, err)
	require.Len(t, keysIn(t, mem, kv.SpaceHints), 1)
	require.Len(t, keysIn(t, mem, kv.SpaceQueue), 1)
	n, err = after.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, keysIn(t, mem, kv.SpaceHints))
	require.Equal(t, []person{p}, collect(t, after, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}}))
}

// TestSweepHintsChangesWithoutHint: a change that has no hint (queued by
// a version before hints, say) is found by the sweep of a table's first
// pass, and applied; so does Repair.
func TestSweepHintsChangesWithoutHint(t *testing.T) {
	ctx := context.Background()
	for _, repair := range []bool{false, true} {
		mem := it.NewMemoryStore()
		tbl := hintTable(t, partitionedStore(mem))
		for id, town := range []string{"Oslo", "Bergen"} {
			_, err := tbl.Insert(ctx, person{ID: id, Town: town})
			require.NoError(t, err)
		}
		var b kv.Batch
		for _, k := range keysIn(t, mem, kv.SpaceHints) {
			b.Delete(k)
		}
		require.NoError(t, mem.Apply(ctx, &b))
		require.Len(t, keysIn(t, mem, kv.SpaceQueue), 2)

		upgraded := hintTable(t, partitionedStore(mem)) // a new process: its first pass sweeps
		lag, err := upgraded.Lag(ctx)
		require.NoError(t, err)
		require.Zero(t, lag.Pending, "before a sweep, changes without hints are not seen")
		if repair {
			rep, err := upgraded.Repair(ctx, it.VerifyOptions{})
			require.NoError(t, err)
			require.Equal(t, 2, rep.Pending)
			require.Len(t, keysIn(t, mem, kv.SpaceHints), 2)
		}
		applied, err := upgraded.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		require.Equal(t, 2, applied)
		require.Empty(t, keysIn(t, mem, kv.SpaceQueue))
		require.Empty(t, keysIn(t, mem, kv.SpaceHints))
		require.Len(t, collect(t, upgraded, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}}), 1)
	}
}

// queueScans counts the scans of a whole queue: on a partitioned store,
// reads of every partition.
type queueScans struct {
	kv.Store
	wide atomic.Int64
}

func (s *queueScans) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if k, ok := kv.ParseKey(r.Start); ok && k.Space == kv.SpaceQueue && k.Lead == nil {
		s.wide.Add(1)
	}
	return s.Store.Scan(ctx, r)
}

// TestHintsKeepLooksSmall: on a partitioned store, a maintainer's idle
// pass is one scan (of the hints), and a FullCopy read with changes
// pending is two (the hints, then the index), however many records the
// table holds; only the first pass's sweep reads the whole queue.
func TestHintsKeepLooksSmall(t *testing.T) {
	ctx := context.Background()
	for _, records := range []int{10, 1000} {
		qs := &queueScans{Store: partitionedStore(it.NewMemoryStore())}
		cs := countingstore.New(qs)
		tbl := hintTable(t, cs)
		for id := range records {
			_, err := tbl.Insert(ctx, person{ID: id, Town: []string{"Oslo", "Bergen"}[id%2]})
			require.NoError(t, err)
		}
		_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{}) // sweeps, then applies
		require.NoError(t, err)
		require.Equal(t, int64(1), qs.wide.Load(), "the sweep")
		_, err = tbl.Update(ctx, person{ID: records - 2, Town: "Bergen"})
		require.NoError(t, err)

		before := cs.Counts()
		got := collect(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}})
		require.Len(t, got, records/2-1)
		read := cs.Counts().Sub(before)
		require.Equal(t, int64(2), read.Scans, "%d records: a read's scans", records)
		require.Equal(t, int64(1), read.Gets+read.GetManys, "%d records: a check of the one entry whose record has a change", records)

		_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		before = cs.Counts()
		n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		require.Zero(t, n)
		idle := cs.Counts().Sub(before)
		require.Equal(t, countingstore.Counts{Scans: 1}, idle, "%d records: an idle pass", records)
		_, err = tbl.Lag(ctx)
		require.NoError(t, err)
		require.NoError(t, tbl.WaitIndexed(ctx))
		require.Equal(t, int64(1), qs.wide.Load(), "the sweep alone")
	}
}

// hintKeyOf returns the key of the hint of change record key.
func hintKeyOf(t *testing.T, key []byte) []byte {
	k, ok := kv.ParseKey(key)
	require.True(t, ok)
	q, err := kv.EncodeTuple(int64(kv.SpaceQueue))
	require.NoError(t, err)
	h, err := kv.EncodeTuple(int64(kv.SpaceHints))
	require.NoError(t, err)
	rest := key[len(k.Table):]
	require.True(t, bytes.HasPrefix(rest, q))
	return append(append(bytes.Clone(k.Table), h...), rest[len(q):]...)
}

// unhinted returns the change records of s that have no hint and whose
// record has no hinted change either (a marker beside hinted changes is
// fine); on a store that is not partitioned, none is hinted.
func unhinted(t *testing.T, s kv.Store) [][]byte {
	t.Helper()
	hints := map[string]bool{}
	for _, k := range keysIn(t, s, kv.SpaceHints) {
		hints[string(k)] = true
	}
	hinted := map[string]bool{} // records, by Lead: person has one primary key field
	var without [][]byte
	for _, k := range keysIn(t, s, kv.SpaceQueue) {
		pk, ok := kv.ParseKey(k)
		require.True(t, ok)
		if hints[string(hintKeyOf(t, k))] {
			hinted[string(pk.Lead)] = true
		} else {
			without = append(without, k)
		}
	}
	var alone [][]byte
	for _, k := range without {
		if pk, _ := kv.ParseKey(k); !hinted[string(pk.Lead)] {
			alone = append(alone, k)
		}
	}
	return alone
}

// cancelAfter cancels a context once n more batches are applied.
type cancelAfter struct {
	kv.Store
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Apply(ctx context.Context, b *kv.Batch) error {
	err := c.Store.Apply(ctx, b)
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return err
}

// TestStoppedPassLeavesFewHints: a maintainer stopped (its context
// cancelled, as at shutdown) late in a pass leaves behind few hints of the
// changes it applied: it removes them after each batch of changes, not at
// the end of the pass. Those left would make reads check their records,
// and idle passes look at their queue, for a minute.
func TestStoppedPassLeavesFewHints(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	ca := &cancelAfter{Store: partitionedStore(mem)}
	cs := countingstore.New(ca)
	tbl := hintTable(t, cs)
	const records = 300
	for id := range records {
		_, err := tbl.Insert(ctx, person{ID: id, Town: []string{"Oslo", "Bergen"}[id%2]})
		require.NoError(t, err)
	}
	_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{SweepInterval: time.Hour})
	require.NoError(t, err)
	for id := range records {
		_, err := tbl.Update(ctx, person{ID: id, Town: []string{"Bergen", "Oslo"}[id%2]})
		require.NoError(t, err)
	}
	require.Len(t, keysIn(t, mem, kv.SpaceHints), records)
	pctx, cancel := context.WithCancel(ctx)
	ca.cancel = cancel
	ca.n.Store(3 * (records - 10)) // three batches a record (marker, entries, removal)
	n, err := tbl.ApplyPending(pctx, it.MaintainerOptions{SweepInterval: time.Hour})
	t.Logf("stopped pass: applied %d, err %v", n, err)
	left := len(keysIn(t, mem, kv.SpaceQueue))
	hints := len(keysIn(t, mem, kv.SpaceHints))
	t.Logf("changes left %d, hints left %d", left, hints)

	before := cs.Counts()
	n, err = tbl.ApplyPending(ctx, it.MaintainerOptions{SweepInterval: time.Hour})
	require.NoError(t, err)
	c := cs.Counts().Sub(before)
	t.Logf("next pass: applied %d with %d scans, %d applies", n, c.Scans, c.Applies)
	before = cs.Counts()
	n, err = tbl.ApplyPending(ctx, it.MaintainerOptions{SweepInterval: time.Hour})
	require.NoError(t, err)
	c = cs.Counts().Sub(before)
	t.Logf("idle pass: applied %d with %d scans", n, c.Scans)
	before = cs.Counts()
	got := collect(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}})
	c = cs.Counts().Sub(before)
	t.Logf("a read of %d results: %d scans, %d gets, %d getmanys (%d keys)", len(got), c.Scans, c.Gets, c.GetManys, c.ManyKeys)
	require.LessOrEqual(t, hints, left+10, "hints of applied changes left behind by a stopped pass")
}
