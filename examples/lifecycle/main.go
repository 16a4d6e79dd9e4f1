// Command lifecycle shows how index tables are kept up: an index that the
// next release of a program (a higher Schema.Revision) adds to a table that
// already holds records is built online while a concurrent writer goes on,
// an eventual index follows writes through the table's durable queue and a
// maintainer, and Verify checks the result. A second run on the same store
// (-pebble) finds the indexes readable: the first release's schema, which
// has none, does not drop what the later one added, and the later one finds
// them unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

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

// run loads a table with the schema of a first release, which has no
// indexes, opens it with that of the next, which adds two, builds them
// online, lets a maintainer catch the eventual one up, and verifies the
// table.
func run(ctx context.Context, store kv.Store) error {
	first := indextable.Schema[Customer]{Name: "customers", PrimaryKey: []string{"ID"}, Codec: &indextable.BinaryCodec{}, Revision: 1}
	if err := load(ctx, store, first); err != nil {
		return err
	}

	// The next release adds two indexes, and raises Revision. On a table
	// that holds records, Open starts them write-only; on one where an
	// earlier run (-pebble) built them, it finds them as they are.
	second := first
	second.Revision = 2
	second.Indexes = []indextable.Index[Customer]{
		{Name: "town_lastname", Fields: []string{"Town", "LastName"}},
		{Name: "lastname", Fields: []string{"LastName"}, Consistency: indextable.Eventual},
	}
	table, err := indextable.Open(ctx, store, second)
	if err != nil {
		return err
	}
	fmt.Println("Opened with schema revision 2, which declares two indexes:")
	if err := printStatus(ctx, table); err != nil {
		return err
	}
	n, err := table.Count(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}})
	if err != nil {
		fmt.Printf("A query before the build: %v\n\n", err)
	} else {
		fmt.Printf("Customers in Redmond, through town_lastname: %d\n\n", n)
	}

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

// load writes 20,000 customers with schema, which has no indexes. In a
// store that outlives the run (-pebble), the table holds the customers of
// an earlier run and the indexes its schema revision 2 added: as schema's
// revision is lower, Open leaves them be (it does not drop them), and this
// handle maintains them as its writes reset the customers the earlier run
// moved and renamed. It then applies the queue of the eventual index, so
// that the rest of the run starts from where the first one did.
func load(ctx context.Context, store kv.Store, schema indextable.Schema[Customer]) error {
	table, err := indextable.Open(ctx, store, schema)
	if err != nil {
		return err
	}
	earlier, err := table.Count(ctx, indextable.Query{})
	if err != nil {
		return err
	}
	for i := range 20000 {
		c := Customer{ID: customerID(i), LastName: names[i%len(names)], Town: towns[i%len(towns)]}
		if _, err := table.Upsert(ctx, c); err != nil {
			return err
		}
	}
	if earlier == 0 {
		fmt.Printf("Loaded 20000 customers with schema revision %d, which has no indexes.\n\n", schema.Revision)
		return nil
	}
	status, err := table.IndexStatus(ctx)
	if err != nil {
		return err
	}
	if len(status) == 0 { // the earlier run ended before revision 2 opened the table
		fmt.Printf("Found %d customers from an earlier run, and reset them.\n\n", earlier)
		return nil
	}
	fmt.Printf("Found %d customers from an earlier run, and the %d indexes of its schema revision 2.\n", earlier, len(status))
	fmt.Printf("Revision %d declares none but, as the lower revision, leaves the catalog be: it kept\n", schema.Revision)
	fmt.Println("them, and maintained them as it reset the customers that the earlier run changed.")
	fmt.Println()
	for {
		n, err := table.ApplyPending(ctx, indextable.MaintainerOptions{})
		if err != nil || n == 0 {
			return err
		}
	}
}

// build builds the new indexes online, with a progress bar, while a
// concurrent writer moves one customer in ten to Seattle, renaming them
// Moved. Indexes that an earlier run built are readable: it says so, and
// builds nothing.
func build(ctx context.Context, table *indextable.Table[Customer]) error {
	status, err := table.IndexStatus(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(status, func(s indextable.IndexStatus) bool { return s.State != indextable.IndexReadable }) {
		fmt.Println("Nothing to build: the earlier run built both indexes, and Open kept them, as their definitions are unchanged.")
		fmt.Println()
		return nil
	}
	fmt.Println("Build, while a concurrent writer moves one customer in ten to Seattle, renaming them Moved:")
	var moved atomic.Int64
	writerDone := make(chan error)
	go func() {
		for i := 0; i < 20000; i += 10 {
			if _, err := table.Update(ctx, Customer{ID: customerID(i), LastName: "Moved", Town: "Seattle"}); err != nil {
				writerDone <- err
				return
			}
			moved.Add(1)
		}
		writerDone <- nil
	}()
	err = table.Build(ctx, indextable.BuildOptions{ChunkSize: 1000, Progress: func(p indextable.BuildProgress) {
		switch {
		case p.Readable:
			fmt.Printf("build %-13s readable\n", p.Index)
		case p.Done%5000 == 0:
			bar := strings.Repeat("#", int(min(20*p.Done/max(p.Total, 1), 20)))
			fmt.Printf("build %-13s [%-20s] %d of %d records\n", p.Index, bar, p.Done, p.Total)
		}
	}})
	during := moved.Load()
	if err := errors.Join(err, <-writerDone); err != nil {
		return err
	}
	fmt.Printf("The writer moved %d customers, %d of them while Build ran. Its writes kept the indexes\n", moved.Load(), during)
	fmt.Println("up, write-only or readable, and each chunk of the build committed only if its records were")
	fmt.Println("unchanged: Verify finds no drift below.")
	fmt.Println()
	if err := printStatus(ctx, table); err != nil {
		return err
	}
	fmt.Println()
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
	fmt.Printf("Renamed one customer in 20. Changes queued for the eventual index since a maintainer last ran: %d\n", lag.Pending)
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

// printStatus prints the state and generation of each index of table.
func printStatus(ctx context.Context, table *indextable.Table[Customer]) error {
	status, err := table.IndexStatus(ctx)
	if err != nil {
		return err
	}
	for _, s := range status {
		fmt.Printf("index %-13s %-10v generation %d\n", s.Name, s.State, s.Generation)
	}
	return nil
}
