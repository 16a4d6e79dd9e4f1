package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/pebblestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPebbleRestart runs each example twice on one Pebble directory: the
// second run finds the records of the first, and reads through the index
// tables what the first run's last writes left there.
func TestPebbleRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the examples")
	}
	for _, tc := range []struct {
		example       string
		first, second []string // lines each run prints
		firstMatch    string   // a regular expression the first run's output matches
	}{{
		example: "customers",
		first: []string{
			"Inserted 10 customers: 10 atomic batches of 9.8 operations each (record, index entries, guards, schema version).",
			"Customers in Redmond, counted from the index without decoding: 6",
			`  index "town": low-cardinality: 3 distinct keys over 10 entries: an average key selects 33% of the 10 records`,
		},
		second: []string{
			"Found 10 customers from an earlier run, and their index tables.",
			// The first run moved C03 from Redmond to Seattle.
			"Customers in Redmond, counted from the index without decoding: 5",
			"  page 4: Redmond/Young, Seattle/Chen",
		},
	}, {
		example: "sharded",
		first: []string{
			"Inserted 40 customers over 4 shards; the maintainer applied 40 queued changes to index shards.",
			"Customers per shard (by a hash of the ID): 11 9 15 5",
			// All of Redmond is on one index shard; its records on three.
			"  index shards scanned: 1 (3); record fetches from shards: 3 (0 1 2); queue checked on shards: none; store lookups: 4",
			"  index shards scanned: 4 (0 1 2 3); record fetches from shards: 4 (0 1 2 3); queue checked on shards: none; store lookups: 8",
			"  page 5: C35, C40",
			"Verify across the shards: 40 records and 120 index entries read, 0 findings",
		},
		second: []string{
			"Found 40 customers from an earlier run, and their index tables.",
			"Customers per shard (by a hash of the ID): 11 9 15 5",
			"Verify across the shards: 40 records and 120 index entries read, 0 findings",
		},
	}, {
		example: "movies",
		first:   moviesFirst,
		second:  moviesSecond,
	}, {
		example: "lifecycle",
		first: []string{
			"index town_lastname write-only generation 1",
			"Build, while a concurrent writer moves one customer in ten to Seattle, renaming them Moved:",
			"build town_lastname readable",
			"index town_lastname readable   generation 1",
			"Renamed one customer in 20. Changes queued for the eventual index since a maintainer last ran: 3000",
			"Verify: 20000 records and 40000 index entries read, 0 findings",
		},
		// How many of its moves the writer made while Build ran depends on
		// the machine.
		firstMatch: `(?m)^The writer moved 2000 customers, \d+ of them while Build ran\. `,
		second: []string{
			// Schema revision 1 kept the indexes that revision 2 added, and
			// revision 2 finds them as the first run left them.
			"Found 20000 customers from an earlier run, and the 2 indexes of its schema revision 2.",
			"index town_lastname readable   generation 1",
			"index lastname      readable   generation 1",
			"Customers in Redmond, through town_lastname: 5000",
			"Nothing to build: the earlier run built both indexes, and Open kept them, as their definitions are unchanged.",
			"Renamed one customer in 20. Changes queued for the eventual index since a maintainer last ran: 1000",
			"Customers named Renamed, after WaitIndexed: 1000",
			"Verify: 20000 records and 40000 index entries read, 0 findings",
		},
	}} {
		t.Run(tc.example, func(t *testing.T) {
			t.Parallel()
			bin := build(t, tc.example)
			dir := t.TempDir()
			first := run(t, bin, nil, "-pebble", dir)
			assert.Contains(t, first, "Store: Pebble in "+dir)
			containsLines(t, first, tc.first)
			if tc.firstMatch != "" {
				assert.Regexp(t, tc.firstMatch, first)
			}

			second := run(t, bin, []string{"INDEXTABLE_PEBBLE_DIR=" + dir})
			containsLines(t, second, tc.second)

			// In memory, every run starts afresh.
			containsLines(t, run(t, bin, nil), tc.first)
		})
	}
}

// Lines of the movies example's first run on a store, and of its second.
var (
	moviesFirst = []string{
		"  Sci-Fi  Red Dust       2023  Ben Cole  | Miners on Mars find water.",
		// The actor of each row of a range of the actor index, up to
		// names that start with E.
		"Actors from C up to F, F excluded (names starting with C, D or E), with their movies:",
		"  Cara Diaz   Action  Iron Harbor    2021  Ben Cole, Cara Diaz",
		"  Dan Ellis   Sci-Fi  Deep Orbit     2020  Cara Diaz, Ava Stone, Dan Ellis",
		"  Eve Fox     Comedy  Tax Season     2022  Eve Fox",
		"  Eve Fox     Sci-Fi  Zero Point     2017  Eve Fox, Cara Diaz",
		"Sci-Fi movies of the 2020s, through the genre_year index:",
	}
	moviesSecond = []string{
		"Found 7 movies from an earlier run, and their actor index table.",
		// The first run recast Red Dust with Ava Stone and Eve Fox.
		"  Sci-Fi  Red Dust       2023  Ava Stone, Eve Fox  | Miners on Mars find water.",
		"  Sci-Fi  Red Dust       2023  Ava Stone, Eve Fox",
		"  Eve Fox     Sci-Fi  Red Dust       2023  Ava Stone, Eve Fox",
	}
)

// TestMoviesOnAzurite runs the movies example twice on one new table in
// Azurite, and twice on one Pebble directory: each run on Azure prints
// what the same run on Pebble prints, but for the store, the placement of
// the index tables and what reads and writes cost, and the second finds
// the first run's movies.
func TestMoviesOnAzurite(t *testing.T) {
	conn := azuritetest.Connection(t)
	if testing.Short() {
		t.Skip("builds and runs the movies example")
	}
	bin := build(t, "movies")
	table := azuritetest.FreshTable(t, conn, "movies")
	dir := t.TempDir()
	for i, want := range [][]string{moviesFirst, moviesSecond} {
		azure := run(t, bin, []string{"INDEXTABLE_AZURE_CONNECTION=" + conn, "INDEXTABLE_AZURE_TABLE=" + table})
		containsLines(t, azure, append([]string{
			"Store: Azure Table storage, table " + table,
			"  actor: inter-partition (eventual, through the queue)",
			"  genre_year: intra-partition (strongly consistent, in its movie's transaction)",
		}, want...))
		pebble := run(t, bin, nil, "-pebble", dir)
		assert.Equal(t, storeNeutral(pebble), storeNeutral(azure), "run %d", i+1)
	}
}

// TestPebbleAndAzure: an example refuses to run on both stores.
func TestPebbleAndAzure(t *testing.T) {
	cmd := exec.Command("go", "run", "./movies", "-pebble", t.TempDir())
	cmd.Env = env("INDEXTABLE_AZURE_CONNECTION=UseDevelopmentStorage=true")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "-pebble and -azure exclude each other")
}

// storeNeutral returns the lines of an example's output that do not
// depend on the store: it leaves out the store and the placement of the
// index tables (each a block that ends with an empty line), and keeps of
// a line that says what an operation cost the part before the figures.
func storeNeutral(out string) []string {
	var lines []string
	block := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case block:
			block = l != ""
		case strings.HasPrefix(l, "Store: "), strings.HasPrefix(l, "Index placement"):
			block = true
		case strings.Contains(l, "store lookups: "), strings.Contains(l, ": one batch of "):
			l, _, _ = strings.Cut(l, ": ")
			fallthrough
		default:
			lines = append(lines, l)
		}
	}
	return lines
}

// build builds an example and returns the path of its program.
func build(t *testing.T, example string) string {
	bin := filepath.Join(t.TempDir(), example)
	out, err := exec.Command("go", "build", "-o", bin, "./"+example).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// run runs the program bin with args, in the environment env() makes of
// vars, and returns its output.
func run(t *testing.T, bin string, vars []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env(vars...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// env returns the test's environment without the developer's choice of a
// store for the examples, and with vars.
func env(vars ...string) []string {
	return append(os.Environ(), append([]string{
		"INDEXTABLE_PEBBLE_DIR=", "INDEXTABLE_AZURE_CONNECTION=", "INDEXTABLE_AZURE_TABLE=", "INDEXTABLE_ETCD_ENDPOINTS=",
	}, vars...)...)
}

// TestPebbleLocked: an example refuses a directory that a store holds.
func TestPebbleLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	defer s.Close()
	cmd := exec.Command("go", "run", "./movies", "-pebble", dir)
	cmd.Env = env()
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "pebblestore: directory in use: "+dir)
}

// containsLines checks that out has each of lines as a whole line.
func containsLines(t *testing.T, out string, lines []string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains("\n"+out, "\n"+l+"\n") {
			t.Errorf("missing line %q in the output:\n%s", l, out)
			return
		}
	}
}
