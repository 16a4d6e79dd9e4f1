// Command indextable shows what the index tables of a Pebble store cost and
// whether they are worth keeping, without the program that wrote them: it
// opens the store read-only and reads each table's catalog, measures its
// tables, reads the usage totals the program saved (Table.SaveUsage), and
// applies the Index Table pattern's rules. It also verifies the index
// tables against their fact tables, and repairs them.
//
// Install it with
//
//	go install github.com/indextable/indextable/cmd/indextable@latest
//
// Usage:
//
//	indextable <command> [flags] DIR [SHARD-DIR...]
//
// The commands are:
//
//	catalog   the tables and their index tables
//	stats     what each index table holds, and its saved usage
//	advise    the findings of the pattern's rules, with the numbers behind each
//	verify    check every index table against its fact table
//	repair    verify, and fix what can be fixed
//
// "indextable help" lists them, "indextable help <command>" (or
// "indextable <command> -h") says what one does and lists its flags. Every
// command takes -json, to print JSON (lowerCamel keys) instead of tables,
// and -table NAME, to report on one table only. Flags go after the
// command and before the directories.
//
// The program that writes the store must have closed it: the store's lock
// keeps a second process out. Only repair writes. Verify and repair decode
// records with the record type each table keeps (indextable.VerifyTable),
// and skip indexes with a Key func, which only the program can compute;
// they draw a progress bar on stderr when it is a terminal (-progress
// forces it on or off).
//
// For a store of 200 accounts whose active index holds two keys and whose
// town index no query read, "indextable advise -table accounts -min-writes
// 100 DIR" prints:
//
//	table accounts
//	INDEX   FINDING          WHY
//	active  low-cardinality  2 distinct keys over 200 entries: an average key selects 50% of the 200 records
//	town    unused           no query read it in 200 record writes, which wrote 200 of its entries
//
// A sharded store (indextable.ShardedStore over Pebble stores) is given as
// the directories of all its shards, in order, each checked against the
// layout record it keeps: DIR/shard-0 DIR/shard-1 ... One shard alone, or
// shards out of order, are refused: a store's tables lie over all its
// shards.
//
// The exit status is 0 (help included), 1 on an error, 2 on bad arguments,
// and 3 when verify or repair found drift (repair: drift it could not fix).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	c := &cli{stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(c.run(context.Background(), os.Args[1:]))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // bad arguments
	exitDrift = 3 // verify or repair left drift
)

// cli is one run of the tool: where it writes, and how it tells a terminal.
type cli struct {
	stdout, stderr io.Writer
	// terminal reports whether w is a terminal, where verify and repair
	// draw their progress unless told otherwise; nil means isTerminal.
	terminal func(w io.Writer) bool
}

// errDrift is what verify and repair return when they leave drift: not a
// failure to print, but exit status 3.
var errDrift = errors.New("drift left")

// run runs the command line args and returns the exit status.
func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		printCommands(c.stderr)
		return exitUsage
	}
	name := args[0]
	switch {
	case name == "help":
		return c.help(args[1:])
	case isHelpFlag(name):
		printCommands(c.stdout)
		return exitOK
	case strings.HasPrefix(name, "-"):
		fmt.Fprintf(c.stderr, "indextable: flags go after the command%s\n%s", commandFirst(args), shortUsage)
		return exitUsage
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(c.stderr, "indextable: unknown command %q\n%s", name, shortUsage)
		return exitUsage
	}
	exec, dirs, status, ok := cmd.parse(args[1:], c.stdout, c.stderr)
	if !ok {
		return status
	}
	err := exec(ctx, c, dirs)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errDrift):
		return exitDrift
	}
	printError(c.stderr, err)
	return exitError
}

// isHelpFlag reports whether arg asks for help as a flag does.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// commandFirst suggests args, whose flags come before the command, with
// the command moved first (": indextable advise -json DIR"), or returns
// "" when no command is among them.
func commandFirst(args []string) string {
	for i, a := range args {
		if lookup(a) != nil {
			moved := append([]string{"indextable", a}, args[:i]...)
			return ": " + strings.Join(append(moved, args[i+1:]...), " ")
		}
	}
	return ""
}

// libPrefix starts the messages of the library's errors; the tool prints
// its name once, before any message.
const libPrefix = "indextable: "

// message returns err's message without the library's prefix.
func message(err error) string { return strings.TrimPrefix(err.Error(), libPrefix) }

// printError prints err after the tool's name, each line of it (the
// errors of several tables) once.
func printError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s%s\n", libPrefix, strings.TrimPrefix(line, libPrefix))
	}
}

// contextError is an error with where it happened, whose message names
// the tool at most once.
type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string { return e.msg }

func (e *contextError) Unwrap() error { return e.err }

// wrapf returns err, wrapped with what format says, without the library's
// prefix in the middle of the message: "where: what went wrong".
func wrapf(err error, format string, args ...any) error {
	return &contextError{msg: fmt.Sprintf(format, args...) + ": " + message(err), err: err}
}
