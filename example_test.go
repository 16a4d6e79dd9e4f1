package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/indextable/indextable"
)

func openCustomers(ctx context.Context) *indextable.Table[Customer] {
	table, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Customer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: indextable.Partial, Projection: []string{"FirstName"}},
			{Name: "email", Fields: []string{"Email"}, Unique: true, Sparse: true},
		},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range []Customer{
		{ID: "1", FirstName: "Mary", LastName: "Smith", Town: "Redmond", Email: "mary@example.com"},
		{ID: "2", FirstName: "John", LastName: "Smith", Town: "Redmond"},
		{ID: "3", FirstName: "Ana", LastName: "Jones", Town: "Redmond", Email: "ana@example.com"},
		{ID: "4", FirstName: "Li", LastName: "Chen", Town: "Seattle"},
	} {
		if _, err := table.Insert(ctx, c); err != nil {
			panic(err)
		}
	}
	return table
}

func Example() {
	ctx := context.Background()
	table, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Customer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
		},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range []Customer{
		{ID: "1", FirstName: "Mary", LastName: "Smith", Town: "Redmond"},
		{ID: "2", FirstName: "Ana", LastName: "Jones", Town: "Redmond"},
		{ID: "3", FirstName: "Li", LastName: "Chen", Town: "Seattle"},
	} {
		if _, err := table.Insert(ctx, c); err != nil {
			panic(err)
		}
	}

	// All customers in Redmond, in LastName order.
	for c, err := range table.Find(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(c.FirstName, c.LastName)
	}
	// Output:
	// Ana Jones
	// Mary Smith
}

func ExampleTable_Find_range() {
	ctx := context.Background()
	table := openCustomers(ctx)
	// Customers in Redmond whose LastName is from "K" on, descending.
	q := indextable.Query{
		Index:   "town_lastname",
		Eq:      indextable.Tuple{"Redmond"},
		Lower:   indextable.Inclusive("K"),
		Reverse: true,
	}
	for c, err := range table.Find(ctx, q) {
		if err != nil {
			panic(err)
		}
		fmt.Println(c.ID, c.FirstName, c.LastName)
	}
	// Output:
	// 2 John Smith
	// 1 Mary Smith
}

func ExampleTable_Find_covered() {
	ctx := context.Background()
	table := openCustomers(ctx)
	// A Partial index answers from its projection alone: the primary key,
	// the key fields and FirstName are set; the rest is left zero.
	q := indextable.Query{Index: "lastname", Eq: indextable.Tuple{"Smith"}, Covered: true}
	for c, err := range table.Find(ctx, q) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s %s town=%q\n", c.ID, c.FirstName, c.LastName, c.Town)
	}
	// Output:
	// 1 Mary Smith town=""
	// 2 John Smith town=""
}

func ExampleTable_FindPage() {
	ctx := context.Background()
	table := openCustomers(ctx)
	q := indextable.Query{Index: "town_lastname", Limit: 3}
	for {
		page, next, err := table.FindPage(ctx, q)
		if err != nil {
			panic(err)
		}
		var names []string
		for _, c := range page {
			names = append(names, c.Town+"/"+c.LastName)
		}
		fmt.Println(strings.Join(names, " "))
		if next == "" {
			break
		}
		q.Cursor = next
	}
	// Output:
	// Redmond/Jones Redmond/Smith Redmond/Smith
	// Seattle/Chen
}

func ExampleTable_Update_conditional() {
	ctx := context.Background()
	table := openCustomers(ctx)
	c, version, err := table.GetVersioned(ctx, "4")
	if err != nil {
		panic(err)
	}
	c.Town = "Redmond"
	if _, err := table.Update(ctx, c, indextable.IfVersion(version)); err != nil {
		panic(err)
	}
	// A second writer that read the same version loses, and is told so.
	_, err = table.Update(ctx, c, indextable.IfVersion(version))
	fmt.Println(errors.Is(err, indextable.ErrConflict))
	n, _ := table.Count(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}})
	fmt.Println(n, "customers in Redmond")
	// Output:
	// true
	// 4 customers in Redmond
}

func ExampleIndex_unique() {
	ctx := context.Background()
	table := openCustomers(ctx)
	_, err := table.Insert(ctx, Customer{ID: "5", LastName: "Doe", Email: "ana@example.com"})
	fmt.Println(errors.Is(err, indextable.ErrUniqueViolation))
	_, err = table.Get(ctx, "5")
	fmt.Println(errors.Is(err, indextable.ErrNotFound))
	// Output:
	// true
	// true
}

func ExampleTable_Advise() {
	ctx := context.Background()
	table := openCustomers(ctx)
	// The application looks customers up by email, never by town or name.
	for range 10 {
		for _, email := range []string{"mary@example.com", "ana@example.com"} {
			for _, err := range table.Find(ctx, indextable.Query{Index: "email", Eq: indextable.Tuple{email}}) {
				if err != nil {
					panic(err)
				}
			}
		}
	}
	findings, err := table.Advise(ctx, indextable.AdviseOptions{MinWrites: 4, Selectivity: 0.4})
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	// Output:
	// index "town_lastname": unused: no query read it in 4 record writes, which wrote 4 of its entries
	// index "lastname": unused: no query read it in 4 record writes, which wrote 4 of its entries
}

// Among 1000 shards, as among 4 (see the ShardFor example), a record's
// shard is fixed by its first primary key component.
func ExampleShardFor_thousandShards() {
	for _, id := range []any{"C01", "Redmond"} {
		shard, err := indextable.ShardFor(1000, id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%#v: shard %d\n", id, shard)
	}
	// Output:
	// "C01": shard 308
	// "Redmond": shard 167
}

func ExampleTable_Delete() {
	ctx := context.Background()
	table := openCustomers(ctx)
	_, version, err := table.GetVersioned(ctx, "3")
	if err != nil {
		panic(err)
	}
	// The primary key's values, as Get takes them, then write options.
	fmt.Println(table.Delete(ctx, "3", indextable.IfVersion(version+1)) != nil)
	fmt.Println(table.Delete(ctx, "3", indextable.IfVersion(version)))
	_, err = table.Get(ctx, "3")
	fmt.Println(errors.Is(err, indextable.ErrNotFound))
	// Output:
	// true
	// <nil>
	// true
}

// Bounds and Eq values convert between numeric kinds when that keeps them
// exact.
func ExampleBound() {
	type Product struct {
		SKU   string
		Price float64
		Stock int32
	}
	ctx := context.Background()
	products, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Product]{
		Name:       "products",
		PrimaryKey: []string{"SKU"},
		Indexes: []indextable.Index[Product]{
			{Name: "price", Fields: []string{"Price"}},
			{Name: "stock", Fields: []string{"Stock"}},
		},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range []Product{{"a", 99.5, 3}, {"b", 100, 0}, {"c", 250, 12}} {
		if _, err := products.Insert(ctx, p); err != nil {
			panic(err)
		}
	}
	// An int bounds the float64 field; a whole float the int32 one.
	n, _ := products.Count(ctx, indextable.Query{Index: "price", Lower: indextable.Inclusive(100)})
	fmt.Println(n, "priced from 100")
	n, _ = products.Count(ctx, indextable.Query{Index: "stock", Eq: indextable.Tuple{12.0}})
	fmt.Println(n, "with 12 in stock")
	// A fraction has no exact int32.
	_, err = products.Count(ctx, indextable.Query{Index: "stock", Upper: indextable.Exclusive(2.5)})
	fmt.Println(err)
	// Output:
	// 2 priced from 100
	// 1 with 12 in stock
	// indextable: invalid query: upper bound: field "Stock" holds int32 values: 2.5 is not a whole number
}
