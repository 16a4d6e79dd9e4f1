package bench

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// memDB keeps the workload in hashicorp/go-memdb: one table, "customer",
// with a unique "id" index, a non-unique compound "town_lastname" index and
// a non-unique "lastname" index.
//
// go-memdb appends the primary key (ID plus its NUL terminator) to every
// key of a non-unique index, so "town_lastname" is ordered by
// (Town, LastName, ID) without ID being one of its fields: a prefix scan of
// a town is the town in (LastName, ID) order, and an exact Get of a
// (town, surname) pair is that pair in ID order.
type memDB struct {
	db *memdb.MemDB
}

const memTable = "customer"

// NewMemDB returns a System kept in a hashicorp/go-memdb database.
func NewMemDB() (System, error) {
	schema := &memdb.DBSchema{
		Tables: map[string]*memdb.TableSchema{
			memTable: {
				Name: memTable,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {
						Name:    "id",
						Unique:  true,
						Indexer: &memdb.StringFieldIndex{Field: "ID"},
					},
					"town_lastname": {
						Name: "town_lastname",
						Indexer: &memdb.CompoundIndex{
							Indexes: []memdb.Indexer{
								&memdb.StringFieldIndex{Field: "Town"},
								&memdb.StringFieldIndex{Field: "LastName"},
							},
						},
					},
					"lastname": {
						Name:    "lastname",
						Indexer: &memdb.StringFieldIndex{Field: "LastName"},
					},
				},
			},
		},
	}
	db, err := memdb.NewMemDB(schema)
	if err != nil {
		return nil, err
	}
	return &memDB{db: db}, nil
}

// Insert adds c in a write transaction. go-memdb's Insert is an upsert, so
// a taken ID is looked up first, as indextable's Insert does.
func (m *memDB) Insert(c Customer) error {
	txn := m.db.Txn(true)
	defer txn.Abort()
	old, err := txn.First(memTable, "id", c.ID)
	if err != nil {
		return err
	}
	if old != nil {
		return fmt.Errorf("bench: customer %s exists", c.ID)
	}
	// Each version is a fresh object: go-memdb keeps the pointer, and
	// objects in it must never be mutated.
	if err := txn.Insert(memTable, &c); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// Update replaces the customer with c's ID; go-memdb's Insert of an
// existing ID deletes the old version's index keys and adds the new ones.
func (m *memDB) Update(c Customer) error {
	txn := m.db.Txn(true)
	defer txn.Abort()
	old, err := txn.First(memTable, "id", c.ID)
	if err != nil {
		return err
	}
	if old == nil {
		return ErrNotFound
	}
	if err := txn.Insert(memTable, &c); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// Lookup is an exact Get on the compound index: its key for (town, last)
// is "town\x00last\x00", a prefix of exactly that pair's entries, which
// follow in ID order.
func (m *memDB) Lookup(town, last string, fn func(Customer)) error {
	txn := m.db.Txn(false)
	defer txn.Abort()
	it, err := txn.Get(memTable, "town_lastname", town, last)
	if err != nil {
		return err
	}
	for obj := it.Next(); obj != nil; obj = it.Next() {
		fn(*obj.(*Customer))
	}
	return nil
}

// Range is a prefix scan of the compound index. With the arguments
// (town, "") CompoundIndex.PrefixFromArgs takes town whole, with its NUL
// terminator, and the empty LastName as a prefix: the prefix "town\x00",
// which is exactly the town ("Town1" would also match "Town10" without
// the terminator).
func (m *memDB) Range(town string, n int, fn func(Customer)) error {
	if n <= 0 {
		return nil
	}
	txn := m.db.Txn(false)
	defer txn.Abort()
	it, err := txn.Get(memTable, "town_lastname_prefix", town, "")
	if err != nil {
		return err
	}
	for obj := it.Next(); obj != nil; obj = it.Next() {
		fn(*obj.(*Customer))
		if n--; n == 0 {
			break
		}
	}
	return nil
}

// Get is a First on the unique id index.
func (m *memDB) Get(id string) (Customer, error) {
	txn := m.db.Txn(false)
	defer txn.Abort()
	obj, err := txn.First(memTable, "id", id)
	if err != nil {
		return Customer{}, err
	}
	if obj == nil {
		return Customer{}, ErrNotFound
	}
	return *obj.(*Customer), nil
}

// Scan walks the id index whole.
func (m *memDB) Scan(fn func(Customer)) error {
	txn := m.db.Txn(false)
	defer txn.Abort()
	it, err := txn.Get(memTable, "id")
	if err != nil {
		return err
	}
	for obj := it.Next(); obj != nil; obj = it.Next() {
		fn(*obj.(*Customer))
	}
	return nil
}

// Close has nothing to release: go-memdb holds no resources beyond memory.
func (m *memDB) Close() error { return nil }
