package indextable

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// FindingKind is the rule of the Index Table pattern that a Finding
// applies.
type FindingKind int

const (
	// FindingUnused: no query read the index. Create index tables only for the
	// queries the application runs; every write pays for this one. The
	// finding on a unique index says that writes still check their keys
	// against it.
	FindingUnused FindingKind = iota + 1
	// FindingLowCardinality: the key has few distinct values, so each selects a
	// large share of the table, which a scan of the fact table reads about
	// as fast, without the index's writes and space.
	FindingLowCardinality
	// FindingSkewed: one key holds most entries and most queries ask for it, so
	// they read most of the table; an index pays off on skewed data only
	// when queries ask for the rare values. It is judged on each leading
	// part of a composite key that queries fix (Query.Eq), by its length:
	// on a Country, Admin1, Name index, queries that fix Country alone read
	// most of the table when most records share one Country and they ask
	// for it, though no whole key is common. When no query fixed a key,
	// every part is judged. An unread index is not judged skewed: nothing
	// says which values it would be asked for.
	FindingSkewed
	// FindingVolatile: the data changes far more often than the index is read, so
	// keeping the index costs more than the reads it serves save. Only
	// updates and deletes count: loading data is not volatility.
	FindingVolatile
	// FindingUnindexedFilter: queries often scan the fact table filtering on the
	// same fields (Query.Where); an index table keyed on them would answer
	// each with a range read. When the fields lead the primary key, or hold
	// it whole (each scan then selects at most one record), the finding
	// names no index and says to read the fact table by Eq (or Get).
	// Otherwise it names the index that already leads with those fields, if
	// one does (saying why it did not answer them if it is not readable, or
	// sparse, or multi-valued), else the index that leads with the most of
	// them, if one does, and no index otherwise.
	FindingUnindexedFilter
	// FindingProjection: every read of a FullCopy index named the few fields it
	// uses (Query.Fields), so a KeysOnly or Partial index would answer the
	// same reads from its entries, without a whole copy of every record.
	// The entries hold the primary key and the key fields, except the slice
	// fields of a multi-valued index, which a Partial one projects.
	FindingProjection
)

func (k FindingKind) String() string {
	switch k {
	case FindingUnused:
		return "unused"
	case FindingLowCardinality:
		return "low-cardinality"
	case FindingSkewed:
		return "skewed"
	case FindingVolatile:
		return "volatile"
	case FindingUnindexedFilter:
		return "unindexed-filter"
	case FindingProjection:
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
// A field that is no threshold (negative, NaN, infinite, or a share above
// 1) is refused by Advise (ErrInvalidArgument) and takes its default in
// Findings, which returns no error.
type AdviseOptions struct {
	// MinWrites is how many record writes must have been counted before an
	// index that no query read is called unused (default 1000).
	MinWrites int64
	// Selectivity is the share of the records, at most 1, that an average
	// key must select, and at least two records, for the key to be of low
	// cardinality (default 0.05).
	Selectivity float64
	// Skew is the share of the entries, at most 1, that the most common
	// key, or key prefix, must hold more than for it to be skewed (default
	// 0.5).
	Skew float64
	// Volatility is the number of entries that updates and deletes change
	// per read at which the data is volatile (default 10).
	Volatility float64
	// MinScans is how many scans of the fact table must have filtered on
	// the same fields for an index on them to be proposed (default 100).
	MinScans int64
}

// check returns an error wrapping ErrInvalidArgument for the first field
// of o that is no threshold.
func (o AdviseOptions) check() error {
	bad := func(name string, v any) error {
		return fmt.Errorf("%w: AdviseOptions.%s %v is no threshold", ErrInvalidArgument, name, v)
	}
	switch {
	case o.MinWrites < 0:
		return bad("MinWrites", o.MinWrites)
	case o.MinScans < 0:
		return bad("MinScans", o.MinScans)
	case !validThreshold(o.Selectivity, 1):
		return bad("Selectivity", o.Selectivity)
	case !validThreshold(o.Skew, 1):
		return bad("Skew", o.Skew)
	case !validThreshold(o.Volatility, math.MaxFloat64):
		return bad("Volatility", o.Volatility)
	}
	return nil
}

// validThreshold reports whether v is zero (the default) or a number in
// (0, most].
func validThreshold(v, most float64) bool { return v >= 0 && v <= most }

// withDefaults returns o with the default in every field that is zero or
// no threshold.
func (o AdviseOptions) withDefaults() AdviseOptions {
	if o.MinWrites <= 0 {
		o.MinWrites = 1000
	}
	if !(o.Selectivity > 0 && o.Selectivity <= 1) { // NaN too
		o.Selectivity = 0.05
	}
	if !(o.Skew > 0 && o.Skew <= 1) {
		o.Skew = 0.5
	}
	if !(o.Volatility > 0 && o.Volatility <= math.MaxFloat64) {
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
	if err := opts.check(); err != nil {
		return nil, err
	}
	info, err := readTableInfo(ctx, t.store, t.name, t.prefix)
	if err != nil {
		return nil, err
	}
	// The table's own primary key and record type, where the store keeps none (a
	// read-only store, a type with its own JSON encoding).
	info.PrimaryKey = nil
	for _, f := range t.pk {
		info.PrimaryKey = append(info.PrimaryKey, f.name)
	}
	if info.RecordType == "" {
		if desc, err := describeType(nil, t.rtype, false); err == nil {
			info.RecordType = string(desc) // by kinds and names: which fields are slices
		}
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
// readable are judged; one that no rule objects to has no finding. The
// primary key is table's PrimaryKey, else that of its index definitions;
// which key fields of a multi-valued index are slices is read from its
// RecordType.
func Findings(table TableInfo, stats TableStats, usage TableUsage, opts AdviseOptions) []Finding {
	o := opts.withDefaults()
	var out []Finding
	for _, s := range stats.Indexes {
		d, state := definition(table, s.Index)
		if state != IndexReadable {
			continue // being built, or disabled: no query can read it yet
		}
		out = append(out, indexFindings(table, d, s, stats.Records, usage, o)...)
	}
	for _, fu := range usage.Filters {
		if fu.Scans >= o.MinScans && len(fu.Fields) > 0 { // no field is no filter
			out = append(out, filterFinding(table, stats.Records, fu))
		}
	}
	return out
}

// indexFindings applies the rules to the index of table that d defines
// (nil when not recorded) and s measures, in a table of records records.
func indexFindings(table TableInfo, d *IndexDefinition, s IndexStats, records int64, usage TableUsage, o AdviseOptions) []Finding {
	var out []Finding
	u := usage.Indexes[s.Index]
	add := func(k FindingKind, format string, args ...any) {
		out = append(out, Finding{Index: s.Index, Kind: k, Reason: fmt.Sprintf(format, args...)})
	}
	if u.Reads == 0 && usage.Writes >= o.MinWrites {
		unique := ""
		if d != nil && d.Unique {
			unique = "; but it is unique: writes check their keys against it, which dropping it would stop"
		}
		add(FindingUnused, "no query read it in %d record writes, which wrote %d of its entries%s", usage.Writes, u.Mutations, unique)
	}
	if s.DistinctKeys > 0 && records > 0 {
		perKey := float64(s.Entries) / float64(s.DistinctKeys)
		if perKey >= 2 && perKey >= o.Selectivity*float64(records) {
			add(FindingLowCardinality, "%d distinct keys over %d entries: an average key selects %.0f%% of the %d records",
				s.DistinctKeys, s.Entries, 100*perKey/float64(records), records)
		}
	}
	for _, reason := range skews(s, u, o.Skew) {
		add(FindingSkewed, "%s", reason)
	}
	if u.Reads > 0 && u.Changes > 0 && float64(u.Changes) >= o.Volatility*float64(u.Reads) {
		add(FindingVolatile, "updates and deletes of records changed %d of its entries for %d reads: %.0f changes a read",
			u.Changes, u.Reads, float64(u.Changes)/float64(u.Reads))
	}
	if d != nil && d.Strategy == FullCopy && u.Reads > 0 && u.WholeReads == 0 {
		add(FindingProjection, "%s", projectionReason(d, sliceFields(table, d), u))
	}
	return out
}

// projectionReason says which strategy would answer the reads u of the
// FullCopy index that d defines, every one of which named its fields. The
// entries of a KeysOnly or Partial index hold the primary key and the key
// fields, but for the slices of a multi-valued index: slices names them,
// or is nil when they are not known.
func projectionReason(d *IndexDefinition, multi []string, u IndexUsage) string {
	read := slices.Sorted(maps.Keys(u.FieldsRead))
	var extra, maybe []string // read and not in the entries; read, and in them unless a slice
	for _, f := range read {
		switch {
		case slices.Contains(d.PrimaryKey, f):
		case !slices.Contains(d.Fields, f) || slices.Contains(multi, f):
			extra = append(extra, f)
		case d.MultiValued && multi == nil:
			maybe = append(maybe, f)
		}
	}
	switch {
	case len(read) == 0:
		return fmt.Sprintf("all %d reads needed only its keys (counts, or covered reads that named no field): KeysOnly would answer them, with no copy of the records", u.Reads)
	case len(extra) == 0 && len(maybe) == 0:
		return fmt.Sprintf("all %d reads named only key fields (%v): KeysOnly would answer them from its entries, with no copy of the records", u.Reads, read)
	case len(extra) == 0:
		return fmt.Sprintf("all %d reads named only fields among %v: KeysOnly would answer them from its entries if none of %v is a slice field of the index, else Partial with Projection of those that are (the table keeps no record type to tell), with no whole copy of the records", u.Reads, read, maybe)
	case len(maybe) > 0:
		return fmt.Sprintf("all %d reads named only fields among %v: Partial with Projection %v, and those of %v that are slice fields of the index (the table keeps no record type to tell), would answer them from its entries, with no whole copy of the records", u.Reads, read, extra, maybe)
	}
	return fmt.Sprintf("all %d reads named only fields among %v: Partial with Projection %v would answer them from its entries, with no whole copy of the records", u.Reads, read, extra)
}

// sliceFields returns the key fields of the multi-valued index that d
// defines that are slices, which its entries do not hold: as the record type of
// table says, or the lone key field (a multi-valued index has one); nil
// when that is not known, and for any other index.
func sliceFields(table TableInfo, d *IndexDefinition) []string {
	if !d.MultiValued || d.Computed {
		return nil
	}
	if len(d.Fields) == 1 {
		return d.Fields
	}
	rt, err := describedType(table.RecordType)
	if table.RecordType == "" || err != nil || rt.Kind() != reflect.Struct {
		return nil
	}
	out := []string{}
	for _, name := range d.Fields {
		f, err := lookupField(rt, name, true)
		if err != nil {
			return nil // a record type other than the index's
		}
		if f.multi {
			out = append(out, name)
		}
	}
	return out
}

// skews judges skew on each key prefix that the queries u fix (Query.Eq),
// by its length: the most common prefix of that length holds more than
// skew of the entries, and at least half of the queries that fixed a
// prefix of that length asked for it; when no query fixed a key, on every
// prefix length. It returns the reasons, shortest prefix first.
func skews(s IndexStats, u IndexUsage, skew float64) []string {
	if u.Reads == 0 || s.Entries == 0 {
		return nil // an unread index: nothing says which values it would be asked for
	}
	prefixes := s.Prefixes
	if len(prefixes) == 0 && len(s.CommonKey) > 0 { // measured without them: the whole key only
		prefixes = make([]PrefixStats, len(s.CommonKey))
		prefixes[len(prefixes)-1] = PrefixStats{Distinct: s.DistinctKeys, Common: s.CommonKey, CommonEntries: s.CommonEntries}
	}
	hits, targeted := prefixReads(prefixes, u.ReadKeys)
	known := slices.ContainsFunc(u.ReadKeys, func(r KeyReads) bool { return len(r.Key) > 0 })
	var out []string
	for i, p := range prefixes {
		if p.CommonEntries <= 1 || float64(p.CommonEntries) <= skew*float64(s.Entries) {
			continue
		}
		what, fixed := "key prefix", "its first component"
		switch {
		case i == len(prefixes)-1:
			what, fixed = "key", "a key"
		case i > 0:
			fixed = fmt.Sprintf("its first %d components", i+1)
		}
		held := fmt.Sprintf("%s %v holds %.0f%% of the entries", what, p.Common, 100*float64(p.CommonEntries)/float64(s.Entries))
		switch {
		case !known:
			out = append(out, held+", and no query fixed a key, so it is not known whether queries ask for the rare ones")
		case targeted[i] > 0 && hits[i]*2 >= targeted[i]:
			out = append(out, fmt.Sprintf("%s, and %d of the %d queries that fixed %s asked for it", held, hits[i], targeted[i], fixed))
		}
	}
	return out
}

// prefixReads returns, by prefix length (less one), how many of reads
// fixed a prefix of that length, and how many of those asked for the most
// common prefix of prefixes.
func prefixReads(prefixes []PrefixStats, reads []KeyReads) (hits, targeted []int64) {
	hits, targeted = make([]int64, len(prefixes)), make([]int64, len(prefixes))
	common := make([][]byte, len(prefixes))
	for i, p := range prefixes {
		common[i] = mustEncode(p.Common)
	}
	for _, r := range reads {
		i := len(r.Key) - 1
		if i < 0 || i >= len(prefixes) {
			continue // a scan of the whole index asks for no key
		}
		targeted[i] += r.Reads
		if bytes.Equal(mustEncode(r.Key), common[i]) {
			hits[i] += r.Reads
		}
	}
	return hits, targeted
}

// filterFinding says what would answer the scans of the fact table that
// fu counts better: the fact table itself, by Eq on the primary key, when
// the fields filtered on hold it whole (at most one record each) or lead
// it; the index that leads with them; an index that leads with them but
// does not answer for every record, and why; one that leads with some of
// them; or, failing those, a new index on them.
func filterFinding(table TableInfo, records int64, fu FilterUse) Finding {
	f := Finding{Kind: FindingUnindexedFilter}
	pk := primaryKey(table)
	switch n := leading(pk, fu.Fields); {
	case n > 0 && n == len(fu.Fields):
		f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v, which the primary key leads with: query the fact table by Eq instead", fu.Scans, records, fu.Fields)
		return f
	case n > 0 && n == len(pk):
		f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v, which hold the whole primary key %v: each selects at most one record, which Get by the primary key (or a query of the fact table by Eq on it) reads without a scan; compare the rest with what it returns", fu.Scans, records, fu.Fields, pk)
		return f
	}
	var some []string
	var near, nearBy string // an index that leads with the fields, and what it lacks
	for _, ii := range table.Indexes {
		d := ii.Definition
		if d == nil {
			continue
		}
		lacks := shortfalls(ii)
		switch n := leading(d.Fields, fu.Fields); {
		case n == len(fu.Fields) && len(lacks) == 0:
			f.Index = ii.Name
			f.Reason = fmt.Sprintf("%d scans of the fact table filtered on %v, which this index leads with: query it instead", fu.Scans, fu.Fields)
			return f
		case n == len(fu.Fields) && near == "":
			near, nearBy = ii.Name, strings.Join(lacks, ", and ")
		case n > len(some) && n < len(fu.Fields) && len(lacks) == 0:
			f.Index, some = ii.Name, d.Fields[:n]
		}
	}
	switch {
	case near != "":
		f.Index = near
		f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v, which this index leads with, but %s", fu.Scans, records, fu.Fields, nearBy)
	case f.Index != "":
		f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v, of which this index leads with %v: query it by Eq on those, with the rest in Where, before adding an index on them all", fu.Scans, records, fu.Fields, some)
	default:
		f.Reason = fmt.Sprintf("%d scans of the %d records filtered on %v: an index on them would answer each with a range", fu.Scans, records, fu.Fields)
	}
	return f
}

// primaryKey returns the primary key fields of table: its PrimaryKey, else
// those its index definitions record; nil when neither is known.
func primaryKey(table TableInfo) []string {
	if len(table.PrimaryKey) > 0 {
		return table.PrimaryKey
	}
	for _, ii := range table.Indexes {
		if ii.Definition != nil && len(ii.Definition.PrimaryKey) > 0 {
			return ii.Definition.PrimaryKey
		}
	}
	return nil
}

// shortfalls says why the index ii does not answer, for every record, a
// query that fixes the fields it leads with: none when it does.
func shortfalls(ii IndexInfo) []string {
	var out []string
	switch ii.State {
	case IndexWriteOnly, IndexDeleteOnly:
		out = append(out, "it is still being built: query it once it is readable")
	case IndexDisabled:
		out = append(out, "it is disabled: enable it (EnableIndex) rather than add another")
	}
	if ii.Definition.Sparse {
		out = append(out, "it is sparse: it leaves out the records with a zero value in any of its key fields")
	}
	if ii.Definition.MultiValued {
		out = append(out, "it is multi-valued: it holds a record once for each element of its slice fields, and not at all when one is empty")
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

// leading returns how many of the first fields are names of set: all of
// set when fields lead with set, in any order.
func leading(fields, set []string) int {
	n := 0
	for n < len(fields) && n < len(set) && slices.Contains(set, fields[n]) {
		n++
	}
	return n
}
