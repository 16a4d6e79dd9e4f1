package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelp: "indextable help" (and "help -h", "help help") lists every
// command with its line, on stdout, and exits 0.
func TestHelp(t *testing.T) {
	out, errs, code := runCLI(t, "help")
	require.Equal(t, exitOK, code, errs)
	again, _, code := runCLI(t, "help", "-h")
	require.Equal(t, exitOK, code)
	require.Equal(t, out, again)
	again, _, code = runCLI(t, "help", "help")
	require.Equal(t, exitOK, code)
	assert.Equal(t, out, again)
	assert.Empty(t, errs)
	assert.Contains(t, out, "\tindextable <command> [flags] DIR [SHARD-DIR...]")
	for _, cmd := range commands {
		assert.Regexp(t, `(?m)^\t`+cmd.name+` +`+regexp.QuoteMeta(cmd.summary)+`$`, out)
	}
	assert.Contains(t, out, `Use "indextable help <command>"`)
}

// flagsOf returns the flags a command's usage lists, in order.
func flagsOf(usage string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestCommandHelp: "indextable help CMD", "indextable CMD -h" and
// "indextable CMD -help" print the same usage of CMD to stdout and exit 0:
// its syntax, what it does, and its own flags, with their defaults as
// values.
func TestCommandHelp(t *testing.T) {
	for _, tc := range []struct {
		command string
		flags   []string
	}{
		{"catalog", []string{"json", "table"}},
		{"stats", []string{"json", "table"}},
		{"advise", []string{"json", "min-scans", "min-writes", "selectivity", "skew", "table", "volatility"}},
		{"verify", []string{"json", "progress", "table"}},
		{"repair", []string{"json", "progress", "table"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			usage, errs, code := runCLI(t, "help", tc.command)
			require.Equal(t, exitOK, code, errs)
			assert.Empty(t, errs)
			assert.True(t, strings.HasPrefix(usage, "usage: indextable "+tc.command+" [flags] DIR [SHARD-DIR...]\n\n"), usage)
			assert.Contains(t, usage, strings.TrimSpace(lookup(tc.command).doc))
			assert.Equal(t, tc.flags, flagsOf(usage))
			assert.NotContains(t, usage, "(0: the default)")
			for _, h := range []string{"-h", "-help"} {
				out, errs, code := runCLI(t, tc.command, h)
				assert.Equal(t, exitOK, code, h)
				assert.Empty(t, errs, h)
				assert.Equal(t, usage, out, h)
			}
		})
	}
}

// TestFlagDefaults: advise's thresholds show their defaults as numbers.
func TestFlagDefaults(t *testing.T) {
	usage, _, _ := runCLI(t, "help", "advise")
	for _, want := range []string{
		`-min-writes N\n.*\(default 1000\)`,
		`-selectivity SHARE\n.*\(default 0.05\)`,
		`-skew SHARE\n.*\(default 0.5\)`,
		`-volatility RATE\n.*\(default 10\)`,
		`-min-scans N\n.*\(default 100\)`,
		`-table NAME\n.*\(default: every table\)`,
	} {
		assert.Regexp(t, want, usage)
	}
	usage, _, _ = runCLI(t, "help", "verify")
	assert.Regexp(t, `-progress\n.*\(default: only when stderr is a terminal\)`, usage)
}

// TestBadArguments: a command given bad arguments says what is wrong and
// its syntax on stderr, and exits 2; help given bad arguments too.
func TestBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"stats"}, "indextable stats: no store directory given\nusage: indextable stats [flags] DIR [SHARD-DIR...]\nRun 'indextable help stats' for details.\n"},
		{[]string{"stats", "-bogus", "dir"}, "indextable stats: flag provided but not defined: -bogus\nusage: indextable stats"},
		{[]string{"catalog", "-min-writes", "5", "dir"}, "indextable catalog: flag provided but not defined: -min-writes"},
		{[]string{"advise", "-progress", "dir"}, "indextable advise: flag provided but not defined: -progress"},
		{[]string{"advise", "-selectivity", "2", "dir"}, `invalid value "2" for flag -selectivity: not a share above 0 and at most 1`},
		{[]string{"verify", "dir", "-json"}, "indextable verify: flag -json after the directories: flags go before them"},
		{[]string{"help", "drop"}, "indextable help: unknown command \"drop\"\nRun 'indextable help' for the commands.\n"},
		{[]string{"help", "stats", "verify"}, "indextable help: too many arguments"},
	} {
		out, errs, code := runCLI(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%q", tc.args)
		assert.Empty(t, out, "%q", tc.args)
		assert.Contains(t, errs, tc.says, "%q", tc.args)
	}
}
