package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
)

type account struct {
	ID     int
	Email  string
	Active bool
	Town   string
}

// accounts is the schema of writeStore's accounts.
var accounts = indextable.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
	Indexes: []indextable.Index[account]{
		{Name: "email", Fields: []string{"Email"}, Unique: true},
		{Name: "active", Fields: []string{"Active"}, Strategy: indextable.FullCopy},
		{Name: "town", Fields: []string{"Town"}, Strategy: indextable.Partial, Projection: []string{"Email"}},
	}}

// writeStore writes, as a program would, 200 accounts whose Active index
// has two keys, whose Town index no query reads, and whose Email index is
// read by email; it saves the usage and closes the store.
func writeStore(t *testing.T, dir string) {
	ctx := context.Background()
	store, err := pebblestore.Open(dir, pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	tbl, err := indextable.Open(ctx, store, accounts)
	require.NoError(t, err)
	for i := range 200 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Active: i%2 == 0, Town: fmt.Sprint("T", i%50)})
		require.NoError(t, err)
	}
	for i := range 100 {
		for _, err := range tbl.Find(ctx, indextable.Query{Index: "email", Eq: indextable.Tuple{fmt.Sprint(i, "@x")}}) {
			require.NoError(t, err)
		}
		for _, err := range tbl.Find(ctx, indextable.Query{Index: "active", Eq: indextable.Tuple{true}, Limit: 1}) {
			require.NoError(t, err)
		}
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	// A second table with no index.
	logs, err := indextable.Open(ctx, store, indextable.Schema[account]{Name: "logs", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	_, err = logs.Insert(ctx, account{ID: 1})
	require.NoError(t, err)
	require.NoError(t, store.Close())
}

// runCLI runs the tool on args, with stdout and stderr buffers, which are
// no terminal.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := (&cli{stdout: &stdout, stderr: &stderr}).run(context.Background(), args)
	return stdout.String(), stderr.String(), code
}

// TestRunUsage: without a command, or with one it does not know, or with
// flags before the command, the tool says so on stderr with its usage and
// exits 2; asked for help as a flag, it lists the commands on stdout.
func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		out, says  string
		hasCommand bool // the list of commands
	}{
		{"nothing", nil, exitUsage, "", "Usage:\n\n\tindextable <command> [flags] DIR [SHARD-DIR...]", true},
		{"-h", []string{"-h"}, exitOK, "The commands are:", "", true},
		{"--help", []string{"--help"}, exitOK, "The commands are:", "", true},
		{"unknown command", []string{"drop", "dir"}, exitUsage, "", "indextable: unknown command \"drop\"\nusage: indextable <command>", false},
		{"flags first", []string{"-json", "-table", "accounts", "advise", "dir"}, exitUsage, "",
			"indextable: flags go after the command: indextable advise -json -table accounts dir\nusage:", false},
		{"flags and no command", []string{"-json", "dir"}, exitUsage, "", "indextable: flags go after the command\nusage:", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			assert.Equal(t, tc.code, code)
			if tc.code == exitOK {
				assert.Contains(t, out, tc.out)
				assert.Empty(t, errs)
			} else {
				assert.Empty(t, out)
				assert.Contains(t, errs, tc.says)
			}
			if tc.hasCommand {
				for _, cmd := range commands {
					assert.Contains(t, out+errs, "\t"+cmd.name+" ")
				}
			}
		})
	}
}

// TestRunErrors: a command that fails exits 1 and says why on stderr,
// naming the tool once, though the library's errors name it too.
func TestRunErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"stats", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"stats", "-table", "nope", dir}, `no table "nope"`},
		{[]string{"verify", "-table", "nope", dir}, `no table "nope"`},
	} {
		out, errs, code := runCLI(t, tc.args...)
		assert.Equal(t, exitError, code, "%q", tc.args)
		assert.Empty(t, out, "%q", tc.args)
		assert.True(t, strings.HasPrefix(errs, "indextable: "), errs)
		assert.Contains(t, errs, tc.says, "%q", tc.args)
	}

	// While a program has the store open, the tool is kept out.
	store, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	defer store.Close()
	_, errs, code := runCLI(t, "catalog", dir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errs, "in use")
}

// TestPrintError: each line of an error is printed once after the tool's
// name, whether or not the library's message names it already.
func TestPrintError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"the tool's", errors.New("dir has no table"), "indextable: dir has no table\n"},
		{"the library's", fmt.Errorf("%w: no primary key", indextable.ErrInvalidSchema), "indextable: invalid schema: no primary key\n"},
		{"wrapped with where", wrapf(fmt.Errorf("%w: no primary key", indextable.ErrInvalidSchema), "table %s", "items"),
			"indextable: table items: invalid schema: no primary key\n"},
		{"several", errors.Join(wrapf(indextable.ErrInvalidSchema, "table a"), errors.New("b")),
			"indextable: table a: invalid schema\nindextable: b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printError(&b, tc.err)
			assert.Equal(t, tc.want, b.String())
		})
	}
}

// TestWrapf: the error wrapf returns matches what it wraps.
func TestWrapf(t *testing.T) {
	err := wrapf(fmt.Errorf("%w: no primary key", indextable.ErrInvalidSchema), "table %s", "items")
	assert.ErrorIs(t, err, indextable.ErrInvalidSchema)
	assert.Equal(t, "table items: invalid schema: no primary key", err.Error())
	assert.Equal(t, "invalid schema", message(indextable.ErrInvalidSchema))
}

// TestIsHelpFlag: the flags that ask for help, as Go's tools take them.
func TestIsHelpFlag(t *testing.T) {
	for arg, want := range map[string]bool{"-h": true, "-help": true, "--help": true, "help": false, "-json": false, "-H": false} {
		assert.Equal(t, want, isHelpFlag(arg), arg)
	}
}
