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

// DriftKind classifies a difference between an index table and its facts.
type DriftKind int8

const (
	// DriftMissing: a record lacks an entry it should have.
	DriftMissing DriftKind = iota + 1
	// DriftStale: an entry is out of date: its projected fields or copy
	// differ from the record, or its key is no longer the record's.
	DriftStale
	// DriftDangling: an entry whose record does not exist.
	DriftDangling
	// DriftUniqueViolation: two records have one key in a unique index.
	// Repair leaves it. When neither has the entry, the first record read
	// is DriftMissing (Repair gives it the key) and the second this.
	DriftUniqueViolation
)

func (k DriftKind) String() string {
	switch k {
	case DriftMissing:
		return "missing"
	case DriftStale:
		return "stale"
	case DriftDangling:
		return "dangling"
	case DriftUniqueViolation:
		return "unique violation"
	}
	return "DriftKind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's name, so that JSON shows it as words.
func (k DriftKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Drift is one difference found by Verify.
type Drift struct {
	Kind  DriftKind
	Index string
	// Key is the entry's index key; PrimaryKey the record it belongs to
	// (or names, for a dangling entry).
	Key, PrimaryKey Tuple
	// Repaired is set when Repair fixed it.
	Repaired bool
}

func (d Drift) String() string {
	return fmt.Sprintf("%v entry in index %q: key %v, record %v", d.Kind, d.Index, d.Key, d.PrimaryKey)
}

// VerifyOptions configures Verify and Repair.
type VerifyOptions struct {
	// ChunkSize is how many records or entries one step reads; 0 means 256.
	ChunkSize int
	// Progress, when set, is called after each step.
	Progress func(VerifyProgress)
	// MaxSamples caps the drifts the report lists; 0 means 100. Counts are
	// always complete.
	MaxSamples int
	// Maintainer configures how Repair applies the fixes it queues on a
	// store with partitioned atomicity (see Repair), as for Build.
	Maintainer MaintainerOptions
}

// VerifyProgress reports how far a Verify is: Phase is "records" while it
// reads the fact table, then the name of each index table it reads.
type VerifyProgress struct {
	Phase       string
	Done, Total int64
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	// Records and Entries count what was read.
	Records, Entries int64
	// Drift counts the findings by kind.
	Drift map[DriftKind]int
	// Pending counts the records (deleted ones included) that had changes
	// queued for the maintainers when the pass began; their entries are
	// late, not drift, and are not checked.
	Pending int
	// SetAside counts the records whose queued changes were all set aside
	// by the maintainers when the pass began; they are checked.
	SetAside int
	// Cleared counts the records of SetAside whose changes Repair removed,
	// having made the record's entries exact, or saw applied.
	Cleared int
	// Repaired counts the findings Repair fixed.
	Repaired int
	// Samples lists the first findings.
	Samples []Drift
	// Skipped names the indexes VerifyTable could not check.
	Skipped []string
}

// Total returns the number of findings.
func (r *VerifyReport) Total() int {
	n := 0
	for _, c := range r.Drift {
		n += c
	}
	return n
}

// Verify checks the table's readable indexes against its fact table and
// reports drift, changing nothing.
func (t *Table[T]) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	return t.verify(ctx, opts, false, false)
}

// Repair is Verify that also fixes each finding it can: it puts missing and
// stale entries, and deletes dangling entries and entries whose record lost
// their key. Unique violations are reported and left. On a store whose
// atomicity scope is a partition, a fix that spans partitions is queued in
// the record's partition, as a change that puts the record's entries or,
// for a stray entry, deletes it unless the record has it; Repair applies
// the queue as a maintainer before it returns. Then, if it checked every
// index the maintainers keep, it removes the changes that maintainers set
// aside of the records it made exact (see VerifyReport.Cleared), and the
// change records set aside that name no record.
func (t *Table[T]) Repair(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	return t.verify(ctx, opts, true, false)
}

type verifier[T any] struct {
	t       *Table[T]
	opts    VerifyOptions
	repair  bool
	report  *VerifyReport
	pending map[string]bool // primary keys with queued changes
	queued  map[string]bool // the change records of the fixes Repair queued
	// aside holds the change records set aside (keys and values, as
	// read) of the records with no other, and facts their fact values as
	// the records pass read them (absent: no record); unsettled, the
	// records of those with a finding that Repair did not fix.
	aside     map[string][]kv.Entry
	facts     map[string][]byte
	unsettled map[string]bool
	nameless  []kv.Entry    // change records set aside that name no record
	partial   bool          // some index is not checked
	indexes   []*indexTable // the readable ones, as the pass began
	// claims holds the unique keys found missing in this pass, each with
	// the entry that Repair put there (nil: none).
	claims map[string][]byte
}

// verify is Verify, or Repair when repair is set; partial says that some
// of the table's indexes are not among those t has.
func (t *Table[T]) verify(ctx context.Context, opts VerifyOptions, repair, partial bool) (*VerifyReport, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 256
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = 100
	}
	v := &verifier[T]{t: t, opts: opts, repair: repair, report: &VerifyReport{Drift: map[DriftKind]int{}},
		pending: map[string]bool{}, queued: map[string]bool{}, claims: map[string][]byte{},
		aside: map[string][]kv.Entry{}, facts: map[string][]byte{}, unsettled: map[string]bool{}, partial: partial}
	// A tool's table (VerifyTable) is built from the catalog as it reads
	// it, and leaves out what it cannot check: no view to bring up to date.
	if _, tool := any(t).(*Table[toolRecord]); !tool {
		if err := t.refreshView(ctx); err != nil { // the indexes as the catalog has them now
			return nil, err
		}
	}
	for _, ix := range t.indexes.load().indexes {
		ix, c, _, err := t.readCatalog(ctx, ix.name)
		if err != nil {
			return nil, err
		}
		if c.state == IndexReadable {
			v.indexes = append(v.indexes, ix)
		}
	}
	if repair && t.hinted() {
		if err := t.sweepHints(ctx); err != nil {
			return nil, fmt.Errorf("table %q: hint the queue: %w", t.name, err)
		}
	}
	if err := v.readQueue(ctx); err != nil {
		return nil, err
	}
	err := v.records(ctx)
	for _, ix := range v.indexes {
		if err != nil {
			break
		}
		if err = v.entries(ctx, ix); err != nil {
			err = fmt.Errorf("table %q, index %q: %w", t.name, ix.name, err)
		}
	}
	if len(v.queued) > 0 { // even after an error, as promised
		if qerr := t.applyQueued(ctx, v.opts.Maintainer); qerr != nil {
			err = errors.Join(err, fmt.Errorf("table %q: apply the queued repairs: %w", t.name, qerr))
		}
	}
	if err == nil && repair && len(v.aside)+len(v.nameless) > 0 {
		if err = v.clearSetAside(ctx); err != nil {
			err = fmt.Errorf("table %q: remove the changes set aside: %w", t.name, err)
		}
	}
	return v.report, err
}

// readQueue notes the records with queued changes: those with changes for
// the maintainers are pending, those whose changes are all set aside are
// checked.
func (v *verifier[T]) readQueue(ctx context.Context) error {
	t := v.t
	for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.queueSpace, End: t.queueEnd}) {
		if err != nil {
			return err
		}
		pk, err := t.changePK(e.Key)
		switch {
		case err != nil && setAside(e.Value):
			v.nameless = append(v.nameless, kv.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
		case err != nil: // the maintainers log it, and set it aside in time
		case setAside(e.Value):
			v.aside[string(pk)] = append(v.aside[string(pk)], kv.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
		default:
			v.pending[string(pk)] = true
		}
	}
	for pk := range v.pending {
		delete(v.aside, pk)
	}
	v.report.Pending, v.report.SetAside = len(v.pending), len(v.aside)
	return nil
}

// clearSetAside removes the changes set aside of the records that Repair
// made exact, if it checked every index the maintainers keep: each
// record's in batches that expect it as the records pass read it, and the
// changes as read. It counts in the report the records whose changes are
// gone, by it or by a maintainer that applied them with a fix. Change
// records set aside that name no record stand for nothing: it removes them
// too, each conditional on its value.
func (v *verifier[T]) clearSetAside(ctx context.Context) error {
	t := v.t
	for _, c := range v.nameless {
		var b kv.Batch
		b.ExpectValue(c.Key, c.Value)
		b.Delete(c.Key)
		err := t.store.Apply(ctx, &b)
		if err == nil {
			err = t.dropHints(ctx, [][]byte{c.Key})
		}
		if err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	checked := !v.partial
	for _, ix := range t.indexes.load().indexes {
		checked = checked && (!ix.maintained() || ix.unique || slices.ContainsFunc(v.indexes, func(c *indexTable) bool {
			return c.name == ix.name && c.gen == ix.gen
		}))
	}
	var keys [][]byte
	for pk, changes := range v.aside {
		for _, c := range changes {
			keys = append(keys, c.Key)
		}
		if !checked || v.unsettled[pk] {
			continue
		}
		factKey := append(bytes.Clone(t.factSpace), pk...)
		if err := v.removeChanges(ctx, factKey, v.facts[pk], changes); err != nil {
			return err
		}
	}
	left, err := t.store.GetMany(ctx, keys, nil)
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for i, k := range keys {
		pk, _ := t.changePK(k)
		if _, seen := gone[string(pk)]; !seen || left[i] != nil {
			gone[string(pk)] = left[i] == nil
		}
	}
	for _, g := range gone {
		if g {
			v.report.Cleared++
		}
	}
	return nil
}

// removeChanges deletes changes, conditional on them and on the record at
// factKey holding fact (nil: absent), in as few batches as the store
// allows; it stops at a conflict.
func (v *verifier[T]) removeChanges(ctx context.Context, factKey, fact []byte, changes []kv.Entry) error {
	atom := v.t.store.Atomicity()
	for len(changes) > 0 {
		b := kv.NewBatch()
		if fact != nil {
			b.ExpectValue(factKey, fact)
		} else {
			b.ExpectAbsent(factKey)
		}
		n := 0
		for ; n < len(changes); n++ {
			b.ExpectValue(changes[n].Key, changes[n].Value)
			b.Delete(changes[n].Key)
			if n > 0 && atom.Allows(b) != nil {
				b = kv.NewBatch(b.Ops()[:b.Len()-2]...)
				break
			}
		}
		err := v.t.store.Apply(ctx, b)
		if errors.Is(err, ErrConflict) {
			return nil // a write or a maintainer got there first
		}
		if err == nil {
			err = v.t.dropHints(ctx, entryKeys(changes[:n]))
		}
		if err != nil {
			return err
		}
		changes = changes[n:]
	}
	return nil
}

// records is the first pass: each record's entries, looked up.
func (v *verifier[T]) records(ctx context.Context) error {
	t := v.t
	total, err := countRange(ctx, t.store, t.factSpace)
	if err != nil {
		return err
	}
	var after []byte
	for {
		var facts [][]byte // key, value pairs
		for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: t.factSpace, End: tuple.End(t.factSpace), After: after, Limit: v.opts.ChunkSize}) {
			if err != nil {
				return err
			}
			facts = append(facts, bytes.Clone(e.Key), bytes.Clone(e.Value))
			after = facts[len(facts)-2]
		}
		if len(facts) == 0 {
			return nil
		}
		want, owner, err := v.wanted(facts)
		if err != nil {
			return err
		}
		keys := make([][]byte, len(want))
		for i, e := range want {
			keys[i] = e.key
		}
		held, err := t.store.GetMany(ctx, keys, nil)
		if err != nil {
			return err
		}
		for i, e := range want {
			factKey, fact := owner[2*i], owner[2*i+1]
			pk := factKey[len(t.factSpace):]
			var kind DriftKind
			seen := held[i]
			claim, claimed := v.claims[string(e.key)]
			switch {
			case seen == nil && e.ix.unique && claimed:
				kind = DriftUniqueViolation // another record lacks this key too
				seen = claim                // and Repair may have given it the key since
			case seen == nil:
				kind = DriftMissing
			case bytes.Equal(held[i], e.value):
				continue
			case e.ix.unique && !sameOwner(e.ix, e.key, held[i], e.value):
				// Another record's entry: a violation if that record still
				// has the key, else a stale entry to take over.
				kind = DriftStale
				other, err := v.ownedElsewhere(ctx, e, held[i])
				if err != nil {
					return err
				}
				if other {
					kind = DriftUniqueViolation
				}
			default:
				kind = DriftStale
			}
			var fix kv.Batch
			fix.ExpectValue(factKey, fact)
			if held[i] == nil {
				fix.ExpectAbsent(e.key)
			} else {
				fix.ExpectValue(e.key, held[i])
			}
			fix.Put(e.key, e.value)
			repaired, err := v.found(ctx, kind, e.ix, e.key, seen, pk, factKey, fact, &fix, false)
			if err != nil {
				return err
			}
			if kind == DriftMissing && e.ix.unique {
				v.claims[string(e.key)] = nil
				if repaired {
					v.claims[string(e.key)] = e.value
				}
			}
		}
		if v.opts.Progress != nil {
			v.opts.Progress(VerifyProgress{Phase: "records", Done: v.report.Records, Total: total})
		}
	}
}

// wanted returns the entries the records facts (key, value pairs) should
// own, but those of records with pending changes, and the fact key and
// value of each entry's record.
func (v *verifier[T]) wanted(facts [][]byte) (want []entry, owner [][]byte, err error) {
	t := v.t
	for i := 0; i < len(facts); i += 2 {
		pk := facts[i][len(t.factSpace):]
		v.report.Records++
		if v.pending[string(pk)] {
			continue
		}
		if _, ok := v.aside[string(pk)]; ok {
			v.facts[string(pk)] = facts[i+1]
		}
		es, err := t.factEntries(v.indexes, facts[i+1], pk)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range es {
			want = append(want, e)
			owner = append(owner, facts[i], facts[i+1])
		}
	}
	return want, owner, nil
}

// ownedElsewhere reports whether the record that unique entry value held
// names has the key of e.
func (v *verifier[T]) ownedElsewhere(ctx context.Context, e entry, held []byte) (bool, error) {
	t := v.t
	pk, _, err := e.ix.decodeUnique(held)
	if err != nil {
		return false, err
	}
	fact, err := t.store.Get(ctx, append(bytes.Clone(t.factSpace), pk...))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	es, err := t.factEntries([]*indexTable{e.ix}, fact, pk)
	return findEntry(es, e.key) >= 0, err
}

// entries is the second pass over index ix: each entry's record, looked up.
func (v *verifier[T]) entries(ctx context.Context, ix *indexTable) error {
	t := v.t
	total, err := countRange(ctx, t.store, ix.prefix)
	if err != nil {
		return err
	}
	only := []*indexTable{ix}
	var after []byte
	done := int64(0)
	for {
		var list [][]byte // entry key, value, fact key
		for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: ix.prefix, End: tuple.End(ix.prefix), After: after, Limit: v.opts.ChunkSize}) {
			if err != nil {
				return err
			}
			key := bytes.Clone(e.Key)
			after = key
			pk, _, err := ix.decodeEntry(key, e.Value, len(t.pk))
			if err != nil {
				return err
			}
			list = append(list, key, bytes.Clone(e.Value), append(bytes.Clone(t.factSpace), pk...))
		}
		if len(list) == 0 {
			return nil
		}
		keys := make([][]byte, 0, len(list)/3)
		for i := 2; i < len(list); i += 3 {
			keys = append(keys, list[i])
		}
		facts, err := t.store.GetMany(ctx, keys, nil)
		if err != nil {
			return err
		}
		for i, fact := range facts {
			key, value, factKey := list[3*i], list[3*i+1], list[3*i+2]
			pk := factKey[len(t.factSpace):]
			done++
			v.report.Entries++
			if v.pending[string(pk)] {
				continue
			}
			var fix kv.Batch
			fix.ExpectValue(key, value)
			fix.Delete(key)
			kind := DriftDangling
			if fact != nil {
				es, err := t.factEntries(only, fact, pk)
				if err != nil {
					return err
				}
				if findEntry(es, key) >= 0 {
					continue
				}
				kind = DriftStale
				fix.ExpectValue(factKey, fact)
			} else {
				fix.ExpectAbsent(factKey)
			}
			if _, err := v.found(ctx, kind, ix, key, value, pk, factKey, fact, &fix, true); err != nil {
				return err
			}
		}
		if v.opts.Progress != nil {
			v.opts.Progress(VerifyProgress{Phase: ix.name, Done: done, Total: total})
		}
	}
}

// found confirms a finding about the entry key of ix, seen holding seen
// (nil: absent), of the record at factKey, read as fact (nil: absent), and
// counts it and, when repairing, applies fix. When fix spans partitions, it
// queues a change for the maintainer instead, in the record's partition and
// conditional on it: one that puts the record's entries, or, for a stray
// entry key, one that deletes it unless the record has it.
func (v *verifier[T]) found(ctx context.Context, kind DriftKind, ix *indexTable, key, seen, pk, factKey, fact []byte, fix *kv.Batch, stray bool) (repaired bool, err error) {
	t := v.t
	// No lifecycle change of this table overtakes the confirmation and
	// the fix: the fix lands in a generation the table maintains.
	t.indexes.drain.RLock()
	defer t.indexes.drain.RUnlock()
	defer func() {
		if !repaired { // the record's entries are not known to be exact
			v.unsettled[string(pk)] = true
		}
	}()
	if ok, err := v.confirm(ctx, ix, key, seen, pk, factKey, fact); !ok || err != nil {
		return false, err
	}
	d := Drift{Kind: kind, Index: ix.name, PrimaryKey: decodeTupleLoose(pk)}
	d.Key = decodeTupleLoose(key[len(ix.prefix):])
	if !ix.unique && len(d.Key) >= len(d.PrimaryKey) {
		d.Key = d.Key[:len(d.Key)-len(d.PrimaryKey)]
	}
	if v.repair && kind != DriftUniqueViolation {
		var change []byte // the key of the change record that stands for fix
		if err := t.store.Atomicity().Allows(fix); err != nil {
			if ix.unique {
				return false, fmt.Errorf("repair of unique index %q needs a batch that holds a record and its entry: %w", ix.name, err)
			}
			fix = &kv.Batch{}
			if fact != nil {
				fix.ExpectValue(factKey, fact)
			} else {
				fix.ExpectAbsent(factKey)
			}
			named := ix.prefix // put the record's entries
			if stray {
				named = key // delete it unless the record has it
			}
			t.enqueue(fix, pk, named, true, scopeIndex)
			change = fix.Ops()[fix.Len()-1].Key
		}
		err = t.applyHinted(ctx, fix)
		switch {
		case err == nil:
			if change != nil {
				v.queued[string(change)] = true
			}
			d.Repaired = true
			v.report.Repaired++
		case errors.Is(err, ErrConflict):
			return false, nil // a write raced with the repair and settled it
		default:
			return false, err
		}
	}
	v.report.Drift[kind]++
	if len(v.report.Samples) < v.opts.MaxSamples {
		v.report.Samples = append(v.report.Samples, d)
	}
	return d.Repaired, nil
}

// confirm reports whether a finding still stands: the record is as the
// check read it, from before to after it reads the queue, the entry and
// the catalog again; no change to the record was queued since the pass
// began; the entry is as the check read it; and the index is still
// readable in the same generation. Writes commit a record with its entries
// or its change record, and every write changes the record's bytes (its
// version), so an unchanged record and an empty queue around the entry's
// read mean the entry was read as the record had it: a write, a
// maintainer, a concurrent Repair or a lifecycle change that raced with
// the check changed one of them, and the finding is dropped. The caller
// holds the drain lock.
func (v *verifier[T]) confirm(ctx context.Context, ix *indexTable, key, seen, pk, factKey, fact []byte) (bool, error) {
	t := v.t
	same := func(k, want []byte) (bool, error) {
		now, err := t.store.Get(ctx, k)
		switch {
		case errors.Is(err, ErrNotFound):
			now = nil
		case err != nil:
			return false, err
		}
		return bytes.Equal(now, want) && (now == nil) == (want == nil), nil
	}
	if ok, err := same(factKey, fact); !ok || err != nil {
		return false, err
	}
	queued := append(bytes.Clone(t.queueSpace), pk...)
	for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: queued, End: tuple.End(queued)}) {
		if err != nil {
			return false, err
		}
		// Not one of this Repair's fixes, nor a change set aside as read:
		// a change was queued during the pass; late, not drift.
		if !v.queued[string(e.Key)] && !slices.ContainsFunc(v.aside[string(pk)], func(c kv.Entry) bool {
			return bytes.Equal(c.Key, e.Key) && bytes.Equal(c.Value, e.Value)
		}) {
			return false, nil
		}
	}
	if ok, err := same(key, seen); !ok || err != nil {
		return false, err
	}
	// After the entry: a disabling commits the catalog before it deletes
	// entries, here or in another process.
	now, c, _, err := t.readCatalog(ctx, ix.name)
	if err != nil || now.gen != ix.gen || c.state != IndexReadable {
		return false, err
	}
	return same(factKey, fact)
}

// decodeTupleLoose decodes an encoded tuple for a report, or returns it as
// one []byte element when it does not decode.
func decodeTupleLoose(b []byte) Tuple {
	if t, err := decodeTuple(b); err == nil {
		return t
	}
	return Tuple{bytes.Clone(b)}
}

// VerifyTable is Verify for a tool without the program's record types: it
// checks the table that ReadCatalog described as info, decoding its records
// with the record type and codec the table keeps (the library's JSON or binary
// codec). Indexes with a Key func are not checked, since their keys come
// from the program's code; the report's Skipped names them. A table that
// keeps no record type (its type has its own JSON encoding, say: see the
// package documentation) cannot be checked: VerifyTable returns an error
// wrapping ErrInvalidSchema.
func VerifyTable(ctx context.Context, store kv.Store, info TableInfo, opts VerifyOptions) (*VerifyReport, error) {
	return verifyTable(ctx, store, info, opts, false)
}

// RepairTable is Repair for a tool, as VerifyTable is Verify. On a store
// whose atomicity is bounded it refuses a table with an index it cannot
// check: a fix there may go through the queue, and a tool that applied the
// queue would leave such an index behind.
func RepairTable(ctx context.Context, store kv.Store, info TableInfo, opts VerifyOptions) (*VerifyReport, error) {
	return verifyTable(ctx, store, info, opts, true)
}

// toolRecord stands for a record type a tool does not have: a table opened
// by openTool holds records of its record type's type, and serves only Verify
// and Repair, which go by that type.
type toolRecord struct{}

func verifyTable(ctx context.Context, store kv.Store, info TableInfo, opts VerifyOptions, repair bool) (*VerifyReport, error) {
	if err := checkArguments(ctx, store); err != nil {
		return nil, err
	}
	t, skipped, err := openTool(store, info)
	if err != nil {
		return nil, err
	}
	if repair && len(skipped) > 0 && bounded(store.Atomicity()) {
		return nil, fmt.Errorf("%w: table %q: index %q has a Key func or no definition, and a fix on this store may go through the queue: repair the table in its program",
			ErrInvalidSchema, info.Name, skipped[0])
	}
	r, err := t.verify(ctx, opts, repair, len(skipped) > 0)
	if r != nil {
		r.Skipped = skipped
	}
	return r, err
}

// openTool builds, without touching the store, the table info describes,
// with records of its record type's type and the indexes its catalog defines,
// at their generations and states; it returns the indexes it leaves out.
func openTool(store kv.Store, info TableInfo) (*Table[toolRecord], []string, error) {
	var codec Codec
	switch info.Codec {
	case "json":
		codec = JSONCodec{}
	case "binary":
		codec = &BinaryCodec{}
	case "":
		return nil, nil, fmt.Errorf("%w: table %q keeps no record type: open it once with this version of the library", errRecordType, info.Name)
	default:
		return nil, nil, fmt.Errorf("%w: table %q stores records with codec %s, which tools cannot decode", errRecordType, info.Name, info.Codec)
	}
	rt, err := describedType(info.RecordType)
	if err != nil {
		return nil, nil, fmt.Errorf("table %q: %w", info.Name, err)
	}
	t := newTable[toolRecord](store, info.Name, codec, rt)
	var skipped []string
	var indexes []*indexTable
	for _, ii := range info.Indexes {
		d := ii.Definition
		if d == nil || d.Computed {
			skipped = append(skipped, ii.Name)
			continue
		}
		if len(d.PrimaryKey) == 0 {
			return nil, nil, fmt.Errorf("%w: table %q, index %q: the definition names no primary key", ErrInvalidSchema, info.Name, ii.Name)
		}
		if t.pk == nil {
			for _, name := range d.PrimaryKey {
				f, err := lookupField(rt, name, false)
				if err != nil {
					return nil, nil, fmt.Errorf("table %q: primary key: %w", info.Name, err)
				}
				t.pk = append(t.pk, f)
			}
		}
		ix, err := compileIndex(rt, Index[toolRecord]{Name: ii.Name, Fields: d.Fields, Strategy: d.Strategy, Projection: d.Projection,
			Unique: d.Unique, Sparse: d.Sparse, MultiValued: d.MultiValued, Consistency: d.Consistency, Placement: d.Placement}, t)
		if err != nil {
			return nil, nil, fmt.Errorf("table %q: %w", info.Name, err)
		}
		ix.place(t.prefix, ii.Generation)
		ix.state = ii.State
		indexes = append(indexes, ix)
	}
	t.indexes.view.Store(newIndexView(indexes))
	return t, skipped, nil
}

func entryKeys(es []kv.Entry) [][]byte {
	keys := make([][]byte, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	return keys
}
