package main

import (
	"errors"
	"flag"
	"math"
	"strconv"

	"github.com/indextable/indextable"
)

// defaultThresholds are the thresholds Findings applies to a zero
// AdviseOptions field, which the flags show as their defaults.
var defaultThresholds = indextable.AdviseOptions{MinWrites: 1000, Selectivity: 0.05, Skew: 0.5, Volatility: 10, MinScans: 100}

// defineThresholds defines advise's threshold flags on fs, set to the
// defaults, which parse into o.
func defineThresholds(fs *flag.FlagSet, o *indextable.AdviseOptions) {
	*o = defaultThresholds
	fs.Var((*count)(&o.MinWrites), "min-writes",
		"an index that no query read is unused once `N` record writes are counted")
	fs.Var((*share)(&o.Selectivity), "selectivity",
		"a key is of low cardinality when an average key selects this `SHARE` of the records, or more")
	fs.Var((*share)(&o.Skew), "skew",
		"a key, or key prefix, is skewed when the most common one holds more than this `SHARE` of the entries")
	fs.Var((*rate)(&o.Volatility), "volatility",
		"the data is volatile when updates and deletes change `RATE` entries per read, or more")
	fs.Var((*count)(&o.MinScans), "min-scans",
		"an index is proposed on fields that `N` scans of the fact table filtered on")
}

// count is a threshold flag that counts: a whole number above 0.
type count int64

func (c *count) String() string { return strconv.FormatInt(int64(*c), 10) }

func (c *count) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return errors.New("not a whole number above 0")
	}
	*c = count(n)
	return nil
}

// share is a threshold flag that is a share: above 0, at most 1.
type share float64

func (s *share) String() string { return strconv.FormatFloat(float64(*s), 'g', -1, 64) }

func (s *share) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return errors.New("not a share above 0 and at most 1")
	}
	*s = share(f)
	return nil
}

// rate is a threshold flag that is a ratio: a finite number above 0.
type rate float64

func (r *rate) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }

func (r *rate) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= math.MaxFloat64) {
		return errors.New("not a finite number above 0")
	}
	*r = rate(f)
	return nil
}
