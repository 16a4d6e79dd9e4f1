package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustParse(t *testing.T, in string) *run {
	t.Helper()
	r, err := parse(strings.NewReader(in))
	require.NoError(t, err)
	return r
}

func TestParse(t *testing.T) {
	r := mustParse(t, `date: 2026-01-02T03:04Z
go: go1.26.8
goos: linux
goarch: amd64
pkg: github.com/indextable/indextable
cpu: Some CPU @ 2.00GHz
BenchmarkMaintainer/batch-256-2   100  10.0 ns/op  5 changes/s
BenchmarkMaintainer/batch-256-2   100  30.0 ns/op  7 changes/s
BenchmarkBackfill-2   1  20.0 ns/op
    bench_test.go:12: logged: not a config line
goos: linux
PASS
`)
	require.Equal(t, []string{"Maintainer/batch-256", "Backfill"}, r.order, "the GOMAXPROCS suffix goes, the name's own digits stay")
	require.Equal(t, 20.0, r.med("Maintainer/batch-256", "ns/op"))
	require.Equal(t, 6.0, r.med("Maintainer/batch-256", "changes/s"))
	require.Equal(t, "run 2026-01-02T03:04Z with go1.26.8 on linux/amd64, cpu: Some CPU @ 2.00GHz", r.stamp())

	// GOMAXPROCS=1: no suffix, so none is stripped.
	r = mustParse(t, "BenchmarkMaintainer/batch-256   100  10.0 ns/op\nBenchmarkBackfill   1  20.0 ns/op\n")
	require.Equal(t, []string{"Maintainer/batch-256", "Backfill"}, r.order)
}

const compareSample = `goos: linux
BenchmarkCompare/floor/lookup-2         	   20000	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/lookup-2         	   20000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/lookup-2         	   20000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/get-2            	   20000	       100.0 ns/op	       250.0 heap-bytes/record	       0 B/op	       0 allocs/op
BenchmarkCompare/floor/insert-2         	   20000	      1000 ns/op
BenchmarkCompare/floor/update-2         	   20000	      2000 ns/op
BenchmarkCompare/floor/range100-2       	   20000	      2000 ns/op
BenchmarkCompare/floor-keys-only/lookup-2       	   20000	      400.0 ns/op
BenchmarkCompare/floor-keys-only/range100-2     	   20000	      40000 ns/op
BenchmarkCompare/indextable-full-copy/lookup-2 	   20000	      300.0 ns/op
BenchmarkCompare/indextable-full-copy/range100-2 	   20000	      5000 ns/op
BenchmarkCompare/indextable-full-copy/get-2    	   20000	      140.0 ns/op	       500.0 heap-bytes/record
BenchmarkCompare/indextable-keys-only/lookup-2 	   20000	      500.0 ns/op
BenchmarkCompare/indextable-keys-only/range100-2 	   20000	      50000 ns/op
BenchmarkCompare/indextable-keys-only/get-2    	   20000	      150.0 ns/op	       600.0 heap-bytes/record
BenchmarkCompare/indextable-keys-only/insert-2 	   20000	      1500 ns/op
BenchmarkCompare/indextable-keys-only/update-2 	   20000	      5000 ns/op
BenchmarkCompare/indextable-partial/range100-2 	   20000	      60000 ns/op
BenchmarkCompare/go-memdb/lookup-2      	   20000	      400.0 ns/op
BenchmarkCompare/go-memdb/range100-2    	   20000	      4000 ns/op
BenchmarkCompare/go-memdb/insert-2      	   20000	      3000 ns/op
BenchmarkScaling/10000/get-2   100  100 ns/op
BenchmarkScaling/10000/lookup-2   100  200 ns/op
BenchmarkScaling/10000/scan-lookup-2   100  20000 ns/op
BenchmarkScaling/100000/get-2   100  150 ns/op
BenchmarkScaling/100000/lookup-2   100  300 ns/op
BenchmarkScaling/100000/scan-lookup-2   100  300000 ns/op
PASS
`

func TestCompare(t *testing.T) {
	r := mustParse(t, compareSample)
	require.Equal(t, 200.0, r.med("Compare/floor/lookup", "ns/op"), "the median of three runs")
	var out strings.Builder
	require.NoError(t, writeCompare(&out, r))
	got := out.String()
	for _, want := range []string{
		"| floor | 1.00 µs | 2.00 µs | 200 ns | 2.00 µs | 100 ns | 250 |",
		"| floor-keys-only | – | – | 400 ns (2.00x) | 40.00 µs (20.00x) | – | n/a (off-heap) |",
		"| indextable-keys-only | 1.50 µs (1.50x) | 5.00 µs (2.50x) | 500 ns (2.50x; 1.25x keys-only floor) | " +
			"50.00 µs (25.00x; 1.25x keys-only floor) | 150 ns (1.50x) | 600 (2.40x) |",
		"| indextable-full-copy | – | – | 300 ns (1.50x) | 5.00 µs (2.50x) | 140 ns (1.40x) | 500 (2.00x) |",
		"- indextable-keys-only faster than go-memdb: **missed** (slower at lookup 1.25x, range100 12.50x)",
		"- indextable-keys-only insert at most 2x the floor: met (1.50x)\n" +
			"- indextable-keys-only update at most 2x the floor: **missed** (2.50x)\n" +
			"- indextable-keys-only get at most 1.5x the floor: met (1.50x)\n" +
			"- indextable-keys-only range100 at most 1.3x the keys-only floor: met (1.25x)\n" +
			"- indextable-keys-only bytes per record at most 2x the floor: **missed** (2.40x)\n",
		"- indextable-partial range100 at most 1.3x the keys-only floor: **missed** (1.50x)",
		"- indextable-full-copy range100 faster than go-memdb: **missed** (1.25x)\n" +
			"- indextable-full-copy lookup faster than go-memdb: met (0.75x)\n",
		"- indextable-full-copy get at most 1.5x the floor: met (1.40x)\n" +
			"- indextable-full-copy lookup at most 1.5x the floor: met (1.50x)\n" +
			"- indextable-full-copy range100 at most 1.5x the floor: **missed** (2.50x)\n",
		"| get | 100 ns | 150 ns (x1.50) |",
		"| lookup speedup over the scan | 100x | 1000x |",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "buntdb", "a system that did not run has no target")
	require.NotContains(t, got, "floor-keys-only insert", "the floors have no target")
	require.NotContains(t, got, "no more than at", "no baseline run, no target against it")

	// Against the heap bytes per record of the baseline run: no more.
	r.before = mustParse(t, `BenchmarkCompare/indextable-full-copy/get-2  20000  140.0 ns/op  500.0 heap-bytes/record
BenchmarkCompare/indextable-keys-only/get-2  20000  150.0 ns/op  599.9 heap-bytes/record
`)
	out.Reset()
	require.NoError(t, writeCompare(&out, r))
	got = out.String()
	for _, want := range []string{
		"| 150 ns (1.50x) | 600 (2.40x; 1.00x at 59b3bc3) |",
		"| 140 ns (1.40x) | 500 (2.00x; 1.00x at 59b3bc3) |",
		"- indextable-keys-only heap bytes per record no more than at 59b3bc3: **missed** (600.0, against 599.9)",
		"- indextable-full-copy heap bytes per record no more than at 59b3bc3: met (500.0, against 500.0)",
	} {
		require.Contains(t, got, want)
	}
}

func TestTable(t *testing.T) {
	r := mustParse(t, `BenchmarkTable/binary/full-copy/range100-2  10  300 ns/op
BenchmarkTable/binary/partial/range100-covered-2  10  200 ns/op
BenchmarkTable/binary/partial/insert-2  10  300 ns/op
BenchmarkTable/json/partial/insert-2  10  900 ns/op
BenchmarkFloor/range100-2  10  100 ns/op
BenchmarkFloor/insert-2  10  100 ns/op
BenchmarkFloor/get-2  10  100 ns/op
`)
	var out strings.Builder
	require.NoError(t, writeTable(&out, r))
	got := out.String()
	require.Contains(t, got, "| binary / partial | 300 ns (3.00x) | – | – | – | 200 ns (2.00x) | – |", "covered compares with the floor's range")
	require.Contains(t, got, "- binary/full-copy range100 at most 1.5x the floor: **missed** (3.00x)")
	require.Contains(t, got, "- binary/partial insert at most 2x the floor: **missed** (3.00x)")
	require.NotContains(t, got, "- json/", "the targets are the binary codec's")
	require.NotContains(t, got, "version condition", "no BenchmarkVersionCondition results, no row")
	require.NotContains(t, got, "keys-only floor", "no keys-only floor results, no row, ratio or target")

	// The keys-only floor: its row, the normalized reads' ratios to it, and
	// their targets; updates and gets against the floor for every strategy.
	r = mustParse(t, `BenchmarkTable/binary/full-copy/range100-2  10  300 ns/op
BenchmarkTable/binary/full-copy/get-2  10  140 ns/op
BenchmarkTable/binary/keys-only/update-moving-key-2  10  500 ns/op
BenchmarkTable/binary/keys-only/lookup-2  10  300 ns/op
BenchmarkTable/binary/keys-only/range100-2  10  5000 ns/op
BenchmarkTable/binary/keys-only/get-2  10  160 ns/op
BenchmarkTable/json/keys-only/range100-2  10  9000 ns/op
BenchmarkFloor/lookup-2  10  100 ns/op
BenchmarkFloor/range100-2  10  100 ns/op
BenchmarkFloor/get-2  10  100 ns/op
BenchmarkFloor/update-moving-key-2  10  200 ns/op
BenchmarkFloor/lookup-keys-only-2  10  200 ns/op
BenchmarkFloor/range100-keys-only-2  10  4000 ns/op
`)
	out.Reset()
	require.NoError(t, writeTable(&out, r))
	got = out.String()
	for _, want := range []string{
		"| google/btree by hand, keys only (keys-only floor) | – | – | 200 ns (2.00x) | 4.00 µs (40.00x) | – | – |",
		"| binary / full-copy | – | – | – | 300 ns (3.00x) | – | 140 ns (1.40x) |",
		"| binary / keys-only | – | 500 ns (2.50x) | 300 ns (3.00x; 1.50x keys-only floor) | 5.00 µs (50.00x; 1.25x keys-only floor) | – | 160 ns (1.60x) |",
		"| json / keys-only | – | – | – | 9.00 µs (90.00x; 2.25x keys-only floor) | – | – |",
		"- binary/full-copy get at most 1.5x the floor: met (1.40x)",
		"- binary/keys-only update-moving-key at most 2x the floor: **missed** (2.50x)\n" +
			"- binary/keys-only get at most 1.5x the floor: **missed** (1.60x)\n" +
			"- binary/keys-only range100 at most 1.3x the keys-only floor: met (1.25x)\n" +
			"- binary/keys-only lookup at most 2.5x the floor: **missed** (3.00x)\n",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "full-copy range100 at most 1.3x", "a full-copy read has no keys-only floor")

	// The version condition: each condition's runs pooled over the rounds.
	r = mustParse(t, `BenchmarkTable/binary/keys-only/insert-2  10  300 ns/op
BenchmarkFloor/get-2  10  100 ns/op
BenchmarkVersionCondition/round=01/condition=with-2  10  1100 ns/op
BenchmarkVersionCondition/round=01/condition=without-2  10  1000 ns/op
BenchmarkVersionCondition/round=02/condition=without-2  10  1000 ns/op
BenchmarkVersionCondition/round=02/condition=with-2  10  1300 ns/op
BenchmarkVersionCondition/round=03/condition=with-2  10  1150 ns/op
BenchmarkVersionCondition/round=03/condition=without-2  10  900 ns/op
`)
	out.Reset()
	require.NoError(t, writeTable(&out, r))
	got = out.String()
	for _, want := range []string{
		"taking turns in 3 rounds of the same run; medians of 3 runs each:",
		"| without the version condition | 1.00 µs | the baseline |",
		"| with the version condition | 1.15 µs | 1.15x (+150 ns, +15.0%) |",
		"- the schema version condition at most 10% of an insert without it: **missed** (+15.0%)",
	} {
		require.Contains(t, got, want)
	}
	require.Less(t, strings.Index(got, "| with the version condition"), strings.Index(got, "Targets, on the medians"), "the targets come last")

	// A cost of 10% meets the target; the runs of each are counted apart.
	r = mustParse(t, `BenchmarkFloor/get-2  10  100 ns/op
BenchmarkVersionCondition/condition=with-2  10  1100 ns/op
BenchmarkVersionCondition/condition=with-2  10  1100 ns/op
BenchmarkVersionCondition/condition=without-2  10  1000 ns/op
`)
	out.Reset()
	require.NoError(t, writeTable(&out, r))
	got = out.String()
	require.Contains(t, got, "one after the other in the same run; medians of 2 runs with, 1 without:")
	require.Contains(t, got, "- the schema version condition at most 10% of an insert without it: met (+10.0%)")
}

// TestIndexes: inserts and updates with 0 to k indexes, each against the
// floor with as many, and what the last index adds over one fewer; a
// strategy's first index adds to the table without index (fact-only).
func TestIndexes(t *testing.T) {
	r := mustParse(t, `BenchmarkFloor/get-2  10  100 ns/op
BenchmarkIndexes/k=0/floor/update-moving-key-2  10  200 ns/op
BenchmarkIndexes/k=0/floor/insert-2  10  200 ns/op
BenchmarkIndexes/k=0/fact-only/update-moving-key-2  10  1000 ns/op
BenchmarkIndexes/k=0/fact-only/insert-2  10  800 ns/op
BenchmarkIndexes/k=1/floor/update-moving-key-2  10  1000 ns/op
BenchmarkIndexes/k=1/floor/insert-2  10  500 ns/op
BenchmarkIndexes/k=1/floor/insert-2  10  700 ns/op
BenchmarkIndexes/k=1/keys-only/update-moving-key-2  10  1500 ns/op
BenchmarkIndexes/k=1/keys-only/insert-2  10  1500 ns/op
BenchmarkIndexes/k=1/partial/insert-2  10  1600 ns/op
BenchmarkIndexes/k=2/floor/update-moving-key-2  10  1600 ns/op
BenchmarkIndexes/k=2/floor/insert-2  10  1000 ns/op
BenchmarkIndexes/k=2/keys-only/update-moving-key-2  10  1400 ns/op
BenchmarkIndexes/k=2/keys-only/insert-2  10  2500 ns/op
`)
	var out strings.Builder
	require.NoError(t, writeTable(&out, r))
	got := out.String()
	for _, want := range []string{
		"tables of the 100,000 customers with 0 to 2 indexes",
		"Medians of 1 runs:",
		"| system | indexes | insert | the last index adds | update-moving-key | the last index adds |\n|---|---|---|---|---|---|\n" +
			"| floor | 0 | 200 ns | – | 200 ns | – |\n" +
			"| floor | 1 | 600 ns | +400 ns (+0.67x) | 1.00 µs | +800 ns (+1.33x) |\n" +
			"| floor | 2 | 1.00 µs | +400 ns (+0.40x) | 1.60 µs | +600 ns (+0.60x) |\n" +
			"| fact-only | 0 | 800 ns (4.00x) | – | 1.00 µs (5.00x) | – |\n" +
			"| keys-only | 1 | 1.50 µs (2.50x) | +700 ns (+1.17x) | 1.50 µs (1.50x) | +500 ns (+0.83x) |\n" +
			"| keys-only | 2 | 2.50 µs (2.50x) | +1.00 µs (+1.00x) | 1.40 µs (0.88x) | -100 ns (-0.10x) |\n" +
			"| partial | 1 | 1.60 µs (2.67x) | +800 ns (+1.33x) | – | – |\n\n",
	} {
		require.Contains(t, got, want)
	}

	out.Reset()
	require.NoError(t, writeTable(&out, mustParse(t, "BenchmarkFloor/get-2  10  100 ns/op\n")))
	require.NotContains(t, out.String(), "the last index adds", "no BenchmarkIndexes results, no table")
}

// TestLoad: the core's bulk loads against the floor, each way's ratio to
// the floor's and to Load's, and the target of each strategy's Load; and
// transactions against single writes.
func TestLoad(t *testing.T) {
	r := mustParse(t, `BenchmarkFloor/get-2  10  100 ns/op
BenchmarkTx/update-2  20000  6000 ns/op  2000 single-ns/op  4000 tx2-ns/op  2.000 tx/single
BenchmarkTx/update-2  20000  6000 ns/op  2000 single-ns/op  4600 tx2-ns/op  2.300 tx/single
BenchmarkTx/update-2  20000  6000 ns/op  2000 single-ns/op  4200 tx2-ns/op  2.100 tx/single
BenchmarkTx/insert-2  20000  6000 ns/op  2000 single-ns/op  5000 tx2-ns/op  2.500 tx/single
BenchmarkLoad/floor-2  1  100000000 ns/op  1000 cpu-ns/record  1000 ns/record
BenchmarkLoad/floor-2  1  300000000 ns/op  3000 cpu-ns/record  3000 ns/record
BenchmarkLoad/keys-only/indexed-2  1  1 ns/op  3000 cpu-ns/record  1500 ns/record
BenchmarkLoad/keys-only/indexed-2  1  1 ns/op  5000 cpu-ns/record  2500 ns/record
BenchmarkLoad/keys-only/then-build-2  1  1 ns/op  3000 ns/record
BenchmarkLoad/keys-only/inserts-2  1  1 ns/op  4000 ns/record
BenchmarkLoad/full-copy/indexed-2  1  1 ns/op  9000 cpu-ns/record  5000 ns/record
`)
	var out strings.Builder
	require.NoError(t, writeTable(&out, r))
	got := out.String()
	for _, want := range []string{
		"medians of 2 runs:",
		"| strategy | Load | Load, then Build | one Insert a record | Load, CPU time |",
		"| google/btree by hand, batches of 1,000 (floor) | 2.00 µs | – | – | 2.00 µs |",
		"| keys-only | 2.00 µs (1.00x) | 3.00 µs (1.50x; 1.50x Load) | 4.00 µs (2.00x; 2.00x Load) | 4.00 µs (2.00x) |",
		"| full-copy | 5.00 µs (2.50x) | – | – | 9.00 µs (4.50x) |",
		"- keys-only Load at most 2x the floor: met (1.00x)",
		"- full-copy Load at most 2x the floor: **missed** (2.50x)",
		"Medians of 3 runs:",
		"| update | 2.00 µs | 4.20 µs | 2.10x |",
		"| insert | 2.00 µs | 5.00 µs | 2.50x |",
		"- a transaction of two updates at most 2.2x a single update: met (2.10x)",
		"- a transaction of two inserts at most 2.2x a single insert: **missed** (2.50x)",
	} {
		require.Contains(t, got, want)
	}
	require.Less(t, strings.Index(got, "| insert | 2.00 µs"), strings.Index(got, "Targets, on the medians"), "the targets come last")
}

func TestUpkeep(t *testing.T) {
	r := mustParse(t, `BenchmarkEventualWrite/fact-only-2  10  100 ns/op
BenchmarkEventualWrite/eventual-2  10  120 ns/op  1.2 x-fact-only
BenchmarkEventualRead/synchronous/lookup-2  10  100 ns/op
BenchmarkEventualRead/eventual-empty-queue/lookup-2  10  110 ns/op
BenchmarkMaintainer/batch-256-2  10  1 ns/op  175000 changes/s  700000 mutations/s
BenchmarkBackfill-2  1  1 ns/op  500000 records/s
`)
	var out strings.Builder
	require.NoError(t, writeUpkeep(&out, r))
	got := out.String()
	for _, want := range []string{
		"| eventual | 120 ns (1.20x) |",
		"- eventual update at most 1.3x fact-only: met (1.20x)",
		"| lookup | 100 ns | 110 ns (1.10x) | – |",
		"| maintainer, BatchSize 256 | 175,000 changes/s, 700,000 index mutations/s |",
		"| Build of one index over 1,000,000 records | 500,000 records/s (2.0 s) |",
	} {
		require.Contains(t, got, want)
	}
}

func TestPebble(t *testing.T) {
	r := mustParse(t, `BenchmarkPebble/100k/raw/disk-2  1  0 ns/op  40.0 disk-B/record  100 kv-B/record
BenchmarkPebble/100k/raw/insert-nosync-2  10  1000 ns/op
BenchmarkPebble/100k/raw/insert-checked-nosync-2  10  2000 ns/op
BenchmarkPebble/100k/raw/insert-sync-2  10  100000 ns/op
BenchmarkPebble/100k/keys-only/disk-2  1  0 ns/op  50.0 disk-B/record  200 kv-B/record  1.25 x-raw
BenchmarkPebble/100k/keys-only/insert-nosync-2  10  3000 ns/op
BenchmarkPebble/100k/keys-only/insert-sync-2  10  110000 ns/op
`)
	var out strings.Builder
	require.NoError(t, writePebble(&out, r))
	got := out.String()
	for _, want := range []string{
		"| insert, durable | 100.00 µs | 110.00 µs (1.10x) | – | – |",
		"| insert, NoSync | 1.00 µs; checked 2.00 µs | 3.00 µs (3.00x); 1.50x checked | – | – |",
		"| disk bytes/record, compacted | 40 | 50 (1.25x) | – | – |",
		"- keys-only durable insert at most 2x raw, 100k: met (1.10x)",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "### Bulk load", "no BenchmarkLoad results, no table")

	// Bulk loads against raw batches, after the sizes' tables.
	r = mustParse(t, `BenchmarkPebble/100k/raw/insert-sync-2  10  100000 ns/op
BenchmarkPebble/100k/keys-only/insert-sync-2  10  300000 ns/op
BenchmarkLoad/raw-2  1  1 ns/op  700 ns/record
BenchmarkLoad/keys-only/indexed-2  1  1 ns/op  1400 ns/record
BenchmarkLoad/keys-only/then-build-2  1  1 ns/op  2800 ns/record
`)
	out.Reset()
	require.NoError(t, writePebble(&out, r))
	got = out.String()
	for _, want := range []string{
		"### Bulk load\n\nBulk loads of the 100,000 customers",
		"| strategy | Load | Load, then Build |\n",
		"| raw, batches of 1,000 | 700 ns | – |",
		"| keys-only | 1.40 µs (2.00x) | 2.80 µs (4.00x; 2.00x Load) |",
		"- keys-only durable insert at most 2x raw, 100k: **missed** (3.00x)\n- keys-only Load at most 2x raw: met (2.00x)",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "raw-indexed", "no raw-indexed results, no word of it")

	// With raw-indexed, each strategy's floor: its rows, Load's ratio to
	// it, and the target of 1.5x it beside the 2x raw.
	r = mustParse(t, `BenchmarkPebble/100k/raw/insert-sync-2  10  100000 ns/op
BenchmarkLoad/raw-2  1  1 ns/op  700 ns/record
BenchmarkLoad/raw-indexed/keys-only-2  1  1 ns/op  2100 ns/record
BenchmarkLoad/raw-indexed/full-copy-2  1  1 ns/op  2800 ns/record
BenchmarkLoad/keys-only/indexed-2  1  1 ns/op  2800 ns/record
BenchmarkLoad/keys-only/then-build-2  1  1 ns/op  5600 ns/record
BenchmarkLoad/full-copy/indexed-2  1  1 ns/op  4900 ns/record
`)
	out.Reset()
	require.NoError(t, writePebble(&out, r))
	got = out.String()
	for _, want := range []string{
		"| strategy | Load | Load, then Build |\n|---|---|---|\n| raw, batches of 1,000 | 700 ns | – |\n" +
			"| raw-indexed, keys-only | 2.10 µs (3.00x) | – |\n| raw-indexed, full-copy | 2.80 µs (4.00x) | – |\n" +
			"| keys-only | 2.80 µs (4.00x; 1.33x raw-indexed) | 5.60 µs (8.00x; 2.00x Load) |\n" +
			"| full-copy | 4.90 µs (7.00x; 1.75x raw-indexed) | – |\n",
		"- keys-only Load at most 2x raw: **missed** (4.00x)\n- keys-only Load at most 1.5x raw-indexed: met (1.33x)\n" +
			"- full-copy Load at most 2x raw: **missed** (7.00x)\n- full-copy Load at most 1.5x raw-indexed: **missed** (1.75x)\n",
	} {
		require.Contains(t, got, want)
	}
	text := strings.Join(strings.Fields(got), " ")
	require.Contains(t, text, "raw-indexed, of each strategy, is raw's batches with each record's entries")
	require.Contains(t, text, "for Load also to its strategy's raw-indexed, and for the other ways to Load's; medians of 1 runs:")
}

func TestAzurite(t *testing.T) {
	r := mustParse(t, `BenchmarkAzurite/write/fact-only-2  400  1000000 ns/op  1.000 round-trips/op
BenchmarkAzurite/write/fact-only-2  400  2000000 ns/op  1.000 round-trips/op
BenchmarkAzurite/write/two-intra+inter-2  400  3000000 ns/op  1.000 round-trips/op  7000000 apply-ns/op  12.9 apply-round-trips/op
BenchmarkAzurite/get-2  400  300000 ns/op  1.000 round-trips/op
`)
	var out strings.Builder
	require.NoError(t, writeAzurite(&out, r))
	got := out.String()
	for _, want := range []string{
		"Medians of 2 runs",
		"| write, fact-only | 1.50 ms (1.00 ms–2.00 ms) | 1 | the baseline |",
		"| write, two-intra+inter | 3.00 ms (3.00 ms–3.00 ms) | 1 | 2.00x time, 1.00x round trips |",
		"| then the maintainer, per write | 7.00 ms (7.00 ms–7.00 ms) | 12.9 |  |",
		"| get | 300.00 µs (300.00 µs–300.00 µs) | 1 |  |",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "Targets", "no BenchmarkLoad results, no target")

	// Bulk loads: requests per record, the load's and the maintainer's.
	r = mustParse(t, `BenchmarkAzurite/write/fact-only-2  400  1000000 ns/op  1.000 round-trips/op
BenchmarkLoad/intra-2  1  1 ns/op  400000 ns/record  0.09 requests/record  0.09 transactions/record
BenchmarkLoad/intra+inter-2  1  1 ns/op  2000000 maintainer-ns/record  0.96 maintainer-requests/record  0.51 maintainer-transactions/record  800000 ns/record  0.18 requests/record  0.18 transactions/record
`)
	out.Reset()
	require.NoError(t, writeAzurite(&out, r))
	got = out.String()
	for _, want := range []string{
		"| two intra-partition | 0.09 | 0.09 | 400.00 µs | – | – | – |",
		"| intra- and inter-partition | 0.18 | 0.18 | 800.00 µs | 0.96 | 0.51 | 2.00 ms |",
		"- Load, two intra-partition indexes, at most 0.1 requests a record: met (0.09)",
		"- Load, intra- and inter-partition indexes, at most 0.1 requests a record: **missed** (0.18; the maintainer then 0.96)",
	} {
		require.Contains(t, got, want)
	}
}

func TestSharded(t *testing.T) {
	r := mustParse(t, `BenchmarkSharded/range100/keys/single-2  10  1000 ns/op  3.000 scans/op  3.000 lookups/op  1.000 shards/op
BenchmarkSharded/range100/keys/leading4-2  10  2000 ns/op  1.000 scans/op  9.000 lookups/op  4.000 shards/op
BenchmarkSharded/get/single-2  10  100 ns/op  0 scans/op  1.000 lookups/op  1.000 shards/op
BenchmarkSharded/get/sharded4-2  10  150 ns/op  0 scans/op  1.000 lookups/op  1.000 shards/op
BenchmarkSharded/insert/leading4-2  10  150 ns/op  0.75 applied/op  3.26 batches/op
BenchmarkShardOf-2  10  28 ns/op  0 B/op  0 allocs/op
`)
	var out strings.Builder
	require.NoError(t, writeSharded(&out, r))
	got := out.String()
	for _, want := range []string{
		"| range of 100, keys-only | 1.00 µs; scans 3, lookups 3, shards 1 | 2.00 µs (2.00x); scans 1, lookups 9, shards 4 | – |",
		"| get by primary key (any rule) | 100 ns; scans 0, lookups 1, shards 1 | 150 ns (1.50x); scans 0, lookups 1, shards 1 |  |",
		"| insert, with its share of the maintainer | – | 150 ns; batches 3.26, queued 75% | – |",
		"(`ShardOf`, the cost a read pays to know where a record lies):\n28 ns, 0 allocations.",
	} {
		require.Contains(t, got, want)
	}
}

func TestRenderMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := render(dir)
	require.Error(t, err, "no raw file at all")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "compare.txt"), []byte("date: d\n"+compareSample), 0o644))
	doc, err := render(dir)
	require.NoError(t, err)
	require.Contains(t, string(doc), "`make bench-compare`: run d with unknown on linux/unknown, cpu: unknown.")
	require.Contains(t, string(doc), "## Pebble\n\nNot measured yet: run `make bench-pebble`.")
	require.NotContains(t, string(doc), "no more than at", "no baseline file, no target against it")

	// The compare section reads the baseline run under the raw directory.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(heapBaseline)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, heapBaseline),
		[]byte("BenchmarkCompare/indextable-keys-only/get-2  20000  150.0 ns/op  700.0 heap-bytes/record\n"), 0o644))
	doc, err = render(dir)
	require.NoError(t, err)
	require.Contains(t, string(doc), "- indextable-keys-only heap bytes per record no more than at 59b3bc3: met (600.0, against 700.0)")
}

// TestResultsUpToDate keeps bench/results.md what this command makes of
// bench/raw: nothing in it is typed by hand.
func TestResultsUpToDate(t *testing.T) {
	want, err := render(filepath.Join("..", "..", "raw"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join("..", "..", "results.md"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "bench/results.md is not what `make bench-results` makes of bench/raw: run it")
}
