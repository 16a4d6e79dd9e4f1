package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// ErrIndexNotReadable reports a query on an index that is not readable:
// still being built, or disabled.
var ErrIndexNotReadable = errors.New("indextable: index not readable")

// IndexState is the lifecycle state of an index table, as in the
// FoundationDB Record Layer.
type IndexState int8

const (
	// IndexWriteOnly: maintained by every write but not used by queries,
	// while Build fills in the entries of the records written before.
	IndexWriteOnly IndexState = iota + 1
	// IndexReadable: complete, maintained and queried.
	IndexReadable
	// IndexDisabled: neither maintained nor queried; its entries are gone.
	IndexDisabled
)

// indexDropped marks the catalog entry of an index the schema removed: a
// tombstone that keeps its last generation.
const indexDropped IndexState = -1

func (s IndexState) String() string {
	switch s {
	case IndexWriteOnly:
		return "write-only"
	case IndexReadable:
		return "readable"
	case IndexDisabled:
		return "disabled"
	}
	return "IndexState(" + strconv.Itoa(int(s)) + ")"
}

// IndexStatus describes one index table as the catalog records it.
type IndexStatus struct {
	Name  string
	State IndexState
	// Generation counts the definitions the index has had.
	Generation int64
	// Placement is where the entries lie: InterPartition or IntraPartition,
	// as declared or as AutoPlacement picked for the store.
	Placement Placement
	// Done and Total are the records indexed so far and the records the
	// table held when the build began: a progress bar for a write-only
	// index. Both are zero when the index became readable without a build.
	Done, Total int64
}

// catalogEntry is an index's record in the catalog, stored as a tuple.
type catalogEntry struct {
	fingerprint uint64
	gen         int64
	state       IndexState
	cursor      []byte // the fact key built up to; nil before the first chunk
	done, total int64
	def         []byte // the definition, an encoded tuple (see IndexDefinition); nil in format 1
}

// catalogFormat 2 adds the definition to format 1's elements.
const catalogFormat = 2

func (c catalogEntry) encode() []byte {
	var cursor, def any
	if c.cursor != nil {
		cursor = c.cursor
	}
	if c.def != nil {
		def = c.def
	}
	b, err := EncodeTuple(catalogFormat, c.fingerprint, c.gen, int64(c.state), cursor, c.done, c.total, def)
	if err != nil {
		panic(err) // every element has a supported type
	}
	return b
}

func decodeCatalogEntry(b []byte) (catalogEntry, error) {
	t, err := DecodeTuple(b)
	if err != nil {
		return catalogEntry{}, wrapErrorf(ErrCodec, err, "catalog entry")
	}
	var c catalogEntry
	ok := len(t) == 7 || len(t) == 8
	if ok {
		var format, state int64
		var okCursor bool
		format, ok = asInt(t[0])
		c.fingerprint, _ = t[1].(uint64)
		if fp, isInt := t[1].(int64); isInt {
			c.fingerprint = uint64(fp)
		}
		c.gen, _ = asInt(t[2])
		state, _ = asInt(t[3])
		c.state = IndexState(state)
		c.cursor, okCursor = t[4].([]byte)
		c.done, _ = asInt(t[5])
		c.total, _ = asInt(t[6])
		okDef := len(t) == 7
		if len(t) == 8 {
			c.def, okDef = t[7].([]byte)
			okDef = okDef || t[7] == nil
		}
		ok = ok && (format == 1 && len(t) == 7 || format == catalogFormat && len(t) == 8) && (okCursor || t[4] == nil) && okDef &&
			(c.state >= IndexWriteOnly && c.state <= IndexDisabled || c.state == indexDropped) && c.gen > 0
	}
	if !ok {
		return catalogEntry{}, fmt.Errorf("%w: catalog entry %v", ErrCodec, t)
	}
	return c, nil
}

// asInt returns a decoded integer element.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case uint64:
		return int64(n), n <= 1<<63-1
	}
	return 0, false
}

// fingerprint identifies the definition of an index: everything that
// decides its entries. A Key func cannot be compared; its Version stands in
// for it.
func (ix *indexTable) definitionFingerprint(spec indexDefinition) uint64 {
	parts := []any{spec.name, spec.key, int64(spec.strategy), spec.unique, spec.sparse, spec.multi, spec.eventual, spec.version}
	for _, f := range ix.fields {
		parts = append(parts, f.name, f.typ.String())
	}
	if ix.intra { // a placement other than the first one's changes the fingerprint
		parts = append(parts, "intra-partition")
	}
	parts = append(parts, "projection")
	for _, f := range ix.proj.fields {
		parts = append(parts, f.name, f.typ.String())
	}
	b, err := EncodeTuple(parts...)
	if err != nil {
		panic(err)
	}
	return fnv1a(b)
}

// indexDefinition is what an Index declares besides its fields.
type indexDefinition struct {
	name                  string
	key                   bool // a Key func
	strategy              Strategy
	unique, sparse, multi bool
	eventual              bool
	version               int64
}

// place sets where the entries of generation gen of ix live, before a
// view holds ix.
func (ix *indexTable) place(tablePrefix []byte, gen int64) {
	ix.gen = gen
	ix.prefix = generationPrefix(tablePrefix, ix.intra, ix.name, gen)
}

// loadCatalog reconciles the catalog with the table's schema, whose
// indexes no view holds yet: it places every index at its generation and
// state, drops the entries of indexes that were removed or replaced, and
// records new ones; then it publishes the table's first view. Open calls
// it.
func (t *Table[T]) loadCatalog(ctx context.Context, indexes []*indexTable) error {
	for attempt := 1; ; attempt++ {
		version, err := t.reconcileCatalog(ctx, indexes)
		if err == nil {
			v := newIndexView(indexes)
			v.version = version
			t.indexes.view.Store(v)
		}
		if err == nil || !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return err
		}
	}
}

// readCatalogEntries returns the table's catalog entries by index name, as
// stored, and its schema version (nil: none stored).
func (t *Table[T]) readCatalogEntries(ctx context.Context) (map[string][]byte, []byte, error) {
	space := spacePrefix(t.prefix, SpaceCatalog)
	stored := map[string][]byte{}
	var version []byte
	for e, err := range t.store.Scan(ctx, ScanRange{Start: space, End: tupleEnd(space)}) {
		if err != nil {
			return nil, nil, err
		}
		name, _, err := DecodeElement(e.Key[len(space):])
		s, ok := name.(string)
		switch {
		case err != nil || !ok:
			return nil, nil, fmt.Errorf("%w: catalog key %q", ErrCodec, e.Key)
		case s == "":
			version = bytes.Clone(e.Value)
		default:
			stored[s] = bytes.Clone(e.Value)
		}
	}
	return stored, version, nil
}

// readVersion reads the table's schema version (nil: none stored).
func (t *Table[T]) readVersion(ctx context.Context) ([]byte, error) {
	v, err := t.store.Get(ctx, schemaVersionKey(t.prefix))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: schema version: %w", t.name, err)
	}
	return v, nil
}

// bumpVersion adds to b the change of the schema version from old (nil:
// none stored) to the next, which it returns.
func (t *Table[T]) bumpVersion(b *Batch, old []byte) []byte {
	key := schemaVersionKey(t.prefix)
	b.expectAsRead(key, old)
	var n uint64
	if len(old) == 8 {
		n = binary.BigEndian.Uint64(old)
	}
	next := binary.BigEndian.AppendUint64(nil, n+1)
	b.Put(key, next)
	return next
}

func (t *Table[T]) reconcileCatalog(ctx context.Context, indexes []*indexTable) ([]byte, error) {
	stored, version, err := t.readCatalogEntries(ctx)
	if err != nil {
		return nil, err
	}
	empty := true
	for _, err := range t.store.Scan(ctx, ScanRange{Start: t.factSpace, End: tupleEnd(t.factSpace), Limit: 1}) {
		if err != nil {
			return nil, err
		}
		empty = false
	}
	fresh := IndexWriteOnly
	if empty {
		fresh = IndexReadable
	}
	var b Batch
	gens := map[string]int64{} // every generation below is garbage
	for _, ix := range indexes {
		key := catalogKey(t.prefix, ix.name)
		next := catalogEntry{fingerprint: ix.fingerprint, gen: 1, state: fresh, def: ix.def}
		if old, known := stored[ix.name]; known {
			c, err := decodeCatalogEntry(old)
			if err != nil {
				return nil, fmt.Errorf("table %q, index %q: %w", t.name, ix.name, err)
			}
			if c.state != indexDropped && c.fingerprint == ix.fingerprint {
				next = c
				if !bytes.Equal(c.def, ix.def) { // written before definitions were kept
					next.def = ix.def
					b.ExpectValue(key, old)
					b.Put(key, next.encode())
				}
			} else {
				next.gen = c.gen + 1
				b.ExpectValue(key, old)
				b.Put(key, next.encode())
			}
		} else {
			b.ExpectAbsent(key)
			b.Put(key, next.encode())
		}
		delete(stored, ix.name)
		ix.place(t.prefix, next.gen)
		ix.state = next.state
		gens[ix.name] = next.gen
	}
	// A removed index leaves a tombstone, so that its generations are
	// never reused: entries a crash left behind cannot come back.
	for name, old := range stored {
		c, err := decodeCatalogEntry(old)
		if err != nil {
			return nil, fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		gens[name] = c.gen + 1
		if c.state != indexDropped {
			key := catalogKey(t.prefix, name)
			b.ExpectValue(key, old)
			b.Put(key, catalogEntry{gen: c.gen, state: indexDropped}.encode())
		}
	}
	if b.Len() > 0 {
		version = t.bumpVersion(&b, version)
		if err := t.store.Apply(ctx, &b); err != nil {
			return nil, err
		}
	}
	// The catalog no longer names older generations: delete what is left
	// of them (usually nothing, one empty scan each).
	for name, gen := range gens {
		if err := t.dropGenerations(ctx, name, gen); err != nil {
			return nil, fmt.Errorf("table %q: drop old entries of index %q: %w", t.name, name, err)
		}
	}
	return version, nil
}

// dropGenerations deletes the entries of index name's generations below
// gen, in either placement. In SpaceIntra it looks for any such entry, and
// deletes its generation's: a partitioned store keeps one generation's
// entries in key order across its partitions, but not the entries of
// several, so a scan may see them in any order. When nothing is left, that
// is one empty scan.
func (t *Table[T]) dropGenerations(ctx context.Context, name string, gen int64) error {
	if gen <= 1 {
		return nil // there was none before
	}
	start := indexPrefix(t.prefix, false, name)
	if err := deleteRange(ctx, t.store, start, generationPrefix(t.prefix, false, name, gen)); err != nil {
		return err
	}
	start = indexPrefix(t.prefix, true, name)
	for {
		var old []byte // the prefix of the generation of an entry found
		for e, err := range t.store.Scan(ctx, ScanRange{Start: start, End: generationPrefix(t.prefix, true, name, gen), Limit: 1}) {
			if err != nil {
				return err
			}
			g, rest, err := DecodeElement(e.Key[len(start):])
			if _, ok := g.(int64); err != nil || !ok {
				return fmt.Errorf("%w: index entry key %q", ErrCodec, e.Key)
			}
			old = bytes.Clone(e.Key[:len(e.Key)-len(rest)])
		}
		if old == nil {
			return nil
		}
		if err := deleteRange(ctx, t.store, old, tupleEnd(old)); err != nil {
			return err
		}
	}
}

// sameCatalog returns an error wrapping ErrInvalidSchema when the catalog
// names other indexes, or other generations, than the table was opened
// with.
func (t *Table[T]) sameCatalog(ctx context.Context) error {
	stored, _, err := t.readCatalogEntries(ctx)
	if err != nil {
		return err
	}
	// The catalog may have moved on to a generation this table is
	// publishing, or published since: compare with the view after the
	// read, once a publication under way is done.
	t.indexes.publish.Lock()
	view := t.indexes.load()
	t.indexes.publish.Unlock()
	live := 0
	for name, v := range stored {
		c, err := decodeCatalogEntry(v)
		if err != nil || c.state == indexDropped {
			continue
		}
		live++
		if ix := view.lookup(name); ix == nil || ix.gen < c.gen {
			return fmt.Errorf("%w: table %q: index %q was defined anew since the table was opened; reopen it", ErrInvalidSchema, t.name, name)
		}
	}
	if live != len(view.indexes) {
		return fmt.Errorf("%w: table %q: its indexes were changed since the table was opened; reopen it", ErrInvalidSchema, t.name)
	}
	return nil
}

// IndexStatus returns the catalog's record of each of the table's indexes,
// in schema order.
func (t *Table[T]) IndexStatus(ctx context.Context) ([]IndexStatus, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	view := t.indexes.load()
	out := make([]IndexStatus, 0, len(view.indexes))
	for _, ix := range view.indexes {
		ix, c, _, err := t.readCatalog(ctx, ix.name)
		if err != nil {
			return nil, err
		}
		out = append(out, IndexStatus{Name: ix.name, State: c.state, Generation: c.gen, Placement: ix.placement(), Done: c.done, Total: c.total})
	}
	return out, nil
}

// readCatalog reads the catalog entry of index name, decoded and as stored,
// and returns it with the index as the table's view has it, refreshed to
// the entry's state: so a table sees what another process (or Build)
// changed. An entry of a later generation than the view's is an index that
// another process defined anew, or dropped: the table must be reopened.
func (t *Table[T]) readCatalog(ctx context.Context, name string) (*indexTable, catalogEntry, []byte, error) {
	key := catalogKey(t.prefix, name)
	for attempt := 1; ; attempt++ {
		before := t.indexes.load()
		v, err := t.store.Get(ctx, key)
		if err != nil {
			return nil, catalogEntry{}, nil, fmt.Errorf("table %q, index %q: catalog: %w", t.name, name, err)
		}
		c, err := decodeCatalogEntry(v)
		if err != nil {
			return nil, c, nil, fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		ix, err := t.refresh(name, c, before)
		if errors.Is(err, errCatalogBehind) && attempt < maxAttempts {
			continue // read before a change of this table's that is published now
		}
		return ix, c, v, err
	}
}

// errCatalogBehind reports a catalog entry that may be older than the
// table's view.
var errCatalogBehind = fmt.Errorf("%w: the catalog changed while it was read", ErrConflict)

// refresh returns the index name of the view, republished in the state of
// its catalog entry c, read while before was the view, when that differs.
// An entry read before the view last changed may predate a change this
// table made and published (a disabling keeps the generation): it is not
// trusted, as it could bring back the state before.
func (t *Table[T]) refresh(name string, c catalogEntry, before *indexView) (*indexTable, error) {
	m := &t.indexes
	m.publish.Lock()
	defer m.publish.Unlock()
	view := m.load()
	ix := view.lookup(name)
	switch {
	case ix == nil:
		return nil, fmt.Errorf("%w: table %q has no index %q", ErrInvalidSchema, t.name, name)
	case c.gen < ix.gen || view != before:
		return nil, fmt.Errorf("%w: table %q, index %q: generation %d, this table has %d", errCatalogBehind, t.name, name, c.gen, ix.gen)
	case c.gen > ix.gen || c.state == indexDropped:
		return nil, fmt.Errorf("%w: table %q, index %q was redefined or dropped by another process (generation %d, this table has %d); reopen the table",
			ErrInvalidSchema, t.name, name, c.gen, ix.gen)
	case c.state != ix.state:
		ix = ix.with(t.prefix, ix.gen, c.state)
		m.replace(ix)
	}
	return ix, nil
}

// readable returns the index name of the view if queries may use it,
// checking the catalog again when this table last saw it unreadable (a
// build elsewhere may have finished).
func (t *Table[T]) readable(ctx context.Context, ix *indexTable) (*indexTable, error) {
	if ix.state == IndexReadable {
		return ix, nil
	}
	ix, c, _, err := t.readCatalog(ctx, ix.name)
	if err != nil {
		return nil, err
	}
	if c.state != IndexReadable {
		return nil, fmt.Errorf("%w: table %q, index %q is %v", ErrIndexNotReadable, t.name, ix.name, c.state)
	}
	return ix, nil
}

// DisableIndex stops maintaining and querying index name and deletes its
// entries. EnableIndex brings it back. Both may run while the table is
// written and read: they wait for the writes of this table already under
// way, and every write after them plans against the new state. On a store
// of unbounded atomicity, the other processes' writes take the change up
// at once (see ErrStaleSchema); their reads, and every process on a
// partitioned store, see it when they reopen the table (a table that knows
// the index as readable keeps querying it without looking at the catalog
// again), so reopen it there. A read through this table that overlaps the
// disabling of its index ends with an error wrapping ErrIndexNotReadable,
// rather than return part of the index as all of it.
func (t *Table[T]) DisableIndex(ctx context.Context, name string) error {
	return t.setState(ctx, name, IndexDisabled)
}

// EnableIndex makes a disabled index write-only again, with an empty key
// range of a new generation; Build then makes it readable. Enabling an
// index that is not disabled does nothing.
func (t *Table[T]) EnableIndex(ctx context.Context, name string) error {
	return t.setState(ctx, name, IndexWriteOnly)
}

func (t *Table[T]) setState(ctx context.Context, name string, state IndexState) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if t.indexes.load().lookup(name) == nil {
		return fmt.Errorf("%w: table %q has no index %q", ErrInvalidSchema, t.name, name)
	}
	prefix, err := t.switchState(ctx, name, state)
	if err != nil || prefix == nil {
		return err
	}
	// Disabled: no write of this table adds entries there any more.
	return deleteRange(ctx, t.store, prefix, tupleEnd(prefix))
}

// switchState commits index name's move to state in the catalog, with the
// view that follows it, while no write plans against the view before; it
// returns the prefix of the entries a disabling leaves to delete.
func (t *Table[T]) switchState(ctx context.Context, name string, state IndexState) ([]byte, error) {
	m := &t.indexes
	m.drain.Lock()
	defer m.drain.Unlock()
	key := catalogKey(t.prefix, name)
	for attempt := 1; ; attempt++ {
		ix, c, old, err := t.readCatalog(ctx, name)
		if err != nil {
			return nil, err
		}
		switch {
		case state == IndexDisabled && c.state == IndexDisabled,
			state == IndexWriteOnly && c.state != IndexDisabled:
			return nil, nil
		case state == IndexWriteOnly:
			// A new generation: the disabled one may hold leftovers of
			// writes of other processes that raced with the disabling.
			c = catalogEntry{fingerprint: c.fingerprint, gen: c.gen + 1, state: IndexWriteOnly, def: c.def}
		default:
			c.state, c.cursor, c.done, c.total = state, nil, 0, 0
		}
		version, err := t.readVersion(ctx)
		if err != nil {
			return nil, err
		}
		var b Batch
		b.ExpectValue(key, old)
		b.Put(key, c.encode())
		version = t.bumpVersion(&b, version)
		m.publish.Lock()
		err = t.store.Apply(ctx, &b)
		if err == nil {
			m.replaceAt(ix.with(t.prefix, c.gen, c.state), version)
		}
		m.publish.Unlock()
		if errors.Is(err, ErrConflict) && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		if state == IndexDisabled {
			return ix.prefix, nil
		}
		return nil, nil
	}
}

// IndexDefinition is an index as its table's catalog records it: enough for
// a tool without the program's record types (cmd/indextable) to find its
// entries and tell their keys from their primary keys.
type IndexDefinition struct {
	// PrimaryKey names the table's primary key fields.
	PrimaryKey []string
	// Fields names the key fields; Computed is set instead for a Key func.
	Fields   []string
	Computed bool
	Strategy Strategy
	// Projection names the fields a Partial entry holds.
	Projection                  []string
	Unique, Sparse, MultiValued bool
	Consistency                 Consistency
	// Placement is InterPartition or IntraPartition, as resolved.
	Placement Placement
}

const definitionFormat = 1

func (d IndexDefinition) encode() []byte {
	t := Tuple{int64(definitionFormat)}
	for _, names := range [][]string{d.PrimaryKey, d.Fields, d.Projection} {
		t = append(t, int64(len(names)))
		for _, n := range names {
			t = append(t, n)
		}
	}
	t = append(t, d.Computed, int64(d.Strategy), d.Unique, d.Sparse, d.MultiValued, int64(d.Consistency), int64(d.Placement))
	b, err := EncodeTuple(t...)
	if err != nil {
		panic(err) // every element has a supported type
	}
	return b
}

func decodeIndexDefinition(b []byte) (IndexDefinition, error) {
	var d IndexDefinition
	t, err := DecodeTuple(b)
	bad := fmt.Errorf("%w: index definition %q", ErrCodec, b)
	if err != nil {
		return d, wrapErrorf(ErrCodec, err, "index definition %q", b)
	}
	next := func() any {
		if len(t) == 0 {
			err = bad
			return nil
		}
		v := t[0]
		t = t[1:]
		return v
	}
	integer := func() int64 {
		n, ok := asInt(next())
		if !ok {
			err = bad
		}
		return n
	}
	flag := func() bool {
		v, ok := next().(bool)
		if !ok {
			err = bad
		}
		return v
	}
	if integer() != definitionFormat {
		return d, bad
	}
	for _, names := range []*[]string{&d.PrimaryKey, &d.Fields, &d.Projection} {
		for n := integer(); err == nil && n > 0; n-- {
			s, ok := next().(string)
			if !ok {
				return d, bad
			}
			*names = append(*names, s)
		}
	}
	d.Computed, d.Strategy, d.Unique, d.Sparse, d.MultiValued = flag(), Strategy(integer()), flag(), flag(), flag()
	d.Consistency, d.Placement = Consistency(integer()), Placement(integer())
	if err == nil && (len(t) > 0 || len(d.PrimaryKey) == 0) {
		err = bad
	}
	return d, err
}

// refreshView reads the catalog after a write found the schema version
// changed (its attempt-th time) and, when the catalog names the view's
// indexes with their definitions and no other, publishes the view in the
// catalog's states and generations at its version: a disabling or an
// enabling elsewhere then holds for this table's next writes. Otherwise another process
// added, redefined or dropped an index, and the write is refused with
// ErrStaleSchema.
func (t *Table[T]) refreshView(ctx context.Context, attempt int) error {
	if attempt == maxAttempts {
		return fmt.Errorf("table %q: the schema kept changing: %w", t.name, ErrConflict)
	}
	stored, version, err := t.readCatalogEntries(ctx)
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	m := &t.indexes
	m.publish.Lock()
	defer m.publish.Unlock()
	view := m.load()
	if view.version != nil && (version == nil || bytes.Compare(version, view.version) <= 0) {
		return nil // the view is as new: this table published it meanwhile
	}
	indexes := slices.Clone(view.indexes)
	live := 0
	for name, v := range stored {
		c, err := decodeCatalogEntry(v)
		if err != nil {
			return fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		i := slices.IndexFunc(indexes, func(ix *indexTable) bool { return ix.name == name })
		switch {
		case c.state == indexDropped && i < 0:
			continue
		case c.state == indexDropped || i < 0 || c.fingerprint != indexes[i].fingerprint || c.gen < indexes[i].gen:
			return fmt.Errorf("%w: table %q: index %q was added, redefined or dropped by another process; reopen the table", ErrStaleSchema, t.name, name)
		}
		live++
		if c.state != indexes[i].state || c.gen != indexes[i].gen { // a new generation: enabled again
			indexes[i] = indexes[i].with(t.prefix, c.gen, c.state)
		}
	}
	if live != len(indexes) {
		return fmt.Errorf("%w: table %q: an index was dropped by another process; reopen the table", ErrStaleSchema, t.name)
	}
	next := newIndexView(indexes)
	next.version = version
	m.view.Store(next)
	return nil
}
