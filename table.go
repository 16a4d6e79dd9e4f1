package indextable

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
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
	// ErrStaleSchema reports a write that a table cannot make with the
	// indexes it knows: another process added or redefined an index that
	// this program cannot maintain (one with a Key func, or over fields
	// its record type lacks), or the table could not read the catalog for
	// a whole SchemaLease. The write changed nothing. Open the table with
	// a schema that has the index, or retry once the store answers.
	ErrStaleSchema = errors.New("indextable: stale schema")
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
func checkArguments(ctx context.Context, store kv.Store) error {
	if store == nil {
		return fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	return checkContext(ctx)
}

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
	// SchemaLease is how long a handle of the table trusts its view of the
	// table's indexes: it reads the catalog again when its view is half a
	// lease old, and refuses writes (ErrStaleSchema) when it could not for
	// a whole lease. Lifecycle steps that other handles must have seen
	// wait for two leases (see the README's Online schema change section).
	// Every handle of a table must use the same lease; 0 means
	// DefaultSchemaLease.
	SchemaLease time.Duration
	// Revision orders the schemas of the programs that share the table.
	// Open makes the catalog this schema's only when Revision is at least
	// the highest that opened the table; a program of an earlier revision
	// (one of the previous release, restarted during a rolling deploy)
	// leaves the catalog be, and maintains and reads the indexes it
	// records instead, as it would learn them from another process (see
	// ErrStaleSchema). Raise it with every change of Indexes.
	Revision int64
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
	store   kv.Store
	name    string
	codec   Codec
	inPlace *binaryPlan // the codec's plan for T, when it can decode in place
	// exact: the codec decodes every record as it was (binaryExact), so a
	// write computes its entries from the record itself.
	exact      bool
	stable     bool // the store's values may be kept (StableStore)
	rtype      reflect.Type
	pk         []field
	prefix     []byte // of every key of the table
	factSpace  []byte
	queueSpace []byte
	queueEnd   []byte // tupleEnd(queueSpace)
	hintSpace  []byte // nil: the table hints no change (see hints.go)
	// versionKey is the key of the schema version, which writes expect
	// when the store's batches are unbounded (versioned).
	versionKey []byte
	versioned  bool
	lease      time.Duration // the schema lease
	revision   int64         // the schema's Revision
	opened     time.Time     // for clock
	swept      atomic.Int64  // when a pass last swept the hints (Unix ns)
	indexes    indexManager  // the index tables; see indexManager for how they change
	readers    sync.Pool     // *reader[T], to reuse read buffers
	getters    sync.Pool     // *getScratch[T], a Get's memory
	writers    sync.Pool     // *writeBuffers[T], to reuse write buffers
	writes     atomic.Int64  // record writes committed, for Usage
	scans      atomic.Int64  // queries of the fact table, for Usage
	filters    filterCounts  // filtered scans of the fact table, for Usage
	wake       chan struct{} // a change was queued: wakes a maintainer
}

// Open opens the table that schema declares over store, checking the
// schema against T, and reconciles the store's catalog with the schema's
// indexes (see IndexState): a new index starts write-only (delete-only on
// a store of bounded atomicity; readable when the first Open of an empty
// table declares it), a changed one is
// rebuilt from empty, and a removed one is dropped; the entries of the
// dropped ones are deleted once no handle may use them, by a later Open or
// Build. Build makes new indexes readable. Other handles of the table take
// the change up within the SchemaLease.
func Open[T any](ctx context.Context, store kv.Store, schema Schema[T]) (*Table[T], error) {
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
	if schema.SchemaLease < 0 {
		return nil, fmt.Errorf("%w: table %q: negative SchemaLease %v", ErrInvalidSchema, schema.Name, schema.SchemaLease)
	}
	t := newTable[T](store, schema.Name, codec, rt)
	if schema.SchemaLease > 0 {
		t.lease = schema.SchemaLease
	}
	t.revision = schema.Revision
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
	if err := t.writeRecordType(ctx); err != nil {
		return nil, fmt.Errorf("table %q: record type: %w", t.name, err)
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
func newTable[T any](store kv.Store, name string, codec Codec, rt reflect.Type) *Table[T] {
	t := &Table[T]{store: store, name: name, codec: codec, rtype: rt, wake: make(chan struct{}, 1),
		lease: DefaultSchemaLease, opened: time.Now()}
	if c, ok := codec.(*BinaryCodec); ok {
		t.inPlace, _ = c.plan(rt) // else Unmarshal reports the error
		t.exact = t.inPlace != nil && binaryExact(rt)
	}
	if s, ok := store.(kv.StableStore); ok {
		t.stable = s.StableValues()
	}
	// Goroutines share these prefixes: each is clipped, so that an append
	// to one copies it.
	t.prefix = tablePrefix(name)
	t.factSpace = spacePrefix(t.prefix, kv.SpaceRecords)
	t.queueSpace = spacePrefix(t.prefix, kv.SpaceQueue)
	t.queueEnd = tuple.End(t.queueSpace)
	if store.Atomicity().Partition != nil {
		t.hintSpace = spacePrefix(t.prefix, kv.SpaceHints)
	}
	t.versionKey, t.versioned = schemaVersionKey(t.prefix), !bounded(store.Atomicity())
	t.indexes.view.Store(newIndexView(nil))
	return t
}

// Name returns the table's name.
func (t *Table[T]) Name() string { return t.name }

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

// decodeFact decodes a fact record.
func decodeFact(value []byte) (Version, []byte, error) {
	v, n := binary.Uvarint(value)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: fact record has no version", ErrCodec)
	}
	return Version(v), value[n:], nil
}

// decodeForError renders an encoded tuple for an error message.
func decodeForError(b []byte) any {
	if t, err := decodeTuple(b); err == nil {
		return t
	}
	return fmt.Sprintf("%q", b)
}

// primaryKeyValues returns the values of a primary key given as Get and
// Delete take it: the values, or one Tuple of them.
func primaryKeyValues(pk []any) []any {
	if len(pk) == 1 {
		if values, ok := pk[0].(Tuple); ok {
			return values
		}
	}
	return pk
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
			key, err = kv.AppendElement(key, w)
		}
		if err != nil {
			return nil, wrapErrorf(ErrInvalidKey, err, "table %q, primary key", t.name)
		}
	}
	return key, nil
}

// Get returns the record with primary key pk, or an error wrapping
// ErrNotFound. pk holds one value per primary key field, or one Tuple of
// them: Get(ctx, "C042") and Get(ctx, indextable.Tuple{"C042"}) are alike.
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
	pk = primaryKeyValues(pk)
	var zero T
	g, _ := t.getters.Get().(*getScratch[T])
	if g == nil {
		g = new(getScratch[T])
	}
	defer t.freeGetter(g)
	key, err := t.factKeyOf(g.key[:0], pk)
	g.key = key
	if err != nil {
		return zero, 0, err
	}
	value, err := t.store.Get(ctx, key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, t.keyForError(key))
		}
		return zero, 0, err
	}
	v, payload, err := decodeFact(value)
	if err == nil {
		// In place on any store: a value Get returns is the caller's to
		// keep (kv.Store), so the record's strings may share it.
		err = t.decodeInto(payload, reflect.ValueOf(&g.rec), true)
	}
	if err != nil {
		return zero, 0, fmt.Errorf("table %q: decode record %v: %w", t.name, t.keyForError(key), err)
	}
	return g.rec, v, nil
}

// keyForError returns the primary key of the fact key key, for an error.
// Errors name it decoded from the key, as stored (a time in UTC, a float32
// widened to float64), rather than by the caller's values, which they
// would keep: a caller's values that an error may keep escape to the heap,
// and each Get would allocate them. Copying them through reflect for the
// error keeps them just the same, to escape analysis.
func (t *Table[T]) keyForError(key []byte) any { return decodeForError(key[len(t.factSpace):]) }

// getScratch is the memory of one Get, kept in the table's pool: the
// record's key, and the record decoded into. A Get of a reader would clear
// much more of it than a Get uses.
type getScratch[T any] struct {
	key []byte
	rec T
}

// freeGetter returns g to the pool, keeping its key buffer unless it grew
// large, and nothing that refers to the store's memory.
func (t *Table[T]) freeGetter(g *getScratch[T]) {
	if cap(g.key) > 1<<12 {
		return
	}
	var zero T
	g.rec = zero
	t.getters.Put(g)
}
