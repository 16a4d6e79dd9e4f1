// Command indextable shows what the index tables of a Pebble store cost and
// whether they are worth keeping, without the program that wrote them: it
// opens the store read-only and reads each table's catalog, measures its
// tables, reads the usage totals the program saved (Table.SaveUsage), and
// applies the Index Table pattern's rules.
//
// Usage:
//
//	indextable [flags] catalog DIR   the tables and their index tables
//	indextable [flags] stats DIR     what each holds, and its saved usage
//	indextable [flags] advise DIR    the findings, with the numbers behind each
//	indextable [flags] verify DIR    check every index table against its fact table
//	indextable [flags] repair DIR    verify, and fix what can be fixed
//
// Flags:
//
//	-json          print JSON instead of tables
//	-table NAME    only the table NAME
//	-min-writes N, -selectivity F, -skew F, -volatility F, -min-scans N
//	               advise's thresholds (see indextable.AdviseOptions)
//	-quiet         no progress bar for verify and repair
//
// The program that writes the store must have closed it: the store's lock
// keeps a second process out. Only repair writes. Verify and repair decode
// records with the record type each table keeps (indextable.VerifyTable),
// and skip indexes with a Key func, which only the program can compute.
//
// For a store of 200 accounts whose active index holds two keys and whose
// town index no query read, "indextable -table accounts -min-writes 100
// advise DIR" prints:
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
// The exit status is 0, 1 on an error, 2 on bad arguments, and 3 when
// verify or repair found drift (repair: drift it could not fix).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage reports bad arguments; run prints the usage with it.
var errUsage = errors.New("usage: indextable [-json] [-table NAME] [-quiet] [advise thresholds] catalog|stats|advise|verify|repair DIR [SHARD-DIR...]")

// run runs the command line args, printing to stdout and stderr, and
// returns the exit status: 0, 1 on an error, 2 on bad arguments, 3 when
// verify or repair left drift.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("indextable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	only := fs.String("table", "", "only this table")
	var o indextable.AdviseOptions
	fs.Int64Var(&o.MinWrites, "min-writes", 0, "record writes before an unread index is unused (0: the default)")
	fs.Float64Var(&o.Selectivity, "selectivity", 0, "share of the records an average key selects at low cardinality (0: the default)")
	fs.Float64Var(&o.Skew, "skew", 0, "share of the entries the most common key holds more than when skewed (0: the default)")
	fs.Float64Var(&o.Volatility, "volatility", 0, "entry writes per read at which data is volatile (0: the default)")
	fs.Int64Var(&o.MinScans, "min-scans", 0, "scans filtered on the same fields before an index is proposed (0: the default)")
	quiet := fs.Bool("quiet", false, "no progress bar for verify and repair")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 2 {
		fmt.Fprintln(stderr, errUsage)
		return 2
	}
	command, dirs := fs.Arg(0), fs.Args()[1:]
	switch command {
	case "catalog", "stats", "advise":
	case "verify", "repair":
		var progress io.Writer
		if !*quiet {
			progress = stderr
		}
		drift, err := check(ctx, command == "repair", dirs, *only, *asJSON, stdout, progress)
		switch {
		case err != nil:
			fmt.Fprintln(stderr, "indextable:", err)
			return 1
		case drift:
			return 3
		}
		return 0
	default:
		fmt.Fprintf(stderr, "indextable: unknown command %q\n%v\n", command, errUsage)
		return 2
	}
	if err := report(ctx, command, dirs, *only, o, *asJSON, stdout); err != nil {
		fmt.Fprintln(stderr, "indextable:", err)
		return 1
	}
	return 0
}

// errShard reports directories that are not one whole store: one shard,
// or some, of a ShardedStore, or shards out of order. Read alone, a
// shard's index tables seem to drift, and a repair of it would corrupt the
// store.
var errShard = errors.New("not the whole sharded store")

// open opens the Pebble store in dirs, read-only if readOnly: one
// directory of a store, or the directories of every shard of a
// ShardedStore, in order, which it opens as one with the rules their
// layout records keep.
func open(ctx context.Context, dirs []string, readOnly bool) (store kv.Store, err error) {
	shards := make([]kv.Store, 0, len(dirs))
	defer func() {
		if err != nil {
			for _, s := range shards {
				s.Close()
			}
		}
	}()
	for at, dir := range dirs {
		s, err := pebblestore.Open(dir, pebblestore.Options{ReadOnly: readOnly})
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
		i, n, ok, err := indextable.IsShard(ctx, s)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", dir, err)
		case !ok && len(dirs) == 1:
			return s, nil
		case !ok:
			return nil, fmt.Errorf("%s is no shard of a sharded store (%w)", dir, errShard)
		case n != len(dirs) || i != at:
			return nil, fmt.Errorf("%s is shard %d of %d of a sharded store (%w), given as %d of %d: "+
				"give the directories of all %d shards, in order", dir, i, n, errShard, at, len(dirs), n)
		}
	}
	sharded, err := indextable.OpenShardedStore(ctx, shards, indextable.WithStoredLayout())
	if err != nil {
		return nil, err
	}
	return sharded, nil
}

// tableReport is what the commands say of one table; each fills its part.
type tableReport struct {
	Name     string               `json:"name"`
	Indexes  []indexReport        `json:"indexes"`
	Records  *int64               `json:"records,omitempty"`
	Bytes    *int64               `json:"bytes,omitempty"`
	Writes   *int64               `json:"writes,omitempty"`
	Scans    *int64               `json:"scans,omitempty"`
	Findings []indextable.Finding `json:"findings,omitempty"`
}

type indexReport struct {
	Name       string                 `json:"name"`
	State      string                 `json:"state"`
	Generation int64                  `json:"generation"`
	Strategy   string                 `json:"strategy,omitempty"`
	Key        []string               `json:"key,omitempty"` // field names, or "Key func"
	Projection []string               `json:"projection,omitempty"`
	Flags      []string               `json:"flags,omitempty"` // unique, sparse, multi-valued, eventual
	Placement  string                 `json:"placement"`
	PrimaryKey []string               `json:"primaryKey,omitempty"`
	BuildDone  int64                  `json:"buildDone,omitempty"`
	BuildTotal int64                  `json:"buildTotal,omitempty"`
	Stats      *indextable.IndexStats `json:"stats,omitempty"`
	Usage      *usageReport           `json:"usage,omitempty"`
}

type usageReport struct {
	indextable.IndexUsage
	// WriteAmplification is the entry writes per record write.
	WriteAmplification float64 `json:"writeAmplification"`
}

func report(ctx context.Context, command string, dirs []string, only string, o indextable.AdviseOptions, asJSON bool, w io.Writer) error {
	store, err := open(ctx, dirs, true)
	if err != nil {
		return err
	}
	defer store.Close()
	tables, err := indextable.ReadCatalog(ctx, store)
	if err != nil {
		return err
	}
	var out []tableReport
	for _, t := range tables {
		if only != "" && t.Name != only {
			continue
		}
		r := tableReport{Name: t.Name}
		for _, ix := range t.Indexes {
			r.Indexes = append(r.Indexes, describe(ix))
		}
		if command != "catalog" {
			if err := measure(ctx, store, t, o, &r); err != nil {
				return err
			}
		}
		out = append(out, r)
	}
	if only != "" && len(out) == 0 {
		return fmt.Errorf("%s has no table %q", strings.Join(dirs, " "), only)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"tables": out})
	}
	return printTables(command, out, w)
}

// describe turns a catalog entry into its report.
func describe(ix indextable.IndexInfo) indexReport {
	r := indexReport{Name: ix.Name, State: ix.State.String(), Generation: ix.Generation, Placement: ix.Placement.String(),
		BuildDone: ix.Done, BuildTotal: ix.Total}
	d := ix.Definition
	if d == nil {
		r.Strategy = "(no definition: open the table once with this version)"
		return r
	}
	r.Strategy, r.Projection, r.PrimaryKey = d.Strategy.String(), d.Projection, d.PrimaryKey
	r.Key = d.Fields
	if d.Computed {
		r.Key = []string{"Key func"}
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{d.Unique, "unique"}, {d.Sparse, "sparse"}, {d.MultiValued, "multi-valued"}, {d.Consistency == indextable.Eventual, "eventual"}} {
		if f.on {
			r.Flags = append(r.Flags, f.name)
		}
	}
	return r
}

// measure adds to r the table's stats, its saved usage and the findings.
func measure(ctx context.Context, store kv.Store, t indextable.TableInfo, o indextable.AdviseOptions, r *tableReport) error {
	stats, err := indextable.StatsOf(ctx, store, t)
	if err != nil {
		return err
	}
	usage, err := indextable.UsageOf(ctx, store, t.Name)
	if err != nil {
		return err
	}
	r.Records, r.Bytes, r.Writes, r.Scans = &stats.Records, &stats.FactBytes, &usage.Writes, &usage.Scans
	for i := range r.Indexes {
		ix := &r.Indexes[i]
		for _, s := range stats.Indexes {
			if s.Index == ix.Name {
				ix.Stats = &s
			}
		}
		if u, ok := usage.Indexes[ix.Name]; ok {
			ix.Usage = &usageReport{IndexUsage: u}
			if usage.Writes > 0 {
				ix.Usage.WriteAmplification = float64(u.Mutations) / float64(usage.Writes)
			}
		}
	}
	r.Findings = indextable.Findings(t, stats, usage, o)
	return nil
}

// printTables prints the reports of command as aligned tables.
func printTables(command string, tables []tableReport, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		switch command {
		case "catalog":
			if len(t.Indexes) == 0 {
				fmt.Fprintf(tw, "table %s: no index tables\n", t.Name)
				continue
			}
			fmt.Fprintf(tw, "table %s\n", t.Name)
			fmt.Fprintln(tw, "INDEX\tSTATE\tSTRATEGY\tKEY\tPROJECTION\tFLAGS\tPLACEMENT\tGENERATION")
			for _, ix := range t.Indexes {
				state := ix.State
				if ix.BuildTotal > 0 && ix.State == indextable.IndexWriteOnly.String() {
					state = fmt.Sprintf("%s (%d/%d built)", state, ix.BuildDone, ix.BuildTotal)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", ix.Name, state, ix.Strategy, join(ix.Key), join(ix.Projection),
					join(ix.Flags), ix.Placement, ix.Generation)
			}
		case "stats":
			fmt.Fprintf(tw, "table %s: %d records, %d bytes; %d record writes and %d fact-table scans counted\n", t.Name, *t.Records, *t.Bytes, *t.Writes, *t.Scans)
			if len(t.Indexes) == 0 {
				continue
			}
			fmt.Fprintln(tw, "INDEX\tENTRIES\tDISTINCT KEYS\tMOST COMMON KEY\tSHARE\tBYTES\tOF FACT BYTES\tREADS\tRETURNED\tENTRY WRITES\tPER RECORD WRITE")
			for _, ix := range t.Indexes {
				s, u := ix.Stats, ix.Usage
				if s == nil {
					fmt.Fprintf(tw, "%s\t(not measured: %s)\n", ix.Name, ix.State)
					continue
				}
				share, of := "-", "-"
				if s.Entries > 0 {
					share = fmt.Sprintf("%.0f%%", 100*float64(s.CommonEntries)/float64(s.Entries))
				}
				if *t.Bytes > 0 {
					of = fmt.Sprintf("%.2fx", float64(s.Bytes)/float64(*t.Bytes))
				}
				var reads, returned, mutations, amp string = "-", "-", "-", "-"
				if u != nil {
					reads, returned, mutations = fmt.Sprint(u.Reads), fmt.Sprint(u.Returned), fmt.Sprint(u.Mutations)
					amp = fmt.Sprintf("%.2f", u.WriteAmplification)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", ix.Name, s.Entries, s.DistinctKeys, s.CommonKey, share,
					s.Bytes, of, reads, returned, mutations, amp)
			}
		case "advise":
			if len(t.Findings) == 0 {
				fmt.Fprintf(tw, "table %s: no findings\n", t.Name)
				continue
			}
			fmt.Fprintf(tw, "table %s\n", t.Name)
			fmt.Fprintln(tw, "INDEX\tFINDING\tWHY")
			for _, f := range t.Findings {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Index, f.Kind, f.Reason)
			}
		}
	}
	return tw.Flush()
}

func join(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// checkReport is what verify and repair say of one table.
type checkReport struct {
	Name     string                       `json:"name"`
	Records  int64                        `json:"records"`
	Entries  int64                        `json:"entries"`
	Drift    map[indextable.DriftKind]int `json:"drift"`
	Pending  int                          `json:"pending"`
	Repaired int                          `json:"repaired"`
	Samples  []indextable.Drift           `json:"samples,omitempty"`
	Skipped  []string                     `json:"skipped,omitempty"`
	Error    string                       `json:"error,omitempty"`
}

func (c checkReport) total() int {
	n := 0
	for _, d := range c.Drift {
		n += d
	}
	return n
}

// check verifies, or repairs, the tables of the store in dir, printing a
// progress bar to progress (when not nil) and the reports to w; it reports
// whether drift is left. A table that cannot be checked does not stop the
// others: its error is reported with them, and returned.
func check(ctx context.Context, repair bool, dirs []string, only string, asJSON bool, w, progress io.Writer) (bool, error) {
	store, err := open(ctx, dirs, !repair)
	if err != nil {
		return false, err
	}
	defer store.Close()
	tables, err := indextable.ReadCatalog(ctx, store)
	if err != nil {
		return false, err
	}
	var out []checkReport
	var errs []error
	drift := false
	for _, t := range tables {
		if only != "" && t.Name != only {
			continue
		}
		var bar progressBar
		opts := indextable.VerifyOptions{}
		if progress != nil {
			bar = progressBar{w: progress, table: t.Name}
			opts.Progress = bar.show
		}
		run := indextable.VerifyTable
		if repair {
			run = indextable.RepairTable
		}
		r, err := run(ctx, store, t, opts)
		bar.done()
		c := checkReport{Name: t.Name}
		if r != nil {
			c.Records, c.Entries, c.Drift, c.Pending, c.Repaired, c.Samples, c.Skipped = r.Records, r.Entries, r.Drift, r.Pending, r.Repaired, r.Samples, r.Skipped
			drift = drift || r.Total() > r.Repaired
		}
		if err != nil {
			c.Error = err.Error()
			errs = append(errs, err)
		}
		out = append(out, c)
	}
	if only != "" && len(out) == 0 {
		return false, fmt.Errorf("%s has no table %q", strings.Join(dirs, " "), only)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"tables": out}); err != nil {
			errs = append(errs, err)
		}
		return drift, errors.Join(errs...)
	}
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
		if c.total() == 0 {
			fmt.Fprintln(w, "; no drift")
			continue
		}
		var kinds []string
		for _, k := range []indextable.DriftKind{indextable.DriftMissing, indextable.DriftStale, indextable.DriftDangling, indextable.DriftUniqueViolation} {
			if n := c.Drift[k]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
		}
		fmt.Fprintf(w, "; drift: %s", strings.Join(kinds, ", "))
		if repair {
			fmt.Fprintf(w, "; repaired %d", c.Repaired)
		}
		fmt.Fprintln(w)
		for _, d := range c.Samples {
			fmt.Fprintf(w, "  %v\n", d)
		}
	}
	return drift, errors.Join(errs...)
}

// progressBar draws Verify's progress on one line, redrawn in place.
type progressBar struct {
	w     io.Writer
	table string
	width int // of the line last drawn, which a shorter one must cover
}

const barWidth = 30

func (b *progressBar) show(p indextable.VerifyProgress) {
	filled := barWidth
	percent := 100
	if p.Total > 0 {
		filled = int(min(p.Done, p.Total) * barWidth / p.Total)
		percent = int(min(p.Done, p.Total) * 100 / p.Total)
	}
	line := fmt.Sprintf("%s %-20s [%s%s] %3d%% %d/%d", b.table, p.Phase, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), percent, p.Done, p.Total)
	fmt.Fprintf(b.w, "\r%-*s", b.width, line)
	b.width = max(b.width, len(line))
}

func (b *progressBar) done() {
	if b.width > 0 {
		fmt.Fprintln(b.w)
	}
}
