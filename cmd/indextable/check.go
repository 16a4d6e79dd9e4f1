package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/indextable/indextable"
)

// The commands that check the index tables against their fact tables:
// verify, and repair.

var verifyCommand = &command{
	name:    "verify",
	summary: "check every index table against its fact table",
	doc: `Verify reads each table's records and index tables and reports drift:
missing entries, stale ones, dangling ones and unique violations, with
samples. It decodes records with the record type each table keeps
(indextable.VerifyTable) and skips indexes with a Key func, which only the
program can compute. The exit status is 3 when it finds drift.`,
	flags: checkFlags(false),
}

var repairCommand = &command{
	name:    "repair",
	summary: "verify, and fix what can be fixed",
	doc: `Repair verifies each table as verify does and fixes every finding but
unique violations (indextable.RepairTable). It is the only command that
writes. The exit status is 3 when drift is left that it could not fix.`,
	flags: checkFlags(true),
}

// checkFlags defines the flags of verify, or of repair.
func checkFlags(repair bool) func(fs *flag.FlagSet) runner {
	return func(fs *flag.FlagSet) runner {
		var f commonFlags
		f.define(fs)
		var p progressFlag
		fs.Var(&p, "progress", "draw a progress bar on stderr, or not with -progress=false (default: only when stderr is a terminal)")
		return func(ctx context.Context, c *cli, dirs []string) error {
			var progress io.Writer
			if p.show(c.stderr, c.terminal) {
				progress = c.stderr
			}
			return check(ctx, checking{repair: repair, dirs: dirs, only: f.table, asJSON: f.json}, c.stdout, progress)
		}
	}
}

// checking is what verify or repair is asked for.
type checking struct {
	repair bool
	dirs   []string
	only   string // the one table, if not empty
	asJSON bool
}

// check verifies, or repairs, the tables of the store in dirs, drawing a
// progress bar on progress (when not nil) and printing the reports to w.
// It returns errDrift when drift is left. A table that cannot be checked
// does not stop the others: its error is reported with them, and
// returned.
func check(ctx context.Context, in checking, w, progress io.Writer) error {
	store, tables, err := openTables(ctx, in.dirs, !in.repair, in.only)
	if err != nil {
		return err
	}
	defer store.Close()
	var out []checkReport
	var errs []error
	drift := false
	for _, t := range tables {
		var bar progressBar
		opts := indextable.VerifyOptions{}
		if progress != nil {
			bar = progressBar{w: progress, table: t.Name}
			opts.Progress = bar.show
		}
		run := indextable.VerifyTable
		if in.repair {
			run = indextable.RepairTable
		}
		r, err := run(ctx, store, t, opts)
		bar.done()
		c := checkReport{Name: t.Name}
		if r != nil {
			c = checkOf(t.Name, r)
			drift = drift || c.total > r.Repaired
		}
		if err != nil {
			c.Error = message(err)
			errs = append(errs, wrapf(err, "table %s", t.Name))
		}
		out = append(out, c)
	}
	if in.asJSON {
		if err := writeJSON(w, out); err != nil {
			errs = append(errs, err)
		}
	} else {
		printChecks(out, in.repair, w)
	}
	if len(errs) == 0 && drift {
		return errDrift
	}
	return errors.Join(errs...)
}

// printChecks prints the reports of verify, or of repair, as lines.
func printChecks(out []checkReport, repair bool, w io.Writer) {
	for _, c := range out {
		if c.Error != "" {
			fmt.Fprintf(w, "table %s: not checked: %s\n", c.Name, c.Error)
			continue
		}
		fmt.Fprintf(w, "table %s: %d records, %d entries", c.Name, c.Records, c.Entries)
		if c.Pending > 0 {
			fmt.Fprintf(w, ", %d records with queued changes (not checked)", c.Pending)
		}
		if len(c.Skipped) > 0 {
			fmt.Fprintf(w, "; skipped %s (a Key func: check it in the program)", strings.Join(c.Skipped, ", "))
		}
		if c.total == 0 {
			fmt.Fprintln(w, "; no drift")
			continue
		}
		var kinds []string
		for _, k := range []indextable.DriftKind{indextable.DriftMissing, indextable.DriftStale, indextable.DriftDangling, indextable.DriftUniqueViolation} {
			if n := c.Drift[kindName(k)]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
		}
		fmt.Fprintf(w, "; drift: %s", strings.Join(kinds, ", "))
		if repair {
			fmt.Fprintf(w, "; repaired %d", c.Repaired)
		}
		fmt.Fprintln(w)
		for _, s := range c.text {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}
