package indextable

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/indextable/indextable/kv"
)

// MaintainerOptions configures a maintainer.
type MaintainerOptions struct {
	// Partition and Partitions divide the queue between maintainers: this
	// one applies the changes of the records whose primary key hashes
	// (FNV-1a) to Partition modulo Partitions. Zero Partitions means one
	// maintainer for all; at most 4096. Every maintainer of a table must
	// use the same Partitions. A Partitions above 4096, or a Partition
	// outside 0 to Partitions-1, is refused with ErrInvalidArgument.
	Partition, Partitions int
	// BatchSize is how many change records a maintainer applies at a
	// time, in one store batch when the store allows it; 0 means 256.
	BatchSize int
	// MaxIdle is the longest wait between two looks at an empty queue; 0
	// means 100ms, or 1s on a store that partitions keys, where a look is
	// one request to the hints' partition (see SweepInterval). A write
	// through the same Table wakes one of its maintainers at once.
	MaxIdle time.Duration
	// MaxBackoff is the longest wait after a store error; 0 means 5s.
	MaxBackoff time.Duration
	// Logger receives store errors and the changes that cannot be applied;
	// nil logs nothing.
	Logger *slog.Logger
	// LeaseTTL is how long a maintainer's hold on its partition lasts
	// without renewal, on a store with bounded atomicity; 0 means 30s. See
	// RunMaintainer.
	LeaseTTL time.Duration
	// MaxFailures is how many times in a row a change may fail the same
	// way (the store refuses its batch with ErrInvalidBatch, or a record
	// or change does not decode) before maintainers set it aside; 0 means
	// 3. The count is kept in the change record, so it holds across passes
	// and processes. See RunMaintainer.
	MaxFailures int
	// SweepInterval is how often, on a store that partitions keys, a
	// table's maintainers read its whole queue to hint the changes that
	// have no hint and remove the hints whose change is gone (see
	// hints.go); 0 means 5 minutes. A table sweeps in its first pass, and
	// then at most once an interval, whichever maintainer's pass it is.
	SweepInterval time.Duration

	owner uint64 // identifies this maintainer in its lease
	// unappliable, when set, hears of each change the maintainer logs as
	// one it cannot apply.
	unappliable func(key []byte, err error)
}

// maxPartitions bounds MaintainerOptions.Partitions: Build and Repair apply
// every partition in turn, each under its own lease.
const maxPartitions = 1 << 12

func (o *MaintainerOptions) defaults() error {
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.Partitions < 0 || o.Partitions > maxPartitions || o.Partition < 0 || o.Partition >= o.Partitions {
		return fmt.Errorf("%w: maintainer partition %d of %d (Partitions is 1 to %d)", ErrInvalidArgument, o.Partition, o.Partitions, maxPartitions)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 3
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = defaultSweepInterval
	}
	if o.owner == 0 {
		o.owner = rand.Uint64() | 1
	}
	return nil
}

// RunMaintainer applies the table's queued changes to its indexes until ctx
// is done, then returns ctx's error. It waits when the queue is empty and
// backs off (exponentially, with jitter) after a store error, which it
// logs. Start it once per partition, in any process. Each pass reads the
// catalog and maintains the indexes that other processes added too; it
// stops with an error wrapping ErrStaleSchema when it cannot maintain one
// (see learnIndex), and with one wrapping ErrClosed or ErrReadOnly when
// the store is closed or read-only.
//
// Several maintainers never corrupt an index. On a store with unbounded
// atomicity each record's changes are applied by one conditional batch, so
// maintainers whose partitions overlap only waste work. On a bounded store
// (where a table may queue changes even without an Eventual index, by the
// fallback rule, so a maintainer must run) one record's mutations may take
// several batches, and two maintainers must not interleave them: there a
// maintainer holds a lease on its partition, valid for LeaseTTL and renewed
// before each chunk of changes and each piece of mutations when less than
// half of it is left, and a maintainer that finds its partition leased
// waits (ApplyPending returns an error wrapping ErrConflict). It takes the
// lease only when it has a change to apply, so an idle maintainer writes
// nothing. Maintainers of another partitioning of the queue (another
// Partitions) wait too while leases of this one are held: a record of the
// partitioning in force, rewritten by every lease taken or renewed, keeps
// two partitionings from applying the same records' changes at once. A
// maintainer that dies holds its partition until the lease expires, and so
// does an ApplyPending whose release of the lease failed. As with any
// lease, this assumes clocks that agree, and no pause longer than half the
// LeaseTTL between a check of the lease and the write it allows.
//
// On a bounded store, a record whose index mutations do not fit one batch
// with its change records is applied in three steps: a marker (a change record of
// the version read), in a batch that expects the record unchanged; the
// mutations, in pieces; then the removal of the change records and the
// marker, again expecting the record unchanged. After a crash the change
// records stay, and the mutations are applied again. After a concurrent
// write (even a synchronous one, which queues nothing) the change records
// go but the marker stays and stands for them: the next pass deletes what
// the pieces put for the version read. When not all of a record's changes
// fit, the oldest go first.
//
// A change that fails in a way no retry helps (the store refuses the
// batch that applies it, with ErrInvalidBatch, or a record or change does
// not decode) is logged and tried again on later passes; once it failed
// MaxFailures times in a row, the same way, it is set aside: rewritten in
// place as a change record that says so and why, and logged once. A change
// set aside holds up nothing, costs no more writes, and counts in
// Lag.SetAside and VerifyReport.SetAside rather than as pending;
// WaitIndexed returns an error wrapping ErrChangeSetAside. It is tried
// again together with the record's next change, so an update that makes
// the record appliable heals it; when the two fail together, the new
// change is tried alone too, in case the old one is the cause. Repair
// removes it once it made the record's entries exact. Reads treat its
// record as one with pending changes, and so stay exact. Transient errors
// and conflicts never count as failures. A change record of a format this
// version does not know (a newer version's) is logged and left for a
// maintainer that knows it.
func (t *Table[T]) RunMaintainer(ctx context.Context, opts MaintainerOptions) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if opts.MaxIdle <= 0 && t.hinted() {
		opts.MaxIdle = time.Second
	}
	if err := opts.defaults(); err != nil {
		return err
	}
	idle, backoff := time.Duration(0), time.Duration(0)
	for {
		n, err := t.applyPending(ctx, &opts)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var wait time.Duration
		switch {
		case errors.Is(err, errLeaseHeld):
			wait = opts.MaxIdle // another maintainer has the partition
		case errors.Is(err, ErrInvalidSchema), errors.Is(err, ErrClosed), errors.Is(err, ErrReadOnly),
			errors.Is(err, ErrStaleSchema) && t.indexes.load().stale != nil:
			return err // only reopening the table, or the store, helps
		case err != nil:
			backoff = min(max(2*backoff, 10*time.Millisecond), opts.MaxBackoff)
			wait = backoff/2 + rand.N(backoff/2+1)
			if opts.Logger != nil {
				opts.Logger.WarnContext(ctx, "indextable: maintainer", "table", t.name, "error", err, "retry_in", wait)
			}
		case n > 0:
			idle, backoff = 0, 0
			continue
		default:
			backoff = 0
			idle = min(max(2*idle, time.Millisecond), opts.MaxIdle)
			wait = idle
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-t.wake:
			idle = 0
		case <-timer.C:
		}
		timer.Stop()
	}
}

// ApplyPending makes one pass over the table's queue, applying the changes
// of opts' partition that were queued before the pass began, and returns
// how many it applied. Changes queued during the pass wait for the next
// one, so that a pass ends however fast writes come. When a write to a
// record overtakes the application of its changes, the record is read
// again and its changes tried again at once, a few times, before they wait
// for the next pass. It is the maintainer's step, for applications that
// schedule maintenance themselves.
func (t *Table[T]) ApplyPending(ctx context.Context, opts MaintainerOptions) (int, error) {
	if err := checkContext(ctx); err != nil {
		return 0, err
	}
	if err := opts.defaults(); err != nil {
		return 0, err
	}
	return t.applyPending(ctx, &opts)
}

func (t *Table[T]) applyPending(ctx context.Context, o *MaintainerOptions) (applied int, err error) {
	p := &pass[T]{t: t, o: o, began: time.Now()}
	if t.sweepDue(o) {
		if err := t.sweepHints(ctx); err != nil {
			return 0, err
		}
	}
	// One scan, whose pages the store sizes, rather than a scan for each
	// batch: on a sharded store each scan starts a reader on every shard.
	var changes iter.Seq2[kv.Entry, error]
	if !t.hinted() {
		changes = t.store.Scan(ctx, kv.ScanRange{Start: t.queueSpace, End: t.queueEnd})
	} else {
		if p.hints, err = t.hintsToApply(ctx, o); err != nil || len(p.hints) == 0 {
			return 0, err
		}
		changes, p.seen = t.hintedQueue(ctx, p.hints), map[string]bool{}
		defer func() {
			if err == nil {
				err = p.dropOrphans(ctx)
			}
		}()
	}
	// The catalog as it is now: a pass applies changes for indexes that
	// another process added, and stops when it cannot maintain them.
	if err := t.refreshView(ctx); err != nil {
		return 0, err
	}
	if stale := t.indexes.load().stale; stale != nil {
		return 0, stale
	}
	defer func() {
		if p.l != nil {
			t.releaseLease(p.l)
		}
	}()
	for e, err := range changes {
		if err != nil {
			return p.applied, err
		}
		if err := p.add(ctx, e); err != nil {
			return p.applied, err
		}
	}
	return p.applied, p.flush(ctx)
}

// A pass is one maintainer pass over the queue, in key order: it gathers
// the changes of its partition, record by record, and applies them
// BatchSize at a time, oldest first within each record.
type pass[T any] struct {
	t       *Table[T]
	o       *MaintainerOptions
	l       *lease    // on a bounded store, the maintainer's
	began   time.Time // by this process's clock
	groups  []changeGroup
	held    int // changes in groups
	applied int
	// On a table that hints its changes: the hints the pass follows, and
	// the change records it read.
	hints []hint
	seen  map[string]bool
}

// add takes the change record e. One that does not decode blocks nothing
// but itself: it is logged, and set aside in time (by the maintainer of
// partition 0 when it names no record); one of an unknown format is
// logged and left for a newer maintainer.
func (p *pass[T]) add(ctx context.Context, e kv.Entry) error {
	t, o := p.t, p.o
	if p.seen != nil {
		p.seen[string(e.Key)] = true
	}
	pk, pkErr := t.changePK(e.Key)
	if pkErr == nil && o.Partitions > 1 && int(fnv1a(pk)%uint64(o.Partitions)) != o.Partition ||
		pkErr != nil && o.Partition != 0 {
		return nil
	}
	c, err := decodeChange(e.Key, e.Value)
	switch {
	case err == nil && pkErr == nil:
	case c.failed.setAside:
		return nil
	case errors.Is(err, errUnknownChange):
		o.logError(ctx, "indextable: change record cannot be read", t.name, err)
		o.cannotApply(err, e.Key)
		return nil
	default:
		c, _ = decodeChange(bytes.Clone(e.Key), bytes.Clone(e.Value))
		return t.unappliable(ctx, o, stuckChanges{err: cmp.Or(pkErr, err), changes: []change{c}, unread: true})
	}
	if queuedDuring(c, p.began) {
		return nil
	}
	c, _ = decodeChange(bytes.Clone(e.Key), bytes.Clone(e.Value))
	n := len(p.groups)
	same := n > 0 && bytes.Equal(p.groups[n-1].pk, pk)
	if p.held == o.BatchSize {
		// Apply the records whose changes are all read, and the last
		// one's so far only when they fill the batch alone.
		var open *changeGroup
		if same && n > 1 {
			last := p.groups[n-1]
			open, p.groups = &last, p.groups[:n-1]
		}
		if err := p.flush(ctx); err != nil {
			return err
		}
		if same = open != nil; same {
			p.groups, p.held = append(p.groups, *open), len(open.changes)
		}
	}
	if same {
		g := &p.groups[len(p.groups)-1]
		g.changes = append(g.changes, c)
	} else {
		p.groups = append(p.groups, changeGroup{pk: bytes.Clone(pk), changes: []change{c}})
	}
	p.held++
	return nil
}

// flush applies the changes gathered: those of the records with a change
// not set aside. On a bounded store it takes the maintainer's lease first,
// so that one with nothing to apply writes nothing.
func (p *pass[T]) flush(ctx context.Context) error {
	live := p.groups[:0]
	for _, g := range p.groups {
		if slices.ContainsFunc(g.changes, func(c change) bool { return !c.failed.setAside }) {
			live = append(live, g)
		}
	}
	if p.groups, p.held = live, 0; len(live) == 0 {
		return nil
	}
	var err error
	if p.l == nil && bounded(p.t.store.Atomicity()) {
		p.l, err = p.t.acquireLease(ctx, p.o)
	} else {
		err = p.t.holdLease(ctx, p.l, p.o)
	}
	if err != nil {
		return err
	}
	for i := range p.groups {
		p.groups[i].sortByAge()
	}
	n, err := p.t.applyGroups(ctx, p.groups, p.l, p.o)
	p.applied += n
	var done [][]byte
	for _, g := range p.groups {
		done = append(done, changeKeys(g.applied)...)
	}
	p.groups, p.held = p.groups[:0], 0
	// At once, so that a pass that stops leaves few behind.
	if herr := p.t.dropHints(ctx, done); herr != nil && err == nil {
		err = fmt.Errorf("table %q: remove the hints of applied changes: %w", p.t.name, herr)
	}
	return err
}

// dropOrphans removes, on condition that they are as read, the hints the
// pass followed that are older than hintGrace and whose change record it
// did not find: their writer failed, or died, before it committed.
func (p *pass[T]) dropOrphans(ctx context.Context) error {
	var orphans []hint
	for _, h := range p.hints {
		if !p.seen[string(h.change)] && !h.when.IsZero() && time.Since(h.when) > hintGrace {
			orphans = append(orphans, h)
		}
	}
	if err := p.t.dropOrphans(ctx, orphans); err != nil {
		return fmt.Errorf("table %q: remove hints without a change: %w", p.t.name, err)
	}
	return nil
}

// queuedDuring reports whether c was queued after a pass that began at
// began (by this process's clock) did, and before now: such a change
// waits for the next pass, so that a pass ends even while writes queue
// changes ahead of it faster than it applies them, and the changes behind
// it are not passed over for ever. A time after now is another clock's,
// ahead of this one: that change is not held back.
func queuedDuring(c change, began time.Time) bool {
	return c.enqueued.After(began) && !c.enqueued.After(time.Now())
}

// applyGroups applies the changes of several records: in one batch when
// the store allows it, record by record when that batch conflicts. It
// plans and writes against one view, which no lifecycle change replaces
// meanwhile, and reports the changes it cannot apply after it lets go of
// the drain lock: a Logger may write to the table.
func (t *Table[T]) applyGroups(ctx context.Context, groups []changeGroup, l *lease, o *MaintainerOptions) (int, error) {
	if len(groups) == 0 {
		return 0, nil
	}
	var stuck []stuckChanges
	n, err := t.applyGroupsHeld(ctx, groups, l, o, &stuck)
	for _, s := range stuck {
		if ferr := t.unappliable(ctx, o, s); err == nil {
			err = ferr
		}
	}
	return n, err
}

// stuckChanges are changes a maintainer cannot apply, and why.
type stuckChanges struct {
	pk      []byte // their record's; nil when the record cannot be read
	err     error
	changes []change // the records as read
	unread  bool     // the change record does not decode
}

// unappliable logs changes that cannot be applied, tells o.unappliable,
// and counts the failure in their records, rewriting each conditionally
// on its value as read: once they failed o.MaxFailures times in a row with
// one cause, it sets them aside, and logs that once. Changes that failed
// together count as the most failed of them: a marker applyInSteps wrote
// before its mutations failed counts with the changes it stands for.
func (t *Table[T]) unappliable(ctx context.Context, o *MaintainerOptions, s stuckChanges) error {
	err := s.err
	if s.pk != nil {
		err = fmt.Errorf("record %v: %w", decodeForError(s.pk), err)
	}
	o.cannotApply(err, changeKeys(s.changes)...)
	f := failure{cause: causeOf(s.err), reason: s.err.Error()}
	if len(f.reason) > maxReason {
		f.reason = strings.ToValidUTF8(f.reason[:maxReason], "")
	}
	for _, c := range s.changes {
		if c.failed.cause == f.cause {
			f.count = max(f.count, c.failed.count)
		}
	}
	f.count++
	f.setAside = f.count >= o.MaxFailures
	if o.Logger != nil {
		msg := "indextable: change cannot be applied"
		if s.unread {
			msg = "indextable: change record cannot be read"
		}
		o.Logger.ErrorContext(ctx, msg, "table", t.name, "error", err, "failures", f.count, "max_failures", o.MaxFailures)
	}
	rewritten, werr := t.rewriteFailed(ctx, s.changes, f)
	if werr == nil && len(rewritten) > 0 && f.setAside {
		if o.Logger != nil {
			o.Logger.ErrorContext(ctx, "indextable: changes set aside", "table", t.name, "changes", len(rewritten), "failures", f.count, "error", err)
		}
		// Passes skip their hints from now on; reads still see them.
		werr = t.putHints(ctx, true, rewritten...)
	}
	return werr
}

// rewriteFailed rewrites changes as failed as f, each conditional on its
// value as read, and returns the keys of those it rewrote; a change that
// moved meanwhile is left as it is.
func (t *Table[T]) rewriteFailed(ctx context.Context, changes []change, f failure) ([][]byte, error) {
	atom := t.store.Atomicity()
	put := func(cs []change, f failure) error {
		var b kv.Batch
		for _, c := range cs {
			b.ExpectValue(c.key, c.value)
			b.Put(c.key, encodeFailed(f, c.queued))
		}
		if err := atom.Allows(&b); err != nil {
			return err
		}
		return t.store.Apply(ctx, &b)
	}
	err := put(changes, f)
	if err == nil {
		return changeKeys(changes), nil
	}
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch) {
		return nil, err
	}
	var rewritten [][]byte
	for i := range changes {
		one := changes[i : i+1]
		err := put(one, f)
		if errors.Is(err, ErrInvalidBatch) {
			short := f
			short.reason = ""
			err = put(one, short) // the smallest it can be
		}
		switch {
		case err == nil:
			rewritten = append(rewritten, changes[i].key)
		case !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch):
			return rewritten, err
		}
	}
	return rewritten, nil
}

// applyGroupsHeld is applyGroups under the drain lock; it adds to stuck
// what it cannot apply. The records whose changes fit one batch go
// together, when the store allows it and no write overtook one of them;
// those whose changes take steps, together step by step
// (applyStepsTogether); the others, and those that failed together, one
// by one (applyGroup).
func (t *Table[T]) applyGroupsHeld(ctx context.Context, groups []changeGroup, l *lease, o *MaintainerOptions, stuck *[]stuckChanges) (int, error) {
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	view, err := t.view(ctx, true)
	if err != nil {
		return 0, err
	}
	keys := make([][]byte, len(groups))
	for i := range groups {
		keys[i] = append(bytes.Clone(t.factSpace), groups[i].pk...)
	}
	facts, err := t.store.GetMany(ctx, keys, nil)
	if err != nil {
		return 0, err
	}
	atom := t.store.Atomicity()
	var all kv.Batch
	var joined []*changeGroup
	for i := range groups {
		g := &groups[i]
		g.factKey, g.fact, g.all = keys[i], facts[i], g.changes
		t.planGroup(view, g, atom)
		if g.planned == nil && !g.inSteps {
			all.Add(g.ops...)
			joined = append(joined, g)
		}
	}
	applied := 0
	if len(joined) > 1 && atom.Allows(&all) == nil {
		switch err := t.store.Apply(ctx, &all); {
		case err == nil:
			for _, g := range joined {
				view.noteMutations(g.ops, g.changesRecord())
				applied += len(g.changes)
				g.done, g.applied = true, g.changes
			}
		case !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch):
			return 0, err
		}
	}
	var steps []*changeGroup
	for i := range groups {
		if g := &groups[i]; !g.done && g.inSteps && g.planned == nil {
			steps = append(steps, g)
		}
	}
	if len(steps) > 1 {
		n, err := t.applyStepsTogether(ctx, view, steps, l, o)
		applied += n
		if err != nil {
			return applied, err
		}
	}
	for i := range groups {
		if g := &groups[i]; !g.done {
			n, err := t.applyGroup(ctx, view, g, l, o, stuck)
			applied += n
			if err != nil {
				return applied, err
			}
		}
	}
	return applied, nil
}

// maxGroupAttempts bounds the tries of one record's changes in a pass.
const maxGroupAttempts = 4

// errOvertaken reports a try of a record's changes that a write to the
// record overtook, and that wrote nothing; errChangesMoved, change records
// that are no longer as read: another maintainer took them.
var (
	errOvertaken    = errors.New("a write overtook the record's changes")
	errChangesMoved = errors.New("the change records moved")
)

// applyGroup applies g, a planned group, alone (tryGroup). When g holds
// changes set aside and its changes fail, it tries the others alone (the
// changes set aside may be why), with the marker the failed try left. It
// adds to stuck the changes it cannot apply, and what their tries wrote.
func (t *Table[T]) applyGroup(ctx context.Context, view *indexView, g *changeGroup, l *lease, o *MaintainerOptions, stuck *[]stuckChanges) (int, error) {
	n, failed, err := t.tryGroup(ctx, view, g, l, o)
	if failed == nil || err != nil {
		return n, err
	}
	if slices.ContainsFunc(g.all, func(c change) bool { return c.failed.setAside }) {
		live := &changeGroup{pk: g.pk, factKey: g.factKey, fact: g.fact}
		for _, c := range append(slices.Clone(g.all), g.written...) {
			if !c.failed.setAside {
				live.changes = append(live.changes, c)
			}
		}
		live.sortByAge()
		live.all = live.changes
		n, lfailed, err := t.tryGroup(ctx, view, live, l, o)
		g.applied = live.applied
		if lfailed == nil || err != nil {
			return n, err
		}
		g, failed = live, lfailed
	}
	tried := slices.Clone(g.written)
	for _, c := range g.changes {
		if !c.failed.setAside {
			tried = append(tried, c)
		}
	}
	*stuck = append(*stuck, stuckChanges{pk: g.pk, err: failed, changes: tried})
	return 0, nil
}

// tryGroup applies g alone, planning it first if need be. When a write to
// the record overtook a try, it reads the record again and tries again at
// once, up to maxGroupAttempts times, so that a record under constant
// writes still progresses; then it leaves the changes for the next pass.
// It returns how many changes it applied, or why they cannot be applied
// (failed: a record that does not decode, a batch the store refuses), or
// another error.
func (t *Table[T]) tryGroup(ctx context.Context, view *indexView, g *changeGroup, l *lease, o *MaintainerOptions) (n int, failed, err error) {
	if g.ops == nil && g.planned == nil {
		t.planGroup(view, g, t.store.Atomicity())
	}
	for attempt := 1; ; attempt++ {
		if g.planned != nil {
			return 0, g.planned, nil
		}
		var err error
		if g.inSteps {
			err = t.applyInSteps(ctx, view, g, l, o)
		} else if err = t.store.Apply(ctx, kv.NewBatch(g.ops...)); err == nil {
			view.noteMutations(g.ops, g.changesRecord())
		} else if errors.Is(err, ErrConflict) {
			err = errOvertaken
		}
		switch {
		case err == nil:
			g.applied = g.changes
			return len(g.changes), nil, nil
		case errors.Is(err, errChangesMoved) || errors.Is(err, errOvertaken) && attempt == maxGroupAttempts:
			return 0, nil, nil
		case errors.Is(err, ErrInvalidBatch):
			return 0, err, nil
		case !errors.Is(err, errOvertaken):
			return 0, nil, fmt.Errorf("table %q, record %v: %w", t.name, decodeForError(g.pk), err)
		}
		fact, err := t.store.Get(ctx, g.factKey)
		if errors.Is(err, ErrNotFound) {
			fact, err = nil, nil
		}
		if err != nil {
			return 0, nil, err
		}
		if bytes.Equal(fact, g.fact) && (fact == nil) == (g.fact == nil) {
			return 0, nil, nil // the record is as read: the change records moved
		}
		g.fact, g.changes = fact, g.all
		t.planGroup(view, g, t.store.Atomicity())
	}
}

// cannotApply tells o.unappliable, if set, of changes that cannot be
// applied.
func (o *MaintainerOptions) cannotApply(err error, keys ...[]byte) {
	if o.unappliable != nil {
		for _, k := range keys {
			o.unappliable(k, err)
		}
	}
}

func changeKeys(cs []change) [][]byte {
	keys := make([][]byte, len(cs))
	for i, c := range cs {
		keys[i] = c.key
	}
	return keys
}

func (o *MaintainerOptions) logError(ctx context.Context, msg, table string, err error) {
	if o.Logger != nil {
		o.Logger.ErrorContext(ctx, msg, "table", table, "error", err)
	}
}
