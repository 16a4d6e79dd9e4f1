// Command customers runs the Index Table pattern's customer example: a fact
// table of customers keyed by ID, with index tables by Town, by LastName and
// by Town then LastName, and shows what each strategy costs a read.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/examples/internal/examplestore"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
)

// Customer is a record of the fact table: the examples' customer, with an
// ID, FirstName, LastName, Town, Email and Phone. The ten customers it
// inserts are fixture.ExampleCustomers.
type Customer = fixture.Customer

func main() { examplestore.Main(run) }

// run opens the customers' table, loads it on a first run, then reads
// and writes it, printing what each read cost the store.
func run(ctx context.Context, s kv.Store) error {
	store := countingstore.New(s)

	// The same composite Town, LastName key in each of the three strategies,
	// so their costs can be compared, plus a LastName index, a Town index
	// and a unique, sparse Email index (C04 has no email and is not in it).
	table, err := indextable.Open(ctx, store, indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Customer]{
			{Name: "town_lastname_keys", Fields: []string{"Town", "LastName"}, Strategy: indextable.KeysOnly},
			{Name: "town_lastname_full", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
			{Name: "town_lastname_partial", Fields: []string{"Town", "LastName"}, Strategy: indextable.Partial,
				Projection: []string{"FirstName"}},
			{Name: "town", Fields: []string{"Town"}},
			{Name: "lastname", Fields: []string{"LastName"}},
			{Name: "email", Fields: []string{"Email"}, Unique: true, Sparse: true},
		},
	})
	if err != nil {
		return err
	}
	if err := load(ctx, table, store); err != nil {
		return err
	}
	if err := printQueries(ctx, table, store); err != nil {
		return err
	}
	for _, step := range []func(context.Context, *indextable.Table[Customer]) error{
		printPages, printCount, showWrites, printAdvice,
	} {
		if err := step(ctx, table); err != nil {
			return err
		}
	}
	return nil
}

// load inserts the customers, unless an earlier run did, and prints what
// the inserts cost.
func load(ctx context.Context, table *indextable.Table[Customer], store *countingstore.Store) error {
	// A store that outlives the run (-pebble) holds the customers of an
	// earlier run, with their index tables.
	n, err := table.Count(ctx, indextable.Query{})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Printf("Found %d customers from an earlier run, and their index tables.\n\n", n)
		return nil
	}
	before := store.Counts()
	for _, c := range fixture.ExampleCustomers {
		if _, err := table.Insert(ctx, c); err != nil {
			return err
		}
	}
	w := store.Counts().Sub(before)
	fmt.Printf("Inserted %d customers: %d atomic batches of %.1f operations each (record, index entries, guards, schema version).\n\n",
		len(fixture.ExampleCustomers), w.Applies, float64(w.Ops)/float64(w.Applies))
	return nil
}

// printQueries runs queries of each index and prints what they returned
// and what each cost the store.
func printQueries(ctx context.Context, table *indextable.Table[Customer], store *countingstore.Store) error {
	queries := []struct {
		title string
		q     indextable.Query
	}{
		{"All customers in Redmond, by LastName (keys only)", indextable.Query{Index: "town_lastname_keys", Eq: indextable.Tuple{"Redmond"}}},
		{"All customers in Redmond, by LastName (full copy)", indextable.Query{Index: "town_lastname_full", Eq: indextable.Tuple{"Redmond"}}},
		{"All customers in Redmond, by LastName (partial, covered)", indextable.Query{Index: "town_lastname_partial", Eq: indextable.Tuple{"Redmond"}, Covered: true}},
		{"All customers in Redmond, by LastName (partial, whole records)", indextable.Query{Index: "town_lastname_partial", Eq: indextable.Tuple{"Redmond"}}},
		{"Customers in Redmond named Smith", indextable.Query{Index: "town_lastname_full", Eq: indextable.Tuple{"Redmond", "Smith"}}},
		{"Customers in Redmond with LastName from P on", indextable.Query{Index: "town_lastname_full", Eq: indextable.Tuple{"Redmond"}, Lower: indextable.Inclusive("P")}},
		{"Customers named Smith anywhere, by descending ID", indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Smith"}, Reverse: true}},
		{"Customer with email eva@example.com", indextable.Query{Index: "email", Eq: indextable.Tuple{"eva@example.com"}}},
	}
	for _, item := range queries {
		before := store.Counts()
		fmt.Println(item.title + ":")
		for c, err := range table.Find(ctx, item.q) {
			if err != nil {
				return err
			}
			fmt.Printf("  %-4s %-6s %-6s %-9s %-17s %s\n", c.ID, c.FirstName, c.LastName, c.Town, c.Email, c.Phone)
		}
		cost := store.Counts().Sub(before)
		fmt.Printf("  store lookups: %d (index scans: %d, reading %d entries; batched fact fetches: %d, of %d records)\n\n",
			cost.Lookups(), cost.Scans, cost.ScanEntries, cost.GetManys, cost.ManyKeys)
	}
	return nil
}

// printPages reads all towns' customers in pages with continuation
// cursors.
func printPages(ctx context.Context, table *indextable.Table[Customer]) error {
	fmt.Println("All towns' customers by Town, LastName, two per page:")
	q := indextable.Query{Index: "town_lastname_full", Limit: 2}
	for page := 1; ; page++ {
		recs, next, err := table.FindPage(ctx, q)
		if err != nil {
			return err
		}
		names := make([]string, len(recs))
		for i, c := range recs {
			names[i] = c.Town + "/" + c.LastName
		}
		fmt.Printf("  page %d: %s\n", page, strings.Join(names, ", "))
		if next == "" {
			break
		}
		q.Cursor = next
	}
	return nil
}

// printCount counts Redmond's customers from an index, without decoding
// them.
func printCount(ctx context.Context, table *indextable.Table[Customer]) error {
	n, err := table.Count(ctx, indextable.Query{Index: "town", Eq: indextable.Tuple{"Redmond"}})
	if err != nil {
		return err
	}
	fmt.Printf("\nCustomers in Redmond, counted from the index without decoding: %d\n", n)
	return nil
}

// showWrites shows two writes the table refuses: one that a unique index
// forbids, and an update conditional on a version that is no longer the
// record's.
func showWrites(ctx context.Context, table *indextable.Table[Customer]) error {
	// A unique index refuses a second customer with a taken email, and
	// nothing of that write is applied.
	_, err := table.Insert(ctx, Customer{ID: "C11", LastName: "Doe", Town: "Redmond", Email: "eva@example.com"})
	fmt.Printf("Insert C11 with eva's email: %v\n", err)
	_, err = table.Get(ctx, "C11")
	fmt.Printf("Get C11 afterwards: %v\n", err)

	// Optimistic concurrency: an update conditional on the version read.
	c, v, err := table.GetVersioned(ctx, "C03")
	if err != nil {
		return err
	}
	c.Town = "Seattle"
	if _, err := table.Update(ctx, c, indextable.IfVersion(v)); err != nil {
		return err
	}
	c.Phone = "000"
	_, err = table.Update(ctx, c, indextable.IfVersion(v))
	fmt.Printf("Second update of C03 with the version read before the first: %v\n", err)
	return nil
}

// printAdvice prints what the indexes cost and earn: this run's counts
// join the totals kept in the store, and the pattern's rules judge each
// index. On a -pebble store, go run ./cmd/indextable advise DIR says the
// same.
func printAdvice(ctx context.Context, table *indextable.Table[Customer]) error {
	if err := table.SaveUsage(ctx); err != nil {
		return err
	}
	findings, err := table.Advise(ctx, indextable.AdviseOptions{MinWrites: 10})
	if err != nil {
		return err
	}
	fmt.Printf("\nAdvice on the indexes, from their usage and statistics:\n")
	for _, f := range findings {
		fmt.Printf("  %v\n", f)
	}
	return nil
}
