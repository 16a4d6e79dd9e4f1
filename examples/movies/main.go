// Command movies runs the Index Table pattern's movie example: movies
// partitioned by genre with the title as row key (the pattern's figure 7),
// and a multi-valued actor index table (figure 8), partially denormalized
// with each movie's actors, so "movies with this actor, and who
// co-starred" is answered from the index alone. Each entry holds its
// movie's primary key, genre included, which is how a whole record is
// fetched. A genre_year index shows the other placement: on Azure Table
// storage (-azure) its entries lie in their movies' partitions.
package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/examples/internal/examplestore"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
)

// Movie is a record of the fact table, keyed by (Genre, Title).
type Movie struct {
	Genre    string
	Title    string
	Year     int
	Actors   []string
	Synopsis string
}

var movies = []Movie{
	{"Action", "Fast Lane", 2019, []string{"Ava Stone", "Ben Cole"}, "A courier outruns a syndicate."},
	{"Action", "Iron Harbor", 2021, []string{"Ben Cole", "Cara Diaz"}, "Dockworkers take on a cartel."},
	{"Comedy", "Best Man Down", 2018, []string{"Dan Ellis", "Ava Stone"}, "A wedding toast goes wrong."},
	{"Comedy", "Tax Season", 2022, []string{"Eve Fox"}, "An accountant's worst April."},
	{"Sci-Fi", "Deep Orbit", 2020, []string{"Cara Diaz", "Ava Stone", "Dan Ellis"}, "A station loses contact."},
	{"Sci-Fi", "Red Dust", 2023, []string{"Ben Cole"}, "Miners on Mars find water."},
	{"Sci-Fi", "Zero Point", 2017, []string{"Eve Fox", "Cara Diaz"}, "A physicist stops time."},
}

func main() { examplestore.MainAzure("movies", run) }

func run(ctx context.Context, s kv.Store) error {
	store := countingstore.New(s)
	table, err := indextable.Open(ctx, store, indextable.Schema[Movie]{
		Name:       "movies",
		PrimaryKey: []string{"Genre", "Title"},
		Indexes: []indextable.Index[Movie]{{
			Name:        "actor",
			Fields:      []string{"Actors"},
			MultiValued: true,
			Strategy:    indextable.Partial,
			Projection:  []string{"Actors", "Year"},
		}, {
			// It leads with the genre, the fact table's partition.
			Name:   "genre_year",
			Fields: []string{"Genre", "Year"},
		}},
	})
	if err != nil {
		return err
	}
	if err := showPlacement(ctx, s, table); err != nil {
		return err
	}
	if err := load(ctx, table); err != nil {
		return err
	}
	show := func(title string, q indextable.Query, label func(Movie) string) error {
		return printQuery(ctx, store, table, title, q, label)
	}
	steps := []struct {
		title string
		q     indextable.Query
		label func(Movie) string
	}{
		{"Sci-Fi movies (one partition of the fact table)", indextable.Query{Eq: indextable.Tuple{"Sci-Fi"}}, nil},
		{"Movies with Ava Stone, from the actor index alone", indextable.Query{Index: "actor", Eq: indextable.Tuple{"Ava Stone"}, Covered: true}, nil},
		{"Movies with Ava Stone, whole records", indextable.Query{Index: "actor", Eq: indextable.Tuple{"Ava Stone"}}, nil},
		{"Actors from C up to F, F excluded (names starting with C, D or E), with their movies",
			indextable.Query{Index: "actor", Lower: indextable.Inclusive("C"), Upper: indextable.Exclusive("F"), Covered: true},
			actorOfRow("C", "F")},
		{"Sci-Fi movies of the 2020s, through the genre_year index", indextable.Query{Index: "genre_year", Eq: indextable.Tuple{"Sci-Fi"}, Lower: indextable.Inclusive(2020), Upper: indextable.Exclusive(2030)}, nil},
	}
	for _, s := range steps {
		if err := show(s.title, s.q, s.label); err != nil {
			return err
		}
	}

	// Recasting a movie moves it between actors' entries in one atomic write.
	m, err := table.Get(ctx, "Sci-Fi", "Red Dust")
	if err != nil {
		return err
	}
	m.Actors = []string{"Ava Stone", "Eve Fox"}
	before := store.Counts()
	if _, err := table.Update(ctx, m); err != nil {
		return err
	}
	c := store.Counts().Sub(before)
	fmt.Printf("Recast Red Dust with Ava Stone and Eve Fox: one batch of %d operations\n\n", c.Ops)
	if err := applyQueue(ctx, table); err != nil {
		return err
	}
	return show("Movies with Ben Cole now", indextable.Query{Index: "actor", Eq: indextable.Tuple{"Ben Cole"}, Covered: true}, nil)
}

// load inserts the movies, unless the store holds those of an earlier run
// (-pebble, -azure) with their index tables, and applies the queue.
func load(ctx context.Context, table *indextable.Table[Movie]) error {
	n, err := table.Count(ctx, indextable.Query{})
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Printf("Found %d movies from an earlier run, and their actor index table.\n\n", n)
		// A run of an earlier version of this example left no genre_year
		// index: Open added it write-only, and Build fills it.
		if err := table.Build(ctx, indextable.BuildOptions{}); err != nil {
			return err
		}
	} else if _, err := table.Load(ctx, slices.Values(movies), indextable.LoadOptions{}); err != nil {
		return err // (Load writes a genre's movies, one partition on Azure, in one request)
	}
	return applyQueue(ctx, table)
}

// printQuery prints the movies q finds, each after what label says of it
// (nothing when label is nil), and what the read cost in store calls.
func printQuery(ctx context.Context, store *countingstore.Store, table *indextable.Table[Movie], title string, q indextable.Query, label func(Movie) string) error {
	before := store.Counts()
	fmt.Println(title + ":")
	for m, err := range table.Find(ctx, q) {
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  %-7s %-14s %d  %s", m.Genre, m.Title, m.Year, strings.Join(m.Actors, ", "))
		if label != nil {
			line = fmt.Sprintf("  %-10s", label(m)) + line
		}
		if m.Synopsis != "" {
			line += "  | " + m.Synopsis
		}
		fmt.Println(line)
	}
	c := store.Counts().Sub(before)
	fmt.Printf("  store lookups: %d (scans: %d; batched fact fetches: %d, of %d records)\n\n", c.Lookups(), c.Scans, c.GetManys, c.ManyKeys)
	return nil
}

// actorOfRow returns a label for the rows of a query of the actor index
// over the actors from lower up to upper (not included): the actor whose
// entry each row is. A multi-valued index returns a movie once per
// matching entry, in key order (actor, then movie), so the k-th row of a
// movie is that of its k-th actor in the range, in name order.
func actorOfRow(lower, upper string) func(Movie) string {
	seen := map[string]int{} // rows so far, by genre and title
	return func(m Movie) string {
		var in []string
		for _, a := range m.Actors {
			if a >= lower && a < upper {
				in = append(in, a)
			}
		}
		slices.Sort(in)
		k := seen[m.Genre+"/"+m.Title]
		seen[m.Genre+"/"+m.Title]++
		if k >= len(in) {
			return "?" // not a row of this range: none of its actors is in it
		}
		return in[k]
	}
}

// showPlacement prints where each index table's entries lie, on a store
// that commits one partition at a time (Azure Table storage); on others
// every index is written in its record's batch.
func showPlacement(ctx context.Context, s kv.Store, table *indextable.Table[Movie]) error {
	if s.Atomicity().Partition == nil {
		return nil
	}
	status, err := table.IndexStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Println("Index placement, as this store commits one partition at a time:")
	for _, st := range status {
		how := "strongly consistent, in its movie's transaction"
		if st.Placement == indextable.InterPartition {
			how = "eventual, through the queue"
		}
		fmt.Printf("  %s: %v (%s)\n", st.Name, st.Placement, how)
	}
	fmt.Println("  A write commits its movie, the intra-partition entries and a change record;")
	fmt.Println("  a maintainer applies the change to the inter-partition index tables.")
	fmt.Println("  A read from an index alone first checks the queue: one more scan.")
	fmt.Println()
	return nil
}

// applyQueue applies the changes that writes left in the table's queue to
// the index tables, as a maintainer does. No index here is Eventual, so
// only a store that commits one partition at a time leaves any: a write
// there commits its movie, the entries in its partition and a change
// record, and the other entries follow through the queue.
func applyQueue(ctx context.Context, table *indextable.Table[Movie]) error {
	for {
		n, err := table.ApplyPending(ctx, indextable.MaintainerOptions{})
		if err != nil || n == 0 {
			return err
		}
	}
}
