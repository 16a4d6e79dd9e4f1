package indextable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// Index declares one index table over a table of records of type T.
//
// The key is either the fields named in Fields, in order (a composite key
// when there are several), or the tuples returned by Key, for computed
// keys. Entries are ordered by key, so a query may fix the leading
// components and range over the next one.
type Index[T any] struct {
	// Name identifies the index within its table.
	Name string
	// Fields names the exported fields that make the key, in order. A field
	// may be a string, []byte, bool, integer, float, time.Time, or a pointer
	// to one of these (nil is indexed as nil); in a MultiValued index, also a
	// slice of these, whose elements each make a key. A field of an embedded
	// struct that a nil pointer leaves out is absent, not nil: the record is
	// left out of the index, sparse or not.
	Fields []string
	// Key computes the keys of a record, as an escape hatch for keys that are
	// not plain fields; set either Key or Fields. Returning no tuple leaves
	// the record out of the index; several make the index multi-valued.
	// Tuples may differ in length: a query that fixes n components finds
	// only keys of n or more. A panic of Key is returned as an error
	// wrapping ErrInvalidKey.
	Key func(T) []Tuple
	// Strategy says what an entry holds besides its key. The zero value is
	// KeysOnly: entries hold the primary key, and reads fetch each record.
	Strategy Strategy
	// Projection names the fields a Partial entry keeps; only for Partial.
	Projection []string
	// Unique rejects a write that would give two records one key, with
	// ErrUniqueViolation, and applies nothing of it. An empty key is a key
	// like any other; make the index Sparse to let many records have none.
	Unique bool
	// Sparse leaves out records whose key fields hold a zero value (and, in
	// a multi-valued index, zero elements), as a sparse index in a database
	// leaves out missing fields.
	Sparse bool
	// MultiValued indexes a record under every element of its slice key
	// fields, as a movie under each of its actors. With several slice
	// fields, under every combination.
	MultiValued bool
	// Consistency says when the index follows a write: Synchronous (in the
	// write's batch) or Eventual (through the table's durable queue).
	Consistency Consistency
	// Placement says where the entries lie on a partitioned store; see
	// Placement.
	Placement Placement
	// Version is part of the index's definition in the catalog: change it
	// when a Key func starts computing other keys, so that the index is
	// rebuilt. Fields, Strategy and the other settings are compared without
	// it.
	Version int
}

// indexTable is a compiled Index: how to compute a record's entries, and
// where they live in the store. It is never changed once a table's view
// holds it: another generation or state is another indexTable (see with).
type indexTable struct {
	name        string
	prefix      []byte // every entry key starts with it; clipped, as it is shared
	gen         int64  // the generation of the definition, part of prefix
	state       IndexState
	fingerprint uint64 // of the definition, for the catalog
	eventual    bool
	intra       bool // IntraPartition: entries in their record's partition
	fields      []field
	single      bool // keyed by Fields, none multi-valued: a record has one key at most
	keyFunc     func(reflect.Value) []Tuple
	strategy    Strategy
	proj        projection
	unique      bool
	sparse      bool
	use         *usageCounters // shared by every generation and state of the index
	def         []byte         // the encoded IndexDefinition, for the catalog
}

func compileIndex[T any](rt reflect.Type, spec Index[T], t *Table[T]) (*indexTable, error) {
	ix := &indexTable{
		name:     spec.Name,
		use:      new(usageCounters),
		strategy: spec.Strategy,
		unique:   spec.Unique,
		sparse:   spec.Sparse,
		eventual: spec.Consistency == Eventual,
	}
	fail := func(format string, args ...any) (*indexTable, error) {
		return nil, fmt.Errorf("%w: index %q: %s", ErrInvalidSchema, spec.Name, fmt.Sprintf(format, args...))
	}
	if spec.Name == "" {
		return nil, fmt.Errorf("%w: an index has no name", ErrInvalidSchema)
	}
	switch {
	case spec.Key != nil && len(spec.Fields) > 0:
		return fail("set Fields or Key, not both")
	case spec.Key != nil && (spec.Sparse || spec.MultiValued):
		return fail("Sparse and MultiValued apply to Fields; a Key func leaves a record out, or indexes it several times, by the tuples it returns")
	case spec.Key != nil:
		key := spec.Key
		ix.keyFunc = func(rv reflect.Value) []Tuple { return key(rv.Interface().(T)) }
	case len(spec.Fields) == 0:
		return fail("no key: set Fields or Key")
	}
	multi := false
	for i, name := range spec.Fields {
		for _, prev := range spec.Fields[:i] {
			if prev == name {
				return fail("field %q named twice", name)
			}
		}
		f, err := lookupField(rt, name, spec.MultiValued)
		if err != nil {
			return nil, wrapErrorf(ErrInvalidSchema, err, "index %q", spec.Name)
		}
		multi = multi || f.multi
		ix.fields = append(ix.fields, f)
	}
	if spec.MultiValued && spec.Key == nil && !multi {
		return fail("MultiValued, but no key field is a slice")
	}
	ix.single = spec.Key == nil && !multi
	switch spec.Strategy {
	case KeysOnly, FullCopy:
		if len(spec.Projection) > 0 {
			return fail("a projection is only for the Partial strategy, not %v", spec.Strategy)
		}
	case Partial:
		if len(spec.Projection) == 0 {
			return fail("the Partial strategy needs a Projection")
		}
		p, err := compileProjection(rt, spec.Projection)
		if err != nil {
			return nil, wrapErrorf(ErrInvalidSchema, err, "index %q", spec.Name)
		}
		ix.proj = p
	default:
		return fail("unknown strategy %v", spec.Strategy)
	}
	switch spec.Consistency {
	case Synchronous:
	case Eventual:
		if spec.Unique {
			return fail("a unique index must be Synchronous: only the write's own batch can check that a key is free")
		}
	default:
		return fail("unknown consistency %v", spec.Consistency)
	}
	if err := ix.resolvePlacement(spec.Placement, spec.Fields, t.pk[0], t.prefix, t.factSpace, t.store); err != nil {
		return nil, err
	}
	if err := ix.checkUniquePlacement(t.pk[0], t.store); err != nil {
		return nil, err
	}
	ix.fingerprint = ix.definitionFingerprint(indexDefinition{
		name: spec.Name, key: spec.Key != nil, strategy: spec.Strategy,
		unique: spec.Unique, sparse: spec.Sparse, multi: spec.MultiValued, eventual: ix.eventual, version: int64(spec.Version),
	})
	def := IndexDefinition{
		Fields: spec.Fields, Computed: spec.Key != nil, Strategy: spec.Strategy, Projection: spec.Projection,
		Unique: spec.Unique, Sparse: spec.Sparse, MultiValued: spec.MultiValued, Consistency: spec.Consistency, Placement: ix.placement(),
	}
	for _, f := range t.pk {
		def.PrimaryKey = append(def.PrimaryKey, f.name)
	}
	ix.def = def.encode()
	return ix, nil
}

// keys appends the encoded key tuples of the record rv to dst, each at
// most once. Each key is built after what scratch holds (a prefix, or
// nothing), a single-valued key in scratch's own storage.
func (ix *indexTable) keys(dst [][]byte, rv reflect.Value, scratch []byte) ([][]byte, error) {
	start := len(dst)
	if ix.keyFunc != nil {
		tuples, err := ix.callKey(rv)
		if err != nil {
			return dst, err
		}
		for _, t := range tuples {
			if len(t) == 0 {
				return dst, fmt.Errorf("%w: index %q: Key returned an empty tuple", ErrInvalidKey, ix.name)
			}
			k, err := kv.AppendTuple(bytes.Clone(scratch), t...)
			if err != nil {
				return dst, wrapErrorf(ErrInvalidKey, err, "index %q", ix.name)
			}
			dst = appendUnique(dst, start, k)
		}
		return dst, nil
	}
	if ix.single {
		k := scratch
		for i := range ix.fields {
			var ok bool
			if k, ok = ix.fields[i].appendKey(k, rv, ix.sparse); !ok {
				return dst, nil
			}
		}
		return append(dst, k), nil
	}
	// The cartesian product of the fields' values, built field by field.
	dst = append(dst, scratch)
	for i := range ix.fields {
		f := &ix.fields[i]
		var fv reflect.Value
		if f.multi {
			fv = f.get(rv)
		}
		end := len(dst)
		for j := start; j < end; j++ {
			if !f.multi {
				if k, ok := f.appendKey(dst[j], rv, ix.sparse); ok {
					dst = append(dst, k)
				}
				continue
			}
			if !fv.IsValid() {
				continue
			}
			for e := 0; e < fv.Len(); e++ {
				ev := fv.Index(e)
				if ix.sparse && ev.IsZero() {
					continue
				}
				k := tuple.AppendValue(bytes.Clone(dst[j]), ev)
				dst = appendUnique(dst, end, k)
			}
		}
		dst = append(dst[:start], dst[end:]...)
	}
	return dst, nil
}

// callKey returns the tuples of ix's Key func for the record rv; a panic
// of the func (the program's code) is returned as an error wrapping
// ErrInvalidKey, as a key that cannot be computed.
func (ix *indexTable) callKey(rv reflect.Value) (tuples []Tuple, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: index %q: the Key func panicked: %v", ErrInvalidKey, ix.name, r)
		}
	}()
	return ix.keyFunc(rv), nil
}

// appendUnique appends k to list unless list[from:] holds it already.
func appendUnique(list [][]byte, from int, k []byte) [][]byte {
	for _, have := range list[from:] {
		if bytes.Equal(have, k) {
			return list
		}
	}
	return append(list, k)
}

// appendEntries appends the entries of the record rv, whose encoded primary
// key is pk and whose codec payload is payload.
func (ix *indexTable) appendEntries(dst []entry, rv reflect.Value, pk, payload []byte, c Codec, scratch []byte) ([]entry, error) {
	// The keys are built in scratch after the index prefix, with room for
	// the primary key, so a single-valued key becomes its entry key in place.
	var keyBuf [4][]byte
	keys, err := ix.keys(keyBuf[:0], rv, append(scratch, ix.prefix...))
	if err != nil {
		return dst, err
	}
	var projected []byte
	if ix.strategy == Partial {
		if projected, err = ix.proj.appendPayload(make([]byte, 0, 32), rv, c); err != nil {
			return dst, fmt.Errorf("index %q: %w", ix.name, err)
		}
	}
	for _, key := range keys {
		var value []byte
		if ix.unique {
			value = binary.AppendUvarint(value, uint64(len(pk)))
			value = append(value, pk...)
		} else {
			key = append(key, pk...)
		}
		switch ix.strategy {
		case FullCopy:
			if value == nil {
				value = payload
			} else {
				value = append(value, payload...)
			}
		case Partial:
			if value == nil {
				value = projected
			} else {
				value = append(value, projected...)
			}
		}
		dst = append(dst, entry{ix: ix, key: key, value: value})
	}
	return dst, nil
}

// decodeEntry returns the encoded primary key and the payload held by an
// index entry; pkArity is the number of primary key components.
func (ix *indexTable) decodeEntry(key, value []byte, pkArity int) (pk, payload []byte, err error) {
	if ix.unique {
		return ix.decodeUnique(value)
	}
	rest := key[len(ix.prefix):]
	var offsets [8]int
	ends := offsets[:0]
	for off := 0; off < len(rest); {
		n, err := kv.ElementLen(rest[off:])
		if err != nil {
			return nil, nil, err
		}
		off += n
		ends = append(ends, off)
	}
	if len(ends) <= pkArity {
		return nil, nil, fmt.Errorf("%w: index %q: entry key has %d components, want more than %d", ErrMalformedKey, ix.name, len(ends), pkArity)
	}
	return rest[ends[len(ends)-pkArity-1]:], value, nil
}

// decodeUnique returns the encoded primary key and the payload held by the
// value of a unique index entry: the key's length, the key, the payload.
func (ix *indexTable) decodeUnique(value []byte) (pk, payload []byte, err error) {
	n, w := binary.Uvarint(value)
	if w <= 0 || uint64(len(value)-w) < n {
		return nil, nil, fmt.Errorf("%w: index %q: entry value too short", ErrCodec, ix.name)
	}
	return value[w : w+int(n)], value[w+int(n):], nil
}

// indexManager keeps a table's index tables in step with its fact table:
// for each write it computes the entries the old and new versions of a
// record own and adds to the write's batch only the entries that change.
//
// Its view of the indexes is an immutable indexView, swapped whole: a
// write, a read or a maintainer pass loads it once and sees one consistent
// set of definitions, generations and states from start to end. A
// lifecycle change (DisableIndex, EnableIndex) holds drain exclusively
// while it commits the catalog and publishes the view that follows it;
// whatever writes index entries holds drain shared while it plans and
// commits them. So when the change returns, no write of this process that
// planned against the older view is still in flight: none leaves entries
// in a generation that was disabled, and none commits, behind a build,
// without the entries of an index that became write-only.
//
// The view is also a lease on the catalog (see SchemaLease): readAt is
// when the catalog was last read for it, and renewing lets one caller at a
// time read it again.
type indexManager struct {
	view     atomic.Pointer[indexView]
	publish  sync.Mutex   // orders the views published, and a catalog change with its view
	drain    sync.RWMutex // shared: planning and writing entries; exclusive: a lifecycle change
	readAt   atomic.Int64 // Table.clock when the catalog read that the view is current for began
	renewing sync.Mutex
}

// load returns the current view.
func (m *indexManager) load() *indexView { return m.view.Load() }

// replace publishes a view in which ix stands for the index of its name.
// The caller holds m.publish.
func (m *indexManager) replace(ix *indexTable) { m.replaceAt(ix, m.load().version) }

// replaceAt is replace, the view at schema version version.
func (m *indexManager) replaceAt(ix *indexTable, version []byte) {
	old := m.load()
	indexes := slices.Clone(old.indexes)
	for i, have := range indexes {
		if have.name == ix.name {
			indexes[i] = ix
		}
	}
	v := newIndexView(indexes)
	v.version, v.stale, v.dropped = version, old.stale, old.dropped
	m.view.Store(v)
}

// indexView is one immutable state of a table's indexes.
type indexView struct {
	version    []byte        // the schema version it was read at (see schemaVersionKey); nil: none stored
	indexes    []*indexTable // in schema order
	sync       []*indexTable // those a write keeps up to date in its own batch
	queueing   bool          // writes queue changes for Eventual indexes
	deleteOnly bool          // some maintained index is IndexDeleteOnly
	keyFuncs   bool          // some index has a Key func, which a write shows its record
	// stale, when set, refuses writes: it wraps ErrStaleSchema and names
	// the indexes of the catalog this program cannot maintain.
	stale   error
	dropped []string // indexes of the schema that another process dropped
}

func newIndexView(indexes []*indexTable) *indexView {
	v := &indexView{indexes: indexes}
	for _, ix := range indexes {
		v.deleteOnly = v.deleteOnly || ix.state == IndexDeleteOnly
		v.keyFuncs = v.keyFuncs || ix.keyFunc != nil
		switch {
		case !ix.maintained():
		case ix.eventual:
			v.queueing = true
		default:
			v.sync = append(v.sync, ix)
		}
	}
	return v
}

// putting returns es without the entries of delete-only indexes, which
// writes delete but never put.
func (v *indexView) putting(es []entry) []entry {
	if !v.deleteOnly {
		return es
	}
	return slices.DeleteFunc(es, func(e entry) bool { return e.ix.state == IndexDeleteOnly })
}

// owner returns the non-unique index of v whose entries key lies among,
// or nil.
func (v *indexView) owner(key []byte) *indexTable {
	for _, ix := range v.indexes {
		if !ix.unique && bytes.HasPrefix(key, ix.prefix) {
			return ix
		}
	}
	return nil
}

func (v *indexView) lookup(name string) *indexTable {
	for _, ix := range v.indexes {
		if ix.name == name {
			return ix
		}
	}
	return nil
}

// filter returns the indexes of v that want reports true for.
func (v *indexView) filter(want func(*indexTable) bool) []*indexTable {
	var out []*indexTable
	for _, ix := range v.indexes {
		if want(ix) {
			out = append(out, ix)
		}
	}
	return out
}

// maintained reports whether writes keep ix up to date at all.
func (ix *indexTable) maintained() bool { return ix.state != IndexDisabled }

// with returns a copy of ix at generation gen, in state state.
func (ix *indexTable) with(tablePrefix []byte, gen int64, state IndexState) *indexTable {
	c := *ix
	c.place(tablePrefix, gen)
	c.state = state
	return &c
}
