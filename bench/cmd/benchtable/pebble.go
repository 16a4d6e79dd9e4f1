package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// pebbleSection is results.md's section of `make bench-pebble`.
var pebbleSection = section{
	title: "Pebble", file: "pebble.txt", target: "make bench-pebble",
	about: `The customers and indexes of the first section (binary codec) on pebblestore, against raw: the same
records written as plain Pebble batches (the primary key to the encoded record, no index), in the
same run. Inserts add new customers between the loaded ones, durable (the default: the write-ahead
log is synced) or NoSync; raw checked is a raw write preceded by a Get of its key, the least an
insert that refuses a taken key must do. Updates move a loaded customer's keys in both indexes,
NoSync. Beside raw, raw-indexed is each strategy's floor: the same records with their entries in the
two indexes, keys and values written by hand as the table writes them, so that its LSM holds what
the table's does; its insert is one batch of the record and its two entries, its update a Get of the
record, then one batch that deletes its old entries and sets the moved record and its new entries,
its get a Get of the record whose value is copied out. Reads start with a warm 64 MiB block cache.
Disk bytes are measured after a full compaction; "as stored" counts the keys and values before
compression.
`,
	notes: `A durable insert waits for the write-ahead log's fsync, which on most disks outweighs the rest, and
which concurrent load on the machine makes vary most. A NoSync insert writes three keys where raw
writes one, in the memtable and in every later compaction, which shares the cores with the writer.
Against raw-indexed, which writes the same keys and reads nothing, an insert first reads its
record's key, which it expects absent (a seek that consults every level's bloom filters, the last
level's included), then commits the same batch; the schema version it also expects comes from the
store's cache, read once. An update reads its record as raw-indexed does, and the store checks the
batch's expectation of it against the value that read cached, so it reads nothing more. A get
decodes the record where raw-indexed only copies its bytes. A keys-only or partial range makes 100
point reads in the fact table (one iterator, in key order); a full-copy range reads one contiguous
range. Index keys compress well; full copies do not. A Load batch, like raw's, waits for one fsync,
but it first reads each record's key (the insert expects it absent: the batch's keys in key order,
with one iterator), then writes three keys a record where raw writes one, and the flushes and
compactions of that data share the two cores with the load. Build reads the records back and writes
their entries in batches of its own (ChunkSize records), each synced.
`,
	write: writePebble,
}

// pebbleLoad is pebblestore's BenchmarkLoad.
var pebbleLoad = loadSpec{
	base: "raw", baseLabel: "raw, batches of 1,000", baseRef: "raw",
	intro: "Bulk loads of the 100,000 customers of the first section's loads into an empty table on a new " +
		"durable store (the default: each batch waits for the write-ahead log's fsync), against raw: the same " +
		"fact keys and values written as Pebble batches of 1,000 records, each committed with Sync, no index and " +
		"no read, in the same run. `Load` has the two indexes, of each strategy; `Load, then Build` loads " +
		"without them and then builds them.",
	floor: "raw-indexed", floorLimit: 1.5,
	floorIntro: "raw-indexed, of each strategy, is raw's batches with each record's entries in the two indexes " +
		"besides, keys and values built by hand as the table writes them: three keys a record and no read, the " +
		"least any load of those keys costs.",
}

func writePebble(w io.Writer, r *run) error {
	sizes := r.systems("Pebble/")
	if len(sizes) == 0 {
		return errors.New("no BenchmarkPebble results")
	}
	strategies := []string{"keys-only", "partial", "full-copy"}
	var ts []target
	for _, size := range sizes {
		p := "Pebble/" + size + "/"
		raw := func(op string) string { return p + "raw/" + op }
		fmt.Fprintf(w, "### %s records\n\n", size)
		r.medians(w, raw("get"))
		var rows [][]string
		add := func(label string, rawCell string, cell func(st string) string) {
			row := []string{label, rawCell}
			for _, st := range strategies {
				row = append(row, cell(st))
			}
			rows = append(rows, row)
		}
		add("insert, durable", r.cell(raw("insert-sync"), ""), func(st string) string {
			return r.cell(p+st+"/insert-sync", raw("insert-sync"))
		})
		add("insert, NoSync", r.cell(raw("insert-nosync"), "")+"; checked "+r.cell(raw("insert-checked-nosync"), ""),
			func(st string) string {
				s := r.cell(p+st+"/insert-nosync", raw("insert-nosync"))
				if r.has(raw("insert-checked-nosync"), "ns/op") && r.has(p+st+"/insert-nosync", "ns/op") {
					s += "; " + ratio(r.med(p+st+"/insert-nosync", "ns/op"), r.med(raw("insert-checked-nosync"), "ns/op")) + " checked"
				}
				return s
			})
		add("get by primary key", r.cell(raw("get"), ""), func(st string) string { return r.cell(p+st+"/get", raw("get")) })
		add("lookup (one record)", "", func(st string) string { return r.cell(p+st+"/lookup", "") })
		add("range100 in order", "", func(st string) string { return r.cell(p+st+"/range100", "") })
		for _, u := range []struct{ label, unit string }{{"disk bytes/record, compacted", "disk-B/record"}, {"bytes/record as stored", "kv-B/record"}} {
			rawV := r.med(raw("disk"), u.unit)
			add(u.label, num(rawV), func(st string) string {
				v := r.med(p+st+"/disk", u.unit)
				if v == 0 {
					return "–"
				}
				return num(v) + " (" + ratio(v, rawV) + ")"
			})
		}
		table(w, append([]string{"operation", "raw"}, strategies...), rows)
		ts = append(ts, writeRawIndexed(w, r, p, size)...)
		ts = append(ts, atMost("keys-only durable insert at most 2x raw, "+size, r.med(p+"keys-only/insert-sync", "ns/op"), r.med(raw("insert-sync"), "ns/op"), 2)...)
	}
	if len(r.names("Load/")) > 0 {
		fmt.Fprint(w, "### Bulk load\n\n")
		ts = append(ts, writeLoad(w, r, pebbleLoad)...)
	}
	writeTargets(w, ts)
	return nil
}

// rawIndexedOps are the operations BenchmarkPebble measures of each
// strategy and of its raw-indexed floor, with their targets (issue 22): at
// most limit times the floor.
var rawIndexedOps = []struct {
	op, label string
	limit     float64
}{
	{"insert-nosync", "insert, NoSync", 2},
	{"update-nosync", "update moving both keys, NoSync", 2},
	{"get", "get by primary key", 1.2},
}

// writeRawIndexed writes, for the records of size under prefix p, the
// table of each strategy's NoSync insert, update and get against its
// raw-indexed floor, if that ran, and returns the targets. Partial has no
// floor of its own: its cells compare it with keys-only's, the floor of
// its keys without its projection.
func writeRawIndexed(w io.Writer, r *run, p, size string) []target {
	floors := r.systems(p + "raw-indexed/")
	if len(floors) == 0 {
		return nil
	}
	floor := func(st, op string) string { return p + "raw-indexed/" + st + "/" + op }
	para(w, fmt.Sprintf("Against raw-indexed, each strategy's floor, in the same run (medians of %d runs; "+
		"partial, which has none by hand, against keys-only's):", r.runs(floor(floors[0], "get"), "ns/op")))
	head := []string{"strategy"}
	for _, o := range rawIndexedOps {
		head = append(head, o.label)
	}
	var rows [][]string
	var ts []target
	for _, st := range []string{"keys-only", "partial", "full-copy"} {
		base := st
		if st == "partial" {
			base = "keys-only"
		}
		if st != "partial" && slices.Contains(floors, st) {
			row := []string{"raw-indexed, " + st}
			for _, o := range rawIndexedOps {
				row = append(row, r.cell(floor(st, o.op), ""))
			}
			rows = append(rows, row)
		}
		if !r.has(p+st+"/get", "ns/op") {
			continue
		}
		row := []string{st}
		for _, o := range rawIndexedOps {
			row = append(row, r.cell(p+st+"/"+o.op, floor(base, o.op)))
			if st != base {
				continue
			}
			ts = append(ts, atMost(fmt.Sprintf("%s %s at most %gx raw-indexed, %s", st, o.label, o.limit, size),
				r.med(p+st+"/"+o.op, "ns/op"), r.med(floor(st, o.op), "ns/op"), o.limit)...)
		}
		rows = append(rows, row)
	}
	table(w, head, rows)
	return ts
}
