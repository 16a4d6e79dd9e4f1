// Command lifecycle shows how index tables are kept up: an index added to a
// table that already holds records is built online while writes go on, an
// eventual index follows writes through the table's durable queue and a
// maintainer, and Verify checks the result.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/examples/internal/examplestore"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
)

// Customer is a record of the fact table: the examples' customer, with an
// ID, FirstName, LastName, Town, Email and Phone. This example sets the ID,
// LastName and Town of customer i, C00000 to C19999.
type Customer = fixture.Customer

var (
	towns = []string{"Redmond", "Seattle", "Bellevue", "Kirkland"}
	names = []string{"Smith", "Jones", "Chen", "Patel", "Brown", "Adams"}
)

func main() { examplestore.Main(run) }

// customerID is the ID of customer i.
func customerID(i int) string { return fmt.Sprintf("C%05d", i) }

// run loads a table without indexes, adds two, builds them online, lets
// a maintainer catch the eventual one up, and verifies the table.
func run(ctx context.Context, store kv.Store) error {
	schema := indextable.Schema[Customer]{Name: "customers", PrimaryKey: []string{"ID"}, Codec: &indextable.BinaryCodec{}}
	if err := load(ctx, store, schema); err != nil {
		return err
	}

	// Reopened with two indexes: the catalog sees they are new, and they
	// start write-only, because the table holds records.
	schema.Indexes = []indextable.Index[Customer]{
		{Name: "town_lastname", Fields: []string{"Town", "LastName"}},
		{Name: "lastname", Fields: []string{"LastName"}, Consistency: indextable.Eventual},
	}
	table, err := indextable.Open(ctx, store, schema)
	if err != nil {
		return err
	}
	printStatus(ctx, table)
	_, err = table.Count(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}})
	fmt.Printf("A query before the build: %v\n\n", err)

	for _, step := range []func(context.Context, *indextable.Table[Customer]) error{build, rename, maintain} {
		if err := step(ctx, table); err != nil {
			return err
		}
	}
	rep, err := table.Verify(ctx, indextable.VerifyOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("Verify: %d records and %d index entries read, %d findings\n", rep.Records, rep.Entries, rep.Total())
	return nil
}

// load writes 20,000 customers to a table without indexes. In a store that
// outlives the run (-pebble), opening it without indexes drops those of
// the earlier run, and the writes reset its customers; the indexes'
// generations go on counting.
func load(ctx context.Context, store kv.Store, schema indextable.Schema[Customer]) error {
	table, err := indextable.Open(ctx, store, schema)
	if err != nil {
		return err
	}
	if n, err := table.Count(ctx, indextable.Query{}); err != nil {
		return err
	} else if n > 0 {
		fmt.Printf("Found %d customers from an earlier run.\n", n)
	}
	for i := range 20000 {
		c := Customer{ID: customerID(i), LastName: names[i%len(names)], Town: towns[i%len(towns)]}
		if _, err := table.Upsert(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// build builds the new indexes online, with a progress bar, while a
// writer moves customers to Seattle.
func build(ctx context.Context, table *indextable.Table[Customer]) error {
	writerDone := make(chan error)
	go func() {
		for i := 0; i < 20000; i += 10 {
			if _, err := table.Update(ctx, Customer{ID: customerID(i), LastName: "Moved", Town: "Seattle"}); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()
	err := table.Build(ctx, indextable.BuildOptions{ChunkSize: 1000, Progress: func(p indextable.BuildProgress) {
		switch {
		case p.Readable:
			fmt.Printf("build %-13s readable\n", p.Index)
		case p.Done%5000 == 0:
			bar := strings.Repeat("#", int(min(20*p.Done/max(p.Total, 1), 20)))
			fmt.Printf("build %-13s [%-20s] %d of %d records\n", p.Index, bar, p.Done, p.Total)
		}
	}})
	if err := errors.Join(err, <-writerDone); err != nil {
		return err
	}
	fmt.Println()
	printStatus(ctx, table)
	return nil
}

// rename renames customers. The eventual index follows writes through the
// queue: these renames are pending until a maintainer applies them, and
// meanwhile reads of the index check its entries against the records.
func rename(ctx context.Context, table *indextable.Table[Customer]) error {
	for i := 1; i < 20000; i += 20 {
		if _, err := table.Update(ctx, Customer{ID: customerID(i), LastName: "Renamed", Town: towns[i%len(towns)]}); err != nil {
			return err
		}
	}
	lag, err := table.Lag(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("Queued changes for the eventual index: %d\n", lag.Pending)
	n, err := table.Count(ctx, indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Renamed"}})
	if err != nil {
		return err
	}
	fmt.Printf("Customers named Renamed, before the maintainer runs: %d\n", n)
	return nil
}

// maintain runs a maintainer until the eventual index has caught up with
// the renames, and reads them through it.
func maintain(ctx context.Context, table *indextable.Table[Customer]) error {
	run, stop := context.WithCancel(ctx)
	defer stop()
	maintainer := make(chan error)
	go func() { maintainer <- table.RunMaintainer(run, indextable.MaintainerOptions{}) }()
	if err := table.WaitIndexed(ctx); err != nil {
		return err
	}
	stop()
	if err := <-maintainer; !errors.Is(err, context.Canceled) {
		return err
	}
	n, err := table.Count(ctx, indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Renamed"}})
	if err != nil {
		return err
	}
	fmt.Printf("Customers named Renamed, after WaitIndexed: %d\n\n", n)
	return nil
}

func printStatus(ctx context.Context, table *indextable.Table[Customer]) {
	status, err := table.IndexStatus(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range status {
		fmt.Printf("index %-13s %-10v generation %d\n", s.Name, s.State, s.Generation)
	}
}
