package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// A change record lies in its record's partition, so that it commits with
// the record in one batch. On a store that partitions keys the queue is
// spread over every partition that holds a record, and reading all of it
// reads them all: on Azure Table storage, a query of the whole table. So on
// such a store (Atomicity.Partition set) a table keeps a hint of each
// change record in a key space of its own, SpaceHints, which the store
// keeps in one partition: under the change record's key with SpaceHints in
// place of SpaceQueue, a value that says when the change was hinted and
// whether maintainers set it aside. Maintainers, reads, Lag and
// WaitIndexed read the hints, one partition, and then only the queue of
// the records they name.
//
// The rule that makes hints enough: a change record is hinted before it is
// committed, and its hint is removed only once it is gone. applyHinted
// writes the hints of the change records a batch puts, then the batch; a
// write whose hints fail fails, having written nothing else. A maintainer
// removes the hints of the changes it applied. A hint whose change record
// never came to be (its batch failed, or its writer died between the two)
// costs reads a check and maintainers a look: the writer removes it when
// its batch was refused, and a maintainer once it is older than hintGrace,
// on condition that it is as the maintainer read it. So a crash between
// the two writes leaves a hint without a change, never the reverse: every
// queued change has a hint, reads that trust the entries of records
// without one stay exact (see pendingRecords), and a maintainer that reads
// the hints, then the queue of each record they name, finds every change
// queued before. The one exception is a writer whose batch commits more
// than hintGrace after its hints, a pause of the kind leases assume away:
// a maintainer may have removed them; the writer writes them anew, with a
// new time, when its batch returns later than hintGrace/2 after them (and
// the sweep would), and until then its change is not seen.
//
// Markers (see applyInSteps) are change records a maintainer writes beside
// hinted changes of their record, and removes with them; one that outlives
// them is hinted first. The sweep (sweepHints), at a table's first pass
// and every MaintainerOptions.SweepInterval, and in Repair, reads the
// whole queue: it hints changes that have no hint (those queued by
// versions of indextable before hints, or left by a pause the rule
// assumes away) and removes hints older than hintGrace whose change record
// is gone (whose removal a maintainer missed: it stopped, or failed, after
// it applied them).

// hintGrace is how old a hint without a change record must be before a
// maintainer or a sweep removes it.
const hintGrace = time.Minute

// hintFormat is the first byte of a hint's value; a flags byte (bit 0: the
// change is set aside) and the time of the hint (uvarint Unix nanoseconds)
// follow.
const hintFormat = 1

func encodeHint(when time.Time, aside bool) []byte {
	v := append(make([]byte, 0, 2+binary.MaxVarintLen64), hintFormat, boolByte(aside))
	return binary.AppendUvarint(v, uint64(when.UnixNano()))
}

// hint is a decoded hint.
type hint struct {
	change []byte // the key of its change record
	value  []byte // as read
	pk     []byte // the encoded primary key of the change's record
	when   time.Time
	aside  bool // the change is set aside
}

// decodeHint decodes the hint stored as e, or reports false for a key
// that names no record, which no table writes. A value that does not
// decode reads as a hint of unknown age, which a maintainer looks at but
// never removes as one without a change.
func (t *Table[T]) decodeHint(e kv.Entry) (hint, bool) {
	pk, err := t.recordOf(e.Key, t.hintSpace)
	if err != nil {
		return hint{}, false
	}
	h := hint{change: append(bytes.Clone(t.queueSpace), e.Key[len(t.hintSpace):]...), pk: bytes.Clone(pk), value: bytes.Clone(e.Value)}
	if v := e.Value; len(v) >= 3 && v[0] == hintFormat {
		if ns, n := binary.Uvarint(v[2:]); n > 0 {
			h.when, h.aside = time.Unix(0, int64(ns)), v[1]&1 != 0
		}
	}
	return h, true
}

// hinted reports whether the table hints its changes.
func (t *Table[T]) hinted() bool { return t.hintSpace != nil }

// hintOf returns the key of the hint of the change record at changeKey.
func (t *Table[T]) hintOf(changeKey []byte) []byte {
	return hintKey(t.hintSpace, t.queueSpace, changeKey)
}

// applyHinted applies b, a batch that may queue new change records, after
// the hints of those it puts. When the store refuses b, which then wrote
// nothing, it removes those hints again, as far as it can.
func (t *Table[T]) applyHinted(ctx context.Context, b *kv.Batch) error {
	if !t.hinted() {
		return t.store.Apply(ctx, b)
	}
	return applyHintedBy(ctx, t.store, b, t.hintFor)
}

// hintFor returns the key of the hint of the change record at key, or nil
// when key is not one of the table's change records or the table hints
// none.
func (t *Table[T]) hintFor(key []byte) []byte {
	if !t.hinted() || !bytes.HasPrefix(key, t.queueSpace) {
		return nil
	}
	return t.hintOf(key)
}

// applyHintedBy is applyHinted for a batch of any tables of store s:
// hintFor returns the hint key of each change record b puts (nil for other
// keys).
func applyHintedBy(ctx context.Context, s kv.Store, b *kv.Batch, hintFor func(key []byte) []byte) error {
	var hints kv.Batch
	now := time.Now()
	for _, op := range b.Ops() {
		if op.Kind != kv.OpPut {
			continue
		}
		if k := hintFor(op.Key); k != nil {
			hints.Put(k, encodeHint(now, setAside(op.Value)))
		}
	}
	if hints.Len() == 0 {
		return s.Apply(ctx, b)
	}
	if err := applyInPieces(ctx, s, &hints, nil); err != nil {
		return fmt.Errorf("hint the changes: %w", err)
	}
	err := s.Apply(ctx, b)
	if err == nil && time.Since(now) > hintGrace/2 {
		// A maintainer may take the hints for ones of a batch that failed:
		// write them anew (best effort), so that its removal, conditional
		// on the hint it read, fails.
		now = time.Now()
		for i, op := range hints.Ops() {
			hints.Ops()[i].Value = encodeHint(now, op.Value[1]&1 != 0)
		}
		_ = applyInPieces(ctx, s, &hints, nil)
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidBatch) {
		for i, op := range hints.Ops() {
			hints.Ops()[i] = kv.Op{Kind: kv.OpDelete, Key: op.Key}
		}
		_ = applyInPieces(ctx, s, &hints, nil) // else the maintainers will
	}
	return err
}

// putHints hints the change records at keys, set aside or not.
func (t *Table[T]) putHints(ctx context.Context, aside bool, keys ...[]byte) error {
	if !t.hinted() || len(keys) == 0 {
		return nil
	}
	var b kv.Batch
	now := time.Now()
	for _, k := range keys {
		b.Put(t.hintOf(k), encodeHint(now, aside))
	}
	return applyInPieces(ctx, t.store, &b, nil)
}

// dropHints removes the hints of the change records at keys.
func (t *Table[T]) dropHints(ctx context.Context, keys [][]byte) error {
	if !t.hinted() || len(keys) == 0 {
		return nil
	}
	var b kv.Batch
	for _, k := range keys {
		b.Delete(t.hintOf(k))
	}
	return applyInPieces(ctx, t.store, &b, nil)
}

// dropOrphans removes the hints hs, each on condition that it is as read:
// a writer that committed late writes its hint anew, which keeps it. A
// hint that changed meanwhile is left.
func (t *Table[T]) dropOrphans(ctx context.Context, hs []hint) error {
	var b kv.Batch
	for _, h := range hs {
		k := t.hintOf(h.change)
		b.ExpectValue(k, h.value)
		b.Delete(k)
	}
	if b.Len() == 0 {
		return nil
	}
	if t.store.Atomicity().Allows(&b) == nil {
		if err := t.store.Apply(ctx, &b); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	for i := 0; i < b.Len(); i += 2 {
		err := t.store.Apply(ctx, kv.NewBatch(b.Ops()[i:i+2]...))
		if err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return nil
}

// hints yields the table's hints of the records whose encoded primary key
// starts with within (nil: all), from a scan of at most limit of them (0:
// no limit).
func (t *Table[T]) hints(ctx context.Context, within []byte, limit int) iter.Seq2[hint, error] {
	return func(yield func(hint, error) bool) {
		r := kv.ScanRange{Start: t.hintSpace, End: tuple.End(t.hintSpace), Limit: limit}
		if within != nil {
			r.Start = append(bytes.Clone(t.hintSpace), within...)
			r.End = tuple.End(r.Start)
		}
		for e, err := range t.store.Scan(ctx, r) {
			if err != nil {
				yield(hint{}, err)
				return
			}
			if h, ok := t.decodeHint(e); ok && !yield(h, nil) {
				return
			}
		}
	}
}

// hintsToApply returns the hints of the changes of o's partition that are
// not set aside, in key order.
func (t *Table[T]) hintsToApply(ctx context.Context, o *MaintainerOptions) ([]hint, error) {
	var hs []hint
	for h, err := range t.hints(ctx, nil, 0) {
		if err != nil {
			return nil, err
		}
		if !h.aside && (o.Partitions <= 1 || int(fnv1a(h.pk)%uint64(o.Partitions)) == o.Partition) {
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// hintedChanges returns the change records that the table's hints name
// and that exist, in key order, reading them waitChunk at a time.
func (t *Table[T]) hintedChanges(ctx context.Context) ([]kv.Entry, error) {
	var keys [][]byte
	for h, err := range t.hints(ctx, nil, 0) {
		if err != nil {
			return nil, err
		}
		keys = append(keys, h.change)
	}
	var queued []kv.Entry
	var values [][]byte
	for chunk := range slices.Chunk(keys, waitChunk) {
		var err error
		if values, err = t.store.GetMany(ctx, chunk, values[:0]); err != nil {
			return nil, err
		}
		for i, v := range values {
			if v != nil {
				queued = append(queued, kv.Entry{Key: chunk[i], Value: bytes.Clone(v)})
			}
		}
	}
	return queued, nil
}

// hintedQueue yields the change records of the records hs name, hs in key
// order: one scan of the queue for each run of them whose changes lie in
// one partition, from the first record's changes to the last's. Changes
// of records between them come too; they are queued changes all the same.
func (t *Table[T]) hintedQueue(ctx context.Context, hs []hint) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		part := t.store.Atomicity().Partition
		for i := 0; i < len(hs); {
			first := append(bytes.Clone(t.queueSpace), hs[i].pk...)
			p := part(first)
			j := i + 1
			for j < len(hs) && (bytes.Equal(hs[j].pk, hs[j-1].pk) ||
				bytes.Equal(part(append(bytes.Clone(t.queueSpace), hs[j].pk...)), p)) {
				j++
			}
			last := append(bytes.Clone(t.queueSpace), hs[j-1].pk...)
			for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: first, End: tuple.End(last)}) {
				if !yield(e, err) || err != nil {
					return
				}
			}
			i = j
		}
	}
}

// defaultSweepInterval is MaintainerOptions.SweepInterval's default.
const defaultSweepInterval = 5 * time.Minute

// sweepDue reports whether a pass with options o sweeps the hints first:
// the table's first, and one every o.SweepInterval after, in this process.
func (t *Table[T]) sweepDue(o *MaintainerOptions) bool {
	last := t.swept.Load()
	return t.hinted() && (last == 0 || time.Since(time.Unix(0, last)) >= o.SweepInterval)
}

// sweepHints reads the table's whole queue and its hints: it hints each
// change record that has no hint (or one that says otherwise whether it is
// set aside), and removes each hint older than hintGrace whose change
// record does not exist, on condition that it is as read. Hints come first:
// a change committed after they were read shows in the queue, and is
// hinted again, which is harmless; so is a hint written for a change that
// a maintainer applies meanwhile, which goes as one without a change.
func (t *Table[T]) sweepHints(ctx context.Context) error {
	began := time.Now()
	held := map[string]hint{}
	for h, err := range t.hints(ctx, nil, 0) {
		if err != nil {
			return err
		}
		held[string(h.change)] = h
	}
	var fix kv.Batch
	for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
		if err != nil {
			return err
		}
		h, ok := held[string(e.Key)]
		delete(held, string(e.Key))
		if !ok || h.aside != setAside(e.Value) {
			fix.Put(t.hintOf(e.Key), encodeHint(began, setAside(e.Value)))
		}
	}
	if fix.Len() > 0 {
		if err := applyInPieces(ctx, t.store, &fix, nil); err != nil {
			return err
		}
	}
	var orphans []hint
	for _, h := range held {
		if !h.when.IsZero() && began.Sub(h.when) > hintGrace {
			orphans = append(orphans, h)
		}
	}
	if err := t.dropOrphans(ctx, orphans); err != nil {
		return err
	}
	t.swept.Store(began.UnixNano())
	return nil
}
