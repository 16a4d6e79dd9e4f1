package indextable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Consistency between a fact table and its index tables.
//
// A Synchronous index (the default) changes in the write's own batch: the
// fact record, each index entry that changes, and the expectations that
// guard them (the record is still as read; a unique key is still free) go
// to the store as one Batch, applied all or nothing. A reader never sees an
// entry without its record, nor a record without its entries.
//
// An Eventual index changes later. The write commits the fact record
// together with a change record in the table's durable queue (an outbox in
// the same store, in the same batch), and returns; a maintainer
// (RunMaintainer) applies the index mutations afterwards. A change record
// holds the record as it was before the write, so the maintainer knows which
// entries to delete; it computes the entries to put from the fact record as
// it is when the change is applied. The pending changes of one record are
// applied together, in one batch that expects the fact record as read and
// removes the change records (on a bounded store, in the steps applySplit
// describes): replaying a change is harmless, an older change never
// overwrites a newer one, and the queue alone is enough to resume after a
// crash. WaitIndexed waits for the changes committed before
// it; Lag reports how far behind the maintainers are. A pass applies the
// changes queued before it began, so that it ends under any write rate
// (see pass); a change that can never be applied is set aside after a few
// tries, in its own change record (see RunMaintainer and failure).
//
// The fallback rule: when a write's batch, with its synchronous entries,
// does not fit the store's atomicity scope (Store.Atomicity; for instance a
// store whose transactions stay within one partition), the write commits
// the fact record with a change record instead, and every non-unique index
// follows it eventually. What a maintainer will need to apply the change
// must fit one batch (see worstGuard), and a write that changes a unique
// index's entries cannot fall back (its uniqueness would go unchecked):
// such writes fail with ErrInvalidBatch and write nothing. On such a store, reads of any index
// check for staleness as reads of an Eventual index do.

// Consistency says when an index follows a write to its fact table.
type Consistency int8

const (
	// Synchronous indexes change in the write's own atomic batch.
	Synchronous Consistency = iota
	// Eventual indexes change later, when a maintainer applies the table's
	// queued changes. A unique index cannot be eventual.
	Eventual
)

func (c Consistency) String() string {
	switch c {
	case Synchronous:
		return "synchronous"
	case Eventual:
		return "eventual"
	}
	return "Consistency(" + strconv.Itoa(int(c)) + ")"
}

// A change record is stored under the table's queue space, then the
// record's encoded primary key, then a random change ID (so that the
// changes of one record sort together and never collide). Its value:
// format byte, enqueue time (uvarint Unix nanoseconds), scope byte, and the
// fact record's value before the write, after a byte that says whether there
// was one. Format 2 is a change whose scope has bits that format 1 lacks,
// so that a maintainer that knows only format 1 leaves it alone.
//
// Format 3 is a change that maintainers failed to apply: a flags byte
// (bit 0: set aside; bits 1 and 2: the cause, see failure), the failures
// in a row (uvarint), the last one's message (uvarint length, then its
// bytes), then the change as it was queued (format 1 or 2, or bytes that
// do not decode). A maintainer rewrites a change so, in place (in the
// record's partition and shard, conditional on the value it read), when
// it fails; a maintainer that knows only formats 1 and 2 leaves it alone.
const (
	changeFormat       = 1
	changeFormatScopes = 2
	changeFormatFailed = 3
)

// failure is what a format 3 change record adds to the change it wraps.
type failure struct {
	count    int  // failures in a row with one cause
	setAside bool // no maintainer tries it alone any more
	cause    byte // failedInvalidBatch, failedCodec, or 0: another
	reason   string
}

// The causes of a failure.
const (
	failedInvalidBatch = 1 // the store refused a batch: ErrInvalidBatch
	failedCodec        = 2 // a record or change does not decode: ErrCodec
)

// maxReason bounds the message a failed change record keeps.
const maxReason = 256

func causeOf(err error) byte {
	switch {
	case errors.Is(err, ErrInvalidBatch):
		return failedInvalidBatch
	case errors.Is(err, ErrCodec):
		return failedCodec
	}
	return 0
}

// encodeFailed returns the value of a change that failed as f, whose value
// as queued is inner.
func encodeFailed(f failure, inner []byte) []byte {
	flags := f.cause << 1
	if f.setAside {
		flags |= 1
	}
	v := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(f.reason)+len(inner))
	v = append(v, changeFormatFailed, flags)
	v = binary.AppendUvarint(v, uint64(f.count))
	v = binary.AppendUvarint(v, uint64(len(f.reason)))
	v = append(append(v, f.reason...), inner...)
	return v
}

// splitFailed decodes the value of a format 3 change record into its
// failure and the value as queued.
func splitFailed(value []byte) (failure, []byte, bool) {
	if len(value) < 2 || value[0] != changeFormatFailed {
		return failure{}, nil, false
	}
	f := failure{setAside: value[1]&1 != 0, cause: value[1] >> 1 & 3}
	rest := value[2:]
	count, n := binary.Uvarint(rest)
	if n <= 0 {
		return f, nil, false
	}
	rest = rest[n:]
	size, n := binary.Uvarint(rest)
	if n <= 0 || size > uint64(len(rest)-n) {
		return f, nil, false
	}
	f.count = int(min(count, 1<<30))
	f.reason = string(rest[n : n+int(size)])
	return f, rest[n+int(size):], true
}

// setAside reports whether value is that of a change record set aside.
func setAside(value []byte) bool {
	return len(value) > 1 && value[0] == changeFormatFailed && value[1]&1 != 0
}

// failureError is the failure of a change record set aside, as an error
// that matches its cause.
type failureError struct {
	msg   string
	cause error
}

func (e *failureError) Error() string { return e.msg }

func (e *failureError) Unwrap() error { return e.cause }

func (f failure) err() error {
	e := &failureError{msg: f.reason}
	switch f.cause {
	case failedInvalidBatch:
		e.cause = ErrInvalidBatch
	case failedCodec:
		e.cause = ErrCodec
	}
	if e.msg == "" {
		e.msg = "no reason kept"
	}
	return e
}

// ErrChangeSetAside reports a queued change that maintainers set aside
// after it failed MaintainerOptions.MaxFailures times in a row, the same
// way (see RunMaintainer): WaitIndexed, Build and Repair return it, with
// the record and the reason, instead of waiting for ever. It also matches
// the failure's own sentinel (ErrInvalidBatch or ErrCodec) when there is
// one.
var ErrChangeSetAside = errors.New("indextable: change set aside")

// errUnknownChange reports a change record of a format this version does
// not know, which a newer maintainer may apply.
var errUnknownChange = errors.New("unknown format")

// The scope of a change: which indexes it leaves to the maintainer.
const (
	scopeEventual = 1 // the Eventual indexes
	scopeAll      = 2 // every non-unique index: a write that fell back
	scopeInter    = 4 // the InterPartition ones: a write that kept the rest
	// scopeIndex marks a change of Build or Repair, whose before is not a
	// fact value but a key in one non-unique index: its prefix, to put the
	// record's entries there, or an entry key found stray, to delete unless
	// the record has it.
	scopeIndex = 8
)

// change is a decoded change record.
type change struct {
	key      []byte
	value    []byte // as stored, for the expectation that removes it
	queued   []byte // the value as queued: value, or the one that failed wraps
	failed   failure
	enqueued time.Time
	scope    byte
	before   []byte // the fact value before the write; nil if none
	// entries are before's entries in the indexes its group wants, once
	// held, kept for the group's next try.
	entries []entry
	held    bool
}

func encodeChange(dst []byte, now time.Time, scope byte, before []byte, existed bool) []byte {
	format := byte(changeFormat)
	if scope&^(scopeEventual|scopeAll) != 0 {
		format = changeFormatScopes
	}
	dst = append(dst, format)
	dst = binary.AppendUvarint(dst, uint64(now.UnixNano()))
	dst = append(dst, scope, boolByte(existed))
	return append(dst, before...)
}

// decodeChange decodes a change record. It returns an error wrapping
// ErrCodec when the record does not decode, and errUnknownChange too when
// its format is unknown; the change's key, value, queued value and
// failure are set even then, as far as they decode.
func decodeChange(key, value []byte) (change, error) {
	c := change{key: key, value: value, queued: value}
	if len(value) > 0 && value[0] == changeFormatFailed {
		f, queued, ok := splitFailed(value)
		c.failed = f
		if !ok {
			return c, fmt.Errorf("%w: change record %q: truncated failure", ErrCodec, key)
		}
		c.queued = queued
	} else if len(value) < 1 || value[0] != changeFormat && value[0] != changeFormatScopes {
		return c, fmt.Errorf("%w: change record %q: %w", ErrCodec, key, errUnknownChange)
	}
	v := c.queued
	if len(v) < 1 || v[0] != changeFormat && v[0] != changeFormatScopes {
		return c, fmt.Errorf("%w: change record %q: the change that failed does not decode", ErrCodec, key)
	}
	ns, n := binary.Uvarint(v[1:])
	if n <= 0 || len(v) < 3+n {
		return c, fmt.Errorf("%w: change record %q: truncated", ErrCodec, key)
	}
	c.enqueued = time.Unix(0, int64(ns))
	c.scope = v[1+n]
	if v[2+n] == 1 {
		c.before = v[3+n:]
	}
	return c, nil
}

// enqueue adds to b the change record of a write to the record with encoded
// primary key pk, whose fact value was before (existed false: none).
func (t *Table[T]) enqueue(b *Batch, pk, before []byte, existed bool, scope byte) {
	key, value := t.changeRecord(pk, before, existed, scope)
	b.Put(key, value)
}

// changeRecord returns the key and value of a new change record; they
// share one allocation.
func (t *Table[T]) changeRecord(pk, before []byte, existed bool, scope byte) (key, value []byte) {
	buf := make([]byte, 0, len(t.queueSpace)+len(pk)+9+16+len(before))
	buf = appendInt(append(append(buf, t.queueSpace...), pk...), rand.Int64())
	n := len(buf)
	buf = encodeChange(buf, time.Now(), scope, before, existed)
	return buf[:n:n], buf[n:]
}

// bounded reports whether a store's atomicity scope may refuse a batch.
func bounded(a Atomicity) bool { return a.Partition != nil || a.MaxOps > 0 || a.MaxBytes > 0 }

// commit applies b, a write planned by a table. When b does not fit the
// store's atomicity scope, fallback rebuilds it as a write of the fact
// record and its change record alone (see the fallback rule above), or
// returns an error.
func commit(ctx context.Context, s Store, b *Batch, fallback func() error) error {
	if err := s.Atomicity().Allows(b); err != nil {
		if err := fallback(); err != nil {
			return err
		}
		if err := s.Atomicity().Allows(worstGuard(b)); err != nil {
			return fmt.Errorf("the record and its change record do not fit the store's atomicity scope, with room for a maintainer to apply them: %w", err)
		}
	}
	return s.Apply(ctx, b)
}

// worstGuard returns the largest batch a maintainer may need to apply the
// change that b, a fallback write, queues: applySplit's last batch, which
// expects the record and removes its change record and a marker holding a
// copy of it. b starts with the record's guard and its write, and ends
// with its change record (entries in the record's partition may come
// between).
func worstGuard(b *Batch) *Batch {
	ops := b.Ops()
	record, change := ops[1], ops[len(ops)-1]
	marker := Op{Kind: OpPut, Key: change.Key, Value: append(make([]byte, 3+binary.MaxVarintLen64), record.Value...)}
	return &Batch{ops: []Op{
		{Kind: OpExpectValue, Key: record.Key, Value: record.Value},
		{Kind: OpExpectValue, Key: change.Key, Value: change.Value}, {Kind: OpDelete, Key: change.Key},
		{Kind: OpExpectValue, Key: marker.Key, Value: marker.Value}, {Kind: OpDelete, Key: marker.Key},
	}}
}

// MaintainerOptions configures a maintainer.
type MaintainerOptions struct {
	// Partition and Partitions split the queue between maintainers: this
	// one applies the changes of the records whose primary key hashes
	// (FNV-1a) to Partition modulo Partitions. Zero Partitions means one
	// maintainer for all; at most 4096. Every maintainer of a table must
	// use the same Partitions.
	Partition, Partitions int
	// BatchSize is how many change records a maintainer applies at a
	// time, in one store batch when the store allows it; 0 means 256.
	BatchSize int
	// MaxIdle is the longest wait between two looks at an empty queue; 0
	// means 100ms. A write through the same Table wakes one of its
	// maintainers at once.
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
	if o.owner == 0 {
		o.owner = rand.Uint64() | 1
	}
	return nil
}

// RunMaintainer applies the table's queued changes to its indexes until ctx
// is done, then returns ctx's error. It waits when the queue is empty and
// backs off (exponentially, with jitter) after a store error, which it
// logs. Start it once per partition, in any process. It stops with an error
// wrapping ErrInvalidSchema when the catalog no longer matches the schema
// the table was opened with (a maintainer of an older schema would apply
// changes without the indexes added since), and with one wrapping
// ErrClosed or ErrReadOnly when the store is closed or read-only.
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
// waits (ApplyPending returns an error wrapping ErrConflict). A maintainer
// that dies holds its partition until the lease expires. As with any
// lease, this assumes clocks that agree, and no pause longer than half the
// LeaseTTL between a check of the lease and the write it allows.
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
// the record appliable heals it, and Repair removes it once it made the
// record's entries exact. Reads treat its record as one with pending
// changes, and so stay exact. Transient errors and conflicts never count
// as failures.
func (t *Table[T]) RunMaintainer(ctx context.Context, opts MaintainerOptions) error {
	if err := checkContext(ctx); err != nil {
		return err
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
		case errors.Is(err, ErrInvalidSchema), errors.Is(err, ErrClosed), errors.Is(err, ErrReadOnly):
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

func (t *Table[T]) applyPending(ctx context.Context, o *MaintainerOptions) (int, error) {
	p := &pass[T]{t: t, o: o, began: time.Now()}
	if err := t.sameCatalog(ctx); err != nil {
		return 0, err
	}
	defer func() {
		if p.l != nil {
			t.releaseLease(p.l)
		}
	}()
	// One scan, whose pages the store sizes, rather than a scan for each
	// batch: on a sharded store each scan starts a reader on every shard.
	for e, err := range t.store.Scan(ctx, ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
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
}

// add takes the change record e. One that does not decode blocks nothing
// but itself: it is logged, and set aside in time (by the maintainer of
// partition 0 when it names no record); one of an unknown format is
// logged and left for a newer maintainer.
func (p *pass[T]) add(ctx context.Context, e Entry) error {
	t, o := p.t, p.o
	pk, pkErr := t.changePK(e.Key)
	if pkErr == nil && o.Partitions > 1 && int(partitionHash(pk)%uint64(o.Partitions)) != o.Partition ||
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
	p.groups, p.held = p.groups[:0], 0
	return err
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

// errLeaseHeld reports a partition leased to another maintainer.
var errLeaseHeld = errors.New("leased to another maintainer")

// lease is a maintainer's hold on its partition of the queue, on a store
// with bounded atomicity, where two maintainers applying one record's
// changes in pieces could interleave. It is stored under the table's lease
// space, then Partitions and Partition: the owner (8 bytes) and the expiry
// (8 bytes, Unix nanoseconds).
type lease struct {
	key, value []byte
	expires    time.Time // by this process's clock
	split      []byte    // the key of the table's split record
}

// The split record, at the lease space's own key, names the split of the
// queue in force (its Partitions) and when its last lease expires: every
// acquisition and renewal rewrites it, conditional on it, so maintainers
// of two splits never hold leases at once, and one that takes over from
// another split makes the old holders' renewals fail.
func encodeSplit(partitions int, until time.Time) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(partitions))
	return binary.BigEndian.AppendUint64(v, uint64(until.UnixNano()))
}

func decodeSplit(v []byte) (partitions int, until time.Time, ok bool) {
	if len(v) != 16 {
		return 0, time.Time{}, false
	}
	return int(binary.BigEndian.Uint64(v)), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), true
}

// liveSplit returns the Partitions of the maintainers that hold leases of
// the table's queue now, or 0 when none does.
func (t *Table[T]) liveSplit(ctx context.Context) (int, error) {
	v, err := t.store.Get(ctx, appendInt(bytes.Clone(t.prefix), spaceLease))
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if n, until, ok := decodeSplit(v); ok && time.Now().Before(until) {
		return n, nil
	}
	return 0, nil
}

// acquireLease takes this maintainer's lease, unless another maintainer
// holds it, or maintainers of another split of the queue (another
// Partitions) hold leases: the two would apply the same records' changes
// at once.
func (t *Table[T]) acquireLease(ctx context.Context, o *MaintainerOptions) (*lease, error) {
	split := appendInt(bytes.Clone(t.prefix), spaceLease)
	key := appendInt(appendInt(bytes.Clone(split), int64(o.Partitions)), int64(o.Partition))
	held, err := t.store.GetMany(ctx, [][]byte{split, key}, nil)
	if err != nil {
		return nil, err
	}
	l := &lease{key: key, split: split}
	l.value, l.expires = o.leaseValue()
	var b Batch
	until := l.expires
	if sv := held[0]; sv == nil {
		b.ExpectAbsent(split)
	} else {
		n, end, ok := decodeSplit(sv)
		live := ok && time.Now().Before(end)
		if live && n != o.Partitions {
			return nil, fmt.Errorf("%w: %w: table %q: maintainers of %d partitions hold leases until %v (this one is partition %d of %d)",
				ErrConflict, errLeaseHeld, t.name, n, end, o.Partition, o.Partitions)
		}
		if live && end.After(until) {
			until = end
		}
		b.ExpectValue(split, sv)
	}
	b.Put(split, encodeSplit(o.Partitions, until))
	switch v := held[1]; {
	case v == nil:
		b.ExpectAbsent(key)
	case len(v) == 16 && binary.BigEndian.Uint64(v) != o.owner && time.Now().UnixNano() < int64(binary.BigEndian.Uint64(v[8:])):
		end := time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
		return nil, fmt.Errorf("%w: %w: table %q, partition %d of %d, until %v", ErrConflict, errLeaseHeld, t.name, o.Partition, o.Partitions, end)
	default:
		b.ExpectValue(key, v)
	}
	b.Put(key, l.value)
	if err := t.store.Apply(ctx, &b); err != nil {
		if errors.Is(err, ErrConflict) {
			err = fmt.Errorf("%w: %w: table %q, partition %d of %d", ErrConflict, errLeaseHeld, t.name, o.Partition, o.Partitions)
		}
		return nil, err
	}
	return l, nil
}

func (o *MaintainerOptions) leaseValue() ([]byte, time.Time) {
	expires := time.Now().Add(o.LeaseTTL)
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), o.owner)
	return binary.BigEndian.AppendUint64(v, uint64(expires.UnixNano())), expires
}

// holdLease makes sure l is held for at least half its TTL more, renewing
// it if need be, or fails if it was lost (it expired and another
// maintainer took it). A nil lease (an unbounded store) always holds.
func (t *Table[T]) holdLease(ctx context.Context, l *lease, o *MaintainerOptions) error {
	if l == nil || time.Until(l.expires) > o.LeaseTTL/2 {
		return nil
	}
	// The split record must still name this split, and last as long as
	// the lease; another maintainer of the split may rewrite it meanwhile,
	// which makes this renewal read it again.
	for attempt := 1; ; attempt++ {
		sv, err := t.store.Get(ctx, l.split)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("table %q: renew the maintainer's lease: %w", t.name, err)
		}
		n, until, ok := decodeSplit(sv)
		if !ok || n != o.Partitions {
			return fmt.Errorf("table %q: renew the maintainer's lease: %w: maintainers of another split took over", t.name, ErrConflict)
		}
		var b Batch
		b.ExpectValue(l.key, l.value)
		next, expires := o.leaseValue()
		b.Put(l.key, next)
		b.ExpectValue(l.split, sv)
		if until.Before(expires) {
			b.Put(l.split, encodeSplit(n, expires))
		}
		err = t.store.Apply(ctx, &b)
		if err == nil {
			l.value, l.expires = next, expires
			return nil
		}
		if errors.Is(err, ErrConflict) && attempt < maxAttempts {
			if v, gerr := t.store.Get(ctx, l.key); gerr == nil && bytes.Equal(v, l.value) {
				continue // the split record moved; the lease is still ours
			}
		}
		return fmt.Errorf("table %q: renew the maintainer's lease: %w", t.name, err)
	}
}

// releaseLease gives l up, if it is still held, and shortens the split
// record to the leases of its split still held, so that another split
// need not wait for l to expire. A maintainer of the split that renews or
// releases at the same time makes it try again.
func (t *Table[T]) releaseLease(l *lease) {
	ctx := context.Background()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		var b Batch
		b.ExpectValue(l.key, l.value)
		b.Delete(l.key)
		if err := t.shortenSplit(ctx, &b, l); err != nil {
			// Give the lease up at least; the split record expires.
			_ = t.store.Apply(ctx, &Batch{ops: b.Ops()[:2]})
			return
		}
		err := t.store.Apply(ctx, &b)
		if !errors.Is(err, ErrConflict) {
			return
		}
		if v, err := t.store.Get(ctx, l.key); err != nil || !bytes.Equal(v, l.value) {
			return // not ours any more
		}
	}
}

// shortenSplit adds to b, which releases l, the rewrite of the split
// record to last as long as the other leases of l's split.
func (t *Table[T]) shortenSplit(ctx context.Context, b *Batch, l *lease) error {
	sv, err := t.store.Get(ctx, l.split)
	if err != nil {
		return err
	}
	n, _, ok := decodeSplit(sv)
	if !ok {
		return fmt.Errorf("%w: split record %q", ErrCodec, sv)
	}
	b.ExpectValue(l.split, sv)
	until := time.Now()
	others := appendInt(bytes.Clone(l.split), int64(n))
	for e, err := range t.store.Scan(ctx, ScanRange{Start: others, End: tupleEnd(others)}) {
		if err != nil {
			return err
		}
		if bytes.Equal(e.Key, l.key) || len(e.Value) != 16 {
			continue
		}
		b.ExpectValue(bytes.Clone(e.Key), bytes.Clone(e.Value))
		if end := time.Unix(0, int64(binary.BigEndian.Uint64(e.Value[8:]))); end.After(until) {
			until = end
		}
	}
	b.Put(l.split, encodeSplit(n, until))
	return nil
}

// partitionHash places a record's changes in a maintainer partition.
func partitionHash(pk []byte) uint64 {
	h := fnv.New64a()
	h.Write(pk)
	return h.Sum64()
}

// changePK returns the encoded primary key in a change record's key.
func (t *Table[T]) changePK(key []byte) ([]byte, error) {
	rest := key[len(t.queueSpace):]
	off := 0
	for range t.pk {
		n, err := ElementLen(rest[off:])
		if err != nil {
			return nil, fmt.Errorf("table %q: change record %q: %w", t.name, key, err)
		}
		off += n
	}
	return rest[:off], nil
}

// changeGroup is the pending changes of one record.
type changeGroup struct {
	pk      []byte
	changes []change // oldest first; planGroup may keep only the oldest
	all     []change // every change of the group, as read
	factKey []byte
	fact    []byte        // the record as read; nil: none
	ops     []Op          // the batch that applies them: guard, then mutations
	guard   int           // ops[:guard] expect the record and remove the changes
	split   bool          // the index mutations do not fit one batch with the rest
	marker  Op            // when split: the marker applySplit writes first
	planned error         // why the changes cannot be planned, if they cannot
	done    bool          // applied
	want    []*indexTable // the indexes the changes' entries are of
	written []change      // the markers its failed tries wrote
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
// together count as the most failed of them: a marker applySplit wrote
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
	n, werr := t.rewriteFailed(ctx, s.changes, f)
	if werr == nil && n > 0 && f.setAside && o.Logger != nil {
		o.Logger.ErrorContext(ctx, "indextable: changes set aside", "table", t.name, "changes", n, "failures", f.count, "error", err)
	}
	return werr
}

// rewriteFailed rewrites changes as failed as f, each conditional on its
// value as read, and returns how many it rewrote; a change that moved
// meanwhile is left as it is.
func (t *Table[T]) rewriteFailed(ctx context.Context, changes []change, f failure) (int, error) {
	atom := t.store.Atomicity()
	put := func(cs []change, f failure) error {
		var b Batch
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
		return len(changes), nil
	}
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch) {
		return 0, err
	}
	n := 0
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
			n++
		case !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch):
			return n, err
		}
	}
	return n, nil
}

// applyGroupsHeld is applyGroups under the drain lock; it adds to stuck
// what it cannot apply. The records whose changes fit one batch go
// together, when the store allows it and no write overtook one of them;
// the others, and those of a batch that failed, one by one (applyGroup).
func (t *Table[T]) applyGroupsHeld(ctx context.Context, groups []changeGroup, l *lease, o *MaintainerOptions, stuck *[]stuckChanges) (int, error) {
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	view := t.indexes.load()
	keys := make([][]byte, len(groups))
	for i := range groups {
		keys[i] = append(bytes.Clone(t.factSpace), groups[i].pk...)
	}
	facts, err := t.store.GetMany(ctx, keys, nil)
	if err != nil {
		return 0, err
	}
	atom := t.store.Atomicity()
	var all Batch
	var joined []*changeGroup
	for i := range groups {
		g := &groups[i]
		g.factKey, g.fact, g.all = keys[i], facts[i], g.changes
		t.planGroup(view, g, atom)
		if g.planned == nil && !g.split {
			all.ops = append(all.ops, g.ops...)
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
				g.done = true
			}
		case !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInvalidBatch):
			return 0, err
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
		if g.split {
			err = t.applySplit(ctx, view, g, l, o)
		} else if err = t.store.Apply(ctx, &Batch{ops: g.ops}); err == nil {
			view.noteMutations(g.ops, g.changesRecord())
		} else if errors.Is(err, ErrConflict) {
			err = errOvertaken
		}
		switch {
		case err == nil:
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

// planGroup computes the batch that applies the changes of g to the record
// at g.factKey, whose value is g.fact (nil: deleted), or sets g.planned to
// why it cannot. The batch expects the record as read and every change
// record, deletes the change records, and makes the index mutations: the
// expectations and deletions first, the mutations after them, for
// applySplit. When the batch does not fit the atomicity scope atom, g is
// marked split, and its changes are cut to the oldest that applySplit's
// guard can remove in one batch; the rest wait for the next pass, which
// is safe: each pass deletes the entries of the versions its changes name
// and puts those of the record as it is.
func (t *Table[T]) planGroup(view *indexView, g *changeGroup, atom Atomicity) {
	g.ops = nil
	g.planned = t.planOps(view, g, atom)
}

// planOps is planGroup's work: it returns why the changes cannot be
// planned, if they cannot.
func (t *Table[T]) planOps(view *indexView, g *changeGroup, atom Atomicity) error {
	fact := g.fact
	for {
		if err := t.planChanges(view, g, g.factKey, fact); err != nil {
			return err
		}
		g.split = atom.Allows(&Batch{ops: g.ops}) != nil
		if !g.split {
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
		g.marker = Op{Kind: OpPut, Key: key, Value: value}
		err := atom.Allows(&Batch{ops: splitGuard(g)})
		if err == nil {
			return nil
		}
		if len(g.changes) == 1 {
			return fmt.Errorf("one change of the record does not fit the store's atomicity scope: %w", err)
		}
		g.changes = g.changes[:len(g.changes)/2]
	}
}

// splitGuard returns the last batch of applySplit: g's guard, and the
// removal of its marker.
func splitGuard(g *changeGroup) []Op {
	return append(g.ops[:g.guard:g.guard], Op{Kind: OpExpectValue, Key: g.marker.Key, Value: g.marker.Value}, Op{Kind: OpDelete, Key: g.marker.Key})
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
	ops := make([]Op, 0, 1+2*len(g.changes)+8)
	if fact == nil {
		ops = append(ops, Op{Kind: OpExpectAbsent, Key: factKey})
	} else {
		ops = append(ops, Op{Kind: OpExpectValue, Key: factKey, Value: fact})
	}
	for _, c := range g.changes {
		ops = append(ops, Op{Kind: OpExpectValue, Key: c.key, Value: c.value}, Op{Kind: OpDelete, Key: c.key})
	}
	g.guard = len(ops)
	var current []entry
	if fact != nil {
		var err error
		if current, err = t.factEntries(want, fact, g.pk); err != nil {
			return err
		}
	}
	// Delete the entries of every earlier version that the current one
	// lacks; put the current entries, except those that every earlier
	// version had as they are (the index holds them already).
	var before [][]entry
	var deleted [][]byte
	for i := range g.changes {
		c := &g.changes[i]
		if c.scope&scopeIndex != 0 {
			// A stray entry key, longer than its index's prefix.
			ix := view.owner(c.before)
			if ix != nil && ix.maintained() && len(c.before) > len(ix.prefix) &&
				findEntry(current, c.before) < 0 && !containsKey(deleted, c.before) {
				deleted = append(deleted, c.before)
				ops = append(ops, Op{Kind: OpDelete, Key: c.before})
			}
			before = append(before, nil)
			continue
		}
		if c.before == nil {
			before = append(before, nil)
			continue
		}
		if !c.held {
			es, err := t.factEntries(want, c.before, g.pk)
			if err != nil {
				return err
			}
			c.entries, c.held = es, true
		}
		before = append(before, c.entries)
	}
	for _, es := range before {
		for _, e := range es {
			if findEntry(current, e.key) < 0 && !containsKey(deleted, e.key) {
				deleted = append(deleted, e.key)
				ops = append(ops, Op{Kind: OpDelete, Key: e.key})
			}
		}
	}
	for _, e := range current {
		held := true
		for _, es := range before {
			i := findEntry(es, e.key)
			held = held && i >= 0 && bytes.Equal(es[i].value, e.value)
		}
		if !held {
			ops = append(ops, Op{Kind: OpPut, Key: e.key, Value: e.value})
		}
	}
	g.ops = ops
	return nil
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, have := range keys {
		if bytes.Equal(have, k) {
			return true
		}
	}
	return false
}

// factEntries returns the entries in indexes of the record stored as fact.
func (t *Table[T]) factEntries(indexes []*indexTable, fact, pk []byte) ([]entry, error) {
	_, payload, err := splitFact(fact)
	if err != nil {
		return nil, fmt.Errorf("table %q: record %v: %w", t.name, decodeForError(pk), err)
	}
	return t.entriesOf(indexes, payload, pk)
}

// applySplit applies the changes of one record whose index mutations do not
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
func (t *Table[T]) applySplit(ctx context.Context, view *indexView, g *changeGroup, l *lease, o *MaintainerOptions) error {
	// g.ops[0] expects the record as read.
	err := t.store.Apply(ctx, &Batch{ops: []Op{g.ops[0], g.marker}})
	if errors.Is(err, ErrConflict) {
		return errOvertaken
	}
	if err != nil {
		return err
	}
	marker, _ := decodeChange(g.marker.Key, g.marker.Value) // as encoded
	g.written = append(g.written, marker)                   // until the changes go
	// The pieces go only while the lease is surely held.
	hold := func() error { return t.holdLease(ctx, l, o) }
	if err := applyInPieces(ctx, t.store, &Batch{ops: g.ops[g.guard:]}, hold); err != nil {
		return err
	}
	view.noteMutations(g.ops[g.guard:], g.changesRecord())
	err = t.store.Apply(ctx, &Batch{ops: splitGuard(g)})
	if errors.Is(err, ErrConflict) {
		err = t.store.Apply(ctx, &Batch{ops: g.ops[1:g.guard]})
		if errors.Is(err, ErrConflict) {
			err = errChangesMoved
		}
	}
	if err == nil || errors.Is(err, errChangesMoved) {
		g.written = g.written[:len(g.written)-1]
	}
	return err
}

// Lag is how far the maintainers are behind the table's writes.
type Lag struct {
	// Pending is the number of changes in the queue that maintainers are
	// to apply.
	Pending int
	// Oldest is the age of the oldest pending change (by the clock of the
	// process that wrote it); zero when none is pending.
	Oldest time.Duration
	// SetAside is the number of changes in the queue that maintainers set
	// aside, as ones they cannot apply (see RunMaintainer); they are not
	// pending.
	SetAside int
}

// Lag reads the table's queue and reports how many changes are pending and
// the age of the oldest, and how many are set aside.
func (t *Table[T]) Lag(ctx context.Context) (Lag, error) {
	if err := checkContext(ctx); err != nil {
		return Lag{}, err
	}
	var l Lag
	var oldest time.Time
	for e, err := range t.store.Scan(ctx, ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
		if err != nil {
			return Lag{}, err
		}
		if setAside(e.Value) {
			l.SetAside++
			continue
		}
		l.Pending++
		c, err := decodeChange(e.Key, e.Value)
		if err == nil && (oldest.IsZero() || c.enqueued.Before(oldest)) {
			oldest = c.enqueued // a record that does not decode has no age
		}
	}
	if !oldest.IsZero() {
		l.Oldest = max(time.Since(oldest), 0)
	}
	return l, nil
}

// WaitIndexed waits until every change committed before it was called is
// applied to the indexes (by maintainers running elsewhere), or ctx is
// done. When one of those changes is, or comes to be, set aside by the
// maintainers as one they cannot apply (see RunMaintainer), it returns an
// error wrapping ErrChangeSetAside that names its record and why, rather
// than wait for ever; a change that failed fewer times keeps it waiting.
func (t *Table[T]) WaitIndexed(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	return t.waitApplied(ctx, 0, nil)
}

// applyQueued applies, as a maintainer with options o, every partition of
// the queue in turn, until every change of Build and Repair committed
// before it was called is applied (by it, or by maintainers running
// elsewhere). Other changes it applies as it goes, but does not wait for.
// It fails when one of the changes it waits for is one that a maintainer
// cannot apply, and waits while maintainers of another split hold leases.
func (t *Table[T]) applyQueued(ctx context.Context, o MaintainerOptions) error {
	stuck := map[string]error{}
	o.unappliable = func(key []byte, err error) { stuck[string(key)] = err }
	o.owner = rand.Uint64() | 1
	return t.waitApplied(ctx, scopeIndex, func(left [][]byte) error {
		po := o
		if po.Partitions == 0 {
			n, err := t.liveSplit(ctx)
			if err != nil {
				return err
			}
			po.Partitions = max(n, 1)
		}
		if err := po.defaults(); err != nil {
			return err
		}
		for p := range po.Partitions {
			po.Partition = p
			if _, err := t.applyPending(ctx, &po); err != nil && !errors.Is(err, errLeaseHeld) {
				return err
			}
		}
		for _, k := range left {
			if err, ok := stuck[string(k)]; ok {
				return fmt.Errorf("a change cannot be applied: %w", err)
			}
		}
		return nil
	})
}

// waitApplied waits until every change committed before it was called
// (only those whose scope has a bit of scope, when set) is applied,
// calling step, when set, with the changes still waited for before each
// look. It fails with an error wrapping ErrChangeSetAside as soon as it
// finds one of them set aside.
func (t *Table[T]) waitApplied(ctx context.Context, scope byte, step func(left [][]byte) error) error {
	var keys [][]byte
	for e, err := range t.store.Scan(ctx, ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
		if err != nil {
			return err
		}
		if scope != 0 {
			if c, err := decodeChange(e.Key, e.Value); err != nil || c.scope&scope == 0 {
				continue
			}
		}
		if setAside(e.Value) {
			return t.setAsideError(e.Key, e.Value)
		}
		keys = append(keys, bytes.Clone(e.Key))
	}
	wait := 200 * time.Microsecond
	for len(keys) > 0 {
		if step != nil {
			if err := step(keys); err != nil {
				return err
			}
		}
		var err error
		if keys, err = t.stillQueued(ctx, keys); err != nil || len(keys) == 0 {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
	return nil
}

// setAsideError returns the error of waitApplied for the change record
// set aside at key, whose value is value.
func (t *Table[T]) setAsideError(key, value []byte) error {
	f, _, _ := splitFailed(value)
	record := any(fmt.Sprintf("%q", key))
	if pk, err := t.changePK(key); err == nil {
		record = decodeForError(pk)
	}
	return wrapErrorf(ErrChangeSetAside, f.err(), "table %q, record %v, after %d failures", t.name, record, f.count)
}

// waitChunk is how many change records a look of waitApplied reads.
const waitChunk = 256

// stillQueued returns keys, change records in key order, from the first
// still queued. It looks them up a chunk at a time, in the order a
// maintainer's pass applies them, and stops at a chunk with one still
// queued: a look costs no more than one chunk however long the wait. A
// key that is gone is applied, since change IDs are never reused.
func (t *Table[T]) stillQueued(ctx context.Context, keys [][]byte) ([][]byte, error) {
	var values [][]byte
	for len(keys) > 0 {
		n := min(len(keys), waitChunk)
		var err error
		if values, err = t.store.GetMany(ctx, keys[:n], values[:0]); err != nil {
			return keys, err
		}
		// Keep those still queued, at the end of the chunk.
		left := n
		for i := n - 1; i >= 0; i-- {
			if setAside(values[i]) {
				return keys, t.setAsideError(keys[i], values[i])
			}
			if values[i] != nil {
				left--
				keys[left] = keys[i]
			}
		}
		if keys = keys[left:]; left < n {
			break
		}
	}
	return keys, nil
}

// mayBeStale reports whether entries of ix may lag behind the fact table:
// ix is Eventual, or writes to the table may fall back to the queue.
func (t *Table[T]) mayBeStale(ix *indexTable) bool {
	return ix.eventual || bounded(t.store.Atomicity())
}

// maxPendingChecked is how many queued changes a read checks record by
// record; with more, it checks every result.
const maxPendingChecked = 64

// pendingRecords returns the encoded primary keys of the records with
// queued changes (those whose primary key starts with within), appended
// to dst[:0], or all=true when more than maxPendingChecked changes are
// queued.
//
// How reads stay correct: the entries of a record in an index are exactly
// those of its fact record whenever no change to it is queued. A read
// collects the records with queued changes before it reads any entry. The
// entry of a record without one may be trusted: when the collecting scan
// passed the record, its entries were exact, and since then only a
// maintainer has changed them, from the record as it was at that time; so
// the record matched the read at some moment during it, the promise a
// synchronous read gives. The entries of the other records are checked
// against their fact records, and an entry the record no longer has is
// skipped.
func (t *Table[T]) pendingRecords(ctx context.Context, dst [][]byte, within []byte) ([][]byte, bool, error) {
	dst = dst[:0]
	n := 0
	r := ScanRange{Start: t.queueSpace, End: t.queueEnd, Limit: maxPendingChecked + 1}
	if within != nil {
		r.Start = append(bytes.Clone(t.queueSpace), within...)
		r.End = tupleEnd(r.Start)
	}
	for e, err := range t.store.Scan(ctx, r) {
		if err != nil {
			return dst, false, err
		}
		if n++; n > maxPendingChecked {
			return dst, true, nil
		}
		pk, err := t.changePK(e.Key)
		if err != nil {
			return dst, true, nil
		}
		if len(dst) == 0 || !bytes.Equal(dst[len(dst)-1], pk) {
			dst = append(dst, bytes.Clone(pk))
		}
	}
	return dst, false, nil
}
