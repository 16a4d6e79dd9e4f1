package main

import (
	"cmp"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/indextable/indextable"
)

// The reports below are what the commands print, as tables or as JSON.
// They are the tool's own, converted from the library's types, so that
// every JSON object key is lowerCamel, and stays so whatever the library's
// types become. Data that would be a key (a field name) is a list instead.

// tableReport is what catalog, stats and advise say of one table; each
// fills its part.
type tableReport struct {
	Name     string          `json:"name"`
	Indexes  []indexReport   `json:"indexes"`
	Records  *int64          `json:"records,omitempty"`
	Bytes    *int64          `json:"bytes,omitempty"`
	Writes   *int64          `json:"writes,omitempty"`
	Scans    *int64          `json:"scans,omitempty"`
	Findings []findingReport `json:"findings,omitempty"`
}

// indexReport is what the commands say of one index.
type indexReport struct {
	Name       string       `json:"name"`
	State      string       `json:"state"`
	Generation int64        `json:"generation"`
	Strategy   string       `json:"strategy,omitempty"`
	Key        []string     `json:"key,omitempty"` // field names, or "Key func"
	Projection []string     `json:"projection,omitempty"`
	Flags      []string     `json:"flags,omitempty"` // unique, sparse, multi-valued, eventual
	Placement  string       `json:"placement"`
	PrimaryKey []string     `json:"primaryKey,omitempty"`
	BuildDone  int64        `json:"buildDone,omitempty"`
	BuildTotal int64        `json:"buildTotal,omitempty"`
	Stats      *statsReport `json:"stats,omitempty"`
	Usage      *usageReport `json:"usage,omitempty"`
}

// keyJSON is a key in JSON: an array of its components, as encoding/json
// writes them, but for the floats JSON has no number for, written as the
// strings "+Inf", "-Inf" and "NaN".
type keyJSON indextable.Tuple

// String shows k as a Tuple does.
func (k keyJSON) String() string { return indextable.Tuple(k).String() }

// MarshalJSON writes k as an array.
func (k keyJSON) MarshalJSON() ([]byte, error) {
	if k == nil {
		return []byte("null"), nil
	}
	out := make([]any, len(k))
	for i, v := range k {
		out[i] = v
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			out[i] = strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return json.Marshal(out)
}

// statsReport is indextable.IndexStats: what an index table holds.
type statsReport struct {
	Entries       int64   `json:"entries"`
	DistinctKeys  int64   `json:"distinctKeys"`
	CommonKey     keyJSON `json:"commonKey"`
	CommonEntries int64   `json:"commonEntries"`
	Bytes         int64   `json:"bytes"`
	// Prefixes measure each leading part of the key, the first component
	// first.
	Prefixes []prefixReport `json:"prefixes,omitempty"`
}

// prefixReport is indextable.PrefixStats: the key prefixes of one length.
type prefixReport struct {
	Distinct      int64   `json:"distinct"`
	Common        keyJSON `json:"common"`
	CommonEntries int64   `json:"commonEntries"`
}

// usageReport is indextable.IndexUsage, what an index did, and the write
// amplification it comes to.
type usageReport struct {
	Reads      int64 `json:"reads"`
	Returned   int64 `json:"returned"`
	Mutations  int64 `json:"mutations"`
	Changes    int64 `json:"changes"`
	WholeReads int64 `json:"wholeReads"`
	// FieldsRead counts, by field, the reads that named it: the most read
	// first.
	FieldsRead []fieldReads `json:"fieldsRead,omitempty"`
	ReadKeys   []keyReads   `json:"readKeys,omitempty"`
	// WriteAmplification is the entry writes per record write.
	WriteAmplification float64 `json:"writeAmplification"`
}

// fieldReads is how many reads named Field.
type fieldReads struct {
	Field string `json:"field"`
	Reads int64  `json:"reads"`
}

// keyReads is indextable.KeyReads: how many queries fixed the key prefix.
type keyReads struct {
	Key   keyJSON `json:"key"`
	Reads int64   `json:"reads"`
}

// findingReport is indextable.Finding. Kind is the finding's name
// ("low-cardinality").
type findingReport struct {
	Index  string `json:"index,omitempty"`
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// checkReport is what verify and repair say of one table. Drift counts
// the differences by kind, keyed by the kind's lowerCamel name (missing,
// stale, dangling, uniqueViolation), which samples name too.
type checkReport struct {
	Name     string         `json:"name"`
	Records  int64          `json:"records"`
	Entries  int64          `json:"entries"`
	Drift    map[string]int `json:"drift"`
	Pending  int            `json:"pending"`
	Repaired int            `json:"repaired"`
	Samples  []driftReport  `json:"samples,omitempty"`
	Skipped  []string       `json:"skipped,omitempty"`
	Error    string         `json:"error,omitempty"`

	total int      // of Drift
	text  []string // the samples, as the library words them
}

// driftReport is indextable.Drift: one difference.
type driftReport struct {
	Kind       string  `json:"kind"`
	Index      string  `json:"index"`
	Key        keyJSON `json:"key"`
	PrimaryKey keyJSON `json:"primaryKey"`
	Repaired   bool    `json:"repaired"`
}

// statsOf converts s.
func statsOf(s indextable.IndexStats) *statsReport {
	r := &statsReport{Entries: s.Entries, DistinctKeys: s.DistinctKeys, CommonKey: keyJSON(s.CommonKey), CommonEntries: s.CommonEntries, Bytes: s.Bytes}
	for _, p := range s.Prefixes {
		r.Prefixes = append(r.Prefixes, prefixReport{Distinct: p.Distinct, Common: keyJSON(p.Common), CommonEntries: p.CommonEntries})
	}
	return r
}

// usageOf converts u, of a table that counted writes record writes.
func usageOf(u indextable.IndexUsage, writes int64) *usageReport {
	r := &usageReport{Reads: u.Reads, Returned: u.Returned, Mutations: u.Mutations, Changes: u.Changes, WholeReads: u.WholeReads}
	for field, n := range u.FieldsRead {
		r.FieldsRead = append(r.FieldsRead, fieldReads{Field: field, Reads: n})
	}
	slices.SortFunc(r.FieldsRead, func(a, b fieldReads) int {
		return cmp.Or(cmp.Compare(b.Reads, a.Reads), strings.Compare(a.Field, b.Field))
	})
	for _, k := range u.ReadKeys {
		r.ReadKeys = append(r.ReadKeys, keyReads{Key: keyJSON(k.Key), Reads: k.Reads})
	}
	if writes > 0 {
		r.WriteAmplification = float64(u.Mutations) / float64(writes)
	}
	return r
}

// findingsOf converts fs.
func findingsOf(fs []indextable.Finding) []findingReport {
	var out []findingReport
	for _, f := range fs {
		out = append(out, findingReport{Index: f.Index, Kind: f.Kind.String(), Reason: f.Reason})
	}
	return out
}

// checkOf converts r, the report of Verify or Repair on table name.
func checkOf(name string, r *indextable.VerifyReport) checkReport {
	c := checkReport{Name: name, Records: r.Records, Entries: r.Entries, Drift: map[string]int{}, Pending: r.Pending,
		Repaired: r.Repaired, Skipped: r.Skipped, total: r.Total()}
	for k, n := range r.Drift {
		c.Drift[kindName(k)] += n
	}
	for _, d := range r.Samples {
		c.Samples = append(c.Samples, driftReport{Kind: kindName(d.Kind), Index: d.Index, Key: keyJSON(d.Key), PrimaryKey: keyJSON(d.PrimaryKey), Repaired: d.Repaired})
		c.text = append(c.text, d.String())
	}
	return c
}

// kindName returns k's name in lowerCamel case: "unique violation" is
// uniqueViolation.
func kindName(k indextable.DriftKind) string { return lowerCamel(k.String()) }

// lowerCamel joins the words of s, which are separated by anything but
// letters and digits, in lowerCamel case.
func lowerCamel(s string) string {
	var b strings.Builder
	for i, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(w)
		if i == 0 {
			r[0] = unicode.ToLower(r[0])
		} else {
			r[0] = unicode.ToUpper(r[0])
		}
		b.WriteString(string(r))
	}
	return b.String()
}

// writeJSON writes {"tables": tables}, indented.
func writeJSON(w io.Writer, tables any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Tables any `json:"tables"`
	}{tables})
}
