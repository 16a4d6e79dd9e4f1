package indextable_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeQuickStart keeps the README's quick start identical to
// examples/quickstart, which CI compiles and runs.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("examples/quickstart/main.go")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "## Quick start\n\n```go\n")
	require.True(t, ok, "README has a Go block under Quick start")
	block, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok)
	require.Equal(t, string(example), block)
}

// TestReadmeSetUp keeps the two commands a new user runs first in the
// README, right after the quick start and its output, and keeps CI running
// them: the main example on the default store, and the test command.
func TestReadmeSetUp(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	ci, err := os.ReadFile(".ci/run")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	require.True(t, ok)
	blocks := fencedBlocks(section)
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

// fencedBlock is a fenced code block of Markdown: its info string (the
// language) and its lines.
type fencedBlock struct{ info, body string }

// fencedBlocks returns the fenced code blocks of markdown, in order.
func fencedBlocks(markdown string) []fencedBlock {
	var blocks []fencedBlock
	var open *fencedBlock
	for _, line := range strings.SplitAfter(markdown, "\n") {
		fence, isFence := strings.CutPrefix(line, "```")
		switch {
		case isFence && open == nil:
			open = &fencedBlock{info: strings.TrimSpace(fence)}
		case isFence:
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.body += line
		}
	}
	return blocks
}

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
