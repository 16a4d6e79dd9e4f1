package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const etcdSample = `date: 2026-01-02T03:04Z
go: go1.26.8
goos: linux
goarch: amd64
cpu: Some CPU
BenchmarkEtcd/range100/raw-2  100  1000000 ns/op  1.000 round-trips/op  1000 B/op  10 allocs/op
BenchmarkEtcd/range100/raw-2  100  3000000 ns/op  1.000 round-trips/op  1000 B/op  10 allocs/op
BenchmarkEtcd/range100/keys-only-2  100  3000000 ns/op  3.000 round-trips/op
BenchmarkEtcd/range100/full-copy-2  100  1500000 ns/op  2.000 round-trips/op
BenchmarkEtcd/insert/raw-2  100  1000000 ns/op  1.000 round-trips/op
BenchmarkEtcd/insert/keys-only-2  100  1200000 ns/op  1.002 round-trips/op
BenchmarkEtcd/insert/full-copy-2  100  1400000 ns/op  1.000 round-trips/op
PASS
`

// TestEtcd: each strategy's insert and range against raw's of the same
// run, with the round trips per operation, the strategies as they ran.
func TestEtcd(t *testing.T) {
	var out strings.Builder
	require.NoError(t, writeEtcd(&out, mustParse(t, etcdSample)))
	require.Equal(t, "Medians of 1 runs:\n\n"+
		"| operation | raw | keys-only | full-copy |\n|---|---|---|---|\n"+
		"| insert | 1.00 ms; 1 round trip | 1.20 ms (1.20x); 1.00 round trips | 1.40 ms (1.40x); 1 round trip |\n"+
		"| range of 100 in order | 2.00 ms; 1 round trip | 3.00 ms (1.50x); 3 round trips | 1.50 ms (0.75x); 2 round trips |\n\n",
		out.String())

	// A strategy that ran one operation only: a dash for the other.
	out.Reset()
	require.NoError(t, writeEtcd(&out, mustParse(t, `BenchmarkEtcd/insert/raw-2  100  1000000 ns/op  1.000 round-trips/op
BenchmarkEtcd/range100/raw-2  100  1000000 ns/op  1.000 round-trips/op
BenchmarkEtcd/range100/partial-2  100  2000000 ns/op  3.000 round-trips/op
`)))
	require.Contains(t, out.String(), "| insert | 1.00 ms; 1 round trip | – |\n")

	require.Error(t, writeEtcd(&out, mustParse(t, "BenchmarkEtcd/insert/keys-only-2  100  1000 ns/op\n")), "no raw baseline")
}

// TestRenderEtcd: the etcd section comes last, from etcd.txt, stamped
// with its run.
func TestRenderEtcd(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etcd.txt"), []byte(etcdSample), 0o644))
	doc, err := render(dir)
	require.NoError(t, err)
	require.Contains(t, string(doc), "## Sharded stores\n\nNot measured yet: run `make bench-sharded`.\n\n## etcd\n\n"+
		"`make bench-etcd`: run 2026-01-02T03:04Z with go1.26.8 on linux/amd64, cpu: Some CPU.\n")
	require.True(t, strings.HasSuffix(string(doc), etcdSection.notes), "the section's notes end the document")
}
