package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// indexOps are the operations of the core's BenchmarkIndexes.
var indexOps = []string{"insert", "update-moving-key"}

// writeIndexes writes the table of the core's BenchmarkIndexes, if it ran
// (BenchmarkIndexes/k=<indexes>/<system>/<op>): the time of an insert and
// of an update with each number of indexes, of the floor, of the table
// without index (fact-only, at k=0) and of each strategy, each with its
// ratio to the floor's with as many indexes, and what the last index adds
// over one fewer, also as a ratio to the floor's insert with as many.
func writeIndexes(w io.Writer, r *run) {
	ks := r.systems("Indexes/") // k=0, k=1, ...
	if len(ks) == 0 {
		return
	}
	var systems []string
	for _, k := range ks {
		for _, sys := range r.systems("Indexes/" + k + "/") {
			if !slices.Contains(systems, sys) {
				systems = append(systems, sys)
			}
		}
	}
	para(w, fmt.Sprintf("What each index costs a write: the inserts and updates above (an update moves the "+
		"Town+LastName key), binary codec, into tables of the 100,000 customers with 0 to %d indexes, "+
		"Town+LastName, then LastName, Email and FirstName+LastName, of each strategy, against the floor kept "+
		"by hand with the same indexes (a tree of record pointers an index, so that its update deletes and "+
		"reinserts an entry in every tree), in the same run. Each time has its ratio to the floor's with as many "+
		"indexes; an \"adds\" cell is what the last index adds over one fewer, and that as a ratio to the "+
		"floor's insert with as many indexes. Medians of %d runs:",
		len(ks)-1, r.runs(r.names("Indexes/")[0], "ns/op")))
	var rows [][]string
	for _, sys := range systems {
		prev := "" // the row before's k, for the same system or, at k=1, fact-only
		if sys != "floor" && sys != "fact-only" {
			prev = "k=0"
		}
		for _, k := range ks {
			row, ok := r.indexRow(sys, k, prev)
			if ok {
				rows = append(rows, row)
				prev = k
			}
		}
	}
	table(w, []string{"system", "indexes", "insert", "the last index adds", "update-moving-key", "the last index adds"}, rows)
}

// indexRow is the row of sys with k indexes, after the row of prev (none
// if empty), whose system at k=0 is fact-only unless sys is the floor;
// false if sys did not run with k indexes.
func (r *run) indexRow(sys, k, prev string) ([]string, bool) {
	name := func(k, sys, op string) string {
		if k == "k=0" && sys != "floor" {
			sys = "fact-only"
		}
		return "Indexes/" + k + "/" + sys + "/" + op
	}
	if !r.has(name(k, sys, "insert"), "ns/op") && !r.has(name(k, sys, "update-moving-key"), "ns/op") {
		return nil, false
	}
	if k == "k=0" && sys != "floor" && sys != "fact-only" {
		return nil, false // fact-only's row, once
	}
	row := []string{sys, strings.TrimPrefix(k, "k=")}
	floorInsert := r.med(name(k, "floor", "insert"), "ns/op")
	for _, op := range indexOps {
		n := name(k, sys, op)
		row = append(row, r.cell(n, name(k, "floor", op)))
		added := "–"
		if prev != "" && r.has(n, "ns/op") && r.has(name(prev, sys, op), "ns/op") {
			d := r.med(n, "ns/op") - r.med(name(prev, sys, op), "ns/op")
			sign := "+"
			if d < 0 {
				sign = "-"
			}
			added = sign + duration(math.Abs(d))
			if floorInsert > 0 {
				added += fmt.Sprintf(" (%+.2fx)", d/floorInsert)
			}
		}
		row = append(row, added)
	}
	return row, true
}
