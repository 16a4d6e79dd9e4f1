package indextable_test

import (
	"context"
	"encoding/binary"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/stretchr/testify/require"
)

// hintTable opens a table of people on s, whose town index lies in the
// towns' partitions, so that every write queues a change.
func hintTable(t *testing.T, s it.Store) *it.Table[person] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[person]{{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy}}})
	require.NoError(t, err)
	return tbl
}

// keysIn returns the keys of s in key space space.
func keysIn(t *testing.T, s it.Store, space it.KeySpace) [][]byte {
	t.Helper()
	var keys [][]byte
	for e, err := range s.Scan(context.Background(), it.ScanRange{}) {
		require.NoError(t, err)
		if k, ok := it.ParseKey(e.Key); ok && k.Space == space {
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
	require.Empty(t, keysIn(t, mem, it.SpaceHints))
	require.Empty(t, keysIn(t, mem, it.SpaceQueue))
	require.Empty(t, keysIn(t, mem, it.SpaceRecords))

	fs.CrashAt(faultstore.Apply, 2, false) // the batch, after its hint
	_, err = tbl.Insert(ctx, p)
	require.ErrorIs(t, err, faultstore.ErrCrashed)
	hints := keysIn(t, mem, it.SpaceHints)
	require.Len(t, hints, 1, "the hint of a change never committed")
	require.Empty(t, keysIn(t, mem, it.SpaceQueue))

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
	require.Len(t, keysIn(t, mem, it.SpaceHints), 1, "a young hint: its writer may still commit")

	var b it.Batch
	b.Put(hints[0], aged(time.Now().Add(-2*time.Minute)))
	require.NoError(t, mem.Apply(ctx, &b))
	_, err = after.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Empty(t, keysIn(t, mem, it.SpaceHints), "an old hint without a change")

	// The same write goes through, and its hint goes with its change.
	_, err = after.Insert(ctx, p)
	require.NoError(t, err)
	require.Len(t, keysIn(t, mem, it.SpaceHints), 1)
	require.Len(t, keysIn(t, mem, it.SpaceQueue), 1)
	n, err = after.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, keysIn(t, mem, it.SpaceHints))
	require.Equal(t, []person{p}, collect(t, after, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}}))
}

// TestSweepHintsOldChanges: a change that has no hint (queued by a
// version before hints, say) is found by the sweep of a table's first
// pass once it is older than a minute, and applied; a younger one, whose
// hint may be on its way, is left for a later sweep.
func TestSweepHintsOldChanges(t *testing.T) {
	ctx := context.Background()
	mem := it.NewMemoryStore()
	tbl := hintTable(t, partitionedStore(mem))
	for id, town := range []string{"Oslo", "Bergen"} {
		_, err := tbl.Insert(ctx, person{ID: id, Town: town})
		require.NoError(t, err)
	}
	// Drop the hints; make the first change two minutes old.
	var b it.Batch
	for _, k := range keysIn(t, mem, it.SpaceHints) {
		b.Delete(k)
	}
	changes := keysIn(t, mem, it.SpaceQueue)
	require.Len(t, changes, 2)
	old, err := mem.Get(ctx, changes[0])
	require.NoError(t, err)
	_, n := binary.Uvarint(old[1:])
	rest := old[1+n:]
	b.Put(changes[0], append(binary.AppendUvarint([]byte{old[0]}, uint64(time.Now().Add(-2*time.Minute).UnixNano())), rest...))
	require.NoError(t, mem.Apply(ctx, &b))

	fresh := hintTable(t, partitionedStore(mem)) // a new process: its first pass sweeps
	applied, err := fresh.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, applied, "the old change")
	require.Equal(t, [][]byte{changes[1]}, keysIn(t, mem, it.SpaceQueue))
	applied, err = fresh.ApplyPending(ctx, it.MaintainerOptions{SweepInterval: time.Nanosecond})
	require.NoError(t, err)
	require.Zero(t, applied, "a young change without a hint waits for a sweep after it ages")
}

// queueScans counts the scans of a whole queue: on a partitioned store,
// reads of every partition.
type queueScans struct {
	it.Store
	wide atomic.Int64
}

func (s *queueScans) Scan(ctx context.Context, r it.ScanRange) iter.Seq2[it.Entry, error] {
	if k, ok := it.ParseKey(r.Start); ok && k.Space == it.SpaceQueue && k.Lead == nil {
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
