package main

import (
	"errors"
	"io"
	"slices"
)

// etcdSection is results.md's section of `make bench-etcd`.
var etcdSection = section{
	title: "etcd", file: "etcd.txt", target: "make bench-etcd",
	about: `The customers and indexes of the first section (binary codec) on etcdstore, on a 3-member etcd
cluster embedded in the benchmark's process (etcdstore's etcdtest: loopback, no fsync), against raw:
plain etcd client calls on the same cluster, in the same run. Each table is loaded first with 20,000
customers, 200 a town, and so are raw's keys. An insert adds a new customer; raw's is a Put of the
same record bytes (its version, then its encoding) under its key. A range reads the first 100
customers of a town in LastName order through the Town+LastName index; raw's is a range Get, limit
100, of a copy of the records keyed by town, surname and ID, decoded. Round trips are the gRPC
calls the client sent, counted by an interceptor, retries and the guards' lease grants (one a
minute) included. Each cell: the median time, its ratio to raw's, and the round trips per
operation.
`,
	notes: `Every request goes through the Raft leader: a write waits until a majority of the members have
appended it, and a linearizable read until the leader has confirmed its leadership with them, so
an operation's time follows its round trips more than what they carry. An insert is one
transaction, as raw's Put is one request: its compares (the record and the store's guard absent)
and its puts (the record, its two entries and the guard) cost the members more work, not more
round trips. A keys-only range reads its entries, one range request, then its records with
batched gets, one transaction of gets for each chunk of records the table fetches; a full-copy
range reads the records from its entries, one range request, after one of the table's queue: on
a store of bounded atomicity, etcd's, a write may fall back to the queue, so a full-copy read
checks it first. The members share the machine's cores with the benchmark.
`,
	write: writeEtcd,
}

// etcdOps are BenchmarkEtcd's operations, in the order of the table.
var etcdOps = []struct{ label, op string }{
	{"insert", "insert"},
	{"range of 100 in order", "range100"},
}

func writeEtcd(w io.Writer, r *run) error {
	var systems []string
	for _, o := range etcdOps {
		for _, s := range r.systems("Etcd/" + o.op + "/") {
			if s != "raw" && !slices.Contains(systems, s) {
				systems = append(systems, s)
			}
		}
	}
	base := ""
	for _, o := range etcdOps {
		if n := "Etcd/" + o.op + "/raw"; base == "" && r.has(n, "ns/op") {
			base = n
		}
	}
	if base == "" {
		return errors.New("no BenchmarkEtcd raw results")
	}
	r.medians(w, base)
	var rows [][]string
	for _, o := range etcdOps {
		raw := "Etcd/" + o.op + "/raw"
		row := []string{o.label, r.etcdCell(raw, "")}
		for _, s := range systems {
			row = append(row, r.etcdCell("Etcd/"+o.op+"/"+s, raw))
		}
		rows = append(rows, row)
	}
	table(w, append([]string{"operation", "raw"}, systems...), rows)
	return nil
}

// etcdCell is cell's median time of name and its ratio to base's, then
// its round trips per operation.
func (r *run) etcdCell(name, base string) string {
	s := r.cell(name, base)
	if !r.has(name, "round-trips/op") {
		return s
	}
	trips := r.med(name, "round-trips/op")
	s += "; " + num(trips) + " round trip"
	if trips != 1 {
		s += "s"
	}
	return s
}
