package indextable

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
)

// FindingKind is the rule of the Index Table pattern that a Finding
// applies.
type FindingKind int

const (
	// Unused: no query read the index. Create index tables only for the
	// queries the application runs; every write pays for this one.
	Unused FindingKind = iota + 1
	// LowCardinality: the key has few distinct values, so each selects a
	// large share of the table, which a scan of the fact table reads about
	// as fast, without the index's writes and space.
	LowCardinality
	// Skewed: one key holds most entries and most queries ask for it, so
	// they read most of the table; an index pays off on skewed data only
	// when queries ask for the rare values. An unread index is not judged
	// skewed: nothing says which values it would be asked for.
	Skewed
	// Volatile: the data changes far more often than the index is read, so
	// keeping the index costs more than the reads it serves save. Only
	// updates and deletes count: loading data is not volatility.
	Volatile
	// UnindexedFilter: queries often scan the fact table filtering on the
	// same fields (Query.Where); an index table keyed on them would answer
	// each with a range read. The finding names the index that already
	// leads with those fields, if one does, and no index otherwise.
	UnindexedFilter
	// Projection: every read of a FullCopy index named the few fields it
	// uses (Query.Fields), so a KeysOnly or Partial index would answer the
	// same reads from its entries, without a whole copy of every record.
	Projection
)

func (k FindingKind) String() string {
	switch k {
	case Unused:
		return "unused"
	case LowCardinality:
		return "low-cardinality"
	case Skewed:
		return "skewed"
	case Volatile:
		return "volatile"
	case UnindexedFilter:
		return "unindexed-filter"
	case Projection:
		return "projection"
	}
	return fmt.Sprintf("FindingKind(%d)", int(k))
}

// MarshalText writes the kind's name, so that JSON shows it as a word.
func (k FindingKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// A Finding is what one of the pattern's rules says of one index, with the
// numbers that made it say so.
type Finding struct {
	Index  string      `json:"index"`
	Kind   FindingKind `json:"kind"`
	Reason string      `json:"reason"`
}

func (f Finding) String() string {
	if f.Index == "" {
		return fmt.Sprintf("%s: %s", f.Kind, f.Reason)
	}
	return fmt.Sprintf("index %q: %s: %s", f.Index, f.Kind, f.Reason)
}

// AdviseOptions sets when Advise speaks. A zero field takes its default.
type AdviseOptions struct {
	// MinWrites is how many record writes must have been counted before an
	// index that no query read is called unused (default 1000).
	MinWrites int64
	// Selectivity is the share of the records that an average key must
	// select, and at least two records, for the key to be of low
	// cardinality (default 0.05).
	Selectivity float64
	// Skew is the share of the entries that the most common key must hold
	// more than for the key to be skewed (default 0.5).
	Skew float64
	// Volatility is the number of entries that updates and deletes change
	// per read at which the data is volatile (default 10).
	Volatility float64
	// MinScans is how many scans of the fact table must have filtered on
	// the same fields for an index on them to be proposed (default 100).
	MinScans int64
}

func (o AdviseOptions) withDefaults() AdviseOptions {
	if o.MinWrites <= 0 {
		o.MinWrites = 1000
	}
	if o.Selectivity <= 0 {
		o.Selectivity = 0.05
	}
	if o.Skew <= 0 {
		o.Skew = 0.5
	}
	if o.Volatility <= 0 {
		o.Volatility = 10
	}
	if o.MinScans <= 0 {
		o.MinScans = 100
	}
	return o
}

// Advise measures the table (Stats), reads what it has done (Usage), and
// returns the findings of the pattern's rules for each index (Findings).
// It scans the whole table.
func (t *Table[T]) Advise(ctx context.Context, opts AdviseOptions) ([]Finding, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	info, err := readTableInfo(ctx, t.store, t.name, t.prefix)
	if err != nil {
		return nil, err
	}
	stats, err := t.Stats(ctx)
	if err != nil {
		return nil, err
	}
	usage, err := t.Usage(ctx)
	if err != nil {
		return nil, err
	}
	return Findings(info, stats, usage, opts), nil
}

// Findings applies the pattern's rules to a table as its catalog describes
// it, what it holds and what it has done: index by index in the order of
// stats, then the filters of its scans. Only indexes that table lists as
// readable are judged; one that no rule objects to has no finding.
func Findings(table TableInfo, stats TableStats, usage TableUsage, opts AdviseOptions) []Finding {
	o := opts.withDefaults()
	var out []Finding
	for _, s := range stats.Indexes {
		d, state := definition(table, s.Index)
		if state != IndexReadable {
			continue // being built, or disabled: no query can read it yet
		}
		u := usage.Indexes[s.Index]
		add := func(k FindingKind, format string, args ...any) {
			out = append(out, Finding{Index: s.Index, Kind: k, Reason: fmt.Sprintf(format, args...)})
		}
		if u.Reads == 0 && usage.Writes >= o.MinWrites {
			add(Unused, "no query read it in %d record writes, which wrote %d of its entries", usage.Writes, u.Mutations)
		}
		if s.DistinctKeys > 0 && stats.Records > 0 {
			perKey := float64(s.Entries) / float64(s.DistinctKeys)
			if perKey >= 2 && perKey >= o.Selectivity*float64(stats.Records) {
				add(LowCardinality, "%d distinct keys over %d entries: an average key selects %.0f%% of the %d records",
					s.DistinctKeys, s.Entries, 100*perKey/float64(stats.Records), stats.Records)
			}
		}
		if u.Reads > 0 && s.CommonEntries > 1 && float64(s.CommonEntries) > o.Skew*float64(s.Entries) {
			share := 100 * float64(s.CommonEntries) / float64(s.Entries)
			common, targeted := commonReads(s.CommonKey, u.ReadKeys)
			switch {
			case targeted == 0:
				add(Skewed, "key %v holds %.0f%% of the entries, and no query fixed a key, so it is not known whether queries ask for the rare ones", s.CommonKey, share)
			case common*2 >= targeted:
				add(Skewed, "key %v holds %.0f%% of the entries, and %d of the %d queries that fixed a key asked for it", s.CommonKey, share, common, targeted)
			}
		}
		if u.Reads > 0 && u.Changes > 0 && float64(u.Changes) >= o.Volatility*float64(u.Reads) {
			add(Volatile, "updates and deletes of records changed %d of its entries for %d reads: %.0f changes a read",
				u.Changes, u.Reads, float64(u.Changes)/float64(u.Reads))
		}
		if d != nil && d.Strategy == FullCopy && u.Reads > 0 && u.WholeReads == 0 {
			read := slices.Sorted(maps.Keys(u.FieldsRead))
			var extra []string // read, and not in the entry's key
			for _, f := range read {
				if !slices.Contains(d.PrimaryKey, f) && (d.MultiValued || !slices.Contains(d.Fields, f)) {
					extra = append(extra, f)
				}
			}
			switch {
			case len(read) == 0:
				add(Projection, "all %d reads needed only its keys (counts, or covered reads that named no field): KeysOnly would answer them, with no copy of the records", u.Reads)
			case len(extra) == 0:
				add(Projection, "all %d reads named only key fields (%v): KeysOnly would answer them from its entries, with no copy of the records", u.Reads, read)
			default:
				add(Projection, "all %d reads named only fields among %v: Partial with Projection %v would answer them from its entries, with no whole copy of the records", u.Reads, read, extra)
			}
		}
	}
	for _, fu := range usage.Filters {
		if fu.Scans < o.MinScans {
			continue
		}
		f := Finding{Kind: UnindexedFilter}
		var pk []string
		for _, ii := range table.Indexes {
			d := ii.Definition
			if d == nil {
				continue
			}
			pk = d.PrimaryKey
			// A sparse index lacks the records whose fields are zero.
			if ii.State == IndexReadable && !d.Sparse && !d.MultiValued && leadsWith(d.Fields, fu.Fields) {
				f.Index = ii.Name
				break
			}
		}
		switch {
		case f.Index != "":
			f.Reason = fmt.Sprintf("%d scans of the fact table filtered on %v, which this index leads with: query it instead", fu.Scans, fu.Fields)
		case leadsWith(pk, fu.Fields):
			f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v, which the primary key leads with: query the fact table by Eq instead", fu.Scans, stats.Records, fu.Fields)
		default:
			f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v: an index on them would answer each with a range", fu.Scans, stats.Records, fu.Fields)
		}
		out = append(out, f)
	}
	return out
}

// definition returns the definition (nil if not recorded) and the state
// of index name in table.
func definition(table TableInfo, name string) (*IndexDefinition, IndexState) {
	for _, ii := range table.Indexes {
		if ii.Name == name {
			return ii.Definition, ii.State
		}
	}
	return nil, 0
}

// leadsWith reports whether the first len(set) of fields are the names of
// set, in any order.
func leadsWith(fields, set []string) bool {
	if len(fields) < len(set) {
		return false
	}
	for _, name := range fields[:len(set)] {
		if !slices.Contains(set, name) {
			return false
		}
	}
	return true
}

// commonReads returns how many of the reads that fixed a key asked for a
// prefix of common, and how many reads fixed a key.
func commonReads(common Tuple, reads []KeyReads) (hit, targeted int64) {
	c := mustEncode(common)
	for _, r := range reads {
		if len(r.Key) == 0 {
			continue // a scan of the whole index asks for no key
		}
		targeted += r.Reads
		if bytes.HasPrefix(c, mustEncode(r.Key)) {
			hit += r.Reads
		}
	}
	return hit, targeted
}
