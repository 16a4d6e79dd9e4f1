package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPebbleRawIndexed: each strategy's NoSync insert and update and its
// get against its raw-indexed floor, partial against keys-only's, and the
// targets of issue 22 (2x, 2x, 1.2x) for the strategies that have a floor.
func TestPebbleRawIndexed(t *testing.T) {
	r := mustParse(t, `BenchmarkPebble/100k/raw/get-2  10  1000 ns/op
BenchmarkPebble/100k/raw-indexed/keys-only/get-2  10  1000 ns/op
BenchmarkPebble/100k/raw-indexed/keys-only/insert-nosync-2  10  2000 ns/op
BenchmarkPebble/100k/raw-indexed/keys-only/update-nosync-2  10  5000 ns/op
BenchmarkPebble/100k/raw-indexed/full-copy/get-2  10  1000 ns/op
BenchmarkPebble/100k/raw-indexed/full-copy/insert-nosync-2  10  2500 ns/op
BenchmarkPebble/100k/raw-indexed/full-copy/update-nosync-2  10  6000 ns/op
BenchmarkPebble/100k/keys-only/get-2  10  1100 ns/op
BenchmarkPebble/100k/keys-only/insert-nosync-2  10  3000 ns/op
BenchmarkPebble/100k/keys-only/update-nosync-2  10  11000 ns/op
BenchmarkPebble/100k/partial/get-2  10  1150 ns/op
BenchmarkPebble/100k/partial/insert-nosync-2  10  3200 ns/op
BenchmarkPebble/100k/partial/update-nosync-2  10  12000 ns/op
BenchmarkPebble/100k/full-copy/get-2  10  1300 ns/op
BenchmarkPebble/100k/full-copy/insert-nosync-2  10  5000 ns/op
BenchmarkPebble/100k/full-copy/update-nosync-2  10  9000 ns/op
`)
	var out strings.Builder
	require.NoError(t, writePebble(&out, r))
	got := out.String()
	for _, want := range []string{
		"Against raw-indexed, each strategy's floor, in the same run (medians of 1 runs; partial, which has\nnone by hand, against keys-only's):\n\n" +
			"| strategy | insert, NoSync | update moving both keys, NoSync | get by primary key |\n|---|---|---|---|\n" +
			"| raw-indexed, keys-only | 2.00 µs | 5.00 µs | 1.00 µs |\n" +
			"| keys-only | 3.00 µs (1.50x) | 11.00 µs (2.20x) | 1.10 µs (1.10x) |\n" +
			"| partial | 3.20 µs (1.60x) | 12.00 µs (2.40x) | 1.15 µs (1.15x) |\n" +
			"| raw-indexed, full-copy | 2.50 µs | 6.00 µs | 1.00 µs |\n" +
			"| full-copy | 5.00 µs (2.00x) | 9.00 µs (1.50x) | 1.30 µs (1.30x) |\n",
		"- keys-only insert, NoSync at most 2x raw-indexed, 100k: met (1.50x)\n" +
			"- keys-only update moving both keys, NoSync at most 2x raw-indexed, 100k: **missed** (2.20x)\n" +
			"- keys-only get by primary key at most 1.2x raw-indexed, 100k: met (1.10x)\n" +
			"- full-copy insert, NoSync at most 2x raw-indexed, 100k: met (2.00x)\n" +
			"- full-copy update moving both keys, NoSync at most 2x raw-indexed, 100k: met (1.50x)\n" +
			"- full-copy get by primary key at most 1.2x raw-indexed, 100k: **missed** (1.30x)\n",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "partial insert, NoSync at most", "partial has no floor of its own, no target")

	// Without raw-indexed, no such table.
	r = mustParse(t, `BenchmarkPebble/100k/raw/get-2  10  1000 ns/op
BenchmarkPebble/100k/keys-only/get-2  10  1100 ns/op
`)
	out.Reset()
	require.NoError(t, writePebble(&out, r))
	require.NotContains(t, out.String(), "raw-indexed")
}
