// Package bench compares indextable with the Go libraries its users would
// otherwise pick, on one workload: customers with a composite Town, LastName
// index and a LastName index. Each System keeps that workload its own way;
// the floor keeps it by hand in google/btree trees, and the keys-only floor
// the same with indexes that hold keys only.
//
// It is a module of its own, so that the library's go.mod never requires
// the peers. Run it with make bench-compare at the repository's top.
package bench

import (
	"errors"

	"github.com/indextable/indextable/internal/fixture"
)

// Customer is the workload's record.
type Customer = fixture.Customer

// The data set's shape, fixture.Bench's: customer i lives in town i%Towns
// and is named surname (i/Towns)%Surnames, so at 100,000 records a town
// holds 1,000 customers, its first 100 in LastName order are a prefix
// range of the composite index, and each (town, surname) pair names one
// customer.
const (
	Towns    = fixture.BenchTowns
	Surnames = fixture.BenchSurnames
)

// NewCustomer returns customer i of the data set.
func NewCustomer(i int) Customer { return fixture.Bench.Customer(i) }

// Moved returns c moved to another town and surname, so that an update
// moves its keys in both indexes.
func Moved(c Customer, i int) Customer { return fixture.Bench.Moved(c, i) }

// ErrNotFound is what a System's Get returns for a missing ID.
var ErrNotFound = errors.New("bench: not found")

// A System keeps the workload: a fact table by ID, and the two indexes.
type System interface {
	// Insert adds a customer whose ID is new.
	Insert(c Customer) error
	// Update replaces the customer with c's ID, moving its index keys.
	Update(c Customer) error
	// Lookup calls fn with each customer in town named last, in ID order.
	Lookup(town, last string, fn func(Customer)) error
	// Range calls fn with the first n (at least 1) customers of town in
	// (LastName, ID) order.
	Range(town string, n int, fn func(Customer)) error
	// Get returns the customer with id, or ErrNotFound.
	Get(id string) (Customer, error)
	// Scan calls fn with every customer (the full scan an index saves).
	Scan(fn func(Customer)) error
	// Close releases the system.
	Close() error
}
