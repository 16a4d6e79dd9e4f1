package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// usageLine is the syntax of every command.
const usageLine = "indextable <command> [flags] DIR [SHARD-DIR...]"

// shortUsage is what follows a complaint about the command line.
const shortUsage = "usage: " + usageLine + "\nRun 'indextable help' for the commands.\n"

// A runner runs a command, with the values of its flags, on the store in
// dirs.
type runner func(ctx context.Context, c *cli, dirs []string) error

// A command is one of the tool's commands: what help says of it, and its
// own flags.
type command struct {
	name    string
	summary string // one line, for the list of commands
	doc     string // what "indextable help name" says, before the flags
	// flags defines the command's flags on fs and returns what runs the
	// command with the values they parse to.
	flags func(fs *flag.FlagSet) runner
}

// commands are the tool's commands, in the order help lists them.
var commands = []*command{catalogCommand, statsCommand, adviseCommand, verifyCommand, repairCommand}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

// flagSet returns the command's flag set, which prints nothing by itself,
// and what runs the command with the values it parses.
func (cmd *command) flagSet() (*flag.FlagSet, runner) {
	fs := flag.NewFlagSet("indextable "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs, cmd.flags(fs)
}

// parse parses the command's args. It returns what runs the command and
// the directories to run it on, or, when the command is not to run, ok
// false and the exit status, having printed the command's usage to stdout
// when help was asked for, or what is wrong and its syntax to stderr when
// the arguments are bad.
func (cmd *command) parse(args []string, stdout, stderr io.Writer) (exec runner, dirs []string, status int, ok bool) {
	fs, exec := cmd.flagSet()
	bad := func(format string, a ...any) (runner, []string, int, bool) {
		fmt.Fprintf(stderr, "indextable %s: %s\nusage: indextable %s [flags] DIR [SHARD-DIR...]\nRun 'indextable help %s' for details.\n",
			cmd.name, fmt.Sprintf(format, a...), cmd.name, cmd.name)
		return nil, nil, exitUsage, false
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		cmd.printUsage(stdout, fs)
		return nil, nil, exitOK, false
	case err != nil:
		return bad("%v", err)
	case fs.NArg() == 0:
		return bad("no store directory given")
	}
	for _, dir := range fs.Args() {
		if strings.HasPrefix(dir, "-") {
			return bad("flag %s after the directories: flags go before them (name a directory that starts with - as ./%s)", dir, dir)
		}
	}
	return exec, fs.Args(), exitOK, true
}

// printUsage prints the command's syntax, what it does, and its flags, as
// fs defines them.
func (cmd *command) printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: indextable %s [flags] DIR [SHARD-DIR...]\n\n%s\n\nFlags:\n", cmd.name, strings.TrimSpace(cmd.doc))
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// printCommands prints the tool's syntax and the list of its commands.
func printCommands(w io.Writer) {
	fmt.Fprintf(w, "Indextable shows what the index tables of a Pebble store cost and whether\n"+
		"they are worth keeping, and verifies and repairs them.\n\nUsage:\n\n\t%s\n\nThe commands are:\n\n", usageLine)
	for _, cmd := range commands {
		fmt.Fprintf(w, "\t%-8s  %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, "\nA sharded store is given as the directories of all its shards, in order.\n"+
		"Use \"indextable help <command>\" for more about a command and its flags.\n")
}

// help runs "indextable help [command]".
func (c *cli) help(args []string) int {
	switch {
	case len(args) == 0 || len(args) == 1 && (isHelpFlag(args[0]) || args[0] == "help"):
		printCommands(c.stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(c.stderr, "indextable help: too many arguments\nusage: indextable help [command]\n")
		return exitUsage
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(c.stderr, "indextable help: unknown command %q\nRun 'indextable help' for the commands.\n", args[0])
		return exitUsage
	}
	fs, _ := cmd.flagSet()
	cmd.printUsage(c.stdout, fs)
	return exitOK
}

// commonFlags are the flags every command takes.
type commonFlags struct {
	json  bool
	table string
}

// define defines the common flags on fs.
func (f *commonFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&f.json, "json", false, "print JSON, with lowerCamel keys, instead of tables")
	fs.StringVar(&f.table, "table", "", "report on the table `NAME` only (default: every table)")
}
