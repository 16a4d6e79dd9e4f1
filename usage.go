package indextable

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/indextable/indextable/kv"
)

// IndexUsage is what one index table has done, counted as the library runs.
type IndexUsage struct {
	// Reads is the number of queries (Find, FindPage, Count, Exists) that
	// read the index. A page resumed from a cursor (Query.Cursor) is the
	// query already counted, and counts in no other count here either,
	// except for Returned.
	Reads int64
	// Returned is the number of records those queries returned (entries,
	// for Count), over all their pages.
	Returned int64
	// Mutations is the number of entries that record writes put or deleted,
	// in their own batch or later through the queue; Mutations per
	// TableUsage.Writes is the index's write amplification. Build and
	// Repair are not counted.
	Mutations int64
	// Changes is the part of Mutations that updates and deletes of records
	// made (not inserts): how volatile the indexed data is.
	Changes int64
	// WholeReads is the number of reads that named no Query.Fields, and so
	// needed whole records; FieldsRead counts, by field, the reads that
	// named it.
	WholeReads int64
	FieldsRead map[string]int64 `json:",omitempty"`
	// ReadKeys are the key prefixes that queries fixed (Query.Eq) most
	// often, the most read first: at most 32, kept by the Space-Saving
	// algorithm. Counts are exact while a process has read the index fewer
	// than 1024 times (since its last SaveUsage) and no more than 32 keys;
	// after that, they are estimates from a sample of one read in 16. They
	// hold the values queried, which SaveUsage stores: a key prefix longer
	// than 128 bytes encoded is not kept.
	ReadKeys []KeyReads
}

// KeyReads is how many queries fixed the key prefix Key.
type KeyReads struct {
	Key   Tuple
	Reads int64
}

// TableUsage is what a table and its indexes have done.
type TableUsage struct {
	// Writes is the number of record writes committed: inserts, upserts,
	// updates and deletes.
	Writes int64
	// Scans is the number of queries that read the fact table; a page
	// resumed from a cursor is the query already counted.
	Scans int64
	// Filters counts the scans of the fact table that filtered records
	// (Query.Where without Index) by the fields they filtered on, the most
	// frequent first.
	Filters []FilterUse
	// Indexes holds each index's usage, by name.
	Indexes map[string]IndexUsage
}

// FilterUse is how many scans of the fact table filtered on Fields.
type FilterUse struct {
	Fields []string
	Scans  int64
}

// filtersKept bounds the field sets a table counts.
const filtersKept = 64

// filterCounts count scans of the fact table by the fields they filtered
// on (joined by commas); the zero value is ready.
type filterCounts struct {
	mu     sync.Mutex
	counts map[string]int64
}

// noteFilter counts a scan of the fact table filtered on fields, unless
// filtersKept other field sets are counted already.
func (t *Table[T]) noteFilter(fields string) {
	c := &t.filters
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.counts[fields]; ok || len(c.counts) < filtersKept {
		if c.counts == nil {
			c.counts = map[string]int64{}
		}
		c.counts[fields]++
	}
}

// take returns the counts, resetting them when reset is set.
func (c *filterCounts) take(reset bool) map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.counts)
	if reset {
		c.counts = nil
	}
	return out
}

// give adds back counts that take returned.
func (c *filterCounts) give(counts map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range counts {
		if c.counts == nil {
			c.counts = map[string]int64{}
		}
		c.counts[k] += n
	}
}

// usageCounters count what one index does; the zero value is ready.
type usageCounters struct {
	reads, returned, mutations atomic.Int64
	changes                    atomic.Int64
	wholeReads                 atomic.Int64
	mu                         sync.Mutex
	fields                     map[string]int64 // reads by field named, for Query.Fields
	kept                       []keyCount       // the read keys kept
	slot                       map[string]int   // each kept key's index in kept
}

// keyCount is a kept read key (an encoded key prefix) and its reads.
type keyCount struct {
	key string
	n   int64
}

// noteRead counts a query of the key prefix eq (encoded): in its place
// when the key is kept, else by Space-Saving: it takes the place of the
// least read key and adds to that key's count.
func (c *usageCounters) noteRead(eq []byte) {
	if len(eq) > readKeyMax {
		c.reads.Add(1)
		return
	}
	weight := int64(1)
	if n := c.reads.Add(1); n > readKeysExact {
		if n%readKeysSampled != 0 {
			return
		}
		weight = readKeysSampled
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.slot[string(eq)]; ok {
		c.kept[i].n += weight
		return
	}
	if c.slot == nil {
		c.slot = make(map[string]int, readKeysKept)
	}
	if len(c.kept) < readKeysKept {
		c.slot[string(eq)] = len(c.kept)
		c.kept = append(c.kept, keyCount{string(eq), weight})
		return
	}
	least := 0
	for i := range c.kept {
		if c.kept[i].n < c.kept[least].n {
			least = i
		}
	}
	delete(c.slot, c.kept[least].key)
	c.kept[least] = keyCount{string(eq), c.kept[least].n + weight}
	c.slot[c.kept[least].key] = least
}

// noteFields counts the fields a read needed: nil for whole records, none
// for only what its entries hold (see fieldsNeeded).
func (c *usageCounters) noteFields(fields []string) {
	if fields == nil {
		c.wholeReads.Add(1)
		return
	}
	if len(fields) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fields == nil {
		c.fields = map[string]int64{}
	}
	for _, f := range fields {
		c.fields[f]++
	}
}

// counts returns the kept keys' counts; c.mu is held.
func (c *usageCounters) counts() map[string]int64 {
	out := make(map[string]int64, len(c.kept))
	for _, k := range c.kept {
		out[k.key] = k.n
	}
	return out
}

// keep replaces the kept keys with counts; c.mu is held.
func (c *usageCounters) keep(counts map[string]int64) {
	c.kept, c.slot = c.kept[:0], make(map[string]int, readKeysKept)
	for k, n := range counts {
		c.slot[k] = len(c.kept)
		c.kept = append(c.kept, keyCount{k, n})
	}
}

// addKeyReads adds n reads of key to keys, keeping at most readKeysKept:
// a new key displaces the least read one and inherits its count
// (Space-Saving), so that a key read often enough always stays.
func addKeyReads(keys map[string]int64, key string, n int64) map[string]int64 {
	if keys == nil {
		keys = make(map[string]int64, readKeysKept)
	}
	if _, ok := keys[key]; ok || len(keys) < readKeysKept {
		keys[key] += n
		return keys
	}
	least, min := "", int64(-1)
	for k, c := range keys {
		if min < 0 || c < min || c == min && k < least {
			least, min = k, c
		}
	}
	delete(keys, least)
	keys[key] = min + n
	return keys
}

// take returns the counts and resets them.
func (c *usageCounters) take() (u IndexUsage, keys map[string]int64) {
	u.Reads, u.Returned, u.Mutations, u.WholeReads = c.reads.Swap(0), c.returned.Swap(0), c.mutations.Swap(0), c.wholeReads.Swap(0)
	u.Changes = c.changes.Swap(0)
	c.mu.Lock()
	keys = c.counts()
	c.keep(nil)
	u.FieldsRead, c.fields = c.fields, nil
	c.mu.Unlock()
	return u, keys
}

// give adds back counts that take returned.
func (c *usageCounters) give(u IndexUsage, keys map[string]int64) {
	c.reads.Add(u.Reads)
	c.returned.Add(u.Returned)
	c.mutations.Add(u.Mutations)
	c.changes.Add(u.Changes)
	c.wholeReads.Add(u.WholeReads)
	c.mu.Lock()
	for f, n := range u.FieldsRead {
		if c.fields == nil {
			c.fields = map[string]int64{}
		}
		c.fields[f] += n
	}
	counts := c.counts()
	for k, n := range keys {
		counts = addKeyReads(counts, k, n)
	}
	c.keep(counts)
	c.mu.Unlock()
}

// snapshot returns the counts, leaving them.
func (c *usageCounters) snapshot() (u IndexUsage, keys map[string]int64) {
	u.Reads, u.Returned, u.Mutations, u.WholeReads = c.reads.Load(), c.returned.Load(), c.mutations.Load(), c.wholeReads.Load()
	u.Changes = c.changes.Load()
	c.mu.Lock()
	keys = c.counts()
	u.FieldsRead = maps.Clone(c.fields)
	c.mu.Unlock()
	return u, keys
}

// noteMutations counts the entries that ops put or delete in each index;
// changed: ops update or delete a record that existed.
func (v *indexView) noteMutations(ops []kv.Op, changed bool) {
	for _, op := range ops {
		if !op.IsWrite() {
			continue
		}
		for _, ix := range v.indexes {
			if bytes.HasPrefix(op.Key, ix.prefix) {
				ix.use.mutations.Add(1)
				if changed {
					ix.use.changes.Add(1)
				}
				break
			}
		}
	}
}

// storedUsage is the usage totals SaveUsage keeps: the table's counts, and
// each index's with its read keys still encoded.
type storedUsage struct {
	writes, scans int64
	filters       map[string]int64
	indexes       map[string]IndexUsage
	keys          map[string]map[string]int64
}

const usageFormat = 1

// encode lays u out as one tuple: the format, writes, scans, the number of
// filters and each filter's fields with its count, then for each index its
// name, reads, returned, mutations, the number of its read keys and each
// key with its count.
func (u *storedUsage) encode() []byte {
	t := Tuple{int64(usageFormat), u.writes, u.scans, int64(len(u.filters))}
	filters := slices.Sorted(maps.Keys(u.filters))
	for _, f := range filters {
		t = append(t, f, u.filters[f])
	}
	names := make([]string, 0, len(u.indexes))
	for name := range u.indexes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		iu, keys := u.indexes[name], u.keys[name]
		t = append(t, name, iu.Reads, iu.Returned, iu.Mutations, iu.Changes, iu.WholeReads, int64(len(iu.FieldsRead)))
		for _, f := range slices.Sorted(maps.Keys(iu.FieldsRead)) {
			t = append(t, f, iu.FieldsRead[f])
		}
		t = append(t, int64(len(keys)))
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for _, k := range ks {
			t = append(t, []byte(k), keys[k])
		}
	}
	b, err := kv.EncodeTuple(t...)
	if err != nil {
		panic(err) // every element has a supported type
	}
	return b
}

func decodeStoredUsage(b []byte) (storedUsage, error) {
	u := newStoredUsage()
	t, err := decodeTuple(b)
	if err != nil {
		return u, wrapErrorf(ErrCodec, err, "usage record")
	}
	bad := fmt.Errorf("%w: usage record: malformed", ErrCodec)
	next := func() int64 {
		if len(t) == 0 {
			err = bad
			return 0
		}
		n, ok := asInt(t[0])
		if !ok || n < 0 { // every count is one
			err = bad
		}
		t = t[1:]
		return n
	}
	if next() != usageFormat || err != nil {
		return u, fmt.Errorf("%w: usage record: unknown format", ErrCodec)
	}
	// counts reads a count, then as many names with their counts, into m.
	counts := func(m map[string]int64) {
		for n := next(); err == nil && n > 0; n-- {
			if len(t) == 0 {
				err = bad
				return
			}
			name, ok := t[0].(string)
			if !ok {
				err = bad
				return
			}
			t = t[1:]
			m[name] = next()
		}
	}
	u.writes, u.scans = next(), next()
	counts(u.filters)
	for err == nil && len(t) > 0 {
		name, ok := t[0].(string)
		if !ok {
			return u, bad
		}
		t = t[1:]
		iu := IndexUsage{Reads: next(), Returned: next(), Mutations: next(), Changes: next(), WholeReads: next(), FieldsRead: map[string]int64{}}
		counts(iu.FieldsRead)
		if len(iu.FieldsRead) == 0 {
			iu.FieldsRead = nil
		}
		n := next()
		keys := map[string]int64{}
		for ; err == nil && n > 0; n-- {
			if len(t) == 0 {
				return u, bad
			}
			k, ok := t[0].([]byte)
			if !ok {
				return u, bad
			}
			t = t[1:]
			keys[string(k)] = next()
		}
		u.indexes[name], u.keys[name] = iu, keys
	}
	return u, err
}

func newStoredUsage() storedUsage {
	return storedUsage{filters: map[string]int64{}, indexes: map[string]IndexUsage{}, keys: map[string]map[string]int64{}}
}

// add adds the counts of this process to u.
func (u *storedUsage) add(writes, scans int64, filters map[string]int64, indexes map[string]IndexUsage, keys map[string]map[string]int64) {
	u.writes += writes
	u.scans += scans
	for f, n := range filters {
		if _, ok := u.filters[f]; ok || len(u.filters) < filtersKept {
			u.filters[f] += n
		}
	}
	for name, iu := range indexes {
		have := u.indexes[name]
		have.Reads += iu.Reads
		have.Returned += iu.Returned
		have.Mutations += iu.Mutations
		have.Changes += iu.Changes
		have.WholeReads += iu.WholeReads
		for f, n := range iu.FieldsRead {
			if have.FieldsRead == nil {
				have.FieldsRead = map[string]int64{}
			}
			have.FieldsRead[f] += n
		}
		u.indexes[name] = have
		ks := u.keys[name]
		for k, n := range keys[name] {
			ks = addKeyReads(ks, k, n)
		}
		u.keys[name] = ks
	}
}

// readUsage returns the stored usage totals of the table with prefix, and
// the value they were read from (nil when there is none).
func readUsage(ctx context.Context, store kv.Store, tablePrefix []byte) (storedUsage, []byte, error) {
	v, err := store.Get(ctx, usageKey(tablePrefix))
	if errors.Is(err, ErrNotFound) {
		return newStoredUsage(), nil, nil
	}
	if err != nil {
		return storedUsage{}, nil, err
	}
	u, err := decodeStoredUsage(v)
	return u, v, err
}

// Usage returns what the table and its indexes have done: the totals that
// SaveUsage stored, by every process, plus what this one has counted since
// its last SaveUsage. The counting itself calls no store: it is atomic
// adds, and a short lock for the keys and fields that reads name.
func (t *Table[T]) Usage(ctx context.Context) (TableUsage, error) {
	if err := checkContext(ctx); err != nil {
		return TableUsage{}, err
	}
	u, _, err := readUsage(ctx, t.store, t.prefix)
	if err != nil {
		return TableUsage{}, fmt.Errorf("table %q: %w", t.name, err)
	}
	indexes := map[string]IndexUsage{}
	keys := map[string]map[string]int64{}
	view := t.indexes.load()
	names := make([]string, 0, len(view.indexes))
	for _, ix := range view.indexes {
		indexes[ix.name], keys[ix.name] = ix.use.snapshot()
		names = append(names, ix.name)
	}
	u.add(t.writes.Load(), t.scans.Load(), t.filters.take(false), indexes, keys)
	out, err := u.usage(names)
	if err != nil {
		return TableUsage{}, fmt.Errorf("table %q: %w", t.name, err)
	}
	return out, nil
}

// UsageOf returns the usage totals that SaveUsage stored for table, without
// the program's record types: it is for tools.
func UsageOf(ctx context.Context, store kv.Store, table string) (TableUsage, error) {
	if err := checkArguments(ctx, store); err != nil {
		return TableUsage{}, err
	}
	u, _, err := readUsage(ctx, store, tablePrefix(table))
	if err != nil {
		return TableUsage{}, fmt.Errorf("table %q: %w", table, err)
	}
	names := make([]string, 0, len(u.indexes))
	for name := range u.indexes {
		names = append(names, name)
	}
	slices.Sort(names)
	out, err := u.usage(names)
	if err != nil {
		return TableUsage{}, fmt.Errorf("table %q: %w", table, err)
	}
	return out, nil
}

// usage returns the totals of u for the indexes names.
func (u *storedUsage) usage(names []string) (TableUsage, error) {
	out := TableUsage{Writes: u.writes, Scans: u.scans, Indexes: map[string]IndexUsage{}}
	for f, n := range u.filters {
		out.Filters = append(out.Filters, FilterUse{Fields: strings.Split(f, ","), Scans: n})
	}
	slices.SortFunc(out.Filters, func(a, b FilterUse) int {
		if a.Scans != b.Scans {
			return cmp.Compare(b.Scans, a.Scans)
		}
		return slices.Compare(a.Fields, b.Fields)
	})
	for _, name := range names {
		iu := u.indexes[name]
		// Most read first, then in key order: the encoded keys' order.
		keys := u.keys[name]
		encoded := slices.SortedFunc(maps.Keys(keys), func(a, b string) int {
			return cmp.Or(cmp.Compare(keys[b], keys[a]), strings.Compare(a, b))
		})
		for _, k := range encoded {
			key, err := decodeTuple([]byte(k))
			if err != nil {
				return TableUsage{}, wrapErrorf(ErrCodec, err, "usage of index %q", name)
			}
			iu.ReadKeys = append(iu.ReadKeys, KeyReads{Key: key, Reads: keys[k]})
		}
		out.Indexes[name] = iu
	}
	return out, nil
}

// mustEncode encodes a tuple that was decoded, and so encodes.
func mustEncode(t Tuple) []byte {
	b, _ := kv.EncodeTuple(t...)
	return b
}

// SaveUsage adds what this process has counted since it opened the table,
// or since its last SaveUsage, to the totals kept in the store, so that
// they outlive the process and add up over the processes that share the
// table. Totals are kept by index name: an index that is dropped keeps
// its totals, and an index redefined under its name goes on from them.
//
// When the store's answer leaves it unknown whether the totals were
// written (a network error, say), the counts are kept for the next save,
// which may count them twice; after ErrConflict on every attempt they were
// not written.
func (t *Table[T]) SaveUsage(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	view := t.indexes.load() // the usage counters are the same in every view
	writes, scans, filters := t.writes.Swap(0), t.scans.Swap(0), t.filters.take(true)
	indexes := map[string]IndexUsage{}
	keys := map[string]map[string]int64{}
	for _, ix := range view.indexes {
		indexes[ix.name], keys[ix.name] = ix.use.take()
	}
	err := t.saveUsage(ctx, writes, scans, filters, indexes, keys)
	if err != nil { // give the counts back, for a later save
		t.writes.Add(writes)
		t.scans.Add(scans)
		t.filters.give(filters)
		for _, ix := range view.indexes {
			ix.use.give(indexes[ix.name], keys[ix.name])
		}
	}
	return err
}

func (t *Table[T]) saveUsage(ctx context.Context, writes, scans int64, filters map[string]int64, indexes map[string]IndexUsage, keys map[string]map[string]int64) error {
	for attempt := 1; ; attempt++ {
		u, old, err := readUsage(ctx, t.store, t.prefix)
		if err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
		u.add(writes, scans, filters, indexes, keys)
		key := usageKey(t.prefix)
		var b kv.Batch
		expectAsRead(&b, key, old)
		b.Put(key, u.encode())
		err = t.store.Apply(ctx, &b)
		if err == nil || !errors.Is(err, ErrConflict) || attempt == maxAttempts {
			if err != nil {
				return fmt.Errorf("table %q: save usage: %w", t.name, err)
			}
			return nil
		}
	}
}

// add counts key, an encoded tuple that sorts at or after the last one.
func (p *prefixRuns) add(key []byte) error {
	ends := p.next[:0]
	for off := 0; off < len(key); {
		n, err := kv.ElementLen(key[off:])
		if err != nil {
			return err
		}
		off += n
		ends = append(ends, off)
	}
	// The leading elements it shares with the last key continue their runs.
	shared, start := 0, 0
	for shared < min(len(ends), len(p.ends)) && ends[shared] == p.ends[shared] &&
		bytes.Equal(key[start:ends[shared]], p.last[start:ends[shared]]) {
		start = ends[shared]
		shared++
	}
	for i := shared; i < len(p.n); i++ {
		p.end(i)
	}
	for len(p.n) < len(ends) {
		p.n, p.stats, p.common = append(p.n, 0), append(p.stats, PrefixStats{}), append(p.common, nil)
	}
	for i := range ends {
		if i >= shared {
			p.stats[i].Distinct++
		}
		p.n[i]++
	}
	p.last = append(p.last[:0], key...)
	p.ends, p.next = ends, p.ends
	return nil
}

// readKeysKept bounds IndexUsage.ReadKeys. The first readKeysExact reads
// of an index (since the last SaveUsage) are counted by key one by one;
// after them, one in readKeysSampled, standing for them all, so that a
// read costs an atomic add and rarely more.
const (
	readKeysKept    = 32
	readKeysExact   = 1024
	readKeysSampled = 16
	readKeyMax      = 128 // bytes: a longer key prefix is counted, not kept
)
