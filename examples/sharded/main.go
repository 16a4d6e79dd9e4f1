// Command sharded runs the customer example over 4 shards, as in the Index
// Table pattern's figure 6: the fact table is sharded by a hash of the
// customer ID, and the index tables by Town (its leading key) or by hash.
// For each query it prints which shards the index scans, the record fetches
// and the queue checks touched.
package main

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/examples/internal/examplestore"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
)

// Customer is a record of the fact table: the examples' customer, with an
// ID, FirstName, LastName, Town, Email and Phone. The first ten are
// fixture.ExampleCustomers.
type Customer = fixture.Customer

const shards = 4

func main() { examplestore.MainShards(shards, run) }

// run opens the customers' table over the shards, loads it on a first
// run, then reads it: each query says which shards it touched.
func run(ctx context.Context, stores []kv.Store) error {
	counters := make([]*counted, len(stores))
	for i, s := range stores {
		counters[i] = &counted{Store: s}
		stores[i] = counters[i]
	}
	// The LastName index is sharded by hash, to spread a common name; the
	// others by their leading key, Town.
	store, err := indextable.OpenShardedStore(ctx, stores,
		indextable.WithShardedIndex("customers", "lastname", indextable.ShardByHash))
	if err != nil {
		return err
	}
	defer store.Close()
	table, err := indextable.Open(ctx, store, indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Customer]{
			{Name: "town_lastname_full", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
			{Name: "town_lastname_keys", Fields: []string{"Town", "LastName"}, Strategy: indextable.KeysOnly},
			{Name: "lastname", Fields: []string{"LastName"}},
		},
	})
	if err != nil {
		return err
	}
	if err := load(ctx, table); err != nil {
		return err
	}
	if err := printShards(ctx, store); err != nil {
		return err
	}
	if err := printQueries(ctx, table, counters); err != nil {
		return err
	}
	if err := printPages(ctx, table); err != nil {
		return err
	}
	return verify(ctx, table)
}

// load inserts the customers, unless an earlier run on the same stores
// did, and applies the changes that their writes queued.
func load(ctx context.Context, table *indextable.Table[Customer]) error {
	n, err := table.Count(ctx, indextable.Query{})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Printf("Found %d customers from an earlier run, and their index tables.\n", n)
		return nil
	}
	all := slices.Clone(fixture.ExampleCustomers)
	towns := []string{"Kirkland", "Bothell", "Renton"}
	lastNames := []string{"Garcia", "Kim", "Nguyen", "Olsen", "Smith"}
	for i := range 30 {
		all = append(all, Customer{ID: fmt.Sprintf("C%02d", 11+i), FirstName: "F" + fmt.Sprint(i), LastName: lastNames[i%5], Town: towns[i%3]})
	}
	for _, c := range all {
		if _, err := table.Insert(ctx, c); err != nil {
			return err
		}
	}
	// A write whose index entries lie on other shards than its record
	// committed the record with a change record; the maintainer applies
	// the entries.
	applied := 0
	for {
		n, err := table.ApplyPending(ctx, indextable.MaintainerOptions{})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		applied += n
	}
	fmt.Printf("Inserted %d customers over %d shards; the maintainer applied %d queued changes to index shards.\n",
		len(all), shards, applied)
	return nil
}

// printShards prints how many customers' records each shard holds.
func printShards(ctx context.Context, store *indextable.ShardedStore) error {
	perShard := make([]string, shards)
	for i := range shards {
		n := 0
		for _, err := range store.Shard(i).Scan(ctx, kv.ScanRange{Start: factSpace, End: factEnd}) {
			if err != nil {
				return err
			}
			n++
		}
		perShard[i] = fmt.Sprint(n)
	}
	fmt.Printf("Customers per shard (by a hash of the ID): %s\n\n", strings.Join(perShard, " "))
	return nil
}

// printQueries runs a read by ID and queries of each index, and prints
// what each returned and which shards it touched.
func printQueries(ctx context.Context, table *indextable.Table[Customer], counters []*counted) error {
	show := func(title string, read func() (iter.Seq2[Customer, error], error)) error {
		before := snapshot(counters)
		fmt.Println(title + ":")
		seq, err := read()
		if err != nil {
			return err
		}
		for c, err := range seq {
			if err != nil {
				return err
			}
			fmt.Printf("  %-4s %-5s %-6s %s\n", c.ID, c.FirstName, c.LastName, c.Town)
		}
		report(before, snapshot(counters))
		return nil
	}
	find := func(q indextable.Query) func() (iter.Seq2[Customer, error], error) {
		return func() (iter.Seq2[Customer, error], error) { return table.Find(ctx, q), nil }
	}
	queries := []struct {
		title string
		read  func() (iter.Seq2[Customer, error], error)
	}{
		{"Customer C05, by ID", func() (iter.Seq2[Customer, error], error) {
			c, err := table.Get(ctx, "C05")
			return func(yield func(Customer, error) bool) { yield(c, nil) }, err
		}},
		{"All customers in Redmond, by LastName (full copy, index sharded by Town)",
			find(indextable.Query{Index: "town_lastname_full", Eq: indextable.Tuple{"Redmond"}})},
		{"All customers in Redmond, by LastName (keys only, index sharded by Town)",
			find(indextable.Query{Index: "town_lastname_keys", Eq: indextable.Tuple{"Redmond"}})},
		{"Customers in Redmond named Smith (full copy)",
			find(indextable.Query{Index: "town_lastname_full", Eq: indextable.Tuple{"Redmond", "Smith"}})},
		{"Customers named Smith anywhere (keys only, index sharded by hash)",
			find(indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Smith"}})},
		{"The first 4 customers by Town, LastName (a range over every town)",
			find(indextable.Query{Index: "town_lastname_full", Limit: 4})},
	}
	for _, q := range queries {
		if err := show(q.title, q.read); err != nil {
			return err
		}
	}
	return nil
}

// printPages reads the customers named Smith in pages with cursors over
// the hash-sharded index: each page merges the shards' ordered streams,
// and its cursor resumes all of them.
func printPages(ctx context.Context, table *indextable.Table[Customer]) error {
	fmt.Println("Customers named Smith, two per page (index sharded by hash):")
	q := indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Smith"}, Limit: 2}
	for page := 1; ; page++ {
		recs, next, err := table.FindPage(ctx, q)
		if err != nil {
			return err
		}
		ids := make([]string, len(recs))
		for i, c := range recs {
			ids[i] = c.ID
		}
		fmt.Printf("  page %d: %s\n", page, strings.Join(ids, ", "))
		if next == "" {
			return nil
		}
		q.Cursor = next
	}
}

// verify checks the records and index entries across the shards.
func verify(ctx context.Context, table *indextable.Table[Customer]) error {
	rep, err := table.Verify(ctx, indextable.VerifyOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("\nVerify across the shards: %d records and %d index entries read, %d findings\n",
		rep.Records, rep.Entries, rep.Total())
	return nil
}

// The keys of the customers' records: the table's name, then space 0.
var (
	factSpace = must(kv.EncodeTuple("customers", 0))
	factEnd   = append(slices.Clone(factSpace), 0xFF)
)

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// counted counts what one shard serves, by kind.
type counted struct {
	kv.Store
	indexScans, queueScans, gets atomic.Int64
}

// counts is what one shard served.
type counts struct{ indexScans, queueScans, gets int64 }

func (c *counted) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if t := decodeLeading(r.Start); len(t) == 2 {
		switch t[1] {
		case int64(1), int64(5): // an index table
			c.indexScans.Add(1)
		case int64(3): // the queue
			c.queueScans.Add(1)
		}
	}
	return c.Store.Scan(ctx, r)
}

func (c *counted) Get(ctx context.Context, key []byte) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *counted) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	c.gets.Add(1)
	return c.Store.GetMany(ctx, keys, dst)
}

// decodeLeading decodes the table name and space that start key.
func decodeLeading(key []byte) indextable.Tuple {
	var t indextable.Tuple
	for len(t) < 2 {
		v, rest, err := kv.DecodeElement(key)
		if err != nil {
			break
		}
		t, key = append(t, v), rest
	}
	return t
}

func snapshot(cs []*counted) []counts {
	out := make([]counts, len(cs))
	for i, c := range cs {
		out[i] = counts{c.indexScans.Load(), c.queueScans.Load(), c.gets.Load()}
	}
	return out
}

// report prints which shards served the index scans, the record fetches
// and the queue checks between two snapshots.
func report(before, after []counts) {
	var index, fetch, queue []string
	lookups := int64(0)
	for i := range after {
		d := counts{after[i].indexScans - before[i].indexScans, after[i].queueScans - before[i].queueScans, after[i].gets - before[i].gets}
		if d.indexScans > 0 {
			index = append(index, fmt.Sprint(i))
		}
		if d.gets > 0 {
			fetch = append(fetch, fmt.Sprint(i))
		}
		if d.queueScans > 0 {
			queue = append(queue, fmt.Sprint(i))
		}
		lookups += d.indexScans + d.queueScans + d.gets
	}
	fmt.Printf("  index shards scanned: %s; record fetches from shards: %s; queue checked on shards: %s; store lookups: %d\n\n",
		list(index), list(fetch), list(queue), lookups)
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", len(s), strings.Join(s, " "))
}
