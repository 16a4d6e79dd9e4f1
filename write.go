package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/indextable/indextable/kv"
)

// Insert adds rec, which must have a primary key not yet in the table
// (ErrExists otherwise), and returns its version.
func (t *Table[T]) Insert(ctx context.Context, rec T) (Version, error) {
	return t.writeRecord(ctx, writeInsert, rec, nil)
}

// Upsert adds rec or replaces the record with its primary key, and returns
// the new version.
func (t *Table[T]) Upsert(ctx context.Context, rec T) (Version, error) {
	return t.writeRecord(ctx, writeUpsert, rec, nil)
}

// Update replaces the record with rec's primary key, which must exist
// (ErrNotFound otherwise), and returns the new version.
func (t *Table[T]) Update(ctx context.Context, rec T, opts ...WriteOption) (Version, error) {
	return t.writeRecord(ctx, writeUpdate, rec, opts)
}

// Delete removes the record with primary key pk and its index entries; it
// returns an error wrapping ErrNotFound if there is none. Like Get, it takes
// the primary key as its values, one per field (or a Tuple of them), which
// WriteOptions may follow:
//
//	err := customers.Delete(ctx, "C042", indextable.IfVersion(v))
func (t *Table[T]) Delete(ctx context.Context, pk ...any) error {
	pk, opts, err := splitWriteOptions(pk)
	pk = primaryKeyValues(pk)
	var o writeOptions
	if err == nil {
		o, err = parseWriteOptions(opts)
	}
	if err == nil {
		err = checkContext(ctx)
	}
	if err != nil {
		return err
	}
	w := t.newWriteBuffers()
	defer t.freeWriteBuffers(w)
	key, err := t.factKeyOf(w.key[:0], pk)
	w.key = key
	if err != nil {
		return err
	}
	return t.atSchema(ctx, func() error {
		t.indexes.drain.RLock()
		defer t.indexes.drain.RUnlock()
		view, err := t.view(ctx, true)
		if err == nil {
			_, err = t.write(ctx, view, writeDelete, key, nil, nil, o, &w.batch)
		}
		return err
	})
}

// atSchema runs write, a write planned against the table's view as it is
// then, and runs it again, after refreshView, when a change of the schema
// version overtook it (errSchemaMoved).
func (t *Table[T]) atSchema(ctx context.Context, write func() error) error {
	for attempt := 1; ; attempt++ {
		err := write()
		if !errors.Is(err, errSchemaMoved) {
			return err
		}
		if attempt == maxAttempts {
			return fmt.Errorf("table %q: the schema kept changing: %w", t.name, ErrConflict)
		}
		if err := t.refreshView(ctx); err != nil {
			return err
		}
	}
}

// WriteOption refines a write.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ifVersion Version // 0: unconditional
	badOption error   // an option that cannot apply
}

// splitWriteOptions separates Delete's arguments into the primary key's
// values and the WriteOptions that follow them.
func splitWriteOptions(args []any) ([]any, []WriteOption, error) {
	var opts []WriteOption
	for i, a := range args {
		if o, ok := a.(WriteOption); ok {
			opts = append(opts, o)
		} else if len(opts) > 0 {
			return nil, nil, fmt.Errorf("%w: argument %d: write options follow the primary key's values", ErrInvalidArgument, i)
		}
	}
	return args[:len(args)-len(opts)], opts, nil
}

// parseWriteOptions applies opts, refusing a nil one: it may have been meant
// as a condition.
func parseWriteOptions(opts []WriteOption) (writeOptions, error) {
	if len(opts) == 0 {
		return writeOptions{}, nil // without allocating o, which escapes to the options
	}
	var o writeOptions
	for i, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: write option %d is nil", ErrInvalidArgument, i)
		}
		opt(&o)
	}
	return o, o.badOption
}

// IfVersion makes an Update or Delete conditional: it applies only if the
// record's version is still v (as read by GetVersioned or returned by the
// last write) and otherwise returns an error wrapping ErrConflict. No
// record has version 0: IfVersion(0), a version never read, is refused with
// ErrInvalidArgument rather than taken as no condition.
func IfVersion(v Version) WriteOption {
	return func(o *writeOptions) {
		o.ifVersion = v
		if v == 0 { // no record has it: a version never read
			o.badOption = fmt.Errorf("%w: IfVersion(0): no record has version 0", ErrInvalidArgument)
		}
	}
}

type writeKind uint8

const (
	writeInsert writeKind = iota // fails if present
	writeUpsert                  // either
	writeUpdate                  // fails if absent
	writeDelete                  // fails if absent
)

// writeRecord encodes rec and writes it. Its primary key and index entries
// are taken from the record as the codec stores it, as they are again when
// the record is next written or deleted, so what the codec does not keep
// (a field tagged json:"-", say) cannot leave entries behind.
func (t *Table[T]) writeRecord(ctx context.Context, kind writeKind, rec T, opts []WriteOption) (Version, error) {
	o, err := parseWriteOptions(opts)
	if err == nil {
		err = checkContext(ctx)
	}
	if err != nil {
		return 0, err
	}
	var v Version
	err = t.atSchema(ctx, func() error {
		v, err = t.writeRecordAt(ctx, kind, rec, o)
		return err
	})
	return v, err
}

// writeRecordAt is writeRecord against the table's view as it is.
func (t *Table[T]) writeRecordAt(ctx context.Context, kind writeKind, rec T, o writeOptions) (Version, error) {
	// The write plans against one view, which no lifecycle change replaces
	// until it has committed.
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	view, err := t.view(ctx, true)
	if err != nil {
		return 0, err
	}
	w := t.newWriteBuffers()
	defer t.freeWriteBuffers(w)
	factKey, fact, entries, err := t.encodeWrite(view, w, &w.arena, rec)
	if err != nil {
		return 0, err
	}
	return t.write(ctx, view, kind, factKey, fact, entries, o, &w.batch)
}

// encodeWrite encodes rec in w's buffers for a write planned against
// view, and checks it against the store's limits. It returns its fact key,
// its fact (see encodeRecord) and its entries in view's synchronous
// indexes, those of delete-only indexes left out.
func (t *Table[T]) encodeWrite(view *indexView, w *writeBuffers[T], a *arena, rec T) (factKey, fact []byte, es []entry, err error) {
	// A Key func may keep the record it is given: it must not share the
	// arena's memory, which later transactions reuse.
	factKey, fact, stored, err := t.encodeRecord(w, a, a == nil || !view.keyFuncs, rec)
	if err != nil {
		return nil, nil, nil, err
	}
	pk := factKey[len(t.factSpace):]
	es, err = entries(view.sync, stored, pk, fact[binary.MaxVarintLen64:], t.codec, a)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("table %q: %w", t.name, err)
	}
	es = view.putting(es)
	if err := t.checkLimits(view, stored, pk, fact, es); err != nil {
		return nil, nil, nil, err
	}
	return factKey, fact, es, nil
}

// encodeRecord encodes rec in w's buffers, its fact from a. It returns its
// fact key, its fact (binary.MaxVarintLen64 bytes of room for the version,
// then the codec's payload), and the record decoded back from the
// payload, as the store will hold it, whose primary key must be rec's:
// decoded in place, sharing the fact's memory, when kept is set; rec
// itself (its copy in w) when the codec is exact for T.
func (t *Table[T]) encodeRecord(w *writeBuffers[T], a *arena, kept bool, rec T) (factKey, fact []byte, stored reflect.Value, err error) {
	w.rec = rec
	factKey, err = t.factKey(w.key[:0], reflect.ValueOf(&w.rec).Elem())
	if err != nil {
		return nil, nil, stored, err
	}
	w.key = factKey
	fact, err = appendMarshal(t.codec, a.bytes(128)[:binary.MaxVarintLen64], &w.rec)
	if err != nil {
		return nil, nil, stored, fmt.Errorf("table %q: encode record: %w", t.name, err)
	}
	if t.exact {
		return factKey, fact, reflect.ValueOf(&w.rec).Elem(), nil
	}
	if err := t.decodeInto(fact[binary.MaxVarintLen64:], reflect.ValueOf(&w.stored), kept); err != nil {
		return nil, nil, stored, fmt.Errorf("table %q: the codec cannot decode what it encoded: %w", t.name, err)
	}
	stored = reflect.ValueOf(&w.stored).Elem()
	storedKey, err := t.factKey(w.storedKey[:0], stored)
	w.storedKey = storedKey
	if err != nil || !bytes.Equal(storedKey, factKey) {
		return nil, nil, stored, fmt.Errorf("%w: table %q: primary key %v does not survive the codec (stored as %v)",
			ErrInvalidKey, t.name, decodeForError(factKey[len(t.factSpace):]), decodeForError(storedKey[len(t.factSpace):]))
	}
	return factKey, fact, stored, nil
}

// factKey appends to dst the fact table key of the record rv.
func (t *Table[T]) factKey(dst []byte, rv reflect.Value) ([]byte, error) {
	key := append(dst, t.factSpace...)
	for i := range t.pk {
		var ok bool
		if key, ok = t.pk[i].appendKey(key, rv, false); !ok {
			return key, fmt.Errorf("%w: primary key field %q is unreachable (nil embedded pointer)", ErrInvalidKey, t.pk[i].name)
		}
	}
	return key, nil
}

// maxAttempts bounds the retries of a write whose read was overtaken by a
// concurrent write to the same record or unique key.
const maxAttempts = 64

// write makes one record change, planned against view: it reads the
// current record, and commits a batch that replaces it with fact
// (binary.MaxVarintLen64 bytes for the version, then the payload) and its
// index entries newEntries, or deletes it when fact is nil, conditional on
// the current record being unchanged; it retries when a concurrent write
// got there first. Each attempt reads, checks, plans and applies, in b.
func (t *Table[T]) write(ctx context.Context, view *indexView, kind writeKind, factKey, fact []byte, newEntries []entry, o writeOptions, b *kv.Batch) (Version, error) {
	for attempt := 1; ; attempt++ {
		a := writeAttempt{b: b, factKey: factKey, pk: factKey[len(t.factSpace):], fact: fact, schema: view.version}
		// An insert first takes the record to be absent, blind, which its
		// batch expects: a new record (the usual case) is not read twice.
		// A blind attempt that fails without writing (a taken key, say) is
		// decided by one that reads the record, so errors come in the same
		// order as if it had read.
		blind := kind == writeInsert && attempt == 1
		if !blind {
			if err := t.readCurrent(ctx, view, &a); err != nil {
				return 0, err
			}
		}
		if err := t.checkCurrent(kind, o, &a); err != nil {
			return 0, err
		}
		if err := t.planBatch(ctx, view, &a, newEntries, t.store); err != nil {
			if blind {
				continue // nothing was written
			}
			return 0, fmt.Errorf("table %q: %w", t.name, err)
		}
		err := t.applyHinted(ctx, b)
		if err == nil {
			t.noteWrite(view, &a)
			return a.version, nil
		}
		if blind && (errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidBatch)) {
			continue // nothing was written
		}
		if errors.Is(err, ErrConflict) && t.versioned {
			if now, verr := t.readVersion(ctx); verr != nil || !bytes.Equal(now, view.version) {
				return 0, errSchemaMoved // (or a read error: refreshView reports it)
			}
		}
		if !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return 0, fmt.Errorf("table %q: %w", t.name, err)
		}
	}
}

// errSchemaMoved reports a write that the schema version's change
// overtook: it changed nothing, and plans again after refreshView.
var errSchemaMoved = errors.New("the schema changed")

// writeAttempt is one try of a write: the record as read and as it will be,
// and the batch that commits it.
type writeAttempt struct {
	b                 *kv.Batch
	factKey, pk, fact []byte  // fact nil: a delete
	schema            []byte  // the schema version the write plans at
	version           Version // the version the write stores
	// The record as read (exists false: none): its value, version and
	// entries in the synchronous indexes.
	oldValue   []byte
	oldVersion Version
	oldEntries []entry
	exists     bool
	queued     bool // b holds a change record
}

// readCurrent reads into a the record it replaces, if there is one.
func (t *Table[T]) readCurrent(ctx context.Context, view *indexView, a *writeAttempt) error {
	value, err := t.store.Get(ctx, a.factKey)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return t.asRead(view, a, value)
}

// asRead sets in a the record it replaces, read as value: its version,
// and its entries in view's synchronous indexes.
func (t *Table[T]) asRead(view *indexView, a *writeAttempt, value []byte) error {
	version, payload, err := decodeFact(value)
	if err != nil {
		return fmt.Errorf("table %q: record %v: %w", t.name, decodeForError(a.pk), err)
	}
	a.oldValue, a.oldVersion, a.exists = value, version, true
	a.oldEntries, err = t.entriesOf(view.sync, payload, a.pk)
	return err
}

// checkCurrent checks a's write against the record as read (its kind and
// IfVersion), and sets the version the write stores: the next one, a new
// incarnation for a new record, none for a delete.
func (t *Table[T]) checkCurrent(kind writeKind, o writeOptions, a *writeAttempt) error {
	switch {
	case kind == writeInsert && a.exists:
		return fmt.Errorf("%w: table %q, primary key %v", ErrExists, t.name, decodeForError(a.pk))
	case (kind == writeUpdate || kind == writeDelete) && !a.exists:
		return fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, decodeForError(a.pk))
	case o.ifVersion != 0 && o.ifVersion != a.oldVersion:
		return fmt.Errorf("%w: table %q, primary key %v is at version %d, not %d", ErrConflict, t.name, decodeForError(a.pk), a.oldVersion, o.ifVersion)
	}
	switch {
	case a.fact == nil:
		a.version = 0
	case a.exists:
		a.version = a.oldVersion + 1
	default:
		a.version = newIncarnation()
	}
	return nil
}

// planBatch fills a's batch with the record's change, reading unique keys
// from s: its guard and write, its change record when view queues
// changes, and the index changes that turn its entries as read into
// newEntries. When that does not fit the store's atomicity scope, the
// fallback rule makes another batch of it. A transaction plans each of its
// records so.
func (t *Table[T]) planBatch(ctx context.Context, view *indexView, a *writeAttempt, newEntries []entry, s entryGetter) error {
	if err := t.planRecord(ctx, view, a, newEntries, s); err != nil {
		return err
	}
	atom := t.store.Atomicity()
	if atom.Allows(a.b) == nil {
		return nil
	}
	if err := t.fallback(ctx, a, newEntries, s); err != nil {
		return err
	}
	a.queued = true
	if err := atom.Allows(worstGuard(a.b)); err != nil {
		return fmt.Errorf("the record and its change record do not fit the store's atomicity scope, with room for a maintainer to apply them: %w", err)
	}
	return nil
}

// planRecord fills a's batch with the record's change, whole: its guard
// and write, its change record when view queues changes, and the index
// changes that turn its entries as read into newEntries, reading unique
// keys from s.
func (t *Table[T]) planRecord(ctx context.Context, view *indexView, a *writeAttempt, newEntries []entry, s entryGetter) error {
	scope := byte(0)
	if view.queueing {
		scope = scopeEventual
	}
	t.startBatch(a, scope)
	a.queued = scope != 0
	return planEntries(ctx, s, a.b, a.oldEntries, newEntries)
}

// noteWrite counts a's committed write and, when it queued a change, wakes
// the table's maintainer.
func (t *Table[T]) noteWrite(view *indexView, a *writeAttempt) {
	t.noteOps(view, a.b.Ops(), a.exists, a.queued)
}

// noteOps counts a committed record write, whose operations were ops, of
// a record that existed or not, and wakes the maintainer if it queued a
// change.
func (t *Table[T]) noteOps(view *indexView, ops []kv.Op, existed, queued bool) {
	t.writes.Add(1)
	view.noteMutations(ops, existed)
	if queued {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// startBatch resets a's batch to the record's guard and write and, unless
// scope is 0, its change record of scope.
func (t *Table[T]) startBatch(a *writeAttempt, scope byte) {
	b := a.b
	b.Reset()
	if t.versioned {
		expectAsRead(b, t.versionKey, a.schema)
	}
	if a.exists {
		b.ExpectValue(a.factKey, a.oldValue)
	} else {
		b.ExpectAbsent(a.factKey)
	}
	if a.fact != nil {
		b.Put(a.factKey, factValue(a.fact, a.version))
	} else {
		b.Delete(a.factKey)
	}
	if scope != 0 {
		t.enqueue(b, a.pk, a.oldValue, a.exists, scope)
	}
}

// entryGetter reads the unique keys a write checks: the store, or a
// transaction's view of it (see txGetter).
type entryGetter interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
}

// planEntries adds to b the index changes that turn the entries in old
// into those in new: deletes for entries that went, puts for entries that
// came or changed. A unique entry that comes is checked against the store
// (as s reads it) and guarded by an expectation that it is still absent
// when b applies.
func planEntries(ctx context.Context, s entryGetter, b *kv.Batch, old, new []entry) error {
	gone := func(o entry) error {
		if !o.ix.unique || o.ix.state == IndexReadable {
			b.Delete(o.key)
			return nil
		}
		// While a unique index is built, another record may hold a key
		// this one had before the build reached it: leave it that one.
		// An entry not there yet may be put by the build before b
		// applies: b expects it absent, and a retry deletes it.
		held, err := s.Get(ctx, o.key)
		switch {
		case errors.Is(err, ErrNotFound):
			b.ExpectAbsent(o.key)
			return nil
		case err != nil:
			return err
		}
		b.ExpectValue(o.key, held)
		if sameOwner(o.ix, o.key, held, o.value) {
			b.Delete(o.key)
		}
		return nil
	}
	came := func(n entry) error {
		// A unique key is checked when it comes and, while the index is
		// built, when its entry changes: another record may have taken it
		// before the build reached this one.
		if n.ix.unique && (findEntry(old, n.key) < 0 || n.ix.state != IndexReadable) {
			if err := guardUnique(ctx, s, b, n); err != nil {
				return err
			}
		}
		b.Put(n.key, n.value)
		return nil
	}
	return diffEntries([][]entry{old}, new, gone, came)
}

// guardUnique adds to b the expectation that keeps the key of unique entry
// e free, or held by e's own record, until b applies; or returns the
// violation when another record holds it, having added to b the
// expectation of the entry as held, with which a reader whose reads are no
// snapshot (Build) confirms it.
func guardUnique(ctx context.Context, s entryGetter, b *kv.Batch, e entry) error {
	held, err := s.Get(ctx, e.key)
	switch {
	case errors.Is(err, ErrNotFound):
		b.ExpectAbsent(e.key)
		return nil
	case err != nil:
		return err
	}
	b.ExpectValue(e.key, held)
	if !sameOwner(e.ix, e.key, held, e.value) {
		return uniqueViolation(e.ix, e.key, held)
	}
	return nil // a leftover entry of this very record
}

// sameOwner reports whether two values of the unique entry key name the
// same record.
func sameOwner(ix *indexTable, key, a, b []byte) bool {
	pa, _, errA := ix.decodeEntry(key, a, 0)
	pb, _, errB := ix.decodeEntry(key, b, 0)
	return errA == nil && errB == nil && bytes.Equal(pa, pb)
}

func uniqueViolation(ix *indexTable, key, held []byte) error {
	k, err := decodeTuple(key[len(ix.prefix):])
	if err != nil {
		return fmt.Errorf("%w: index %q", ErrUniqueViolation, ix.name)
	}
	pk, _, err := ix.decodeEntry(key, held, 0)
	if err != nil {
		return fmt.Errorf("%w: index %q: key %v is taken", ErrUniqueViolation, ix.name, k)
	}
	owner, _ := decodeTuple(pk)
	return fmt.Errorf("%w: index %q: key %v is taken by record %v", ErrUniqueViolation, ix.name, k, owner)
}

// uniqueChange returns a unique index whose entries differ between old and
// new, or nil.
func uniqueChange(old, new []entry) *indexTable {
	var changed *indexTable
	note := func(e entry) error {
		if e.ix.unique && changed == nil {
			changed = e.ix
		}
		return nil
	}
	_ = diffEntries([][]entry{old}, new, note, note) // note never fails
	return changed
}

// fallback rebuilds a's batch, which does not fit the store's atomicity
// scope, by the fallback rule: the record with the entries in its
// partition, the others queued; else the record with its unique entries,
// every other index queued; else the record alone, every index queued.
// A write that changes a unique index's entries outside the batch cannot
// fall back. It reads unique keys from s.
func (t *Table[T]) fallback(ctx context.Context, a *writeAttempt, newEntries []entry, s entryGetter) error {
	oldEntries := a.oldEntries
	oldIntra, oldInter := byPlacement(oldEntries)
	newIntra, newInter := byPlacement(newEntries)
	if len(newIntra)+len(oldIntra) > 0 {
		t.startBatch(a, 0)
		if err := planEntries(ctx, s, a.b, oldIntra, newIntra); err != nil {
			return err
		}
		t.enqueue(a.b, a.pk, a.oldValue, a.exists, scopeEventual|scopeInter)
		if t.store.Atomicity().Allows(a.b) == nil {
			if ix := uniqueChange(oldInter, newInter); ix != nil {
				return errUniqueOutside(ix)
			}
			return nil
		}
	}
	// Else the record with its unique entries, which cannot be queued:
	// every other index follows it.
	oldUnique, newUnique := uniqueEntries(oldEntries), uniqueEntries(newEntries)
	if len(oldUnique)+len(newUnique) > 0 {
		t.startBatch(a, 0)
		if err := planEntries(ctx, s, a.b, oldUnique, newUnique); err != nil {
			return err
		}
		t.enqueue(a.b, a.pk, a.oldValue, a.exists, scopeAll)
		if t.store.Atomicity().Allows(a.b) == nil {
			return nil
		}
	}
	if ix := uniqueChange(oldEntries, newEntries); ix != nil {
		return errUniqueOutside(ix)
	}
	t.startBatch(a, scopeAll)
	return nil
}

// worstGuard returns the largest batch a maintainer may need to apply the
// change that b, a fallback write, queues: applyInSteps's last batch, which
// expects the record and removes its change record and a marker holding a
// copy of it. b starts with the record's guard and its write, and ends
// with its change record (entries in the record's partition may come
// between).
func worstGuard(b *kv.Batch) *kv.Batch {
	ops := b.Ops()
	record, change := ops[1], ops[len(ops)-1]
	marker := kv.Op{Kind: kv.OpPut, Key: change.Key, Value: append(make([]byte, 3+binary.MaxVarintLen64), record.Value...)}
	return kv.NewBatch([]kv.Op{
		{Kind: kv.OpExpectValue, Key: record.Key, Value: record.Value},
		{Kind: kv.OpExpectValue, Key: change.Key, Value: change.Value}, {Kind: kv.OpDelete, Key: change.Key},
		{Kind: kv.OpExpectValue, Key: marker.Key, Value: marker.Value}, {Kind: kv.OpDelete, Key: marker.Key},
	}...)
}

// uniqueEntries returns the entries of unique indexes among entries.
func uniqueEntries(entries []entry) []entry {
	var unique []entry
	for _, e := range entries {
		if e.ix.unique {
			unique = append(unique, e)
		}
	}
	return unique
}

// byPlacement divides entries into those of IntraPartition indexes and
// the others.
func byPlacement(entries []entry) (intra, inter []entry) {
	for _, e := range entries {
		if e.ix.intra {
			intra = append(intra, e)
		} else {
			inter = append(inter, e)
		}
	}
	return intra, inter
}

func errUniqueOutside(ix *indexTable) error {
	return fmt.Errorf("%w: the write changes unique index %q, which cannot be checked outside the write's batch", ErrInvalidBatch, ix.name)
}

// writeBuffers are the buffers of one write, kept in the table's pool for
// the next. The encoded record is not among them: the decoded copy of it,
// which index keys are computed from, shares its memory.
type writeBuffers[T any] struct {
	rec, stored    T
	key, storedKey []byte
	batch          kv.Batch
	// arena holds a single write's encoded record and entries, which
	// nothing keeps once the write returns (a Store does not keep a batch).
	arena arena
}

func (t *Table[T]) newWriteBuffers() *writeBuffers[T] {
	if w, ok := t.writers.Get().(*writeBuffers[T]); ok {
		return w
	}
	return &writeBuffers[T]{arena: arena{single: true}}
}

// freeWriteBuffers returns w to the pool, holding nothing of the write.
func (t *Table[T]) freeWriteBuffers(w *writeBuffers[T]) {
	ops := w.batch.Ops()
	if cap(ops) > 1<<10 || cap(w.key)+cap(w.storedKey) > 1<<12 || !w.arena.keep() {
		return
	}
	var zero T
	w.rec, w.stored = zero, zero
	clear(ops[:cap(ops)])
	w.batch.Reset()
	w.arena.reset()
	t.writers.Put(w)
}
