package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
BenchmarkCompare/floor/lookup-2         	   20000	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/lookup-2         	   20000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/lookup-2         	   20000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/get-2            	   20000	       100.0 ns/op	       250.0 heap-bytes/record	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/insert-2         	   20000	      1000 ns/op
BenchmarkCompare/indextable-keys-only/lookup-2 	   20000	      500.0 ns/op
BenchmarkCompare/indextable-keys-only/get-2    	   20000	      150.0 ns/op	       600.0 heap-bytes/record
BenchmarkCompare/indextable-keys-only/insert-2 	   20000	      1500 ns/op
BenchmarkCompare/go-memdb/lookup-2      	   20000	      400.0 ns/op
BenchmarkCompare/go-memdb/insert-2      	   20000	      3000 ns/op
PASS
`

func TestTable(t *testing.T) {
	res, order, err := parse(strings.NewReader(sample), "Compare")
	require.NoError(t, err)
	require.Equal(t, []string{"floor", "indextable-keys-only", "go-memdb"}, order)
	require.Equal(t, 200.0, res.med("floor", "lookup", "ns/op"), "the median of three runs")
	var out strings.Builder
	write(&out, res, order)
	got := out.String()
	for _, want := range []string{
		"| floor | 1.00 µs | – | 200 ns | – | 100 ns | 250 |",
		"| indextable-keys-only | 1.50 µs (1.50x) | – | 500 ns (2.50x) | – | 150 ns (1.50x) | 600 (2.40x) |",
		"- indextable-keys-only faster than go-memdb: **missed** (slower at lookup 1.25x)",
		"- indextable-keys-only insert at most 2x the floor: met (1.50x)",
		"- indextable-keys-only bytes per record at most 2x the floor: **missed** (2.40x)",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "buntdb", "a system that did not run has no target")
}

func TestScalingTable(t *testing.T) {
	in := `BenchmarkScaling/10000/get-2   100  100 ns/op
BenchmarkScaling/10000/lookup-2   100  200 ns/op
BenchmarkScaling/10000/scan-lookup-2   100  20000 ns/op
BenchmarkScaling/100000/get-2   100  150 ns/op
BenchmarkScaling/100000/lookup-2   100  300 ns/op
BenchmarkScaling/100000/scan-lookup-2   100  300000 ns/op
`
	res, sizes, err := parse(strings.NewReader(in), "Scaling")
	require.NoError(t, err)
	require.Equal(t, []string{"10000", "100000"}, sizes)
	var out strings.Builder
	writeScaling(&out, res, sizes)
	require.Contains(t, out.String(), "| get | 100 ns | 150 ns (x1.50) |")
	require.Contains(t, out.String(), "| lookup speedup over the scan | 100x | 1000x |")
}
