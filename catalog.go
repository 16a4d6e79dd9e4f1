package indextable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
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
	// IndexDisabled: neither maintained nor queried; its entries are
	// deleted once no handle of the table may still use them (see
	// SchemaLease).
	IndexDisabled
	// IndexDeleteOnly: writes delete the entries of the versions they
	// replace but put none, and queries do not use it. On a store of
	// bounded atomicity an added or enabled index starts here, so that no
	// handle that still knows the index as absent or disabled shares the
	// table with one that puts its entries; Build moves it on (see the
	// README's Online schema change section).
	IndexDeleteOnly
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
	case IndexDeleteOnly:
		return "delete-only"
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
	b, err := kv.EncodeTuple(catalogFormat, c.fingerprint, c.gen, int64(c.state), cursor, c.done, c.total, def)
	if err != nil {
		panic(err) // every element has a supported type
	}
	return b
}

func decodeCatalogEntry(b []byte) (catalogEntry, error) {
	t, err := decodeTuple(b)
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
			(c.state >= IndexWriteOnly && c.state <= IndexDeleteOnly || c.state == indexDropped) && c.gen > 0
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
	b, err := kv.EncodeTuple(parts...)
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
// state, marks indexes that were removed or replaced as dropped, and
// records new ones; then it publishes the table's first view and deletes
// the entries that no handle may use any more (collectGarbage). Open
// calls it.
func (t *Table[T]) loadCatalog(ctx context.Context, indexes []*indexTable) error {
	for attempt := 1; ; attempt++ {
		start := t.clock()
		v, err := t.reconcileCatalog(ctx, indexes)
		if err == nil {
			t.indexes.view.Store(v)
			t.indexes.readAt.Store(start)
			err = t.collectGarbage(ctx, false)
		}
		if err == nil || !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return err
		}
	}
}

// readCatalogEntries returns the table's catalog entries by index name, as
// stored, and its schema version (nil: none stored).
func (t *Table[T]) readCatalogEntries(ctx context.Context) (map[string][]byte, []byte, error) {
	space := spacePrefix(t.prefix, kv.SpaceCatalog)
	stored := map[string][]byte{}
	var version []byte
	for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: space, End: tuple.End(space)}) {
		if err != nil {
			return nil, nil, err
		}
		name, _, err := kv.DecodeElement(e.Key[len(space):])
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

// reconcileCatalog makes the catalog the schema's and returns the view of
// it; or, when the catalog was last changed by a schema of a later
// Revision, changes nothing and returns the view of the catalog as it is.
func (t *Table[T]) reconcileCatalog(ctx context.Context, indexes []*indexTable) (*indexView, error) {
	stored, version, err := t.readCatalogEntries(ctx)
	if err != nil {
		return nil, err
	}
	if versionRevision(version) > t.revision {
		v, err := t.viewOf(newIndexView(indexes), stored)
		if err == nil {
			v.version = version
		}
		return v, err
	}
	empty := true
	for _, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.factSpace, End: tuple.End(t.factSpace), Limit: 1}) {
		if err != nil {
			return nil, err
		}
		empty = false
	}
	// A new index starts readable on the empty table of a first Open. Once
	// the table has a schema (a version), handles of it may be writing: a
	// new index starts write-only (Build makes it readable at once on an
	// empty table), and on a store of bounded atomicity delete-only (see
	// IndexDeleteOnly).
	fresh := IndexWriteOnly
	switch {
	case version == nil && empty:
		fresh = IndexReadable
	case version != nil && !t.versioned:
		fresh = IndexDeleteOnly
	}
	var b kv.Batch
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
	}
	// A removed index leaves a tombstone, so that its generations are
	// never reused: entries a crash left behind cannot come back.
	for name, old := range stored {
		c, err := decodeCatalogEntry(old)
		if err != nil {
			return nil, fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		if c.state != indexDropped {
			key := catalogKey(t.prefix, name)
			b.ExpectValue(key, old)
			b.Put(key, catalogEntry{gen: c.gen, state: indexDropped}.encode())
		}
	}
	if b.Len() > 0 || version == nil || versionRevision(version) < t.revision {
		version = t.bumpVersion(&b, version)
		if err := t.store.Apply(ctx, &b); err != nil {
			return nil, err
		}
	}
	v := newIndexView(indexes)
	v.version = version
	return v, nil
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
		for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: start, End: generationPrefix(t.prefix, true, name, gen), Limit: 1}) {
			if err != nil {
				return err
			}
			g, rest, err := kv.DecodeElement(e.Key[len(start):])
			if _, ok := g.(int64); err != nil || !ok {
				return fmt.Errorf("%w: index entry key %q", ErrCodec, e.Key)
			}
			old = bytes.Clone(e.Key[:len(e.Key)-len(rest)])
		}
		if old == nil {
			return nil
		}
		if err := deleteRange(ctx, t.store, old, tuple.End(old)); err != nil {
			return err
		}
	}
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
// changed. An entry of a later generation or definition than the view's
// is an index that another process defined anew, enabled or dropped: the
// view is read again from the whole catalog (refreshView).
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
		if attempt < maxAttempts {
			switch {
			case errors.Is(err, errCatalogBehind):
				continue // read before a change of this table's that is published now
			case errors.Is(err, errViewBehind):
				if err = t.refreshView(ctx); err == nil {
					continue
				}
			}
		}
		if errors.Is(err, errViewBehind) {
			err = fmt.Errorf("table %q, index %q: the catalog kept changing: %w", t.name, name, ErrConflict)
		}
		return ix, c, v, err
	}
}

// errViewBehind reports a catalog entry newer than the table's view: an
// index that another process redefined, dropped or enabled anew.
var errViewBehind = errors.New("the catalog is ahead of the view")

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
	case ix == nil && slices.Contains(view.dropped, name):
		return nil, fmt.Errorf("%w: table %q, index %q was dropped by another process", ErrIndexNotReadable, t.name, name)
	case ix == nil:
		return nil, fmt.Errorf("%w: table %q has no index %q", ErrInvalidSchema, t.name, name)
	case c.gen < ix.gen || view != before:
		return nil, fmt.Errorf("%w: table %q, index %q: generation %d, this table has %d", errCatalogBehind, t.name, name, c.gen, ix.gen)
	case c.gen > ix.gen || c.state == indexDropped || c.fingerprint != ix.fingerprint:
		return nil, errViewBehind
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

// DisableIndex stops maintaining and querying index name. EnableIndex
// brings it back. Both may run while the table is written and read: they
// wait for the writes of this table already under way, and every write
// after them plans against the new state. Other handles of the table take
// the change up within the SchemaLease: on a store of unbounded atomicity
// their writes at once, as each expects the schema version it planned at.
// The disabled index's entries are deleted once no handle may still read
// them, two leases later, by the next Open or Build of the table (Build
// waits for it). A read through this table that overlaps the disabling of
// its index ends with an error wrapping ErrIndexNotReadable, rather than
// return part of the index as all of it.
func (t *Table[T]) DisableIndex(ctx context.Context, name string) error {
	return t.setState(ctx, name, func(c catalogEntry) (catalogEntry, bool) {
		if c.state == IndexDisabled {
			return c, false
		}
		c.state, c.cursor, c.done, c.total = IndexDisabled, nil, 0, 0
		return c, true
	})
}

// EnableIndex makes a disabled index write-only again (delete-only, on a
// store of bounded atomicity), with an empty key range of a new
// generation; Build then makes it readable. Enabling an index that is not
// disabled does nothing.
func (t *Table[T]) EnableIndex(ctx context.Context, name string) error {
	return t.setState(ctx, name, func(c catalogEntry) (catalogEntry, bool) {
		if c.state != IndexDisabled {
			return c, false
		}
		// A new generation: the disabled one may hold leftovers of
		// writes of other handles that had not yet seen the disabling.
		state := IndexWriteOnly
		if !t.versioned {
			state = IndexDeleteOnly
		}
		return catalogEntry{fingerprint: c.fingerprint, gen: c.gen + 1, state: state, def: c.def}, true
	})
}

func (t *Table[T]) setState(ctx context.Context, name string, move func(catalogEntry) (catalogEntry, bool)) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if err := t.knowIndex(ctx, name); err != nil {
		return err
	}
	if t.indexes.load().lookup(name) == nil {
		return fmt.Errorf("%w: table %q has no index %q", ErrInvalidSchema, t.name, name)
	}
	return t.switchState(ctx, name, move)
}

// switchState commits index name's catalog entry as move changes it (if it
// does), with the view that follows it, while no write of this table plans
// against the view before.
func (t *Table[T]) switchState(ctx context.Context, name string, move func(catalogEntry) (catalogEntry, bool)) error {
	m := &t.indexes
	m.drain.Lock()
	defer m.drain.Unlock()
	key := catalogKey(t.prefix, name)
	for attempt := 1; ; attempt++ {
		ix, c, old, err := t.readCatalog(ctx, name)
		if err != nil {
			return err
		}
		c, changed := move(c)
		if !changed {
			return nil
		}
		version, err := t.readVersion(ctx)
		if err != nil {
			return err
		}
		if !bytes.Equal(version, m.load().version) {
			// The view must have every other change of the catalog
			// before it takes this change's version.
			if attempt == maxAttempts {
				return fmt.Errorf("table %q, index %q: the catalog kept changing: %w", t.name, name, ErrConflict)
			}
			if err := t.refreshView(ctx); err != nil {
				return err
			}
			continue
		}
		var b kv.Batch
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
			return fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		return nil
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
	b, err := kv.EncodeTuple(t...)
	if err != nil {
		panic(err) // every element has a supported type
	}
	return b
}

func decodeIndexDefinition(b []byte) (IndexDefinition, error) {
	var d IndexDefinition
	t, err := decodeTuple(b)
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
