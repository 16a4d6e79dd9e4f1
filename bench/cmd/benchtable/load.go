package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// The ways BenchmarkLoad fills an empty table, in the core and in
// pebblestore (BenchmarkLoad/<strategy>/<way>), and their columns.
var loadWays = []struct{ way, head string }{
	{"indexed", "Load"},
	{"then-build", "Load, then Build"},
	{"inserts", "one Insert a record"},
}

// loadSpec says what a run of BenchmarkLoad in the core or in pebblestore
// compares with.
type loadSpec struct {
	base      string // the baseline's name: Load/<base>
	baseLabel string // its row's label
	baseRef   string // how the text names it: "the floor"
	intro     string // what was measured, before the figures
	// A floor of each strategy, Load/<floor>/<strategy>, if the benchmark
	// has one: the least any load of that strategy's keys costs.
	floor      string
	floorIntro string  // what it is, said when it ran
	floorLimit float64 // the target: Load at most floorLimit times it
}

// writeLoad writes the table of BenchmarkLoad in the core or in
// pebblestore, if it ran: the time per record of each strategy's ways,
// each with its ratio to the baseline's and, for the other ways, to
// Load's; and of the strategies' floors, if they ran, with Load's ratio to
// its floor. It returns the targets that each strategy's Load take at most
// 2x the baseline's time, and at most floorLimit times its floor's.
func writeLoad(w io.Writer, r *run, spec loadSpec) []target {
	baseName := "Load/" + spec.base
	if !r.has(baseName, "ns/record") {
		return nil
	}
	baseNs := r.med(baseName, "ns/record")
	strategies, floors := loadStrategies(r, spec)
	var ways, heads []string
	for _, lw := range loadWays {
		for _, st := range strategies {
			if r.has("Load/"+st+"/"+lw.way, "ns/record") {
				ways, heads = append(ways, lw.way), append(heads, lw.head)
				break
			}
		}
	}
	intro := spec.intro
	each := "its ratio to " + spec.baseRef + "'s, and for the other ways to Load's"
	if len(floors) > 0 {
		intro += " " + spec.floorIntro
		each = "its ratio to " + spec.baseRef + "'s, for Load also to its strategy's " + spec.floor + ", and for the other ways to Load's"
	}
	cpu := len(strategies) > 0 && r.has(baseName, "cpu-ns/record") && r.has("Load/"+strategies[0]+"/indexed", "cpu-ns/record")
	if cpu {
		each += "; the last column is Load's CPU time per record (the whole process's, the garbage collector's included) and its ratio to " + spec.baseRef + "'s: Load applies a batch while it encodes the next, on two cores"
		heads = append(heads, "Load, CPU time")
	}
	para(w, fmt.Sprintf("%s Each cell is the median time per record of a whole load and %s; medians of %d runs:",
		intro, each, r.runs(baseName, "ns/record")))
	baseCPU := r.med(baseName, "cpu-ns/record")
	rows := [][]string{loadRow(spec.baseLabel, duration(baseNs), len(ways))}
	if cpu {
		rows[0] = append(rows[0], duration(baseCPU))
	}
	for _, st := range strategies {
		if ns, ok := floors[st]; ok {
			rows = append(rows, loadRow(spec.floor+", "+st, duration(ns)+" ("+ratio(ns, baseNs)+")", len(heads)))
		}
	}
	var ts []target
	for _, st := range strategies {
		row := []string{st}
		load := r.med("Load/"+st+"/indexed", "ns/record")
		floor, hasFloor := floors[st]
		for _, way := range ways {
			name := "Load/" + st + "/" + way
			if !r.has(name, "ns/record") {
				row = append(row, "–")
				continue
			}
			ns := r.med(name, "ns/record")
			cell := duration(ns) + " (" + ratio(ns, baseNs)
			switch {
			case way == "indexed" && hasFloor:
				cell += "; " + ratio(ns, floor) + " " + spec.floor
			case way != "indexed" && load > 0:
				cell += "; " + ratio(ns, load) + " Load"
			}
			row = append(row, cell+")")
		}
		if cpu {
			ns := r.med("Load/"+st+"/indexed", "cpu-ns/record")
			row = append(row, duration(ns)+" ("+ratio(ns, baseCPU)+")")
		}
		rows = append(rows, row)
		ts = append(ts, atMost(st+" Load at most 2x "+spec.baseRef, load, baseNs, 2)...)
		if hasFloor {
			ts = append(ts, atMost(fmt.Sprintf("%s Load at most %gx %s", st, spec.floorLimit, spec.floor), load, floor, spec.floorLimit)...)
		}
	}
	table(w, append([]string{"strategy"}, heads...), rows)
	return ts
}

// loadStrategies returns the strategies of a run of BenchmarkLoad, in
// order, and the median time per record of each one's floor that ran.
func loadStrategies(r *run, spec loadSpec) (strategies []string, floors map[string]float64) {
	floors = map[string]float64{}
	for _, n := range r.names("Load/") {
		st, rest, ok := strings.Cut(strings.TrimPrefix(n, "Load/"), "/")
		switch {
		case !ok:
		case spec.floor != "" && st == spec.floor:
			if r.has(n, "ns/record") {
				floors[rest] = r.med(n, "ns/record")
			}
		case !slices.Contains(strategies, st):
			strategies = append(strategies, st)
		}
	}
	return strategies, floors
}

// loadRow is a row of a baseline: its label, its time in the first way's
// column, and none in the others'.
func loadRow(label, cell string, ways int) []string {
	row := []string{label, cell}
	for range ways - 1 {
		row = append(row, "–")
	}
	return row
}

// writeTx writes the table of BenchmarkTx, if it ran: a transaction of two
// writes against one write alone, timed apart in each iteration. It
// returns the target that the transaction take at most 2.2x the single
// write's time, on the medians of the iterations' ratios (tx/single).
func writeTx(w io.Writer, r *run) []target {
	var rows [][]string
	var ts []target
	kinds := r.names("Tx/")
	for _, n := range kinds {
		if !r.has(n, "tx/single") {
			continue
		}
		kind := strings.TrimPrefix(n, "Tx/")
		x := r.med(n, "tx/single")
		rows = append(rows, []string{kind, duration(r.med(n, "single-ns/op")), duration(r.med(n, "tx2-ns/op")), fmt.Sprintf("%.2fx", x)})
		ts = append(ts, target{"a transaction of two " + kind + "s at most 2.2x a single " + kind, fmt.Sprintf("%.2fx", x), x <= 2.2})
	}
	if len(rows) == 0 {
		return nil
	}
	para(w, fmt.Sprintf("Transactions: in the binary / keys-only table of 100,000 customers, each iteration writes one record alone (Insert or Upsert), then two others in one `Tx`, the two timed apart; the ratio is the median of the runs' ratios of total times. Medians of %d runs:", r.runs(kinds[0], "tx/single")))
	table(w, []string{"write", "single write", "transaction of two", "transaction / single"}, rows)
	return ts
}

// writeAzureLoad writes the table of azstore's BenchmarkLoad, if it ran:
// requests, transactions and time per record of each load, and of the
// maintainer that then drained the queue. It returns the target that a
// load send at most 0.1 requests a record.
func writeAzureLoad(w io.Writer, r *run) []target {
	names := r.names("Load/")
	if len(names) == 0 {
		return nil
	}
	para(w, fmt.Sprintf("Bulk loads (`Load`) of 2,000 customers keyed by (Town, ID) into an empty table: each of the 20 towns is a partition of 100 records, which arrive in turn. `intra` has two keys-only indexes that lead with Town, in their records' partitions; `intra+inter` has one of them and a LastName index, inter-partition, whose entries a maintainer writes after the load (untimed, default MaintainerOptions; its own columns, per record loaded). Medians of %d runs:", r.runs(names[0], "requests/record")))
	label := map[string]string{"intra": "two intra-partition", "intra+inter": "intra- and inter-partition"}
	var rows [][]string
	var ts []target
	for _, n := range names {
		ix := strings.TrimPrefix(n, "Load/")
		if l, ok := label[ix]; ok {
			ix = l
		}
		cells := []string{ix}
		for _, p := range []string{"", "maintainer-"} {
			if !r.has(n, p+"requests/record") {
				cells = append(cells, "–", "–", "–")
				continue
			}
			cells = append(cells, num(r.med(n, p+"requests/record")), num(r.med(n, p+"transactions/record")), duration(r.med(n, p+"ns/record")))
		}
		rows = append(rows, cells)
		req := r.med(n, "requests/record")
		detail := num(req)
		if r.has(n, "maintainer-requests/record") {
			detail += fmt.Sprintf("; the maintainer then %s", num(r.med(n, "maintainer-requests/record")))
		}
		ts = append(ts, target{"Load, " + ix + " indexes, at most 0.1 requests a record", detail, req <= 0.1})
	}
	table(w, []string{"indexes", "requests/record", "transactions/record", "time/record",
		"maintainer: requests/record", "transactions/record", "time/record"}, rows)
	return ts
}
