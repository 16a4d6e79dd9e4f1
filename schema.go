package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/indextable/indextable/kv"
)

// DefaultSchemaLease is the SchemaLease of a Schema that sets none.
const DefaultSchemaLease = 10 * time.Second

// The schema version is the catalog entry of the empty name (see
// schemaVersionKey): a counter that every change of the catalog's indexes,
// generations or states moves on in the batch that makes the change, the
// wall-clock time of that change (Unix nanoseconds), and the highest
// Schema.Revision that opened the table, 24 bytes in all. Versions compare
// as bytes, in the order of their counters.

// versionRevision returns the Schema.Revision recorded in the schema
// version v.
func versionRevision(v []byte) int64 {
	if len(v) != 24 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v[16:]))
}

// versionTime returns when the schema version v (nil: none stored) was
// last changed, and false when it does not say.
func versionTime(v []byte) (time.Time, bool) {
	if len(v) < 16 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v[8:16]))), true
}

// readVersion reads the table's schema version (nil: none stored).
func (t *Table[T]) readVersion(ctx context.Context) ([]byte, error) {
	v, err := t.store.Get(ctx, t.versionKey)
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
func (t *Table[T]) bumpVersion(b *kv.Batch, old []byte) []byte {
	expectAsRead(b, t.versionKey, old)
	var n uint64
	if len(old) >= 8 {
		n = binary.BigEndian.Uint64(old)
	}
	next := binary.BigEndian.AppendUint64(nil, n+1)
	next = binary.BigEndian.AppendUint64(next, uint64(time.Now().UnixNano()))
	next = binary.BigEndian.AppendUint64(next, uint64(max(t.revision, versionRevision(old))))
	b.Put(t.versionKey, next)
	return next
}

// clock returns the table's monotonic time, in nanoseconds since it was
// opened.
func (t *Table[T]) clock() int64 { return int64(time.Since(t.opened)) }

// view returns the view that a write (write set) or a read plans against,
// after reading the catalog again when the view is older than half the
// schema lease. When that read fails the view serves on until it is a
// lease old, and then the call fails with ErrStaleSchema. A write fails
// with ErrStaleSchema too when the catalog has an index this program
// cannot maintain (see learnIndex).
func (t *Table[T]) view(ctx context.Context, write bool) (*indexView, error) {
	m := &t.indexes
	if age := t.clock() - m.readAt.Load(); age > int64(t.lease/2) {
		if err := t.renew(ctx, age > int64(t.lease)); err != nil {
			return nil, err
		}
	}
	v := m.load()
	if write && v.stale != nil {
		return nil, v.stale
	}
	return v, nil
}

// knowIndex renews the view as view does and, when it has no index name,
// reads the catalog again: another process may have added it, and naming
// it need not wait out the lease.
func (t *Table[T]) knowIndex(ctx context.Context, name string) error {
	v, err := t.view(ctx, false)
	if err == nil && v.lookup(name) == nil {
		err = t.refreshView(ctx)
	}
	return err
}

// renew reads the catalog again for the view, unless another caller is
// doing so and must is not set (the view is still within its lease), or
// did so meanwhile. It fails only when the view is then older than the
// lease.
func (t *Table[T]) renew(ctx context.Context, must bool) error {
	m := &t.indexes
	if must {
		m.renewing.Lock()
	} else if !m.renewing.TryLock() {
		return nil
	}
	defer m.renewing.Unlock()
	if t.clock()-m.readAt.Load() <= int64(t.lease/2) {
		return nil
	}
	err := t.refreshView(ctx)
	if err != nil && t.clock()-m.readAt.Load() > int64(t.lease) {
		return fmt.Errorf("%w: table %q: its view of the indexes is older than the schema lease (%v), and reading the catalog failed: %w",
			ErrStaleSchema, t.name, t.lease, err)
	}
	return nil
}

// refreshView reads the catalog and, when its schema version is newer than
// the view's, publishes the view it describes (viewOf): a disabling, an
// enabling, an added, redefined or dropped index elsewhere then holds for
// this table's next reads and writes. Either way the view is current as of
// the read.
func (t *Table[T]) refreshView(ctx context.Context) error {
	start := t.clock()
	stored, version, err := t.readCatalogEntries(ctx)
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	m := &t.indexes
	m.publish.Lock()
	defer m.publish.Unlock()
	view := m.load()
	// A view at a later version was published by this table since the
	// read; one at the same version was read from the same catalog.
	if view.version == nil || version != nil && bytes.Compare(version, view.version) > 0 {
		next, err := t.viewOf(view, stored)
		if err != nil {
			return err
		}
		next.version = version
		m.view.Store(next)
	}
	if start > m.readAt.Load() {
		m.readAt.Store(start)
	}
	return nil
}

// viewOf returns the view that the catalog entries stored describe. It
// keeps view's indexes where their definitions are the catalog's, in
// their generations and states, and learns the others from the catalog
// (learnIndex); those it cannot learn make the view stale.
func (t *Table[T]) viewOf(view *indexView, stored map[string][]byte) (*indexView, error) {
	names := make([]string, 0, len(stored))
	for _, ix := range view.indexes { // the schema's order first
		if _, ok := stored[ix.name]; ok {
			names = append(names, ix.name)
		}
	}
	var others []string
	for name := range stored {
		if !slices.Contains(names, name) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	var indexes []*indexTable
	var dropped []string
	for _, ix := range view.indexes {
		if _, ok := stored[ix.name]; !ok { // of a schema that a later revision dropped
			dropped = append(dropped, ix.name)
		}
	}
	var unknown []error
	for _, name := range append(names, others...) {
		c, err := decodeCatalogEntry(stored[name])
		if err != nil {
			return nil, fmt.Errorf("table %q, index %q: %w", t.name, name, err)
		}
		ix := view.lookup(name)
		switch {
		case c.state == indexDropped:
			if ix != nil || slices.Contains(view.dropped, name) {
				dropped = append(dropped, name)
			}
			continue
		case ix == nil || ix.fingerprint != c.fingerprint:
			if ix, err = t.learnIndex(name, c); err != nil {
				unknown = append(unknown, err)
				continue
			}
		}
		if ix.gen != c.gen || ix.state != c.state {
			ix = ix.with(t.prefix, c.gen, c.state)
		}
		indexes = append(indexes, ix)
	}
	next := newIndexView(indexes)
	next.dropped = dropped
	if len(unknown) > 0 {
		next.stale = fmt.Errorf("%w: table %q: another process added or redefined indexes that this program cannot maintain; open the table with a schema that has them: %w",
			ErrStaleSchema, t.name, errors.Join(unknown...))
	}
	return next, nil
}

// learnIndex compiles index name from its definition in the catalog entry
// c, for a table whose schema does not have it in that definition: an
// index that a newer program added. Its record type must have the fields,
// and the index must have them as its key: a Key func is code, which the
// catalog does not hold.
func (t *Table[T]) learnIndex(name string, c catalogEntry) (*indexTable, error) {
	if c.def == nil {
		return nil, fmt.Errorf("index %q: the catalog does not record its definition", name)
	}
	d, err := decodeIndexDefinition(c.def)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", name, err)
	}
	if d.Computed {
		return nil, fmt.Errorf("index %q: its keys are computed by a Key func", name)
	}
	if !slices.EqualFunc(d.PrimaryKey, t.pk, func(n string, f field) bool { return n == f.name }) {
		return nil, fmt.Errorf("index %q: its table's primary key is %v", name, d.PrimaryKey)
	}
	spec := Index[T]{Name: name, Fields: d.Fields, Strategy: d.Strategy, Projection: d.Projection, Unique: d.Unique,
		Sparse: d.Sparse, MultiValued: d.MultiValued, Consistency: d.Consistency, Placement: d.Placement}
	ix, err := compileIndex(t.rtype, spec, t)
	if err == nil {
		err = checkStoredFields(t.codec, t.rtype, nil, []*indexTable{ix})
	}
	if err != nil {
		return nil, err
	}
	if ix.fingerprint != c.fingerprint {
		return nil, fmt.Errorf("index %q: its definition is not one this program's record type gives", name)
	}
	ix.place(t.prefix, c.gen)
	ix.state = c.state
	return ix, nil
}

// holdsSince returns the table's clock at which every handle of the table
// has seen the catalog as it is at clock seen: two schema leases later,
// since a handle reads the catalog again within a lease, and an operation
// that began on a view within its lease ends within another (see view).
// When the schema version was last changed more than three leases ago by
// the wall clock (a lease for clocks that disagree), that is now.
func (t *Table[T]) holdsSince(seen int64, version []byte) int64 {
	if at, ok := versionTime(version); ok && time.Since(at) > 3*t.lease {
		return t.clock()
	}
	return seen + 2*int64(t.lease)
}

// waitUntil waits until the table's clock reaches until.
func (t *Table[T]) waitUntil(ctx context.Context, until int64) error {
	d := time.Duration(until - t.clock())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// collectGarbage deletes the entries of the generations that no view may
// name any more: those below each index's generation, and its own when it
// is disabled or dropped. It deletes them once every handle has seen the
// change that retired them (holdsSince), waiting for it when wait is set,
// else leaving them to a later call (of Open or Build).
func (t *Table[T]) collectGarbage(ctx context.Context, wait bool) error {
	seen := t.clock()
	stored, version, err := t.readCatalogEntries(ctx)
	if err != nil {
		return err
	}
	below := map[string]int64{}
	for name, v := range stored {
		c, err := decodeCatalogEntry(v)
		if err != nil {
			return fmt.Errorf("index %q: %w", name, err)
		}
		gen := c.gen
		if c.state == IndexDisabled || c.state == indexDropped {
			gen++
		}
		if found, err := t.hasGenerationsBelow(ctx, name, gen); err != nil || !found {
			if err != nil {
				return err
			}
			continue
		}
		below[name] = gen
	}
	if len(below) == 0 {
		return nil
	}
	if until := t.holdsSince(seen, version); until > t.clock() {
		if !wait {
			return nil
		}
		if err := t.waitUntil(ctx, until); err != nil {
			return err
		}
	}
	for name, gen := range below {
		if err := t.dropGenerations(ctx, name, gen); err != nil {
			return fmt.Errorf("drop old entries of index %q: %w", name, err)
		}
	}
	return nil
}

// hasGenerationsBelow reports whether index name has entries of a
// generation below gen, in either placement.
func (t *Table[T]) hasGenerationsBelow(ctx context.Context, name string, gen int64) (bool, error) {
	if gen <= 1 {
		return false, nil // there was none before
	}
	for _, intra := range []bool{false, true} {
		r := kv.ScanRange{Start: indexPrefix(t.prefix, intra, name), End: generationPrefix(t.prefix, intra, name, gen), Limit: 1}
		for _, err := range t.store.Scan(ctx, r) {
			return err == nil, err
		}
	}
	return false, nil
}
