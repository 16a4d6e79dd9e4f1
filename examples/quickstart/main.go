package main

import (
	"context"
	"fmt"
	"log"

	"github.com/indextable/indextable"
)

type Customer struct {
	ID, FirstName, LastName, Town, Email, Phone string
}

func main() {
	ctx := context.Background()
	customers, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Customer]{
			// Town, then LastName; entries hold the primary key only.
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.KeysOnly},
			// One address per customer; customers without one are not indexed.
			{Name: "email", Fields: []string{"Email"}, Unique: true, Sparse: true},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []Customer{
		{ID: "1", FirstName: "Mary", LastName: "Smith", Town: "Redmond", Email: "mary@example.com"},
		{ID: "2", FirstName: "Ana", LastName: "Jones", Town: "Redmond"},
		{ID: "3", FirstName: "Li", LastName: "Chen", Town: "Seattle"},
	} {
		if _, err := customers.Insert(ctx, c); err != nil {
			log.Fatal(err)
		}
	}

	// All customers in Redmond, in LastName order.
	q := indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}}
	for c, err := range customers.Find(ctx, q) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.ID, c.FirstName, c.LastName)
	}
}
