package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
)

// TestDefaultThresholdsAgree: the defaults the flags show are the ones
// Findings applies to zero options. Each case sweeps one threshold's
// measure across its default: Findings must say the same with both, and
// must say it on one side of the default and not on the other.
func TestDefaultThresholdsAgree(t *testing.T) {
	info := indextable.TableInfo{Name: "t", PrimaryKey: []string{"ID"}, Indexes: []indextable.IndexInfo{{
		IndexStatus: indextable.IndexStatus{Name: "ix", State: indextable.IndexReadable},
		Definition:  &indextable.IndexDefinition{PrimaryKey: []string{"ID"}, Fields: []string{"F"}},
	}}}
	read := func(reads int64) indextable.TableUsage {
		return indextable.TableUsage{Indexes: map[string]indextable.IndexUsage{"ix": {Reads: reads,
			ReadKeys: []indextable.KeyReads{{Key: indextable.Tuple{"a"}, Reads: reads}}}}}
	}
	distinct := func(records, entries, keys, common int64) indextable.TableStats {
		return indextable.TableStats{Records: records, Indexes: []indextable.IndexStats{{Index: "ix", Entries: entries,
			DistinctKeys: keys, CommonKey: indextable.Tuple{"a"}, CommonEntries: common,
			Prefixes: []indextable.PrefixStats{{Distinct: keys, Common: indextable.Tuple{"a"}, CommonEntries: common}}}}}
	}
	for _, tc := range []struct {
		name  string
		kind  indextable.FindingKind
		upTo  int64
		input func(i int64) (indextable.TableStats, indextable.TableUsage)
	}{
		{"min-writes", indextable.FindingUnused, 3 * defaultThresholds.MinWrites, func(i int64) (indextable.TableStats, indextable.TableUsage) {
			return distinct(1, 1, 1, 1), indextable.TableUsage{Writes: i}
		}},
		{"selectivity", indextable.FindingLowCardinality, 1000, func(i int64) (indextable.TableStats, indextable.TableUsage) {
			return distinct(1000, 1000, i, 1), read(1)
		}},
		{"skew", indextable.FindingSkewed, 1000, func(i int64) (indextable.TableStats, indextable.TableUsage) {
			return distinct(1000, 1000, 1000, i), read(10)
		}},
		{"volatility", indextable.FindingVolatile, int64(30 * defaultThresholds.Volatility), func(i int64) (indextable.TableStats, indextable.TableUsage) {
			u := read(10)
			ix := u.Indexes["ix"]
			ix.Changes = i
			u.Indexes["ix"] = ix
			return distinct(1000, 1000, 1000, 1), u
		}},
		{"min-scans", indextable.FindingUnindexedFilter, 3 * defaultThresholds.MinScans, func(i int64) (indextable.TableStats, indextable.TableUsage) {
			u := read(1)
			u.Filters = []indextable.FilterUse{{Fields: []string{"G"}, Scans: i}}
			return distinct(1000, 1000, 1000, 1), u
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[bool]bool{}
			for i := int64(1); i <= tc.upTo; i++ {
				stats, usage := tc.input(i)
				want := indextable.Findings(info, stats, usage, indextable.AdviseOptions{})
				got := indextable.Findings(info, stats, usage, defaultThresholds)
				require.Equal(t, want, got, "at %d", i)
				found := false
				for _, f := range got {
					found = found || f.Kind == tc.kind
				}
				seen[found] = true
			}
			assert.Equal(t, map[bool]bool{false: true, true: true}, seen, "the sweep crosses the default")
		})
	}
}

// TestThresholdFlags: the threshold flags take what Findings takes as a
// threshold, and refuse the rest, which it would replace with its
// default.
func TestThresholdFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want indextable.AdviseOptions
		err  string
	}{
		{nil, defaultThresholds, ""},
		{[]string{"-min-writes", "100", "-selectivity", "1", "-skew", "0.25", "-volatility", "1e300", "-min-scans", "7"},
			indextable.AdviseOptions{MinWrites: 100, Selectivity: 1, Skew: 0.25, Volatility: 1e300, MinScans: 7}, ""},
		{[]string{"-min-writes", "0"}, defaultThresholds, "not a whole number above 0"},
		{[]string{"-min-scans", "1.5"}, defaultThresholds, "not a whole number above 0"},
		{[]string{"-selectivity", "0"}, defaultThresholds, "not a share above 0 and at most 1"},
		{[]string{"-skew", "1.01"}, defaultThresholds, "not a share above 0 and at most 1"},
		{[]string{"-skew", "NaN"}, defaultThresholds, "not a share above 0 and at most 1"},
		{[]string{"-volatility", "-1"}, defaultThresholds, "not a finite number above 0"},
		{[]string{"-volatility", "+Inf"}, defaultThresholds, "not a finite number above 0"},
	} {
		fs := flag.NewFlagSet("advise", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var o indextable.AdviseOptions
		defineThresholds(fs, &o)
		err := fs.Parse(tc.args)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%q", tc.args)
			continue
		}
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.want, o, "%q", tc.args)
	}
}
