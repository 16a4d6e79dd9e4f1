package examples_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeQuickStart keeps the README's quick start identical to
// examples/quickstart, which CI compiles and runs.
func TestReadmeQuickStart(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("quickstart", "main.go"))
	require.NoError(t, err)
	blocks := readmeBlocks(t, "Quick start")
	require.NotEmpty(t, blocks)
	require.Equal(t, "go", blocks[0].info, "README has a Go block under Quick start")
	require.Equal(t, string(example), blocks[0].body)
}

// TestReadmeSetUp keeps the two commands a new user runs first in the
// README, right after the quick start and its output, and keeps CI running
// them: the main example on the default store, and the test command.
func TestReadmeSetUp(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	require.NoError(t, err)
	blocks := readmeBlocks(t, "Quick start")
	require.GreaterOrEqual(t, len(blocks), 3, "the quick start, its output and a block of commands")
	require.Equal(t, []string{"go", "text", ""}, []string{blocks[0].info, blocks[1].info, blocks[2].info},
		"the quick start (go), its output (text), then the set-up commands (no language)")
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(blocks[2].body), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	require.Equal(t, []string{"go run ./examples/customers", "make test"}, commands)
	for _, cmd := range commands {
		require.Regexp(t, "(?m)^"+regexp.QuoteMeta(cmd)+"( |$)", string(ci), ".ci/run runs %q", cmd)
	}
}

// TestReadmeQuickStartOutput runs the quick start (which TestReadmeQuickStart
// keeps identical to the README's) and checks that it prints the output
// that the README shows after it.
func TestReadmeQuickStartOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the quick start")
	}
	blocks := readmeBlocks(t, "Quick start")
	require.GreaterOrEqual(t, len(blocks), 2)
	require.Equal(t, "text", blocks[1].info, "the block after the quick start is its output")
	assert.Equal(t, blocks[1].body, run(t, build(t, "quickstart"), nil))
}

// queryResults holds what each query of the README's Queries section finds
// in the quick start's table: the IDs of its results, in order, by the
// query's text with its spaces collapsed. TestReadmeQueries checks that
// the README has every query here, and no other.
var queryResults = map[string][]string{
	`indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond", "Smith"}}`:                                                                           {"1"},
	`indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}}`:                                                                                    {"2", "1"},
	`indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}, Lower: indextable.Inclusive("J"), Upper: indextable.Exclusive("T"), Reverse: true}`: {"1", "2"},
	`indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Seattle"}, Covered: true}`:                                                                     {"3"},
	`indextable.Query{Index: "email", Eq: indextable.Tuple{"mary@example.com"}}`:                                                                                   {"1"},
	`indextable.Query{Eq: indextable.Tuple{"3"}}`:                                                                                                                  {"3"},
	`indextable.Query{Where: map[string]any{"FirstName": "Ana"}}`:                                                                                                  {"2"},
}

// TestReadmeQueries runs each query of the README's Queries section on the
// quick start's table (its schema, with the indexes it defines, and its
// customers): the quick start's program, with its query replaced by those
// of the README, each of which must succeed and find what queryResults says.
func TestReadmeQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the quick start")
	}
	blocks := readmeBlocks(t, "Queries")
	require.NotEmpty(t, blocks)
	require.Equal(t, "go", blocks[0].info)
	queries := goExpressions(t, blocks[0].body)
	want := map[string][]string{}
	for i, q := range queries {
		require.Contains(t, queryResults, q, "README query %d has no expected results in queryResults", i+1)
		want[fmt.Sprint(i+1)] = queryResults[q]
	}
	require.Len(t, queries, len(queryResults), "queryResults holds a query the README lacks")

	// The quick start, up to its query.
	src, err := os.ReadFile(filepath.Join("quickstart", "main.go"))
	require.NoError(t, err)
	setUp, _, ok := strings.Cut(string(src), "\n\t// All customers in Redmond")
	require.True(t, ok, "the quick start queries the customers in Redmond")
	program := setUp + `
	for i, q := range []indextable.Query{
		` + strings.Join(queries, ",\n\t\t") + `,
	} {
		fmt.Print(i + 1)
		for c, err := range customers.Find(ctx, q) {
			if err != nil {
				log.Fatalf("query %d: %v", i+1, err)
			}
			fmt.Print(" ", c.ID)
		}
		fmt.Println()
	}
}
`
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(runWithMain(t, "quickstart", program)), "\n") {
		fields := strings.Fields(line)
		got[fields[0]] = append([]string{}, fields[1:]...)
	}
	assert.Equal(t, want, got, "the results of each README query, by its number")
}

// runWithMain builds the example with program in place of its main.go (a
// build overlay), runs it and returns its output.
func runWithMain(t *testing.T, example, program string) string {
	t.Helper()
	dir := t.TempDir()
	mainGo, err := filepath.Abs(filepath.Join(example, "main.go"))
	require.NoError(t, err)
	replacement := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(replacement, []byte(program), 0o644))
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {mainGo: replacement}})
	require.NoError(t, err)
	overlayFile := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o644))
	bin := filepath.Join(dir, example)
	out, err := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./"+example).CombinedOutput()
	require.NoError(t, err, "%s\n%s", out, program)
	return run(t, bin, nil)
}

// goExpressions returns the Go expressions of a block that holds one per
// line or over several lines, each followed by an optional // comment, with
// their spaces collapsed to one.
func goExpressions(t *testing.T, block string) []string {
	var exprs []string
	var expr []string
	depth := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		code, _, _ := strings.Cut(line, "//")
		expr = append(expr, strings.Fields(code)...)
		depth += strings.Count(code, "{") - strings.Count(code, "}")
		require.GreaterOrEqual(t, depth, 0, "unbalanced braces in %q", line)
		if depth == 0 {
			exprs = append(exprs, strings.Join(expr, " "))
			expr = nil
		}
	}
	require.Zero(t, depth, "unbalanced braces at the end of the block")
	return exprs
}

// readmeBlock is a fenced code block of the README: its info string (the
// language) and its lines.
type readmeBlock struct{ info, body string }

// readmeBlocks returns the fenced code blocks of the README's section
// titled heading, in order.
func readmeBlocks(t *testing.T, heading string) []readmeBlock {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## "+heading+"\n")
	require.True(t, ok, "README has a section %q", heading)
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []readmeBlock
	var open *readmeBlock
	for _, line := range strings.SplitAfter(section, "\n") {
		fence, isFence := strings.CutPrefix(line, "```")
		switch {
		case isFence && open == nil:
			open = &readmeBlock{info: strings.TrimSpace(fence)}
		case isFence:
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.body += line
		}
	}
	return blocks
}
