package indextable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// BuildOptions configures Build.
type BuildOptions struct {
	// ChunkSize is how many records one batch indexes; 0 means 256.
	ChunkSize int
	// Progress, when set, is called after each chunk.
	Progress func(BuildProgress)
	// Maintainer configures how Build applies the changes it queues on a
	// store with partitioned atomicity (see Build). Partition is ignored:
	// Build applies each partition of the queue in turn. Partitions 0 takes
	// the partitioning of the table's maintainers holding leases, if any, else 1;
	// while maintainers of another partitioning hold leases, Build waits for them.
	Maintainer MaintainerOptions
}

// BuildProgress reports how far the build of one index is.
type BuildProgress struct {
	Index string
	// Done counts the records indexed; Total the records the table held
	// when the build began (records inserted since may take Done past it).
	Done, Total int64
	// Readable is set on the last report, when the index became readable.
	Readable bool
}

// Build makes every write-only index readable, building its entries from
// the fact table. It can run while the table is written to, and continues
// a build that an earlier call (in any process) left unfinished. A unique
// index whose records do not have unique keys stays write-only, and Build
// returns an error wrapping ErrUniqueViolation that names two of them; an
// index that cannot be built does not keep Build from the others. Build's
// reads are no snapshot: it reports a violation only once the records and
// entries it was found in are confirmed as read at one instant, and reads
// them again when a write overtook them (two records that swap their keys
// in one transaction, say).
//
// On a store whose atomicity scope is a partition, a record's entries can
// be written with it only when they lie in its partition (IntraPartition).
// Build then writes them record by record, and queues the others: it
// commits a change record with each record, and applies the queue as a
// maintainer before the index becomes readable. It returns an error when a
// maintainer cannot apply one of these changes.
func (t *Table[T]) Build(ctx context.Context, opts BuildOptions) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 256
	}
	if err := t.refreshView(ctx); err != nil { // the indexes as the catalog has them now
		return err
	}
	var errs []error // an index that cannot be built leaves the others be
	for _, ix := range t.indexes.load().indexes {
		build := t.build
		if t.store.Atomicity().Partition != nil {
			build = t.buildByRecord
		}
		err := t.admit(ctx, ix.name)
		if err == nil {
			err = build(ctx, ix.name, &opts)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("table %q: build index %q: %w", t.name, ix.name, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if ctx.Err() == nil {
		if err := t.collectGarbage(ctx, true); err != nil {
			errs = append(errs, fmt.Errorf("table %q: %w", t.name, err))
		}
	}
	return errors.Join(errs...)
}

// admit returns once index name may be built: at once on a store of
// unbounded atomicity, where no write commits without the indexes of the
// schema version it expects. On another store, a delete-only index
// becomes write-only once every handle has seen it delete-only, and its
// build starts once every handle has seen it write-only (holdsSince): so
// no handle that knows the index as absent writes beside one that puts its
// entries, and none leaves out the entries of a record the build has
// passed.
func (t *Table[T]) admit(ctx context.Context, name string) error {
	if t.versioned {
		return nil
	}
	for {
		seen := t.clock()
		_, c, _, err := t.readCatalog(ctx, name)
		if err != nil || c.state != IndexDeleteOnly && c.state != IndexWriteOnly {
			return err
		}
		version, err := t.readVersion(ctx)
		if err != nil {
			return err
		}
		if err := t.waitUntil(ctx, t.holdsSince(seen, version)); err != nil {
			return err
		}
		if c.state == IndexWriteOnly {
			return nil
		}
		err = t.switchState(ctx, name, func(c catalogEntry) (catalogEntry, bool) {
			if c.state != IndexDeleteOnly {
				return c, false
			}
			c.state = IndexWriteOnly
			return c, true
		})
		if err != nil {
			return err
		}
	}
}

// build builds index name in chunks, each read and committed against the
// catalog entry it moves on: a chunk that a lifecycle change overtook
// conflicts, and the next reads the index as it is then.
func (t *Table[T]) build(ctx context.Context, name string, o *BuildOptions) error {
	key := catalogKey(t.prefix, name)
	chunk, conflicts := o.ChunkSize, 0
	total := int64(-1)
	var last []byte // the catalog entry as last read
	for {
		ix, c, stored, err := t.readCatalog(ctx, name)
		if err != nil || c.state != IndexWriteOnly {
			return err
		}
		if !bytes.Equal(stored, last) { // progress, maybe another Build's
			last, conflicts = stored, 0
		}
		if c.cursor == nil && c.done == 0 { // the first chunk records the total
			if total < 0 {
				if total, err = countRange(ctx, t.store, t.factSpace); err != nil {
					return err
				}
			}
			c.total = total
		}
		var b kv.Batch
		b.ExpectValue(key, stored)
		r := kv.ScanRange{Start: t.factSpace, End: tuple.End(t.factSpace), After: c.cursor, Limit: chunk}
		n, violation, err := t.readChunk(ctx, ix, r, &b, &c)
		if err != nil {
			return err
		}
		if violation != nil {
			// The scan is no snapshot: the violation stands only if what
			// it was read from holds at one instant, which b, stripped of
			// its writes, checks.
			b = *expectations(&b)
		} else {
			c.done += int64(n)
			if n == 0 {
				c.state = IndexReadable
			}
			b.Put(key, c.encode())
		}
		if err := t.store.Atomicity().Allows(&b); err != nil {
			if chunk > 1 && n > 1 {
				chunk = max(n/2, 1)
				continue
			}
			return t.buildByRecord(ctx, name, o)
		}
		err = t.store.Apply(ctx, &b)
		if errors.Is(err, ErrConflict) {
			// A write overtook the chunk: read a smaller one again, down
			// to one record, which a write overtakes only by changing it.
			chunk = max(chunk/2, 1)
			if conflicts++; conflicts == maxAttempts {
				return fmt.Errorf("gave up after %d conflicts in a row: %w", conflicts, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if violation != nil {
			return violation
		}
		if chunk <= o.ChunkSize/2 { // doubled up to ChunkSize, which may be any int
			chunk *= 2
		} else {
			chunk = o.ChunkSize
		}
		if t.committed(ctx, o, ix, c, n == 0) {
			return nil
		}
	}
}

// readChunk reads the chunk r of the fact table into b, which indexes its
// records in ix and expects them as read, and moves c's cursor to its last
// record; it returns how many records it read. When two records of the
// chunk, or one and another's entry in the store, have one key of a unique
// index, it stops there and returns the violation, b then expecting
// everything it was read from.
func (t *Table[T]) readChunk(ctx context.Context, ix *indexTable, r kv.ScanRange, b *kv.Batch, c *catalogEntry) (n int, violation, err error) {
	only := []*indexTable{ix}
	claimed := map[string][]byte{} // unique keys this chunk puts, and their records
	for e, err := range t.store.Scan(ctx, r) {
		if err != nil {
			return n, nil, err
		}
		n++
		factKey, fact := bytes.Clone(e.Key), bytes.Clone(e.Value)
		c.cursor = factKey
		b.ExpectValue(factKey, fact)
		pk := factKey[len(t.factSpace):]
		entries, err := t.factEntries(only, fact, pk)
		if err != nil {
			return n, nil, err
		}
		for _, en := range entries {
			if ix.unique {
				if err := t.claimUnique(ctx, b, claimed, en, pk); errors.Is(err, ErrUniqueViolation) {
					return n, err, nil
				} else if err != nil {
					return n, nil, err
				}
			}
			b.Put(en.key, en.value)
		}
	}
	return n, nil, nil
}

// expectations returns the expectations of b, without its writes.
func expectations(b *kv.Batch) *kv.Batch {
	var only []kv.Op
	for _, op := range b.Ops() {
		if !op.IsWrite() {
			only = append(only, op)
		}
	}
	return kv.NewBatch(only...)
}

// committed follows a chunk of the build of ix that committed c, the last
// one when readable: it publishes ix readable then, reports progress, and
// returns readable.
func (t *Table[T]) committed(ctx context.Context, o *BuildOptions, ix *indexTable, c catalogEntry, readable bool) bool {
	if readable {
		// Read anew, not taken from c: a disabling may have followed.
		_, now, _, err := t.readCatalog(ctx, ix.name)
		readable = err == nil && now.state == IndexReadable && now.gen == c.gen
	}
	if o.Progress != nil {
		o.Progress(BuildProgress{Index: ix.name, Done: c.done, Total: c.total, Readable: readable})
	}
	return readable
}

// buildByRecord builds ix where a record, its entries and the catalog do
// not fit one batch. Each record's entries are put in a batch that expects
// the record unchanged, or, when they lie outside its partition, a change
// record is queued in its stead, which the maintainer applies from the
// record as it then is. The cursor moves in a batch of its own after its
// chunk: a crash in between writes the chunk again, which is harmless. The
// index becomes readable once every change that Build (or Repair) queued
// is applied; the writers' queued changes may still wait, which reads of a
// partitioned store check for.
func (t *Table[T]) buildByRecord(ctx context.Context, name string, o *BuildOptions) error {
	key := catalogKey(t.prefix, name)
	total := int64(-1)
	for conflicts := 0; ; {
		ix, c, stored, err := t.readCatalog(ctx, name)
		if err != nil || c.state != IndexWriteOnly {
			return err
		}
		if c.cursor == nil && c.done == 0 {
			if total < 0 {
				if total, err = countRange(ctx, t.store, t.factSpace); err != nil {
					return err
				}
			}
			c.total = total
		}
		var records []kv.Entry
		r := kv.ScanRange{Start: t.factSpace, End: tuple.End(t.factSpace), After: c.cursor, Limit: o.ChunkSize}
		for e, err := range t.store.Scan(ctx, r) {
			if err != nil {
				return err
			}
			records = append(records, kv.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
		}
		if err := t.buildRecords(ctx, ix, records); err != nil {
			return err
		}
		n := len(records)
		if n > 0 {
			c.cursor = records[n-1].Key
		} else {
			if err := t.applyQueued(ctx, o.Maintainer); err != nil {
				return err
			}
			c.state = IndexReadable
		}
		c.done += int64(n)
		var b kv.Batch
		b.ExpectValue(key, stored)
		b.Put(key, c.encode())
		err = t.store.Apply(ctx, &b)
		if errors.Is(err, ErrConflict) { // another Build moved on: go on from there
			if conflicts++; conflicts == maxAttempts {
				return fmt.Errorf("gave up after %d conflicts in a row: %w", conflicts, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		conflicts = 0
		if t.committed(ctx, o, ix, c, n == 0) {
			return nil
		}
	}
}

// recordBatch returns the batch that indexes one record in ix, stored
// under factKey as fact: its entries with the expectation that it is
// unchanged, or, when they do not fit one batch with it, a change record
// for the maintainer in their stead. It is empty when the record has no
// entries. It returns an error wrapping ErrConflict when the record
// changed since it was read as fact.
func (t *Table[T]) recordBatch(ctx context.Context, ix *indexTable, factKey, fact []byte) (*kv.Batch, error) {
	pk := factKey[len(t.factSpace):]
	entries, err := t.factEntries([]*indexTable{ix}, fact, pk)
	if err != nil || len(entries) == 0 {
		return &kv.Batch{}, err
	}
	if err := t.checkKeys(t.store.Atomicity(), pk, entries); err != nil {
		return nil, err
	}
	b := &kv.Batch{}
	b.ExpectValue(factKey, fact)
	var violation error
	for _, en := range entries {
		if ix.unique {
			if violation = guardUnique(ctx, t.store, b, en); errors.Is(violation, ErrUniqueViolation) {
				b = expectations(b) // what confirms it
				break
			} else if violation != nil {
				return nil, violation
			}
		}
		b.Put(en.key, en.value)
	}
	if err := t.store.Atomicity().Allows(b); err != nil {
		if ix.unique {
			return nil, fmt.Errorf("record %v: its unique entries cannot be checked outside its batch: %w", decodeForError(pk), err)
		}
		b.Reset()
		b.ExpectValue(factKey, fact)
		t.enqueue(b, pk, ix.prefix, true, scopeIndex)
	}
	if violation != nil {
		if err := t.confirmViolation(ctx, ix, b, violation); err != nil {
			return nil, err
		}
		return &kv.Batch{}, nil // the catalog moved on: nothing to write
	}
	return b, nil
}

// confirmViolation returns violation, found in reads of a record and an
// entry that are no snapshot, if it stands: if b, which expects them as
// read and writes nothing, applies, and ix is still the generation the
// catalog has, and not disabled, after it (the catalog lies in another
// partition than the record). It returns the conflict when the record or
// the entry changed, and nil when the catalog did: the build's commit of
// its cursor, which expects the catalog as read, conflicts then.
func (t *Table[T]) confirmViolation(ctx context.Context, ix *indexTable, b *kv.Batch, violation error) error {
	if err := t.store.Apply(ctx, b); err != nil {
		return err
	}
	now, c, _, err := t.readCatalog(ctx, ix.name)
	switch {
	case err != nil:
		return err
	case now.gen != ix.gen || c.state != IndexWriteOnly && c.state != IndexReadable:
		return nil
	}
	return violation
}

// buildRecords indexes records in ix, the batches of consecutive records
// joined while the store allows (records of one partition, on a store
// like Azure's), except in a unique index, where two records of one batch
// could claim one key unseen. A batch that a write overtakes is applied
// again record by record, each read anew. Nothing is written when a
// lifecycle change replaced ix since the build read it: the next chunk
// reads the catalog again.
func (t *Table[T]) buildRecords(ctx context.Context, ix *indexTable, records []kv.Entry) error {
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	if now := t.indexes.load().lookup(ix.name); now == nil || now.gen != ix.gen || !now.maintained() {
		return nil
	}
	var group kv.Batch
	var members []kv.Entry
	flush := func() error {
		err := t.applyHinted(ctx, &group)
		if errors.Is(err, ErrConflict) {
			err = nil
			for _, rec := range members {
				if err = t.buildRecord(ctx, ix, rec.Key, rec.Value); err != nil {
					break
				}
			}
		}
		group.Reset()
		members = members[:0]
		return err
	}
	for _, rec := range records {
		b, err := t.recordBatch(ctx, ix, rec.Key, rec.Value)
		if errors.Is(err, ErrConflict) { // the record changed: read it anew
			err = t.buildRecord(ctx, ix, rec.Key, rec.Value)
			b = &kv.Batch{}
		}
		if err != nil {
			return err
		}
		if b.Len() == 0 {
			continue
		}
		if group.Len() > 0 {
			joined := kv.NewBatch(append(slices.Clip(group.Ops()), b.Ops()...)...)
			if ix.unique || t.store.Atomicity().Allows(joined) != nil {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		group.Add(b.Ops()...)
		members = append(members, rec)
	}
	if group.Len() == 0 {
		return nil
	}
	return flush()
}

// buildRecord indexes one record in ix, reading it again when a write
// overtakes it.
func (t *Table[T]) buildRecord(ctx context.Context, ix *indexTable, factKey, fact []byte) error {
	for attempt := 1; ; attempt++ {
		b, err := t.recordBatch(ctx, ix, factKey, fact)
		if err == nil {
			if b.Len() == 0 {
				return nil
			}
			err = t.applyHinted(ctx, b)
		}
		if !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			return err
		}
		fact, err = t.store.Get(ctx, factKey)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted: nothing to index
		}
		if err != nil {
			return err
		}
	}
}

// claimUnique adds to b the expectation that guards the unique entry en of
// the record pk, or returns the violation when another record holds its
// key, in the store or earlier in the chunk (whose records b expects).
func (t *Table[T]) claimUnique(ctx context.Context, b *kv.Batch, claimed map[string][]byte, en entry, pk []byte) error {
	if other, ok := claimed[string(en.key)]; ok {
		k, _ := decodeTuple(en.key[len(en.ix.prefix):])
		return fmt.Errorf("%w: index %q: key %v is held by records %v and %v",
			ErrUniqueViolation, en.ix.name, k, decodeForError(other), decodeForError(pk))
	}
	claimed[string(en.key)] = pk
	return guardUnique(ctx, t.store, b, en)
}

// countRange counts the keys of a space.
func countRange(ctx context.Context, s kv.Store, space []byte) (int64, error) {
	var n int64
	for _, err := range s.Scan(ctx, kv.ScanRange{Start: space, End: tuple.End(space)}) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
