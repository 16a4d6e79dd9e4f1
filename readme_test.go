package indextable_test

import (
	"os"
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
