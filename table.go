package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Table errors, in addition to the Store errors.
var (
	// ErrInvalidSchema reports a schema that cannot be opened.
	ErrInvalidSchema = errors.New("indextable: invalid schema")
	// ErrExists reports an insert of a primary key that is taken.
	ErrExists = errors.New("indextable: record exists")
	// ErrUniqueViolation reports a write that would give two records one key
	// in a unique index.
	ErrUniqueViolation = errors.New("indextable: unique index violation")
	// ErrInvalidKey reports a primary key, or a computed index key, that does
	// not fit the schema.
	ErrInvalidKey = errors.New("indextable: invalid key")
	// ErrInvalidArgument reports an argument a call cannot use at all: a
	// nil context, store or option.
	ErrInvalidArgument = errors.New("indextable: invalid argument")
)

// checkContext refuses a nil context, which every call of a store would
// otherwise meet with a panic.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return nil
}

// checkArguments refuses a nil context or store.
func checkArguments(ctx context.Context, store Store) error {
	if store == nil {
		return fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	return checkContext(ctx)
}

// Key spaces within a table's part of the store, which starts with the
// table's name.
const (
	spaceFact    = 0 // then the primary key
	spaceIndex   = 1 // then the index name, its generation, the entry key
	spaceCatalog = 2 // then the index name
	spaceQueue   = 3 // then the primary key and a change ID
	spaceLease   = 4 // then a maintainer partition
	spaceUsage   = 6 // the usage totals (after spaceIntra, 5)
	spaceLayout  = 7 // the record layout and codec, for tools
	// and spaceIntra, in placement.go
)

// maxAttempts bounds the retries of a write whose read was overtaken by a
// concurrent write to the same record or unique key.
const maxAttempts = 64

// Schema declares a table: its name, primary key and index tables.
type Schema[T any] struct {
	// Name identifies the table in the store; tables with different names
	// share a store without touching each other's keys.
	Name string
	// PrimaryKey names the fields that make the primary key, in order.
	PrimaryKey []string
	// Indexes declares the index tables kept with the fact table.
	Indexes []Index[T]
	// Codec encodes records; nil means JSONCodec.
	Codec Codec
}

// Version identifies one state of a record, for conditional writes: each
// update adds one, and an insert starts from a random incarnation (high
// 32 bits) so that a record deleted and inserted again does not repeat the
// versions of its earlier life. Compare versions for equality only.
type Version uint64

// newIncarnation returns the version of a newly inserted record.
func newIncarnation() Version {
	return Version(rand.Uint32()|1)<<32 | 1
}

// Table is a fact table of records of type T, a struct, ordered by primary
// key, together with its index tables. It is safe for concurrent use: a
// write that a concurrent write to the same record (or unique key) overtook
// reads again and retries, and gives up with ErrConflict after 64 tries.
type Table[T any] struct {
	store      Store
	name       string
	codec      Codec
	inPlace    *binaryPlan // the codec's plan for T, when it can decode in place
	stable     bool        // the store's values may be kept (StableStore)
	rtype      reflect.Type
	pk         []field
	prefix     []byte // of every key of the table
	factSpace  []byte
	queueSpace []byte
	queueEnd   []byte        // tupleEnd(queueSpace)
	indexes    indexManager  // the index tables; see indexManager for how they change
	readers    sync.Pool     // *reader[T], to reuse read buffers
	writers    sync.Pool     // *writeBuffers[T], to reuse write buffers
	writes     atomic.Int64  // record writes committed, for Usage
	scans      atomic.Int64  // queries of the fact table, for Usage
	filters    filterCounts  // filtered scans of the fact table, for Usage
	wake       chan struct{} // a change was queued: wakes a maintainer
}

// Open opens the table that schema declares over store, checking the
// schema against T, and reconciles the store's catalog with the schema's
// indexes (see IndexState): a new index starts write-only unless the table
// is empty, a changed one is rebuilt from empty, and a removed one is
// dropped with its entries. Build makes write-only indexes readable.
func Open[T any](ctx context.Context, store Store, schema Schema[T]) (*Table[T], error) {
	if err := checkArguments(ctx, store); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: record type %s is not a struct", ErrInvalidSchema, rt)
	}
	if schema.Name == "" {
		return nil, fmt.Errorf("%w: the table has no name", ErrInvalidSchema)
	}
	if len(schema.PrimaryKey) == 0 {
		return nil, fmt.Errorf("%w: table %q has no primary key", ErrInvalidSchema, schema.Name)
	}
	codec := schema.Codec
	if codec == nil {
		codec = JSONCodec{}
	}
	t := newTable[T](store, schema.Name, codec, rt)
	for i, name := range schema.PrimaryKey {
		for _, prev := range schema.PrimaryKey[:i] {
			if prev == name {
				return nil, fmt.Errorf("%w: primary key names %q twice", ErrInvalidSchema, name)
			}
		}
		f, err := lookupField(rt, name, false)
		if err != nil {
			return nil, fmt.Errorf("primary key: %w", err)
		}
		t.pk = append(t.pk, f)
	}
	var indexes []*indexTable
	for _, spec := range schema.Indexes {
		if slices.ContainsFunc(indexes, func(ix *indexTable) bool { return ix.name == spec.Name }) {
			return nil, fmt.Errorf("%w: two indexes are named %q", ErrInvalidSchema, spec.Name)
		}
		ix, err := compileIndex(rt, spec, t)
		if err != nil {
			return nil, err
		}
		indexes = append(indexes, ix)
	}
	if err := checkStoredFields(codec, rt, t.pk, indexes); err != nil {
		return nil, fmt.Errorf("table %q: %w", t.name, err)
	}
	if err := t.loadCatalog(ctx, indexes); err != nil {
		return nil, fmt.Errorf("table %q: catalog: %w", t.name, err)
	}
	if err := t.recordLayout(ctx); err != nil {
		return nil, fmt.Errorf("table %q: record layout: %w", t.name, err)
	}
	return t, nil
}

// checkStoredFields refuses, for the BinaryCodec, a primary key, index key
// or projection field promoted from an unexported embedded struct: the
// codec does not store it (JSONCodec does), so every record would be
// indexed under its zero value and no query would find the value written.
func checkStoredFields(c Codec, rt reflect.Type, pk []field, indexes []*indexTable) error {
	if _, ok := c.(*BinaryCodec); !ok {
		return nil
	}
	all := slices.Clone(pk)
	for _, ix := range indexes {
		all = append(append(all, ix.fields...), ix.proj.fields...)
	}
	for _, f := range all {
		t := rt
		for _, i := range f.index[:len(f.index)-1] {
			sf := t.Field(i)
			if !sf.IsExported() {
				return fmt.Errorf("%w: the BinaryCodec does not store field %q, promoted from the unexported embedded %s", ErrInvalidSchema, f.name, sf.Type)
			}
			if t = sf.Type; t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
		}
	}
	return nil
}

// newTable returns the table name of store, with records of type rt stored
// with codec, before its primary key and indexes are set.
func newTable[T any](store Store, name string, codec Codec, rt reflect.Type) *Table[T] {
	t := &Table[T]{store: store, name: name, codec: codec, rtype: rt, wake: make(chan struct{}, 1)}
	if c, ok := codec.(*BinaryCodec); ok {
		t.inPlace, _ = c.plan(rt) // else Unmarshal reports the error
	}
	if s, ok := store.(StableStore); ok {
		t.stable = s.StableValues()
	}
	// Goroutines share these prefixes: each is clipped, so that an append
	// to one copies it.
	t.prefix = slices.Clip(appendString(nil, name))
	t.factSpace = slices.Clip(appendInt(bytes.Clone(t.prefix), spaceFact))
	t.queueSpace = slices.Clip(appendInt(bytes.Clone(t.prefix), spaceQueue))
	t.queueEnd = tupleEnd(t.queueSpace)
	t.indexes.view.Store(newIndexView(nil))
	return t
}

// Name returns the table's name.
func (t *Table[T]) Name() string { return t.name }

// WriteOption refines a write.
type WriteOption func(*writeOptions)

type writeOptions struct {
	ifVersion Version // 0: unconditional
	badOption error   // an option that cannot apply
}

// parseWriteOptions applies opts, refusing a nil one: it may have been meant
// as a condition.
func parseWriteOptions(opts []WriteOption) (writeOptions, error) {
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
// returns an error wrapping ErrNotFound if there is none.
func (t *Table[T]) Delete(ctx context.Context, pk Tuple, opts ...WriteOption) error {
	o, err := parseWriteOptions(opts)
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
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	_, err = t.write(ctx, t.indexes.load(), writeDelete, key, nil, nil, o, &w.ops)
	return err
}

// writeBuffers are the buffers of one write, kept in the table's pool for
// the next. The encoded record is not among them: the decoded copy of it,
// which index keys are computed from, shares its memory.
type writeBuffers[T any] struct {
	rec, stored    T
	key, storedKey []byte
	ops            []Op
}

func (t *Table[T]) newWriteBuffers() *writeBuffers[T] {
	if w, ok := t.writers.Get().(*writeBuffers[T]); ok {
		return w
	}
	return new(writeBuffers[T])
}

// freeWriteBuffers returns w to the pool, holding nothing of the write.
func (t *Table[T]) freeWriteBuffers(w *writeBuffers[T]) {
	if cap(w.ops) > 1<<10 || cap(w.key)+cap(w.storedKey) > 1<<12 {
		return
	}
	var zero T
	w.rec, w.stored = zero, zero
	clear(w.ops[:cap(w.ops)])
	w.ops = w.ops[:0]
	t.writers.Put(w)
}

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
	// The write plans against one view, which no lifecycle change replaces
	// until it has committed.
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	view := t.indexes.load()
	w := t.newWriteBuffers()
	defer t.freeWriteBuffers(w)
	w.rec = rec
	factKey, err := t.factKey(w.key[:0], reflect.ValueOf(&w.rec).Elem())
	if err != nil {
		return 0, err
	}
	w.key = factKey
	fact, err := appendMarshal(t.codec, make([]byte, binary.MaxVarintLen64, 128), &w.rec)
	if err != nil {
		return 0, fmt.Errorf("table %q: encode record: %w", t.name, err)
	}
	payload := fact[binary.MaxVarintLen64:]
	if err := t.decodeKept(payload, &w.stored); err != nil {
		return 0, fmt.Errorf("table %q: the codec cannot decode what it encoded: %w", t.name, err)
	}
	sv := reflect.ValueOf(&w.stored).Elem()
	storedKey, err := t.factKey(w.storedKey[:0], sv)
	w.storedKey = storedKey
	if err != nil || !bytes.Equal(storedKey, factKey) {
		return 0, fmt.Errorf("%w: table %q: primary key %v does not survive the codec (stored as %v)",
			ErrInvalidKey, t.name, decodeForError(factKey[len(t.factSpace):]), decodeForError(storedKey[len(t.factSpace):]))
	}
	entries, err := entries(view.sync, sv, factKey[len(t.factSpace):], payload, t.codec)
	if err != nil {
		return 0, fmt.Errorf("table %q: %w", t.name, err)
	}
	if err := t.checkLimits(view, sv, factKey[len(t.factSpace):], fact, entries); err != nil {
		return 0, err
	}
	return t.write(ctx, view, kind, factKey, fact, entries, o, &w.ops)
}

// factKey appends to dst the fact table key of the record rv.
func (t *Table[T]) factKey(dst []byte, rv reflect.Value) ([]byte, error) {
	key := append(dst, t.factSpace...)
	for i := range t.pk {
		fv := t.pk[i].get(rv)
		if !fv.IsValid() {
			return key, fmt.Errorf("%w: primary key field %q is unreachable (nil embedded pointer)", ErrInvalidKey, t.pk[i].name)
		}
		key = appendKeyValue(key, fv)
	}
	return key, nil
}

// write makes one record change, planned against view: it reads the
// current record, and commits a batch that replaces it with fact
// (binary.MaxVarintLen64 bytes for the version, then the payload) and its
// index entries newEntries, or deletes it when fact is nil, conditional on
// the current record being unchanged; it retries when a concurrent write
// got there first.
func (t *Table[T]) write(ctx context.Context, view *indexView, kind writeKind, factKey, fact []byte, newEntries []entry, o writeOptions, ops *[]Op) (Version, error) {
	pk := factKey[len(t.factSpace):]
	queueing := view.queueing
	n := 2 + 2*len(newEntries) // the record, its guard, the entries and theirs
	if queueing {
		n++ // a change record
	}
	b := Batch{ops: slices.Grow((*ops)[:0], n)}
	defer func() { *ops = b.ops }()
	for attempt := 1; ; attempt++ {
		// An insert first takes the record to be absent, blind, which its
		// batch expects: a new record (the usual case) is not read twice.
		// A blind attempt that fails without writing (a taken key, say) is
		// decided by one that reads the record, so errors come in the same
		// order as if it had read.
		blind := kind == writeInsert && attempt == 1
		var oldValue []byte
		exists := false
		if !blind {
			v, err := t.store.Get(ctx, factKey)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return 0, err
			}
			oldValue, exists = v, err == nil
		}
		var oldVersion Version
		var oldEntries []entry
		if exists {
			v, oldPayload, err := splitFact(oldValue)
			if err != nil {
				return 0, fmt.Errorf("table %q: record %v: %w", t.name, decodeForError(pk), err)
			}
			oldVersion = v
			if oldEntries, err = t.entriesOf(view.sync, oldPayload, pk); err != nil {
				return 0, err
			}
		}
		switch {
		case kind == writeInsert && exists:
			return 0, fmt.Errorf("%w: table %q, primary key %v", ErrExists, t.name, decodeForError(pk))
		case (kind == writeUpdate || kind == writeDelete) && !exists:
			return 0, fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, decodeForError(pk))
		case o.ifVersion != 0 && o.ifVersion != oldVersion:
			return 0, fmt.Errorf("%w: table %q, primary key %v is at version %d, not %d", ErrConflict, t.name, decodeForError(pk), oldVersion, o.ifVersion)
		}

		version := oldVersion + 1
		if !exists {
			version = newIncarnation()
		}
		if fact == nil {
			version = 0
		}
		a := writeAttempt{b: &b, factKey: factKey, pk: pk, fact: fact, version: version, oldValue: oldValue, exists: exists}
		queued := queueing
		if queued {
			t.startBatch(&a, scopeEventual)
		} else {
			t.startBatch(&a, 0)
		}
		if err := planEntries(ctx, t.store, &b, oldEntries, newEntries); err != nil {
			if blind {
				continue
			}
			return 0, fmt.Errorf("table %q: %w", t.name, err)
		}
		err := commit(ctx, t.store, &b, func() error {
			queued = true
			return t.fallback(ctx, &a, oldEntries, newEntries)
		})
		if err == nil {
			t.writes.Add(1)
			view.noteMutations(b.ops, exists)
			if queued {
				select {
				case t.wake <- struct{}{}:
				default:
				}
			}
			return version, nil
		}
		if blind && (errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalidBatch)) {
			continue // nothing was written
		}
		if !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return 0, fmt.Errorf("table %q: %w", t.name, err)
		}
	}
}

// writeAttempt is one try of a write: the record as read and as it will be,
// and the batch that commits it.
type writeAttempt struct {
	b                 *Batch
	factKey, pk, fact []byte // fact nil: a delete
	version           Version
	oldValue          []byte
	exists            bool
}

// startBatch resets a's batch to the record's guard and write and, unless
// scope is 0, its change record of scope.
func (t *Table[T]) startBatch(a *writeAttempt, scope byte) {
	b := a.b
	b.Reset()
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

// fallback rebuilds a's batch, which does not fit the store's atomicity
// scope, by the fallback rule: the record with the entries in its
// partition, the others queued; else the record with its unique entries,
// every other index queued; else the record alone, every index queued.
// A write that changes a unique index's entries outside the batch cannot
// fall back.
func (t *Table[T]) fallback(ctx context.Context, a *writeAttempt, oldEntries, newEntries []entry) error {
	oldIntra, oldInter := splitPlacement(oldEntries)
	newIntra, newInter := splitPlacement(newEntries)
	if len(newIntra)+len(oldIntra) > 0 {
		t.startBatch(a, 0)
		if err := planEntries(ctx, t.store, a.b, oldIntra, newIntra); err != nil {
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
		if err := planEntries(ctx, t.store, a.b, oldUnique, newUnique); err != nil {
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

// splitPlacement splits entries into those of IntraPartition indexes and
// the others.
func splitPlacement(entries []entry) (intra, inter []entry) {
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

// entriesOf decodes a stored record and returns its entries in indexes.
func (t *Table[T]) entriesOf(indexes []*indexTable, payload, pk []byte) ([]entry, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	// A record of the table's type, which is T's, or a layout's for a
	// tool (see VerifyTable).
	rec := reflect.New(t.rtype)
	if err := t.decodeInto(payload, rec, t.stable); err != nil {
		return nil, fmt.Errorf("table %q: decode record %v: %w", t.name, decodeForError(pk), err)
	}
	es, err := entries(indexes, rec.Elem(), pk, payload, t.codec)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", t.name, err)
	}
	return es, nil
}

// decodeKept decodes into rec a payload that stays unmodified for as long
// as rec may live; a codec that can decodes strings that share its memory,
// saving a copy.
func (t *Table[T]) decodeKept(payload []byte, rec *T) error {
	return t.decodeInto(payload, reflect.ValueOf(rec), true)
}

// decodeStored decodes into rec a payload read from the store: in place
// when the store's values may be kept, else from a copy.
func (t *Table[T]) decodeStored(payload []byte, rec *T) error {
	return t.decodeInto(payload, reflect.ValueOf(rec), t.stable)
}

// decodeInto decodes payload into the record that ptr points to: in place
// when kept is set and the codec can.
func (t *Table[T]) decodeInto(payload []byte, ptr reflect.Value, kept bool) error {
	if kept && t.inPlace != nil {
		return t.inPlace.decode(bytesString(payload), ptr.Elem())
	}
	return codecError(t.codec.Unmarshal(payload, ptr.Interface()))
}

// A fact record is stored as its version (a uvarint), then its codec
// payload. factValue writes version into the binary.MaxVarintLen64 bytes
// that fact reserves before the payload and returns the record's bytes.
func factValue(fact []byte, v Version) []byte {
	var n [binary.MaxVarintLen64]byte
	vb := binary.AppendUvarint(n[:0], uint64(v))
	start := binary.MaxVarintLen64 - len(vb)
	copy(fact[start:], vb)
	return fact[start:]
}

// splitFact decodes a fact record.
func splitFact(value []byte) (Version, []byte, error) {
	v, n := binary.Uvarint(value)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: fact record has no version", ErrCodec)
	}
	return Version(v), value[n:], nil
}

// decodeForError renders an encoded tuple for an error message.
func decodeForError(b []byte) any {
	if t, err := DecodeTuple(b); err == nil {
		return t
	}
	return fmt.Sprintf("%q", b)
}

// factKeyOf returns the fact table key of a primary key given as a tuple,
// checking it against the schema.
func (t *Table[T]) factKeyOf(dst []byte, pk Tuple) ([]byte, error) {
	if len(pk) != len(t.pk) {
		return nil, fmt.Errorf("%w: table %q has %d primary key components, got %d", ErrInvalidKey, t.name, len(t.pk), len(pk))
	}
	key := append(dst, t.factSpace...)
	for i, v := range pk {
		w, _, err := queryComponent(&t.pk[i], v)
		if err == nil {
			key, err = AppendElement(key, w)
		}
		if err != nil {
			return nil, wrapErrorf(ErrInvalidKey, err, "")
		}
	}
	return key, nil
}

// Get returns the record with primary key pk (one component per primary key
// field), or an error wrapping ErrNotFound.
func (t *Table[T]) Get(ctx context.Context, pk ...any) (T, error) {
	rec, _, err := t.GetVersioned(ctx, pk...)
	return rec, err
}

// GetVersioned is Get that also returns the record's version, for a later
// conditional write with IfVersion.
func (t *Table[T]) GetVersioned(ctx context.Context, pk ...any) (T, Version, error) {
	if err := checkContext(ctx); err != nil {
		var zero T
		return zero, 0, err
	}
	rd := t.newReader() // for its buffers
	defer t.freeReader(rd)
	key, err := t.factKeyOf(rd.f.scratch[:0], pk)
	rd.f.scratch = key
	if err != nil {
		return rd.zero, 0, err
	}
	value, err := t.store.Get(ctx, key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, pk)
		}
		return rd.zero, 0, err
	}
	v, payload, err := splitFact(value)
	if err == nil {
		err = t.decodeStored(payload, &rd.rec)
	}
	if err != nil {
		return rd.zero, 0, fmt.Errorf("table %q: decode record %v: %w", t.name, pk, err)
	}
	return rd.rec, v, nil
}

// uniqueChange returns a unique index whose entries differ between old and
// new, or nil.
func uniqueChange(old, new []entry) *indexTable {
	for _, pair := range [2][2][]entry{{old, new}, {new, old}} {
		for _, e := range pair[0] {
			if !e.ix.unique {
				continue
			}
			if i := findEntry(pair[1], e.key); i < 0 || !bytes.Equal(pair[1][i].value, e.value) {
				return e.ix
			}
		}
	}
	return nil
}
