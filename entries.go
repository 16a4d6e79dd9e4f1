package indextable

import (
	"bytes"
	"fmt"
	"reflect"
)

// entry is one index entry.
type entry struct {
	ix    *indexTable
	key   []byte
	value []byte
}

// entries returns the entries of record rv in indexes.
func entries(indexes []*indexTable, rv reflect.Value, pk, payload []byte, c Codec, a *arena) ([]entry, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	// One allocation holds every index's key-building scratch: each its own
	// capacity-bounded piece, so that a key that outgrows its piece moves
	// rather than overwriting the next.
	size := 0
	for _, ix := range indexes {
		size += len(ix.prefix) + len(pk) + entryKeyRoom
	}
	out := a.entries(len(indexes))
	buf := a.bytes(size)[:size]
	for _, ix := range indexes {
		c0 := len(ix.prefix) + len(pk) + entryKeyRoom
		var err error
		if out, err = ix.appendEntries(out, rv, pk, payload, c, buf[:0:c0]); err != nil {
			return nil, err
		}
		buf = buf[c0:]
	}
	return out, nil
}

// entryKeyRoom is the room an entry key's scratch leaves for the key's own
// fields, beyond the index prefix and the primary key.
const entryKeyRoom = 48

func findEntry(list []entry, key []byte) int {
	for i := range list {
		if bytes.Equal(list[i].key, key) {
			return i
		}
	}
	return -1
}

// entriesOf decodes a stored record and returns its entries in indexes.
func (t *Table[T]) entriesOf(indexes []*indexTable, payload, pk []byte) ([]entry, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	// A record of the table's type, which is T's, or a record type's for a
	// tool (see VerifyTable).
	rec := reflect.New(t.rtype)
	if err := t.decodeInto(payload, rec, t.stable); err != nil {
		return nil, fmt.Errorf("table %q: decode record %v: %w", t.name, decodeForError(pk), err)
	}
	es, err := entries(indexes, rec.Elem(), pk, payload, t.codec, nil)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", t.name, err)
	}
	return es, nil
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, have := range keys {
		if bytes.Equal(have, k) {
			return true
		}
	}
	return false
}

// factEntries returns the entries in indexes of the record stored as fact.
func (t *Table[T]) factEntries(indexes []*indexTable, fact, pk []byte) ([]entry, error) {
	_, payload, err := decodeFact(fact)
	if err != nil {
		return nil, fmt.Errorf("table %q: record %v: %w", t.name, decodeForError(pk), err)
	}
	return t.entriesOf(indexes, payload, pk)
}

// diffEntries is the one diff of a record's index entries: what turns the
// entries of its earlier versions, before, into those of its current
// version, current. It calls gone once for each key that an earlier
// version has and current lacks (the index must delete it), then came for
// each entry of current that not every earlier version has as it is (the
// index must put it). A write diffs one earlier version, the record as it
// read it; a maintainer diffs the versions its pending changes name.
func diffEntries(before [][]entry, current []entry, gone, came func(entry) error) error {
	for i, es := range before {
		for _, e := range es {
			if findEntry(current, e.key) >= 0 || inAny(before[:i], e.key) {
				continue
			}
			if err := gone(e); err != nil {
				return err
			}
		}
	}
	for _, e := range current {
		if heldByAll(before, e) {
			continue
		}
		if err := came(e); err != nil {
			return err
		}
	}
	return nil
}

// inAny reports whether any of versions has an entry under key.
func inAny(versions [][]entry, key []byte) bool {
	for _, es := range versions {
		if findEntry(es, key) >= 0 {
			return true
		}
	}
	return false
}

// heldByAll reports whether every one of versions has e as it is.
func heldByAll(versions [][]entry, e entry) bool {
	for _, es := range versions {
		if i := findEntry(es, e.key); i < 0 || !bytes.Equal(es[i].value, e.value) {
			return false
		}
	}
	return true
}
