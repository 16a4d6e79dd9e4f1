package indextable

import (
	"bytes"
	"context"
	"fmt"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// IndexStats is what one index table holds, measured by a scan of it.
type IndexStats struct {
	Index string
	// Entries is the number of entries; a multi-valued index has one per
	// value, a sparse one none for a zero value.
	Entries int64
	// DistinctKeys is the number of distinct keys among them. Stats counts
	// runs of one key in key order, holding one key at a time: for a Key
	// func that returns tuples of different lengths under a composite
	// primary key, one key's entries may not be contiguous, and this (and
	// the common key) is then an upper bound.
	DistinctKeys int64
	// CommonKey is the key with the most entries, CommonEntries their
	// number.
	CommonKey     Tuple
	CommonEntries int64
	// Bytes is the size of the entries' keys and values.
	Bytes int64
	// Prefixes measures the same for each leading part of the key, which a
	// query that fixes only its first components (Query.Eq) reads in
	// whole: Prefixes[0] for the first component, Prefixes[1] for the
	// first two, and so on to the whole key (the longest, for a Key func
	// whose tuples differ in length).
	Prefixes []PrefixStats `json:",omitempty"`
}

// PrefixStats is what an index's entries hold of the prefixes of one
// length of their keys (see IndexStats.Prefixes), among the entries whose
// key is that long or longer.
type PrefixStats struct {
	// Distinct is the number of distinct prefixes.
	Distinct int64
	// Common is the prefix with the most entries, CommonEntries their
	// number: what a query that fixes it reads.
	Common        Tuple
	CommonEntries int64
}

// TableStats is what a table and its index tables hold.
type TableStats struct {
	// Records is the number of records, FactBytes the size of their keys
	// and values in the fact table.
	Records, FactBytes int64
	// Indexes holds the stats of each index that is maintained (readable or
	// write-only), in schema order.
	Indexes []IndexStats
}

// Stats measures the table and its maintained indexes by scanning each once:
// it reads every key the table has, so it costs what a full scan costs, and
// holds only one key at a time in memory (and the most common key prefix
// of each length). Entries of an eventual index that its maintainers have
// not applied yet are not counted.
func (t *Table[T]) Stats(ctx context.Context) (TableStats, error) {
	if err := checkContext(ctx); err != nil {
		return TableStats{}, err
	}
	indexes := t.indexes.load().filter((*indexTable).maintained)
	return measure(ctx, t.store, t.name, t.factSpace, indexes, len(t.pk))
}

// StatsOf measures a table as ReadCatalog describes it, without the
// program's record types: it is for tools. Indexes that are disabled, or
// whose definition the catalog lacks, are left out. The primary key's
// length is the definitions', else PrimaryKey's; when neither names it,
// StatsOf returns ErrInvalidSchema.
func StatsOf(ctx context.Context, store kv.Store, table TableInfo) (TableStats, error) {
	if err := checkArguments(ctx, store); err != nil {
		return TableStats{}, err
	}
	prefix := tablePrefix(table.Name)
	var indexes []*indexTable
	pkArity := len(table.PrimaryKey)
	needPK := false // an index whose entry keys end with the primary key
	for _, ii := range table.Indexes {
		if ii.Definition == nil || ii.State == IndexDisabled {
			continue
		}
		ix := &indexTable{name: ii.Name, unique: ii.Definition.Unique, intra: ii.Definition.Placement == IntraPartition}
		ix.place(prefix, ii.Generation)
		indexes = append(indexes, ix)
		if n := len(ii.Definition.PrimaryKey); n > 0 {
			pkArity = n
		}
		needPK = needPK || !ix.unique
	}
	if needPK && pkArity == 0 { // every entry key would count as a distinct key
		return TableStats{}, fmt.Errorf("%w: table %q: neither its definitions nor PrimaryKey name its primary key", ErrInvalidSchema, table.Name)
	}
	return measure(ctx, store, table.Name, spacePrefix(prefix, kv.SpaceRecords), indexes, pkArity)
}

// measure scans the fact table at factSpace and each of indexes.
func measure(ctx context.Context, store kv.Store, table string, factSpace []byte, indexes []*indexTable, pkArity int) (TableStats, error) {
	var s TableStats
	for e, err := range store.Scan(ctx, kv.ScanRange{Start: factSpace, End: tuple.End(factSpace)}) {
		if err != nil {
			return TableStats{}, err
		}
		s.Records++
		s.FactBytes += int64(len(e.Key) + len(e.Value))
	}
	for _, ix := range indexes {
		is, err := indexStats(ctx, store, ix, pkArity)
		if err != nil {
			return TableStats{}, fmt.Errorf("table %q: %w", table, err)
		}
		s.Indexes = append(s.Indexes, is)
	}
	return s, nil
}

// indexStats scans ix. Entries come in key order, so the entries of one key
// are consecutive, as are those of one key prefix: counting runs finds the
// distinct keys and prefixes, and the most common.
func indexStats(ctx context.Context, store kv.Store, ix *indexTable, pkArity int) (IndexStats, error) {
	s := IndexStats{Index: ix.name}
	var prefixes prefixRuns
	var run, common []byte // the current run's key, the most common key
	var n int64            // entries in the current run
	end := func() {
		if n > s.CommonEntries {
			common, s.CommonEntries = append(common[:0], run...), n
		}
	}
	for e, err := range store.Scan(ctx, kv.ScanRange{Start: ix.prefix, End: tuple.End(ix.prefix)}) {
		if err != nil {
			return IndexStats{}, err
		}
		pk, _, err := ix.decodeEntry(e.Key, e.Value, pkArity)
		if err != nil {
			return IndexStats{}, err
		}
		key := e.Key[len(ix.prefix):]
		if !ix.unique {
			key = key[:len(key)-len(pk)]
		}
		s.Entries++
		s.Bytes += int64(len(e.Key) + len(e.Value))
		if err := prefixes.add(key); err != nil {
			return IndexStats{}, fmt.Errorf("index %q: %w", ix.name, err)
		}
		if s.Entries > 1 && bytes.Equal(key, run) {
			n++
			continue
		}
		end()
		run, n = append(run[:0], key...), 1
		s.DistinctKeys++
	}
	end()
	if s.Entries > 0 {
		var err error
		if s.CommonKey, err = decodeTuple(common); err != nil {
			return IndexStats{}, wrapErrorf(ErrMalformedKey, err, "index %q", ix.name)
		}
		if s.Prefixes, err = prefixes.finish(); err != nil {
			return IndexStats{}, fmt.Errorf("index %q: %w", ix.name, err)
		}
	}
	return s, nil
}

// prefixRuns counts the runs of equal prefixes, of each length, of keys
// that come in order, holding only the last key, the most common prefix of
// each length and a counter for each; the zero value is ready.
type prefixRuns struct {
	stats      []PrefixStats
	common     [][]byte // the most common prefix of each length, encoded
	n          []int64  // entries in the current run of each length; 0 for none
	last       []byte   // the last key added
	ends, next []int    // where each element of the last key ends; scratch
}

// end ends the current run of the prefixes of i+1 elements.
func (p *prefixRuns) end(i int) {
	if p.n[i] > p.stats[i].CommonEntries {
		p.stats[i].CommonEntries = p.n[i]
		p.common[i] = append(p.common[i][:0], p.last[:p.ends[i]]...)
	}
	p.n[i] = 0
}

// finish ends the runs, and returns the stats of each prefix length.
func (p *prefixRuns) finish() ([]PrefixStats, error) {
	for i := range p.n {
		p.end(i)
	}
	for i := range p.stats {
		var err error
		if p.stats[i].Common, err = decodeTuple(p.common[i]); err != nil {
			return nil, err
		}
	}
	return p.stats, nil
}
