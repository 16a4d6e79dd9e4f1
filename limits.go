package indextable

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strings"
)

// A store's limits on what a table writes.
//
// A store may bound its keys and values (Atomicity.MaxKeyBytes and
// MaxValueBytes) and its batches (MaxOps, MaxBytes). What a write puts now
// the store refuses whole, but a maintainer applies a write's queued
// changes later, and a later write must be able to delete the record: a
// key, record or entry those would need and the store cannot hold makes a
// write that can never be finished. So before it writes a record, a table
// checks, on a store with any bound:
//
//   - every key the record has in the store: its own, its change records'
//     (the record's key, a byte and a 9-byte change ID), and its entries in
//     every maintained index, queued ones included; a key too long is
//     ErrInvalidKey, naming the field and the most bytes it may take;
//   - every entry's value, against MaxValueBytes;
//   - the record itself, against recordLimit: a change record and a
//     maintainer's marker hold a copy of it, and a maintainer's last batch
//     three;
//   - that a delete of the record can free its unique keys in one batch.
//
// Build checks the entries it writes the same way.

// changeOverhead is the most bytes a change record's value adds to the
// fact value it copies: its format, enqueue time, scope and whether there
// was a record (see encodeChange).
const changeOverhead = 3 + binary.MaxVarintLen64

// changeIDBytes is the encoded change ID that ends a change record's key.
const changeIDBytes = 9

// limited reports whether a store of atomicity a bounds anything.
func limited(a Atomicity) bool {
	return bounded(a) || a.MaxKeyBytes > 0 || a.MaxValueBytes > 0
}

// checkLimits returns an error when the record rv, whose fact value is
// fact (binary.MaxVarintLen64 bytes for the version, then the payload) and
// whose entries in view's synchronous indexes are entries, cannot be
// written, maintained and deleted on the table's store.
func (t *Table[T]) checkLimits(view *indexView, rv reflect.Value, pk, fact []byte, es []entry) error {
	a := t.store.Atomicity()
	if !limited(a) {
		return nil
	}
	if err := t.checkRecordKey(a, pk); err != nil {
		return err
	}
	if limit, why := t.recordLimit(a, pk); limit > 0 && len(fact) > limit {
		return fmt.Errorf("%w: table %q, record %v: it takes %d bytes, and at most %d fit: %s",
			ErrInvalidBatch, t.name, decodeForError(pk), len(fact), limit, why)
	}
	if err := t.checkDeletable(a, pk, es); err != nil || a.MaxKeyBytes <= 0 && a.MaxValueBytes <= 0 {
		return err
	}
	queued := view.filter(func(ix *indexTable) bool { return ix.maintained() && ix.eventual })
	if len(queued) > 0 {
		more, err := entries(queued, rv, pk, fact[binary.MaxVarintLen64:], t.codec)
		if err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
		es = append(es[:len(es):len(es)], more...)
	}
	return t.checkEntries(a, pk, es)
}

// recordLimit returns the most bytes the fact value of the record with
// encoded primary key pk may take on a store of atomicity a (0: no bound),
// and why. A fact value counts binary.MaxVarintLen64 bytes for its version.
func (t *Table[T]) recordLimit(a Atomicity, pk []byte) (int, string) {
	limit, why := 0, ""
	if a.MaxValueBytes > 0 {
		limit = a.MaxValueBytes - changeOverhead
		why = fmt.Sprintf("the store holds values of %d bytes, and a change record copies the record with %d bytes more",
			a.MaxValueBytes, changeOverhead)
	}
	if a.MaxBytes > 0 {
		// A maintainer's last batch for an update that keeps the size:
		// the record expected, its change record and marker expected and
		// deleted (see worstGuard).
		factKey := len(t.factSpace) + len(pk)
		changeKey := len(t.queueSpace) + len(pk) + changeIDBytes
		n := max((a.MaxBytes-factKey-4*changeKey-2*changeOverhead)/3, 1)
		if limit == 0 || n < limit {
			limit = n
			why = fmt.Sprintf("a maintainer's batch, of at most %d bytes, holds three copies of the record with their keys", a.MaxBytes)
		}
	}
	return limit, why
}

// checkRecordKey returns an error wrapping ErrInvalidKey when the keys of
// the record with encoded primary key pk, or of its change records, are
// longer than a store of atomicity a holds.
func (t *Table[T]) checkRecordKey(a Atomicity, pk []byte) error {
	if a.MaxKeyBytes <= 0 {
		return nil
	}
	changeKey := len(t.queueSpace) + len(pk) + changeIDBytes
	if changeKey <= a.MaxKeyBytes {
		return nil
	}
	names := make([]string, len(t.pk))
	for i, f := range t.pk {
		names[i] = "primary key field " + f.name
	}
	return keyTooLong(fmt.Sprintf("table %q, record %v: the key of a change record", t.name, decodeForError(pk)),
		pk, changeKey-len(pk), names, a.MaxKeyBytes)
}

// checkEntries returns an error when an entry of the record pk is longer
// than a store of atomicity a holds: its key (ErrInvalidKey) or its value
// (ErrInvalidBatch).
func (t *Table[T]) checkEntries(a Atomicity, pk []byte, entries []entry) error {
	for _, e := range entries {
		if a.MaxKeyBytes > 0 && len(e.key) > a.MaxKeyBytes {
			return keyTooLong(fmt.Sprintf("table %q, record %v: the key of its entry in index %q", t.name, decodeForError(pk), e.ix.name),
				e.key[len(e.ix.prefix):], len(e.ix.prefix), t.entryFields(e.ix, e.key[len(e.ix.prefix):]), a.MaxKeyBytes)
		}
		if a.MaxValueBytes > 0 && len(e.value) > a.MaxValueBytes {
			return fmt.Errorf("%w: table %q, record %v: its entry in index %q takes %d bytes, and the store holds values of %d",
				ErrInvalidBatch, t.name, decodeForError(pk), e.ix.name, len(e.value), a.MaxValueBytes)
		}
	}
	return nil
}

// checkDeletable returns an error wrapping ErrInvalidBatch when a delete of
// the record pk, whose entries are entries, could not free its unique keys
// in one batch: with a change record, its guard and its own deletion.
func (t *Table[T]) checkDeletable(a Atomicity, pk []byte, entries []entry) error {
	unique := 0
	for _, e := range entries {
		if e.ix.unique {
			unique++
		}
	}
	if a.MaxOps > 0 && 3+unique > a.MaxOps {
		return fmt.Errorf("%w: table %q, record %v: it would hold %d unique keys, and a delete must free them in one batch of at most %d operations",
			ErrInvalidBatch, t.name, decodeForError(pk), unique, a.MaxOps)
	}
	return nil
}

// entryFields names the components of key, an entry key of ix after its
// prefix: its key fields (or its Key func's components), then, unless ix
// is unique, the primary key fields.
func (t *Table[T]) entryFields(ix *indexTable, key []byte) []string {
	var names []string
	for _, f := range ix.fields {
		names = append(names, "field "+f.name)
	}
	if ix.keyFunc != nil {
		n := 0
		for off := 0; off < len(key); n++ {
			l, err := ElementLen(key[off:])
			if err != nil {
				break
			}
			off += l
		}
		if !ix.unique {
			n -= len(t.pk)
		}
		for i := range n {
			names = append(names, fmt.Sprintf("component %d of the Key func", i))
		}
	}
	if !ix.unique {
		for _, f := range t.pk {
			names = append(names, "field "+f.name) // one name for one field: it may be in a key twice
		}
	}
	return names
}

// keyTooLong returns an error wrapping ErrInvalidKey for key, a key of
// what, holding tuple components after fixed bytes of its own, that is
// longer than limit. It names the component (by names, in order; the last
// name stands for any that remain) that takes the most bytes, and the most
// it may take beside the others, which counts every component of its name:
// an intra-partition entry holds the partition field twice.
func keyTooLong(what string, components []byte, fixed int, names []string, limit int) error {
	total := fixed + len(components)
	taken := map[string]int{} // bytes of each name's components
	count := map[string]int{}
	raw := map[string]int{} // of the longest, its bytes as a string
	worst := ""
	for i, off := 0, 0; off < len(components); i++ {
		n, err := ElementLen(components[off:])
		if err != nil {
			break
		}
		name := "a component"
		if len(names) > 0 {
			name = names[min(i, len(names)-1)]
		}
		taken[name] += n
		count[name]++
		if v, _, err := DecodeElement(components[off : off+n]); err == nil {
			switch v := v.(type) {
			case string:
				raw[name] = max(raw[name], len(v))
			case []byte:
				raw[name] = max(raw[name], len(v))
			}
		}
		if worst == "" || taken[name] > taken[worst] {
			worst = name
		}
		off += n
	}
	msg := fmt.Sprintf("%s takes %d bytes, and the store holds keys of %d", what, total, limit)
	if worst != "" {
		each := (limit - (total - taken[worst])) / count[worst]
		twice := ""
		if count[worst] > 1 {
			twice = fmt.Sprintf(" (it is in the key %d times)", count[worst])
		}
		size := taken[worst] / count[worst]
		if r, ok := raw[worst]; ok {
			// A string or byte field takes its length and its encoding's
			// bytes (a type code, a terminator, escapes).
			each -= size - r
			size = r
		}
		msg += fmt.Sprintf(": %s%s takes %d bytes where at most %d fit", worst, twice, size, max(each, 0))
	}
	return fmt.Errorf("%w: %s", ErrInvalidKey, strings.TrimSpace(msg))
}
