package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	}{{
		example: "customers",
		first: []string{
			"Inserted 10 customers: 10 atomic batches of 8.8 operations each (record, index entries, guards).",
			"Customers in Redmond, counted from the index without decoding: 6",
		},
		second: []string{
			"Found 10 customers from an earlier run, and their index tables.",
			// The first run moved C03 from Redmond to Seattle.
			"Customers in Redmond, counted from the index without decoding: 5",
			"  page 4: Redmond/Young, Seattle/Chen",
		},
	}, {
		example: "movies",
		first:   []string{"  Sci-Fi  Red Dust       2023  Ben Cole  | Miners on Mars find water."},
		second: []string{
			"Found 7 movies from an earlier run, and their actor index table.",
			// The first run recast Red Dust with Ava Stone and Eve Fox.
			"  Sci-Fi  Red Dust       2023  Ava Stone, Eve Fox  | Miners on Mars find water.",
			"  Sci-Fi  Red Dust       2023  Ava Stone, Eve Fox",
		},
	}, {
		example: "lifecycle",
		first:   []string{"index town_lastname readable   generation 1", "Verify: 20000 records and 40000 index entries read, 0 findings"},
		second: []string{
			"Found 20000 customers from an earlier run.",
			"index town_lastname readable   generation 2",
			"Verify: 20000 records and 40000 index entries read, 0 findings",
		},
	}} {
		t.Run(tc.example, func(t *testing.T) {
			t.Parallel()
			bin := filepath.Join(t.TempDir(), tc.example)
			out, err := exec.Command("go", "build", "-o", bin, "./"+tc.example).CombinedOutput()
			require.NoError(t, err, "%s", out)
			dir := t.TempDir()
			run := func(args ...string) string {
				cmd := exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "INDEXTABLE_PEBBLE_DIR=") // the developer's own, if set, is not for tests
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				return string(out)
			}
			first := run("-pebble", dir)
			assert.Contains(t, first, "Store: Pebble in "+dir)
			containsLines(t, first, tc.first)

			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "INDEXTABLE_PEBBLE_DIR="+dir)
			second, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", second)
			containsLines(t, string(second), tc.second)

			// In memory, every run starts afresh.
			containsLines(t, run(), tc.first)
		})
	}
}

// TestPebbleLocked: an example refuses a directory that a store holds.
func TestPebbleLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	defer s.Close()
	cmd := exec.Command("go", "run", "./movies", "-pebble", dir)
	cmd.Env = append(os.Environ(), "INDEXTABLE_PEBBLE_DIR=")
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
