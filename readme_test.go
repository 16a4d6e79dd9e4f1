package indextable_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeNoBenchmarkFigures keeps benchmark figures out of the README:
// they belong in bench/results.md, which the Makefile's bench targets
// generate, stamped with the machine and date they were measured on. A
// figure typed by hand is of another machine and another version.
func TestReadmeNoBenchmarkFigures(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`\d\s*(ns|µs|us|ms)\b`),                             // a time per operation
		regexp.MustCompile(`\b(ns|B|allocs)/op\b`),                             // go test -bench units
		regexp.MustCompile(`\d\s*(ops|records|changes|entries|mutations)/s\b`), // a rate
		regexp.MustCompile(`\b\d+(\.\d+)?x\b`),                                 // a ratio such as 1.5x
		regexp.MustCompile(`\d[–-]\d+(\.\d+)?x\b`),                             // a range of ratios
		regexp.MustCompile(`(?i)\b(xeon|epyc|ryzen|opteron|threadripper|graviton|neoverse|ampere|core\(tm\)|apple m\d|ghz|vcpu)\b`), // a machine
		regexp.MustCompile(`(?i)\b\d+-core\b`),
	} {
		require.Nil(t, bad.FindIndex(readme), "README.md holds a benchmark figure or machine (%q): put it in bench/results.md, which `make bench-*` generate, and link to it", bad.FindString(string(readme)))
	}
}
