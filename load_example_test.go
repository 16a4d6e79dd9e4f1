package indextable_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/indextable/indextable"
)

type Product struct {
	SKU  string
	Name string
	EAN  string // a barcode: unique
}

// Products loaded many to a batch; a barcode taken twice is refused and
// reported, and the load goes on. Run again, the load finds what it wrote
// already there.
func ExampleTable_Load() {
	ctx := context.Background()
	products, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Product]{
		Name: "products", PrimaryKey: []string{"SKU"},
		Indexes: []indextable.Index[Product]{{Name: "ean", Fields: []string{"EAN"}, Unique: true}},
	})
	if err != nil {
		panic(err)
	}
	catalog := []Product{
		{"A1", "Pen", "4006381333931"},
		{"A2", "Ink", "4006381333948"},
		{"A3", "Nib", "4006381333931"}, // the pen's barcode
		{"A4", "Pad", "4006381333955"},
	}
	opts := indextable.LoadOptions{OnRefused: indextable.LoadSkip}
	rep, err := products.Load(ctx, slices.Values(catalog), opts)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", rep.LoadProgress)
	for _, r := range rep.Refusals {
		fmt.Printf("record %d %v: %v\n", r.Position, r.PrimaryKey, r.Err)
	}

	rep, err = products.Load(ctx, slices.Values(catalog), opts)
	if err != nil {
		panic(err)
	}
	fmt.Printf("again: %+v\n", rep.LoadProgress)
	// Output:
	// {Read:4 Inserted:3 Present:0 Refused:1}
	// record 2 ("A3"): table "products": indextable: unique index violation: index "ean": key ("4006381333931") is taken by record ("A1")
	// again: {Read:4 Inserted:0 Present:3 Refused:1}
}
