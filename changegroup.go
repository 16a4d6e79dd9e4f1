package indextable

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/indextable/indextable/kv"
)

// changeGroup is the pending changes of one record.
type changeGroup struct {
	pk      []byte
	changes []change // oldest first; planGroup may keep only the oldest
	all     []change // every change of the group, as read
	factKey []byte
	fact    []byte        // the record as read; nil: none
	ops     []kv.Op       // the batch that applies them: guard, then mutations
	guard   int           // ops[:guard] expect the record and remove the changes
	inSteps bool          // the index mutations do not fit one batch with the rest
	marker  kv.Op         // when inSteps: the marker applyInSteps writes first
	planned error         // why the changes cannot be planned, if they cannot
	done    bool          // applied
	want    []*indexTable // the indexes the changes' entries are of
	written []change      // the markers its failed tries wrote
	applied []change      // the changes a try applied
}

// sortByAge orders g's changes by when they were queued, oldest first:
// when not all of them fit one batch, the oldest go first, and no change
// is passed over for ever by younger ones (their IDs are random).
func (g *changeGroup) sortByAge() {
	slices.SortStableFunc(g.changes, func(a, b change) int { return a.enqueued.Compare(b.enqueued) })
}

// changesRecord reports whether g's changes touch a record that existed
// before them (an update or a delete, not a new record): whether the first
// of them to be queued had a record before it.
func (g *changeGroup) changesRecord() bool {
	if len(g.changes) == 0 {
		return false
	}
	first := slices.MinFunc(g.changes, func(a, b change) int { return a.enqueued.Compare(b.enqueued) })
	return first.before != nil
}

// planGroup computes the batch that applies the changes of g to the record
// at g.factKey, whose value is g.fact (nil: deleted), or sets g.planned to
// why it cannot. The batch expects the record as read and every change
// record, deletes the change records, and makes the index mutations: the
// expectations and deletions first, the mutations after them, for
// applyInSteps. When the batch does not fit the atomicity scope atom, g is
// marked inSteps, and its changes are cut to the oldest that applyInSteps's
// guard can remove in one batch; the rest wait for the next pass, which
// is safe: each pass deletes the entries of the versions its changes name
// and puts those of the record as it is.
func (t *Table[T]) planGroup(view *indexView, g *changeGroup, atom kv.Atomicity) {
	g.ops = nil
	g.planned = t.planOps(view, g, atom)
}

// planOps is planGroup's work: it returns why the changes cannot be
// planned, if they cannot.
func (t *Table[T]) planOps(view *indexView, g *changeGroup, atom kv.Atomicity) error {
	fact := g.fact
	for {
		if err := t.planChanges(view, g, g.factKey, fact); err != nil {
			return err
		}
		g.inSteps = atom.Allows(kv.NewBatch(g.ops...)) != nil
		if !g.inSteps {
			return nil
		}
		// The marker holds the record as read: it must clean up after
		// every index the group's changes touch.
		scope := byte(0)
		for _, c := range g.changes {
			scope |= c.scope
		}
		if scope&scopeIndex != 0 {
			scope = scope&^scopeIndex | scopeAll
		}
		key, value := t.changeRecord(g.pk, fact, fact != nil, scope)
		g.marker = kv.Op{Kind: kv.OpPut, Key: key, Value: value}
		err := atom.Allows(kv.NewBatch(lastStep(g)...))
		if err == nil {
			return nil
		}
		if len(g.changes) == 1 {
			return fmt.Errorf("one change of the record does not fit the store's atomicity scope: %w", err)
		}
		g.changes = g.changes[:len(g.changes)/2]
	}
}

// lastStep returns the last batch of applyInSteps: g's guard, and the
// removal of its marker.
func lastStep(g *changeGroup) []kv.Op {
	return append(g.ops[:g.guard:g.guard], kv.Op{Kind: kv.OpExpectValue, Key: g.marker.Key, Value: g.marker.Value}, kv.Op{Kind: kv.OpDelete, Key: g.marker.Key})
}

// wantedBy returns the indexes that changes leave to the maintainer.
func wantedBy(view *indexView, changes []change) []*indexTable {
	scope := byte(0)
	var named []*indexTable // by changes of Build and Repair
	for _, c := range changes {
		scope |= c.scope
		if c.scope&scopeIndex != 0 {
			if ix := view.owner(c.before); ix != nil {
				named = append(named, ix)
			}
		}
	}
	return view.filter(func(ix *indexTable) bool {
		return ix.maintained() && !ix.unique &&
			(ix.eventual || scope&scopeAll != 0 || scope&scopeInter != 0 && !ix.intra || slices.Contains(named, ix))
	})
}

// planChanges sets g.ops to the batch that applies g's changes to the
// record stored as fact under factKey (nil: none): it expects the record
// and each change record as read and removes the changes (g.ops[:g.guard]),
// then deletes the entries of the versions the changes name that the
// record lacks (and the stray entry keys changes of Repair name), and puts those of its entries in the indexes the changes
// leave to the maintainer (wantedBy) that not every version had.
func (t *Table[T]) planChanges(view *indexView, g *changeGroup, factKey, fact []byte) error {
	want := wantedBy(view, g.changes)
	if !slices.Equal(want, g.want) {
		// The earlier versions' entries, kept for another try, are of
		// other indexes.
		for i := range g.changes {
			g.changes[i].entries, g.changes[i].held = nil, false
		}
		g.want = want
	}
	ops := make([]kv.Op, 0, 1+2*len(g.changes)+8)
	if fact == nil {
		ops = append(ops, kv.Op{Kind: kv.OpExpectAbsent, Key: factKey})
	} else {
		ops = append(ops, kv.Op{Kind: kv.OpExpectValue, Key: factKey, Value: fact})
	}
	for _, c := range g.changes {
		ops = append(ops, kv.Op{Kind: kv.OpExpectValue, Key: c.key, Value: c.value}, kv.Op{Kind: kv.OpDelete, Key: c.key})
	}
	g.guard = len(ops)
	var current []entry
	if fact != nil {
		var err error
		if current, err = t.factEntries(want, fact, g.pk); err != nil {
			return err
		}
		current = view.putting(current)
	}
	before, strays, err := t.earlierEntries(view, g, want, current)
	if err != nil {
		return err
	}
	for _, k := range strays {
		ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: k})
	}
	gone := func(e entry) error {
		if !containsKey(strays, e.key) {
			ops = append(ops, kv.Op{Kind: kv.OpDelete, Key: e.key})
		}
		return nil
	}
	came := func(e entry) error {
		ops = append(ops, kv.Op{Kind: kv.OpPut, Key: e.key, Value: e.value})
		return nil
	}
	if err := diffEntries(before, current, gone, came); err != nil {
		return err
	}
	g.ops = ops
	return nil
}

// earlierEntries returns the entries in want of the versions g's changes
// name (none for a new record, or for a change of Build or Repair), and the
// stray entry keys that changes of Repair name and current lacks.
func (t *Table[T]) earlierEntries(view *indexView, g *changeGroup, want []*indexTable, current []entry) (before [][]entry, strays [][]byte, err error) {
	for i := range g.changes {
		c := &g.changes[i]
		if c.scope&scopeIndex != 0 {
			// A stray entry key, longer than its index's prefix.
			ix := view.owner(c.before)
			if ix != nil && ix.maintained() && len(c.before) > len(ix.prefix) &&
				findEntry(current, c.before) < 0 && !containsKey(strays, c.before) {
				strays = append(strays, c.before)
			}
			before = append(before, nil)
			continue
		}
		if c.before != nil && !c.held {
			es, err := t.factEntries(want, c.before, g.pk)
			if err != nil {
				return nil, nil, err
			}
			c.entries, c.held = es, true
		}
		before = append(before, c.entries)
	}
	return before, strays, nil
}

// applyInSteps applies the changes of one record whose index mutations do not
// fit one batch with its change records, in three steps:
//
//  1. a marker, a change record whose earlier version is the record as
//     read, in one batch that expects the record unchanged;
//  2. the mutations, in pieces the store allows;
//  3. the removal of the change records and the marker, in one batch that
//     expects the record unchanged.
//
// A crash before step 3 leaves the change records, and the next pass
// applies the mutations again. A write after step 1 (synchronous ones
// included, which queue nothing) makes step 3 conflict: then the marker
// stays, so the next pass deletes what step 2 put for the version it read,
// and only the change records go. The marker stands for them: step 2
// deleted the entries of the versions they name, but the one it read. So a
// record under constant writes trades its changes for one marker, and
// none of them waits for a pass without a write.
//
// It returns nil when the change records are removed, errOvertaken when a
// write overtook step 1, which wrote nothing, and errChangesMoved when the
// change records changed.
func (t *Table[T]) applyInSteps(ctx context.Context, view *indexView, g *changeGroup, l *lease, o *MaintainerOptions) error {
	// g.ops[0] expects the record as read.
	err := t.store.Apply(ctx, kv.NewBatch(g.ops[0], g.marker))
	if errors.Is(err, ErrConflict) {
		return errOvertaken
	}
	if err != nil {
		return err
	}
	g.markerWritten()
	// The pieces go only while the lease is surely held.
	hold := func() error { return t.holdLease(ctx, l, o) }
	if err := applyInPieces(ctx, t.store, kv.NewBatch(g.ops[g.guard:]...), hold); err != nil {
		return err
	}
	view.noteMutations(g.ops[g.guard:], g.changesRecord())
	return t.finishSteps(ctx, g, t.store.Apply(ctx, kv.NewBatch(lastStep(g)...)))
}

// markerWritten notes that g's marker is written: until its changes go, it
// is one of the markers g's tries wrote.
func (g *changeGroup) markerWritten() {
	marker, _ := decodeChange(g.marker.Key, g.marker.Value) // as encoded
	g.written = append(g.written, marker)
}

// finishSteps ends applyInSteps once its last step was tried, with result
// err: when a write overtook the record, it hints the marker, which stays,
// and removes the change records alone.
func (t *Table[T]) finishSteps(ctx context.Context, g *changeGroup, err error) error {
	if errors.Is(err, ErrConflict) {
		// The marker outlives the changes it stands for: hint it first.
		if err := t.putHints(ctx, false, g.marker.Key); err != nil {
			return err
		}
		err = t.store.Apply(ctx, kv.NewBatch(g.ops[1:g.guard]...))
		if errors.Is(err, ErrConflict) {
			err = errChangesMoved
		}
	}
	if err == nil || errors.Is(err, errChangesMoved) {
		g.written = g.written[:len(g.written)-1]
	}
	return err
}

// applyStepsTogether applies groups, planned in steps (applyInSteps), the
// steps of all at once: the markers of the records of one partition in
// one batch, every group's mutations together in pieces (those of several
// records in one index partition share a piece), and the last steps of
// one partition's records in one batch. It does for each record what
// applyInSteps does, in fewer batches. A group whose first step
// conflicts is left undone, for applyGroup; one whose mutations the store
// refuses is left undone, for applyGroup to try again and fail alone. It
// returns how many changes it applied.
func (t *Table[T]) applyStepsTogether(ctx context.Context, view *indexView, groups []*changeGroup, l *lease, o *MaintainerOptions) (int, error) {
	var marked []*changeGroup
	err := t.applyByPartition(groups, func(g *changeGroup) []kv.Op { return []kv.Op{g.ops[0], g.marker} },
		func(part []*changeGroup, b *kv.Batch) error {
			err := t.store.Apply(ctx, b)
			if err == nil {
				for _, g := range part {
					g.markerWritten()
				}
				marked = append(marked, part...)
			}
			if errors.Is(err, ErrConflict) {
				return nil // each on its own, in applyGroup
			}
			return err
		})
	if err == nil && len(marked) > 0 {
		marked, err = t.mutateTogether(ctx, marked, func() error { return t.holdLease(ctx, l, o) })
	}
	if err != nil || len(marked) == 0 {
		return 0, err
	}
	applied := 0
	finish := func(g *changeGroup, err error) error {
		view.noteMutations(g.ops[g.guard:], g.changesRecord())
		if err = t.finishSteps(ctx, g, err); err == nil {
			g.applied = g.changes
			applied += len(g.changes)
		}
		if err == nil || errors.Is(err, errChangesMoved) {
			g.done = true
			return nil
		}
		return err
	}
	err = t.applyByPartition(marked, lastStep, func(part []*changeGroup, b *kv.Batch) error {
		err := t.store.Apply(ctx, b)
		if err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
		for _, g := range part {
			gerr := err
			if gerr != nil { // each on its own
				gerr = t.store.Apply(ctx, kv.NewBatch(lastStep(g)...))
			}
			if err := finish(g, gerr); err != nil {
				return err
			}
		}
		return nil
	})
	return applied, err
}

// mutateTogether applies the index mutations of the marked groups
// together, in pieces, each piece after hold. When the store refuses a
// piece, it applies each group's alone (mutations are idempotent), and
// returns the groups whose mutations it applied; the others are left for
// applyGroup to try again, and to fail alone.
func (t *Table[T]) mutateTogether(ctx context.Context, marked []*changeGroup, hold func() error) ([]*changeGroup, error) {
	var mutations kv.Batch
	for _, g := range marked {
		mutations.Add(g.ops[g.guard:]...)
	}
	err := applyInPieces(ctx, t.store, &mutations, hold)
	if !errors.Is(err, ErrInvalidBatch) {
		return marked, err
	}
	ok := marked[:0]
	for _, g := range marked {
		err := applyInPieces(ctx, t.store, kv.NewBatch(g.ops[g.guard:]...), hold)
		switch {
		case err == nil:
			ok = append(ok, g)
		case errors.Is(err, ErrInvalidBatch):
			// applyGroup tries it again, and writes the same marker.
			g.written = g.written[:len(g.written)-1]
		default:
			return nil, err
		}
	}
	return ok, nil
}

// applyByPartition calls apply with runs of groups whose records share a
// partition, each with the batch of their ops that the store allows.
func (t *Table[T]) applyByPartition(groups []*changeGroup, ops func(*changeGroup) []kv.Op, apply func([]*changeGroup, *kv.Batch) error) error {
	atom := t.store.Atomicity()
	byPart := map[string][]*changeGroup{}
	var order []string
	for _, g := range groups {
		var p string
		if atom.Partition != nil {
			p = string(atom.Partition(g.factKey))
		}
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], g)
	}
	for _, p := range order {
		b := kv.NewBatch()
		var run []*changeGroup
		for _, g := range byPart[p] {
			n := b.Len()
			b.Add(ops(g)...)
			if len(run) > 0 && atom.Allows(b) != nil {
				if err := apply(run, kv.NewBatch(b.Ops()[:n]...)); err != nil {
					return err
				}
				b, run = kv.NewBatch(ops(g)...), nil
			}
			run = append(run, g)
		}
		if err := apply(run, b); err != nil {
			return err
		}
	}
	return nil
}
