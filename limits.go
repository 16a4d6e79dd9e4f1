package indextable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/indextable/indextable/kv"
)

// changeOverhead is the most bytes a change record's value adds to the
// fact value it copies: its format, enqueue time, scope and whether there
// was a record (see encodeChange).
const changeOverhead = 3 + binary.MaxVarintLen64

// changeIDBytes is the encoded change ID that ends a change record's key.
const changeIDBytes = 9

// limited reports whether a store of atomicity a bounds anything.
func limited(a kv.Atomicity) bool {
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
	if limit, byBatch := t.recordLimit(a, pk, es, len(fact)-binary.MaxVarintLen64); limit > 0 && len(fact) > limit {
		why := fmt.Sprintf("the store holds values of %d bytes, and a change record copies the record with %d bytes more",
			a.MaxValueBytes, changeOverhead)
		if byBatch {
			why = fmt.Sprintf("a batch of at most %d bytes must hold the record, its copy in a change record, "+
				"the record it replaces and its unique entries, and a maintainer's batch three copies", a.MaxBytes)
		}
		return fmt.Errorf("%w: table %q, record %v: it takes %d bytes, and at most %d fit: %s",
			ErrInvalidBatch, t.name, decodeForError(pk), len(fact), limit, why)
	}
	if err := t.checkDeletable(a, pk, es); err != nil || a.MaxKeyBytes <= 0 && a.MaxValueBytes <= 0 {
		if err == nil {
			_, err = t.checkRecordKey(a, pk) // of the records' keys, the change record's is the longest
		}
		return err
	}
	queued := view.filter(func(ix *indexTable) bool { return ix.maintained() && ix.eventual })
	if len(queued) > 0 {
		more, err := entries(queued, rv, pk, fact[binary.MaxVarintLen64:], t.codec, nil)
		if err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
		es = append(es[:len(es):len(es)], more...)
	}
	return t.checkKeys(a, pk, es)
}

// recordLimit returns the most bytes the fact value of the record with
// encoded primary key pk, whose synchronous entries are es and whose
// payload takes payload bytes, may take on a
// store of atomicity a (0: no bound), and whether the bound is a batch's
// (else a value's). A fact value counts binary.MaxVarintLen64 bytes for
// its version.
//
// A change record copies the record, so a value must hold it and the
// change's header. A batch must hold a maintainer's last batch for an
// update that keeps the size (the record expected, its change record and
// marker expected and deleted: see worstGuard), and a write that falls
// back (the record it replaces, the record, its change record, and its
// unique entries, which cannot fall back, those of FullCopy indexes each
// a copy of the record).
func (t *Table[T]) recordLimit(a kv.Atomicity, pk []byte, es []entry, payload int) (int, bool) {
	limit := 0
	if a.MaxValueBytes > 0 {
		limit = a.MaxValueBytes - changeOverhead
	}
	if a.MaxBytes <= 0 {
		return limit, false
	}
	factKey := len(t.factSpace) + len(pk)
	changeKey := len(t.queueSpace) + len(pk) + changeIDBytes
	copies, fixed := 3, factKey+4*changeKey+2*changeOverhead
	for _, e := range es {
		if !e.ix.unique {
			continue
		}
		fixed += len(e.key)
		if e.ix.strategy == FullCopy {
			copies++
			fixed += len(e.value) - payload // its primary key
		} else {
			fixed += len(e.value)
		}
	}
	n := max((a.MaxBytes-fixed)/copies, 1)
	if limit == 0 || n < limit {
		return n, true
	}
	return limit, false
}

// checkRecordKey returns an error wrapping ErrInvalidKey when the keys of
// the record with encoded primary key pk, or of its change records, are
// longer than a store of atomicity a holds, and (first) how many bytes its
// worst field may take.
func (t *Table[T]) checkRecordKey(a kv.Atomicity, pk []byte) (int, error) {
	changeKey := len(t.queueSpace) + len(pk) + changeIDBytes
	if a.MaxKeyBytes <= 0 || changeKey <= a.MaxKeyBytes {
		return 0, nil
	}
	names := make([]string, len(t.pk))
	for i, f := range t.pk {
		names[i] = "field " + f.name
	}
	return keyTooLong(fmt.Sprintf("table %q, record %v: the key of a change record", t.name, decodeForError(pk)),
		pk, changeKey-len(pk), names, a.MaxKeyBytes)
}

// checkKeys returns an error when a key of the record pk, its own, its
// change records' or one of its entries (es), is longer than a store of
// atomicity a holds (ErrInvalidKey), naming the field and the index that
// leave it the fewest bytes; or when an entry's value is longer than the
// store holds (ErrInvalidBatch).
func (t *Table[T]) checkKeys(a kv.Atomicity, pk []byte, es []entry) error {
	fewest, worst := t.checkRecordKey(a, pk)
	for _, e := range es {
		if a.MaxKeyBytes > 0 && len(e.key) > a.MaxKeyBytes {
			rest := e.key[len(e.ix.prefix):]
			fit, err := keyTooLong(fmt.Sprintf("table %q, record %v: the key of its entry in index %q", t.name, decodeForError(pk), e.ix.name),
				rest, len(e.ix.prefix), t.entryFields(e.ix, rest, pk), a.MaxKeyBytes)
			if worst == nil || fit < fewest {
				worst, fewest = err, fit
			}
		}
		if a.MaxValueBytes > 0 && len(e.value) > a.MaxValueBytes && worst == nil {
			return fmt.Errorf("%w: table %q, record %v: its entry in index %q takes %d bytes, and the store holds values of %d",
				ErrInvalidBatch, t.name, decodeForError(pk), e.ix.name, len(e.value), a.MaxValueBytes)
		}
	}
	return worst
}

// checkDeletable returns an error wrapping ErrInvalidBatch when a delete of
// the record pk, whose entries are entries, could not free its unique keys
// in one batch: with a change record, its guard and its own deletion.
func (t *Table[T]) checkDeletable(a kv.Atomicity, pk []byte, entries []entry) error {
	unique := 0
	for _, e := range entries {
		if e.ix.unique {
			unique++
		}
	}
	// A delete while a unique index is built (planEntries, by the fallback
	// rule) expects and deletes the record, puts its change record, and
	// reads, expects and deletes each unique key: 3+2*unique operations, of
	// which 2+unique write. Build (recordBatch) expects the record and
	// expects and puts each key: fewer of both.
	switch ops, writes := 3+2*unique, 2+unique; {
	case a.MaxOps > 0 && ops > a.MaxOps:
		return fmt.Errorf("%w: table %q, record %v: it would hold %d unique keys, and a delete or a build must check each with two operations of one batch, of at most %d",
			ErrInvalidBatch, t.name, decodeForError(pk), unique, a.MaxOps)
	case a.MaxWrites > 0 && writes > a.MaxWrites:
		return fmt.Errorf("%w: table %q, record %v: it would hold %d unique keys, and a delete must delete each in one batch with the record and a change record, of at most %d puts and deletes",
			ErrInvalidBatch, t.name, decodeForError(pk), unique, a.MaxWrites)
	}
	return nil
}

// components cuts an encoded tuple into its elements.
func components(tuple []byte) [][]byte {
	var parts [][]byte
	for off := 0; off < len(tuple); {
		n, err := kv.ElementLen(tuple[off:])
		if err != nil {
			break
		}
		parts = append(parts, tuple[off:off+n])
		off += n
	}
	return parts
}

// entryFields names the components of key, an entry key of the record pk
// in ix after its prefix: its key fields (or its Key func's components), then, unless ix
// is unique, the primary key fields.
func (t *Table[T]) entryFields(ix *indexTable, key, pk []byte) []string {
	var names []string
	for _, f := range ix.fields {
		names = append(names, "field "+f.name)
	}
	if ix.keyFunc != nil {
		// A component equal to a primary key field's is named after it:
		// the field's value is in the key twice.
		pkParts := components(pk)
		parts := components(key)
		if !ix.unique {
			parts = parts[:max(len(parts)-len(t.pk), 0)]
		}
		for i, c := range parts {
			name := fmt.Sprintf("component %d of the Key func", i)
			for j, p := range pkParts {
				if bytes.Equal(c, p) && j < len(t.pk) {
					name = "field " + t.pk[j].name
				}
			}
			names = append(names, name)
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
// longer than limit, and the most bytes its worst field may take (first). It names
// the component (by names, in order; the last name stands for any that
// remain) that takes the most bytes, and the most it may take beside the
// others, which counts every component of its name: an intra-partition
// entry holds the partition field twice.
func keyTooLong(what string, components []byte, fixed int, names []string, limit int) (int, error) {
	total := fixed + len(components)
	taken := map[string]int{} // bytes of each name's components
	count := map[string]int{}
	raw := map[string]int{} // bytes of each name's strings, when unescaped
	worst := ""
	for i, off := 0, 0; off < len(components); i++ {
		n, err := kv.ElementLen(components[off:])
		if err != nil {
			break
		}
		name := "a component"
		if len(names) > 0 {
			name = names[min(i, len(names)-1)]
		}
		taken[name] += n
		count[name]++
		if s, ok := plainString(components[off : off+n]); ok {
			raw[name] = max(raw[name], s)
		}
		if worst == "" || taken[name] > taken[worst] {
			worst = name
		}
		off += n
	}
	msg := fmt.Sprintf("%s takes %d bytes, and the store holds keys of %d", what, total, limit)
	if worst == "" {
		return 0, fmt.Errorf("%w: %s", ErrInvalidKey, msg)
	}
	each := (limit - (total - taken[worst])) / count[worst]
	twice := ""
	if count[worst] > 1 {
		twice = fmt.Sprintf(" (it is in the key %d times)", count[worst])
	}
	size, unit := taken[worst]/count[worst], "bytes"
	if r, ok := raw[worst]; ok && size-r == 2 {
		// A string without 0x00 bytes takes its length and two (a type
		// code, a terminator).
		each, size = each-2, r
	} else {
		unit = "bytes as encoded (a string two more than its length, and one more for each 0x00 byte in it)"
	}
	each = max(each, 0)
	return each, fmt.Errorf("%w: %s: %s%s takes %d %s where at most %d fit", ErrInvalidKey, msg, worst, twice, size, unit, each)
}

// plainString returns the length of the string or byte string that the
// element encodes, when the encoding escapes nothing in it.
func plainString(element []byte) (int, bool) {
	v, _, err := kv.DecodeElement(element)
	if err != nil {
		return 0, false
	}
	switch v := v.(type) {
	case string:
		return len(v), len(element) == len(v)+2
	case []byte:
		return len(v), len(element) == len(v)+2
	}
	return 0, false
}

// bounded reports whether a store's atomicity scope may refuse a batch.
func bounded(a kv.Atomicity) bool {
	return a.Partition != nil || a.MaxOps > 0 || a.MaxWrites > 0 || a.MaxBytes > 0
}
