package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// table keeps the workload in an indextable.Table: the fact table by ID, a
// Town, LastName index and a LastName index, both of one strategy.
type table struct {
	store kv.Store
	tbl   *indextable.Table[Customer]
}

// NewIndexTable returns the workload in a table on store, with both
// indexes of strategy (Partial projects FirstName) and the binary codec.
func NewIndexTable(store kv.Store, strategy indextable.Strategy) (System, error) {
	var proj []string
	if strategy == indextable.Partial {
		proj = []string{"FirstName"}
	}
	tbl, err := indextable.Open(context.Background(), store, indextable.Schema[Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Codec:      &indextable.BinaryCodec{},
		Indexes: []indextable.Index[Customer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: strategy, Projection: proj},
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: strategy, Projection: proj},
		},
	})
	if err != nil {
		return nil, err
	}
	return &table{store: store, tbl: tbl}, nil
}

func (t *table) Insert(c Customer) error {
	_, err := t.tbl.Insert(context.Background(), c)
	return err
}

func (t *table) Update(c Customer) error {
	_, err := t.tbl.Update(context.Background(), c)
	if errors.Is(err, indextable.ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

func (t *table) each(q indextable.Query, fn func(Customer)) error {
	for c, err := range t.tbl.Find(context.Background(), q) {
		if err != nil {
			return err
		}
		fn(c)
	}
	return nil
}

func (t *table) Lookup(town, last string, fn func(Customer)) error {
	return t.each(indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town, last}}, fn)
}

func (t *table) Range(town string, n int, fn func(Customer)) error {
	return t.each(indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town}, Limit: n}, fn)
}

func (t *table) Get(id string) (Customer, error) {
	c, err := t.tbl.Get(context.Background(), id)
	if errors.Is(err, indextable.ErrNotFound) {
		return c, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return c, err
}

func (t *table) Scan(fn func(Customer)) error { return t.each(indextable.Query{}, fn) }

func (t *table) Close() error { return t.store.Close() }
