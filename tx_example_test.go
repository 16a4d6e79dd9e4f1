package indextable_test

import (
	"context"
	"fmt"

	"github.com/indextable/indextable"
)

type Order struct {
	ID    string
	Item  string
	Count int
}

type Stock struct {
	Item  string
	Count int
}

// An order and the stock it takes, written together: a second order that
// the stock cannot serve changes nothing.
func ExampleTransact() {
	ctx := context.Background()
	store := indextable.NewMemoryStore()
	orders, err := indextable.Open(ctx, store, indextable.Schema[Order]{Name: "orders", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Order]{{Name: "item", Fields: []string{"Item"}}}})
	if err != nil {
		panic(err)
	}
	stock, err := indextable.Open(ctx, store, indextable.Schema[Stock]{Name: "stock", PrimaryKey: []string{"Item"}})
	if err != nil {
		panic(err)
	}
	if _, err := stock.Insert(ctx, Stock{Item: "pen", Count: 4}); err != nil {
		panic(err)
	}

	order := func(id, item string, count int) error {
		// Transact runs the function again if another write overtakes it.
		return indextable.Transact(ctx, store, func(tx *indextable.Tx) error {
			s, err := stock.In(tx).Get(ctx, item)
			if err != nil {
				return err
			}
			if s.Count < count {
				return fmt.Errorf("order %s: %d of %d left", id, s.Count, count)
			}
			s.Count -= count
			if _, err := stock.In(tx).Update(ctx, s); err != nil {
				return err
			}
			_, err = orders.In(tx).Insert(ctx, Order{ID: id, Item: item, Count: count})
			return err
		})
	}
	fmt.Println(order("o1", "pen", 2))
	fmt.Println(order("o2", "pen", 3))

	s, err := stock.Get(ctx, "pen")
	if err != nil {
		panic(err)
	}
	n, err := orders.Count(ctx, indextable.Query{Index: "item", Eq: indextable.Tuple{"pen"}})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d pens in stock, %d ordered\n", s.Count, n)
	// Output:
	// <nil>
	// order o2: 2 of 3 left
	// 2 pens in stock, 1 ordered
}
