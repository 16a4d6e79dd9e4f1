package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// The commands that read a store and say what its index tables are, hold
// and do: catalog, stats and advise. Each says what the one before it
// says, and more.

var catalogCommand = &command{
	name:    "catalog",
	summary: "the tables and their index tables",
	doc: `Catalog lists each table of the store and its index tables, as their
catalogs record them: state, strategy, key, projection, flags, placement
and generation.`,
	flags: func(fs *flag.FlagSet) runner {
		var f commonFlags
		f.define(fs)
		return func(ctx context.Context, c *cli, dirs []string) error {
			return inspect(ctx, inspection{dirs: dirs, only: f.table, asJSON: f.json}, c.stdout)
		}
	},
}

var statsCommand = &command{
	name:    "stats",
	summary: "what each index table holds, and its saved usage",
	doc: `Stats measures each table and its index tables with one scan of each
(entries, distinct keys, the most common key, bytes), and shows the usage
totals the program saved with Table.SaveUsage: reads, records returned,
entry writes and write amplification.`,
	flags: func(fs *flag.FlagSet) runner {
		var f commonFlags
		f.define(fs)
		return func(ctx context.Context, c *cli, dirs []string) error {
			return inspect(ctx, inspection{dirs: dirs, only: f.table, asJSON: f.json, measure: true}, c.stdout)
		}
	},
}

var adviseCommand = &command{
	name:    "advise",
	summary: "the findings of the pattern's rules, with the numbers behind each",
	doc: `Advise measures the tables as stats does and applies the Index Table
pattern's rules to what they hold and what the program did: unused,
low-cardinality, skewed, volatile, unindexed-filter and projection, each
finding with the numbers behind it (see indextable.Findings). With -json
it prints the stats and usage as well.`,
	flags: func(fs *flag.FlagSet) runner {
		var f commonFlags
		f.define(fs)
		var o indextable.AdviseOptions
		defineThresholds(fs, &o)
		return func(ctx context.Context, c *cli, dirs []string) error {
			return inspect(ctx, inspection{dirs: dirs, only: f.table, asJSON: f.json, measure: true, advise: true, thresholds: o}, c.stdout)
		}
	},
}

// inspection is what catalog, stats or advise is asked for.
type inspection struct {
	dirs       []string
	only       string // the one table, if not empty
	asJSON     bool
	measure    bool // stats and usage
	advise     bool // findings
	thresholds indextable.AdviseOptions
}

// inspect reads the store, read-only, and prints what in asks for to w.
func inspect(ctx context.Context, in inspection, w io.Writer) error {
	store, tables, err := openTables(ctx, in.dirs, true, in.only)
	if err != nil {
		return err
	}
	defer store.Close()
	var out []tableReport
	for _, t := range tables {
		r := tableReport{Name: t.Name}
		for _, ix := range t.Indexes {
			r.Indexes = append(r.Indexes, describe(ix))
		}
		if in.measure {
			if err := in.measureTable(ctx, store, t, &r); err != nil {
				return wrapf(err, "table %s", t.Name)
			}
		}
		out = append(out, r)
	}
	if in.asJSON {
		return writeJSON(w, out)
	}
	switch {
	case in.advise:
		return printFindings(out, w)
	case in.measure:
		return printStats(out, w)
	}
	return printCatalog(out, w)
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

// measureTable adds to r the table's stats, its saved usage and, for
// advise, the findings.
func (in inspection) measureTable(ctx context.Context, store kv.Store, t indextable.TableInfo, r *tableReport) error {
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
				ix.Stats = statsOf(s)
			}
		}
		if u, ok := usage.Indexes[ix.Name]; ok {
			ix.Usage = usageOf(u, usage.Writes)
		}
	}
	if in.advise {
		r.Findings = findingsOf(indextable.Findings(t, stats, usage, in.thresholds))
	}
	return nil
}

// printCatalog prints catalog's reports as aligned tables.
func printCatalog(tables []tableReport, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(tw)
		}
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
	}
	return tw.Flush()
}

// printStats prints stats's reports as aligned tables.
func printStats(tables []tableReport, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(tw)
		}
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
			reads, returned, mutations, amp := "-", "-", "-", "-"
			if u != nil {
				reads, returned, mutations = fmt.Sprint(u.Reads), fmt.Sprint(u.Returned), fmt.Sprint(u.Mutations)
				amp = fmt.Sprintf("%.2f", u.WriteAmplification)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", ix.Name, s.Entries, s.DistinctKeys, s.CommonKey, share,
				s.Bytes, of, reads, returned, mutations, amp)
		}
	}
	return tw.Flush()
}

// printFindings prints advise's reports as aligned tables.
func printFindings(tables []tableReport, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(tw)
		}
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
	return tw.Flush()
}

// join returns names joined by commas, or "-" for none.
func join(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
