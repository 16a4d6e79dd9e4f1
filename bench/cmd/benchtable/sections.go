package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A section of results.md: the raw file it is made of, the Makefile target
// that makes that file, what was measured, how to tabulate it, and notes on
// where the time goes (from the code and its profiles, not from a run).
type section struct {
	title, file, target, about, notes string
	write                             func(io.Writer, *run) error
	// before is a raw file of an earlier run, under the raw directory, that
	// write compares with (run.before), if any.
	before string
}

var sections = []section{
	{
		title: "Codecs and strategies against the floor", file: "table.txt", target: "make bench",
		about: `100,000 customers in a table with two indexes of one strategy, Town+LastName and LastName, on
the memory store, against the floor: the same workload kept by hand in google/btree trees (a
primary tree of record pointers and two secondary trees of the same pointers, in index order), in
the same run, and against the keys-only floor, whose secondary trees hold only the key and the ID,
so that its reads get each record from the primary tree (a second hop) before they copy it out.
` + "`lookup`" + ` is an exact Town+LastName match (one record), ` + "`range100`" + ` the first 100 customers of a
town in LastName order (` + "`range100-covered`" + ` the same read answered by a partial index alone,
compared with the floor's range), ` + "`get`" + ` a read by primary key, ` + "`update-moving-key`" + ` an update
that moves the record's Town+LastName key. Each cell is the median time of one operation and its
ratio to the floor's; a keys-only or partial lookup and range100 also have their ratio to the
keys-only floor's, and the keys-only floor's reads their ratio to the floor's.
`,
		notes: `The floor keeps live Go values and returns them with a copy, while indextable stores bytes, so
that any Store can hold them, and decodes them on every read: the binary codec is the one to
compare. A keys-only or partial read makes one B-tree lookup per record in the fact table,
scattered across the tree, which is what the normalized strategy costs: the keys-only floor makes
the same second hop, so that a read's ratio to it is the library's own cost. An update makes five
tree operations (read the old record, check it, write the record and two entries) where the floor
makes three, and an insert four (its batch expects the record absent rather than read it). The
schema version condition adds a fifth, an expectation: on the memory store, one more B-tree lookup
under the store's lock, of a key outside the records' (the same key for every write), and a
comparison of 24 bytes; it writes nothing. A Load batch is one transaction of a thousand records:
it encodes each record and its entries as an insert does, then plans the transaction (its
expectations merged by key), and the store checks the batch's operations before it puts them
into its one B-tree of byte keys, where the floor compares the fields of record pointers and
encodes nothing. Load, then Build writes the records, then reads them back to write their entries.
In the table of index counts, the floor's entries point at the record, so that its update deletes
and reinserts an entry in every tree, moved or not, while the library writes only the entries whose
key or value changed: a full-copy entry holds the record, and changes with it; a keys-only entry
holds the key alone, and a partial one its projection (FirstName here, which the update keeps).
`,
		write: writeTable,
	},
	{
		title: "Against go-memdb and buntdb", file: "compare.txt", target: "make bench-compare",
		about: `One workload on this library (each strategy on the memory store, and full-copy on Pebble without
fsync), hashicorp/go-memdb, tidwall/buntdb in memory (JSON records, its IndexJSON indexes) and
google/btree by hand (the floor: secondary trees of record pointers; and the keys-only floor:
secondary trees of the key and the ID, whose reads get each record from the primary tree):
100,000 customers with a Town+LastName index and a LastName index. Reads run first, at IDs spread
over the whole table; updates move both index keys. Each cell is the median time of one operation
and its ratio to the floor's; a keys-only or partial lookup and range100 also have their ratio to
the keys-only floor's. Heap bytes per record are measured after loading, with their ratio to the
floor's and to the same system's at commit ` + heapBaselineCommit + ` (bench/raw/baseline), before the work
on issue 22. The bench module has its own go.mod, so the library never requires the peers.
`,
		notes: `go-memdb's immutable radix trees copy a path on every write, and buntdb parses JSON to compare
keys: both pay for it on inserts and updates. go-memdb and the floor return pointers to live Go
values, where this library decodes stored bytes. In the scaling table, a range of 100 should stay
nearly flat from size to size, as a B-tree descent does, while a get or a lookup at IDs spread
over the table grows as the floor's does, because the data outgrows the CPU caches; the scan
grows with the data.
`,
		write:  writeCompare,
		before: heapBaseline,
	},
	{
		title: "Index upkeep", file: "upkeep.txt", target: "make bench-upkeep",
		about: `What an index costs besides its reads: 100,000 customers, binary codec, two keys-only indexes
(Town+LastName and LastName) on the memory store, and updates that move both keys.
`,
		notes: `An eventual write is one more B-tree insert than a fact-only write (the change record, a copy of
the record as it was): four tree operations instead of three. The queue also grows the tree
while the eventual writes are timed, since no maintainer runs.
`,
		write: writeUpkeep,
	},
	pebbleSection,
	{
		title: "Azure Table storage on Azurite", file: "azurite.txt", target: "make bench-azurite",
		about: `Movies partitioned by genre in an Azure table of Azurite (in memory, on the machine of the
benchmark), round trips counted at the HTTP transport. ` + "`two-intra`" + ` has two indexes that lead
with the genre, placed intra-partition; ` + "`two-intra+inter`" + ` adds a multi-valued actor index,
inter-partition, whose entries a maintainer writes after the timed writes (its own row). The
range reads read 100 movies of one genre through a keys-only and a full-copy index. Times on an
emulator that shares the cores vary from run to run, and the sub-benchmarks run in turn:
compare round trips first, which do not vary.
`,
		notes: `An insert is one entity group transaction whatever its intra-partition indexes: its expectation
that the record is absent becomes an insert (Add) that fails the transaction if the record
exists, so nothing is read first. The indexes cost entities in the transaction (and time, as
Azurite writes them one by one), not requests. The inter-partition index costs the write one
request, the hint of its change in the queue's hint partition, and its other requests later, in
the maintainer, which writes in the record's and the actors' partitions, many records' entries of
one partition in one transaction. A keys-only range fetches its records with a query a partition chunk; a full-copy
range is a query of the queue's hints (one partition) and a query of the index's partition. Load
groups the records of a partition into transactions of as many as Azure's 100 actions hold (99
writes beside azstore's guard: a record takes its insert, its entries and, with an inter-partition
index, its change record; its expectations cost no action), one request each, and with an
inter-partition index one more a transaction, its hint; a group's remainder and the groups it writes early, when it holds
many partitions' records, make smaller transactions. The maintainer then queries the queue and
writes each surname partition's entries in transactions, within a pass of BatchSize changes spread
over many surnames.
`,
		write: writeAzurite,
	},
	{
		title: "Azure requests per operation", file: "azurite-cost.txt", target: "make bench-azurite-cost",
		about: `What an operation costs in requests, the unit Azure bills and throttles, at 500 and 5,000
movies: the table of the Azurite section with a full-copy actor index, inter-partition. Before is
the library before pending changes were hinted (commit 37e9f74, with today's benchmark code),
after is the working tree, in one run on one Azurite. A table scan is a query whose filter names
no partition: the service reads every entity of the table. Entities are what queries returned.
The idle maintainer is counted 250 ms an operation with nothing to do, once its waits have grown;
the maintainer row is per change applied, with as many changes waiting as operations.
`,
		write: writeAzuriteCost,
	},
	{
		title: "Sharded stores", file: "sharded.txt", target: "make bench-sharded",
		about: `20,000 customers, 200 a town, one Town+LastName index, on one memory store and on a ShardedStore
of 4 memory stores under each index rule, in one run. Each cell: the median time, its ratio to
one store, and per operation the store calls summed over the shards (scans; lookups: gets,
batched gets and scans) and how many shards served it. An insert includes its share of the
maintainer passes that write the index entries that lie on another shard than their record
(batches: store batches an insert took; queued: the share of inserts that went through the
queue).
`,
		notes: `By leading key, a town's range is one index scan on one shard; a keys-only read then fetches its
records from the shards they hash to, one batch per shard, at once. On memory shards the fan-out
is pure overhead (a goroutine, a channel and a page copy per shard, against scans that take
microseconds); over shards whose calls take a network round trip, the concurrent queries keep a
fan-out near one round trip. A full-copy read first checks the queue on every shard, since its
entries may lag their records. An insert whose index entry lies on another shard than its record
commits the record with a change record, and the maintainer writes the entry on its shard and
deletes the change.
`,
		write: writeSharded,
	},
}

// medians says of how many runs the figures of name are the medians.
func (r *run) medians(w io.Writer, name string) {
	fmt.Fprintf(w, "Medians of %d runs:\n\n", r.runs(name, "ns/op"))
}

// cell is a median time of name and its ratio to base's, if base ran.
func (r *run) cell(name, base string) string {
	if !r.has(name, "ns/op") {
		return "–"
	}
	ns := r.med(name, "ns/op")
	s := duration(ns)
	if base != "" && base != name && r.has(base, "ns/op") {
		s += " (" + ratio(ns, r.med(base, "ns/op")) + ")"
	}
	return s
}

// systems returns the distinct second components of the names under prefix
// ("Compare/floor/get" under "Compare/": "floor"), in order.
func (r *run) systems(prefix string) []string {
	var out []string
	for _, n := range r.names(prefix) {
		sys, _, _ := strings.Cut(strings.TrimPrefix(n, prefix), "/")
		if !slices.Contains(out, sys) {
			out = append(out, sys)
		}
	}
	return out
}

func writeTable(w io.Writer, r *run) error {
	if !r.has("Floor/get", "ns/op") {
		return errors.New("no BenchmarkFloor results")
	}
	ops := []string{"insert", "update-moving-key", "lookup", "range100", "range100-covered", "get"}
	r.medians(w, "Floor/get")
	var rows [][]string
	row := []string{"google/btree by hand (floor)"}
	for _, op := range ops {
		row = append(row, r.cell("Floor/"+op, ""))
	}
	rows = append(rows, row)
	if r.has("Floor/range100-keys-only", "ns/op") {
		row := []string{"google/btree by hand, keys only (keys-only floor)"}
		for _, op := range ops {
			cell := "–"
			if op == "lookup" || op == "range100" {
				cell = r.cell("Floor/"+op+"-keys-only", "Floor/"+op)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	var configs []string // codec/strategy
	for _, n := range r.names("Table/") {
		parts := strings.Split(n, "/")
		if len(parts) == 4 && !slices.Contains(configs, parts[1]+"/"+parts[2]) {
			configs = append(configs, parts[1]+"/"+parts[2])
		}
	}
	for _, c := range configs {
		row := []string{strings.Replace(c, "/", " / ", 1)}
		for _, op := range ops {
			floor := "Floor/" + strings.TrimSuffix(op, "-covered")
			cell := r.cell("Table/"+c+"/"+op, floor)
			if normalized(c) && (op == "lookup" || op == "range100") {
				cell = r.alsoVs(cell, "Table/"+c+"/"+op, floor+"-keys-only", "keys-only floor")
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	table(w, append([]string{"codec / strategy"}, ops...), rows)
	// The targets are the binary codec's: JSON's decoding is what it costs
	// to let a type evolve, not the library's overhead.
	var ts []target
	for _, c := range configs {
		if !strings.HasPrefix(c, "binary/") {
			continue
		}
		med := func(op string) float64 { return r.med("Table/"+c+"/"+op, "ns/op") }
		floor := func(op string) float64 { return r.med("Floor/"+op, "ns/op") }
		keysOnly := func(op string) float64 { return r.med("Floor/"+op+"-keys-only", "ns/op") }
		ts = append(ts, floorTargets(c, med, floor, keysOnly, "update-moving-key")...)
		if normalized(c) {
			ts = append(ts, atMost(c+" lookup at most 2.5x the floor", med("lookup"), floor("lookup"), 2.5)...)
		}
	}
	writeIndexes(w, r)
	ts = append(ts, versionCondition(w, r)...)
	ts = append(ts, writeLoad(w, r, memoryLoad)...)
	ts = append(ts, writeTx(w, r)...)
	writeTargets(w, ts)
	return nil
}

// memoryLoad is the core's BenchmarkLoad.
var memoryLoad = loadSpec{
	base: "floor", baseLabel: "google/btree by hand, batches of 1,000 (floor)", baseRef: "the floor",
	intro: "Bulk loads of the 100,000 customers into an empty table on a new memory store (binary codec, " +
		"the two indexes above, of each strategy), against the floor putting the same records into its three " +
		"trees in batches of 1,000, each under one lock, in the same run: `Load` with the indexes, `Load` " +
		"without them and then `Build` (the other way to fill an empty table), and one `Insert` a record.",
}

// versionCondition writes the table of BenchmarkVersionCondition, if it
// ran: inserts with the schema version condition against inserts without
// it, the two taking turns in rounds of one run. It returns the target that
// the condition cost at most 10% of an insert without it.
func versionCondition(w io.Writer, r *run) []target {
	with, rounds := r.pooled("VersionCondition/", "condition=with", "ns/op")
	without, _ := r.pooled("VersionCondition/", "condition=without", "ns/op")
	if len(with) == 0 || len(without) == 0 {
		return nil
	}
	runs := fmt.Sprintf("%d runs each", len(with))
	if len(with) != len(without) {
		runs = fmt.Sprintf("%d runs with, %d without", len(with), len(without))
	}
	turns := fmt.Sprintf("taking turns in %d rounds of the same run", rounds)
	if rounds == 1 {
		turns = "one after the other in the same run"
	}
	mw, mo := median(with), median(without)
	para(w, fmt.Sprintf("The schema version condition, which every write batch carries on a store of unbounded "+
		"atomicity (the memory store, Pebble): inserts into the binary / keys-only table above, on two memory "+
		"stores, one whose handle expects the schema version and one whose handle leaves that expectation out "+
		"(and nothing else), %s; medians of %s:", turns, runs))
	cost := fmt.Sprintf("%+.1f%%", 100*(mw/mo-1))
	table(w, []string{"insert, two keys-only indexes", "time", "vs without"}, [][]string{
		{"without the version condition", duration(mo), "the baseline"},
		{"with the version condition", duration(mw), fmt.Sprintf("%s (%+.0f ns, %s)", ratio(mw, mo), mw-mo, cost)},
	})
	return []target{{"the schema version condition at most 10% of an insert without it", cost, mw/mo <= 1.1}}
}

var compareOps = []string{"insert", "update", "lookup", "range100", "get"}

func writeCompare(w io.Writer, r *run) error {
	order := r.systems("Compare/")
	if len(order) > 0 {
		if order[0] != "floor" {
			return errors.New("no BenchmarkCompare/floor results")
		}
		r.medians(w, "Compare/floor/get")
		var rows [][]string
		for _, sys := range order {
			cells := []string{sys}
			for _, op := range compareOps {
				base := "Compare/floor/" + op
				if sys == "floor" {
					base = ""
				}
				cell := r.cell("Compare/"+sys+"/"+op, base)
				if normalized(sys) && (op == "lookup" || op == "range100") {
					cell = r.alsoVs(cell, "Compare/"+sys+"/"+op, "Compare/floor-keys-only/"+op, "keys-only floor")
				}
				cells = append(cells, cell)
			}
			bytes := "n/a (off-heap)"
			if b := r.med("Compare/"+sys+"/get", "heap-bytes/record"); b > 0 {
				bytes = grouped(b)
				if f := r.med("Compare/floor/get", "heap-bytes/record"); sys != "floor" && f > 0 {
					bytes += " (" + ratio(b, f) + ")"
				}
				if was := r.heapBefore(sys); was > 0 {
					bytes = withNote(bytes, ratio(b, was)+" at "+heapBaselineCommit)
				}
			}
			rows = append(rows, append(cells, bytes))
		}
		table(w, append(append([]string{"system"}, compareOps...), "heap bytes/record"), rows)
		writeTargets(w, compareTargets(r, order))
	}
	if sizes := r.systems("Scaling/"); len(sizes) > 0 {
		fmt.Fprint(w, `### Scaling

Full-copy on the memory store at each size, with each step's growth over the size before, the
floor's reads at each size (what of the growth is the machine's: caches the data outgrows), and
an exact lookup answered by scanning the fact table instead of the index (`+"`scan-lookup`"+`).

`)
		r.medians(w, "Scaling/"+sizes[0]+"/get")
		writeScaling(w, r, sizes)
	}
	return nil
}

// compareTargets checks the library's memory-store systems against the
// targets: every operation faster than go-memdb and buntdb, and a
// full-copy range100 and lookup faster than go-memdb on their own; the
// floor's targets (floorTargets); keys-only bytes per record at most 2x
// the floor's; and bytes per record no more than at heapBaselineCommit.
func compareTargets(r *run, order []string) []target {
	var out []target
	m := func(sys, op, unit string) float64 { return r.med("Compare/"+sys+"/"+op, unit) }
	for _, sys := range order {
		if !strings.HasPrefix(sys, "indextable-") || strings.Contains(sys, "pebble") {
			continue
		}
		for _, peer := range []string{"go-memdb", "buntdb"} {
			if !slices.Contains(order, peer) {
				continue
			}
			var slower []string
			for _, op := range compareOps {
				if d := m(peer, op, "ns/op"); d > 0 && m(sys, op, "ns/op")/d >= 1 {
					slower = append(slower, fmt.Sprintf("%s %.2fx", op, m(sys, op, "ns/op")/d))
				}
			}
			detail := "every operation faster"
			if len(slower) > 0 {
				detail = "slower at " + strings.Join(slower, ", ")
			}
			out = append(out, target{sys + " faster than " + peer, detail, len(slower) == 0})
		}
		if strings.HasSuffix(sys, "full-copy") {
			for _, op := range []string{"range100", "lookup"} {
				out = append(out, faster(sys+" "+op+" faster than go-memdb", m(sys, op, "ns/op"), m("go-memdb", op, "ns/op"))...)
			}
		}
		out = append(out, floorTargets(sys,
			func(op string) float64 { return m(sys, op, "ns/op") },
			func(op string) float64 { return m("floor", op, "ns/op") },
			func(op string) float64 { return m("floor-keys-only", op, "ns/op") }, "update")...)
		b := m(sys, "get", "heap-bytes/record")
		if strings.HasSuffix(sys, "keys-only") {
			out = append(out, atMost(sys+" bytes per record at most 2x the floor", b, m("floor", "get", "heap-bytes/record"), 2)...)
		}
		if was := r.heapBefore(sys); was > 0 && b > 0 {
			out = append(out, target{sys + " heap bytes per record no more than at " + heapBaselineCommit,
				fmt.Sprintf("%.1f, against %.1f", b, was), b <= was})
		}
	}
	return out
}

// floorTargets are the targets that sys, a table of one strategy (its name
// ends with it), has against the floors: insert and update (the operation
// named update) at most 2x the floor, get at most 1.5x, a full-copy lookup
// and range100 at most 1.5x, and a keys-only or partial range100 at most
// 1.3x the keys-only floor's (a second hop per record is what
// normalization costs, the rest is the library's). med, floor and
// keysOnly return the medians of an operation of sys, of the floor and of
// the keys-only floor, 0 for one that did not run (and has no target).
func floorTargets(sys string, med, floor, keysOnly func(op string) float64, update string) []target {
	out := atMost(sys+" insert at most 2x the floor", med("insert"), floor("insert"), 2)
	out = append(out, atMost(sys+" "+update+" at most 2x the floor", med(update), floor(update), 2)...)
	out = append(out, atMost(sys+" get at most 1.5x the floor", med("get"), floor("get"), 1.5)...)
	if strings.HasSuffix(sys, "full-copy") {
		for _, op := range []string{"lookup", "range100"} {
			out = append(out, atMost(sys+" "+op+" at most 1.5x the floor", med(op), floor(op), 1.5)...)
		}
	}
	if normalized(sys) {
		out = append(out, atMost(sys+" range100 at most 1.3x the keys-only floor", med("range100"), keysOnly("range100"), 1.3)...)
	}
	return out
}

// normalized reports whether name is a table of the keys-only or partial
// strategy, whose reads fetch each record: "binary/partial",
// "indextable-keys-only", not the keys-only floor.
func normalized(name string) bool {
	return !strings.HasPrefix(name, "floor") && (strings.HasSuffix(name, "keys-only") || strings.HasSuffix(name, "partial"))
}

// The run of make bench-compare whose heap bytes per record the compare
// section's target compares with: bench/raw/compare.txt as of commit
// heapBaselineCommit (main, before the work on issue 22), copied unchanged
// (git show 59b3bc3:bench/raw/compare.txt) into heapBaseline, under the
// raw directory.
const (
	heapBaseline       = "baseline/compare-59b3bc3.txt"
	heapBaselineCommit = "59b3bc3"
)

// heapBefore returns the heap bytes per record of sys in the compare run
// of heapBaseline, 0 if it is missing or sys did not run in it.
func (r *run) heapBefore(sys string) float64 {
	if r.before == nil {
		return 0
	}
	return r.before.med("Compare/"+sys+"/get", "heap-bytes/record")
}

// alsoVs adds to cell, a cell of name, name's ratio to other, labelled:
// "9.37 µs (3.38x)" becomes "9.37 µs (3.38x; 1.10x keys-only floor)". The
// cell stays as it is if either did not run.
func (r *run) alsoVs(cell, name, other, label string) string {
	if !r.has(name, "ns/op") || !r.has(other, "ns/op") {
		return cell
	}
	return withNote(cell, ratio(r.med(name, "ns/op"), r.med(other, "ns/op"))+" "+label)
}

// withNote adds note to cell, in its parenthesis if it ends with one.
func withNote(cell, note string) string {
	if rest, ok := strings.CutSuffix(cell, ")"); ok {
		return rest + "; " + note + ")"
	}
	return cell + " (" + note + ")"
}

// writeScaling writes the medians of BenchmarkScaling by operation and
// size, each with its growth over the size before, and how many times an
// indexed lookup beats a scan of the fact table.
func writeScaling(w io.Writer, r *run, sizes []string) {
	var rows [][]string
	for _, op := range []string{"get", "floor-get", "lookup", "floor-lookup", "range100", "floor-range100", "insert", "scan-lookup"} {
		cells := []string{op}
		for i, size := range sizes {
			name := "Scaling/" + size + "/" + op
			cell := r.cell(name, "")
			if i > 0 && r.has(name, "ns/op") && r.has("Scaling/"+sizes[i-1]+"/"+op, "ns/op") {
				cell += fmt.Sprintf(" (x%.2f)", r.med(name, "ns/op")/r.med("Scaling/"+sizes[i-1]+"/"+op, "ns/op"))
			}
			cells = append(cells, cell)
		}
		rows = append(rows, cells)
	}
	cells := []string{"lookup speedup over the scan"}
	for _, size := range sizes {
		scan, lookup := r.med("Scaling/"+size+"/scan-lookup", "ns/op"), r.med("Scaling/"+size+"/lookup", "ns/op")
		if lookup == 0 {
			cells = append(cells, "–")
			continue
		}
		cells = append(cells, fmt.Sprintf("%.0fx", scan/lookup))
	}
	rows = append(rows, cells)
	table(w, append([]string{"operation"}, sizes...), rows)
}

func writeUpkeep(w io.Writer, r *run) error {
	if len(r.names("EventualWrite/")) > 0 {
		para(w, fmt.Sprintf("Updates with no index (fact-only, the baseline), with two `Eventual` indexes (no maintainer runs: the queue grows by one change a write) and with two `Synchronous` ones; medians of %d runs:", r.runs("EventualWrite/fact-only", "ns/op")))
		var rows [][]string
		for _, m := range []string{"fact-only", "eventual", "synchronous"} {
			rows = append(rows, []string{m, r.cell("EventualWrite/"+m, "EventualWrite/fact-only")})
		}
		table(w, []string{"update", "time (vs fact-only)"}, rows)
		writeTargets(w, atMost("eventual update at most 1.3x fact-only", r.med("EventualWrite/eventual", "ns/op"), r.med("EventualWrite/fact-only", "ns/op"), 1.3))
	}
	if len(r.names("EventualRead/")) > 0 {
		para(w, fmt.Sprintf("Reads of a full-copy index: `Synchronous` (the baseline), `Eventual` with an empty queue (the stale check is one scan of the queue), and `Eventual` with a change pending (every result is then checked against the fact table); medians of %d runs:", r.runs("EventualRead/synchronous/lookup", "ns/op")))
		var rows [][]string
		for _, op := range []string{"lookup", "range100"} {
			row := []string{op}
			for _, m := range []string{"synchronous", "eventual-empty-queue", "eventual-change-pending"} {
				row = append(row, r.cell("EventualRead/"+m+"/"+op, "EventualRead/synchronous/"+op))
			}
			rows = append(rows, row)
		}
		table(w, []string{"read", "synchronous", "eventual, queue empty", "eventual, a change pending"}, rows)
	}
	var rows [][]string
	for _, n := range r.names("Maintainer/") {
		rows = append(rows, []string{"maintainer, BatchSize " + strings.TrimPrefix(n, "Maintainer/batch-"),
			grouped(r.med(n, "changes/s")) + " changes/s, " + grouped(r.med(n, "mutations/s")) + " index mutations/s"})
	}
	if r.has("Backfill", "records/s") {
		rec := r.med("Backfill", "records/s")
		rows = append(rows, []string{"Build of one index over 1,000,000 records",
			fmt.Sprintf("%s records/s (%.1f s)", grouped(rec), 1e6/rec)})
	}
	for _, n := range r.names("Verify/") {
		rows = append(rows, []string{"Verify, two " + strings.TrimPrefix(n, "Verify/") + " indexes",
			grouped(r.med(n, "records/s")) + " records/s, " + grouped(r.med(n, "entries/s")) + " entries/s"})
	}
	if len(rows) > 0 {
		para(w, "Throughput of the maintainer (draining a queue of updates that moved both keys), of `Build` and of `Verify` (two synchronous indexes of each strategy), medians of the runs:")
		table(w, []string{"measure", "median"}, rows)
	}
	return nil
}

func writeAzurite(w io.Writer, r *run) error {
	base := "Azurite/write/fact-only"
	if !r.has(base, "ns/op") {
		return errors.New("no BenchmarkAzurite/write/fact-only results")
	}
	timeSpan := func(name, unit string) string {
		if !r.has(name, unit) {
			return "–"
		}
		lo, hi := r.span(name, unit)
		return fmt.Sprintf("%s (%s–%s)", duration(r.med(name, unit)), duration(lo), duration(hi))
	}
	var rows [][]string
	for _, n := range r.order {
		if !strings.HasPrefix(n, "Azurite/") {
			continue
		}
		label := strings.ReplaceAll(strings.TrimPrefix(n, "Azurite/"), "/", ", ")
		vs := ""
		switch {
		case n == base:
			vs = "the baseline"
		case strings.HasPrefix(n, "Azurite/write/"):
			vs = ratio(r.med(n, "ns/op"), r.med(base, "ns/op")) + " time, " +
				ratio(r.med(n, "round-trips/op"), r.med(base, "round-trips/op")) + " round trips"
		}
		rows = append(rows, []string{label, timeSpan(n, "ns/op"), num(r.med(n, "round-trips/op")), vs})
		if r.has(n, "apply-ns/op") {
			rows = append(rows, []string{"then the maintainer, per write", timeSpan(n, "apply-ns/op"), num(r.med(n, "apply-round-trips/op")), ""})
		}
	}
	fmt.Fprintf(w, "Medians of %d runs (least–most):\n\n", r.runs(base, "ns/op"))
	table(w, []string{"operation", "time", "round trips/op", "vs fact-only write"}, rows)
	writeTargets(w, writeAzureLoad(w, r))
	return nil
}

func writeSharded(w io.Writer, r *run) error {
	if len(r.names("Sharded/")) == 0 {
		return errors.New("no BenchmarkSharded results")
	}
	layouts := []string{"single", "leading4", "hash4"}
	r.medians(w, "Sharded/get/single")
	calls := func(n string) string {
		var parts []string
		for _, u := range []struct{ unit, label string }{
			{"scans/op", "scans"}, {"lookups/op", "lookups"}, {"shards/op", "shards"},
			{"batches/op", "batches"}, {"applied/op", "queued"},
		} {
			if r.has(n, u.unit) {
				v := num(r.med(n, u.unit))
				if u.unit == "applied/op" {
					v = fmt.Sprintf("%.0f%%", 100*r.med(n, u.unit))
				}
				parts = append(parts, u.label+" "+v)
			}
		}
		return strings.Join(parts, ", ")
	}
	cell := func(n, base string) string {
		if !r.has(n, "ns/op") {
			return "–"
		}
		return r.cell(n, base) + "; " + calls(n)
	}
	var rows [][]string
	for _, op := range []struct{ label, name string }{
		{"range of 100, keys-only", "range100/keys/"}, {"range of 100, full-copy", "range100/full/"},
		{"insert, with its share of the maintainer", "insert/"},
	} {
		row := []string{op.label}
		for _, l := range layouts {
			row = append(row, cell("Sharded/"+op.name+l, "Sharded/"+op.name+"single"))
		}
		rows = append(rows, row)
		if op.name == "range100/full/" {
			// A get does not depend on the index rule: one row, 4 shards under
			// the first rule.
			rows = append(rows, []string{"get by primary key (any rule)", cell("Sharded/get/single", ""),
				cell("Sharded/get/sharded4", "Sharded/get/single"), ""})
		}
	}
	table(w, []string{"operation", "one store", "4 shards, by leading key", "4 shards, by hash"}, rows)
	if r.has("ShardOf", "ns/op") {
		para(w, fmt.Sprintf("Finding a key's shard from its bytes (`ShardOf`, the cost a read pays to know where a record lies): %s, %s allocations.",
			duration(r.med("ShardOf", "ns/op")), num(r.med("ShardOf", "allocs/op"))))
	}
	return nil
}

func writeAzuriteCost(w io.Writer, r *run) error {
	sizes := []string{"500", "5000"}
	ops := []string{"read-actor", "read-actor-pending", "read-limit10-pending", "lag", "idle-maintainer", "maintainer"}
	if !r.has("AzuriteCost/500/read-actor", "requests/op") || !r.has("AzuriteCostBefore/500/read-actor", "requests/op") {
		return errors.New("no BenchmarkAzuriteCost results, before and after")
	}
	// before → after, of unit at movies.
	cell := func(op, movies, unit string) string {
		return num(r.med("AzuriteCostBefore/"+movies+"/"+op, unit)) + " → " + num(r.med("AzuriteCost/"+movies+"/"+op, unit))
	}
	head := []string{"operation"}
	for _, n := range sizes {
		head = append(head, n+" movies: requests", "table scans", "entities")
	}
	var rows [][]string
	for _, op := range ops {
		row := []string{op}
		for _, n := range sizes {
			row = append(row, cell(op, n, "requests/op"), cell(op, n, "table-scans/op"), cell(op, n, "entities/op"))
		}
		rows = append(rows, row)
	}
	runs := fmt.Sprintf("medians of %d runs", r.runs("AzuriteCost/500/read-actor", "requests/op"))
	if r.runs("AzuriteCost/500/read-actor", "requests/op") == 1 {
		runs = "one run"
	}
	fmt.Fprintf(w, "Per operation, %s, before → after; the idle maintainer sends %s requests a second (%s before):\n\n",
		runs, num(r.med("AzuriteCost/5000/idle-maintainer", "requests/s")), num(r.med("AzuriteCostBefore/5000/idle-maintainer", "requests/s")))
	table(w, head, rows)
	return nil
}
