package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

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

// decodeFailed decodes the value of a format 3 change record into its
// failure and the value as queued.
func decodeFailed(value []byte) (failure, []byte, bool) {
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
		f, queued, ok := decodeFailed(value)
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
func (t *Table[T]) enqueue(b *kv.Batch, pk, before []byte, existed bool, scope byte) {
	key, value := t.changeRecord(pk, before, existed, scope)
	b.Put(key, value)
}

// changeRecord returns the key and value of a new change record; they
// share one allocation.
func (t *Table[T]) changeRecord(pk, before []byte, existed bool, scope byte) (key, value []byte) {
	buf := make([]byte, 0, len(t.queueSpace)+len(pk)+9+16+len(before))
	buf = appendChangeKey(buf, t.queueSpace, pk, rand.Int64())
	n := len(buf)
	buf = encodeChange(buf, time.Now(), scope, before, existed)
	return buf[:n:n], buf[n:]
}

// changePK returns the encoded primary key in a change record's key.
func (t *Table[T]) changePK(key []byte) ([]byte, error) { return t.recordOf(key, t.queueSpace) }

// recordOf returns the encoded primary key in the key of a change record
// or a hint, whose space's prefix is space.
func (t *Table[T]) recordOf(key, space []byte) ([]byte, error) {
	rest := key[len(space):]
	off := 0
	for range t.pk {
		n, err := kv.ElementLen(rest[off:])
		if err != nil {
			return nil, fmt.Errorf("table %q: change record %q: %w", t.name, key, err)
		}
		off += n
	}
	return rest[:off], nil
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
// the age of the oldest, and how many are set aside. On a store that
// partitions keys it reads the queue's hints (one partition), then the
// change records they name (see hints.go), never the whole queue.
func (t *Table[T]) Lag(ctx context.Context) (Lag, error) {
	if err := checkContext(ctx); err != nil {
		return Lag{}, err
	}
	var l Lag
	var oldest time.Time
	note := func(e kv.Entry) {
		if setAside(e.Value) {
			l.SetAside++
			return
		}
		l.Pending++
		c, err := decodeChange(e.Key, e.Value)
		if err == nil && (oldest.IsZero() || c.enqueued.Before(oldest)) {
			oldest = c.enqueued // a record that does not decode has no age
		}
	}
	if t.hinted() {
		queued, err := t.hintedChanges(ctx)
		if err != nil {
			return Lag{}, err
		}
		for _, e := range queued {
			note(e)
		}
	} else {
		for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
			if err != nil {
				return Lag{}, err
			}
			note(e)
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
// It looks up what it still waits for a chunk at a time, in the order a
// maintainer applies it, so a look costs no more when the queue is long.
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
// cannot apply, and waits while maintainers of another partitioning hold leases.
func (t *Table[T]) applyQueued(ctx context.Context, o MaintainerOptions) error {
	stuck := map[string]error{}
	o.unappliable = func(key []byte, err error) { stuck[string(key)] = err }
	o.owner = rand.Uint64() | 1
	return t.waitApplied(ctx, scopeIndex, func(left [][]byte) error {
		po := o
		if po.Partitions == 0 {
			n, err := t.livePartitioning(ctx)
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
	keys, err := t.queuedKeys(ctx, scope)
	if err != nil {
		return err
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

// queuedKeys returns the keys of the change records queued now (only those
// whose scope has a bit of scope, when set), in key order, or an error
// wrapping ErrChangeSetAside when one of them is set aside. On a table
// that hints its changes it reads them from the hints, and their records
// a chunk at a time.
func (t *Table[T]) queuedKeys(ctx context.Context, scope byte) ([][]byte, error) {
	var keys [][]byte
	add := func(key, value []byte) error {
		if scope != 0 {
			if c, err := decodeChange(key, value); err != nil || c.scope&scope == 0 {
				return nil
			}
		}
		if setAside(value) {
			return t.setAsideError(key, value)
		}
		keys = append(keys, bytes.Clone(key))
		return nil
	}
	if !t.hinted() {
		for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
			if err == nil {
				err = add(e.Key, e.Value)
			}
			if err != nil {
				return nil, err
			}
		}
		return keys, nil
	}
	queued, err := t.hintedChanges(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range queued {
		if err := add(e.Key, e.Value); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// setAsideError returns the error of waitApplied for the change record
// set aside at key, whose value is value.
func (t *Table[T]) setAsideError(key, value []byte) error {
	f, _, _ := decodeFailed(value)
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
	note := func(pk []byte) bool {
		if n++; n > maxPendingChecked {
			return false
		}
		if len(dst) == 0 || !bytes.Equal(dst[len(dst)-1], pk) {
			dst = append(dst, bytes.Clone(pk))
		}
		return true
	}
	if t.hinted() {
		for h, err := range t.hints(ctx, within, maxPendingChecked+1) {
			if err != nil {
				return dst, false, err
			}
			if !note(h.pk) {
				return dst, true, nil
			}
		}
		return dst, false, nil
	}
	r := kv.ScanRange{Start: t.queueSpace, End: t.queueEnd, Limit: maxPendingChecked + 1}
	if within != nil {
		r.Start = append(bytes.Clone(t.queueSpace), within...)
		r.End = tuple.End(r.Start)
	}
	for e, err := range t.store.Scan(ctx, r) {
		if err != nil {
			return dst, false, err
		}
		pk, err := t.changePK(e.Key)
		if err != nil || !note(pk) {
			return dst, true, nil
		}
	}
	return dst, false, nil
}
