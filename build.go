package indextable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// Online backfill: an index added to a table that holds records starts
// write-only, so every write maintains it, and Build fills in the entries
// of the records written before, in chunks, while writes go on. Each chunk
// is one batch that puts the entries of its records, expects each record
// unchanged since it was read (a concurrent write makes the chunk read
// again), and moves the build's cursor in the catalog. A build that stops,
// or a process that crashes, resumes from the cursor. The chunk that finds
// no record after the cursor flips the index to readable, so queries see
// the index only when it is complete.

// BuildOptions configures Build.
type BuildOptions struct {
	// ChunkSize is how many records one batch indexes; 0 means 256.
	ChunkSize int
	// Progress, when set, is called after each chunk.
	Progress func(BuildProgress)
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
// returns an error wrapping ErrUniqueViolation that names two of them.
func (t *Table[T]) Build(ctx context.Context, opts BuildOptions) error {
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 256
	}
	for _, ix := range t.indexes.indexes {
		if err := t.build(ctx, ix, &opts); err != nil {
			return fmt.Errorf("table %q: build index %q: %w", t.name, ix.name, err)
		}
	}
	return nil
}

func (t *Table[T]) build(ctx context.Context, ix *indexTable, o *BuildOptions) error {
	key := catalogKey(t.prefix, ix.name)
	only := func(x *indexTable) bool { return x == ix }
	chunk, conflicts := o.ChunkSize, 0
	total := int64(-1)
	var last []byte // the catalog entry as last read
	for {
		c, stored, err := t.readCatalog(ctx, ix)
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
		var b Batch
		b.ExpectValue(key, stored)
		r := ScanRange{Start: t.factSpace, End: tupleEnd(t.factSpace), After: c.cursor, Limit: chunk}
		n := 0
		claimed := map[string][]byte{} // unique keys this chunk puts, and their records
		for e, err := range t.store.Scan(ctx, r) {
			if err != nil {
				return err
			}
			n++
			factKey, fact := bytes.Clone(e.Key), bytes.Clone(e.Value)
			c.cursor = factKey
			b.ExpectValue(factKey, fact)
			pk := factKey[len(t.factSpace):]
			entries, err := t.factEntries(fact, pk, only)
			if err != nil {
				return err
			}
			for _, en := range entries {
				if ix.unique {
					if err := t.claimUnique(ctx, &b, claimed, en, pk); err != nil {
						return err
					}
				}
				b.Put(en.key, en.value)
			}
		}
		c.done += int64(n)
		if n == 0 {
			c.state = IndexReadable
		}
		b.Put(key, c.encode())
		if err := t.store.Atomicity().Allows(&b); err != nil {
			if chunk > 1 && n > 1 {
				chunk = max(n/2, 1)
				continue
			}
			return fmt.Errorf("a chunk of records and their entries does not fit the store's atomicity scope: %w", err)
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
		chunk = min(2*chunk, o.ChunkSize)
		if n == 0 {
			ix.state.Store(int32(IndexReadable))
		}
		if o.Progress != nil {
			o.Progress(BuildProgress{Index: ix.name, Done: c.done, Total: c.total, Readable: n == 0})
		}
		if n == 0 {
			return nil
		}
	}
}

// claimUnique adds to b the expectation that guards the unique entry en of
// the record pk, or returns the violation when another record holds its
// key, in the store or earlier in the chunk.
func (t *Table[T]) claimUnique(ctx context.Context, b *Batch, claimed map[string][]byte, en entry, pk []byte) error {
	if other, ok := claimed[string(en.key)]; ok {
		k, _ := DecodeTuple(en.key[len(en.ix.prefix):])
		return fmt.Errorf("%w: index %q: key %v is held by records %v and %v",
			ErrUniqueViolation, en.ix.name, k, decodeForError(other), decodeForError(pk))
	}
	claimed[string(en.key)] = pk
	return guardUnique(ctx, t.store, b, en)
}

// countRange counts the keys of a space.
func countRange(ctx context.Context, s Store, space []byte) (int64, error) {
	var n int64
	for _, err := range s.Scan(ctx, ScanRange{Start: space, End: tupleEnd(space)}) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
