package bench

import (
	"cmp"
	"fmt"

	"github.com/google/btree"
)

// floor keeps the workload by hand, the floor every other System is
// measured against: a primary google/btree of records and two secondary
// trees of the same record pointers, in index order.
type floor struct {
	primary  *btree.BTreeG[*Customer]
	townName *btree.BTreeG[*Customer] // by Town, LastName, ID
	lastName *btree.BTreeG[*Customer] // by LastName, ID
}

// NewFloor returns the hand-kept B-trees.
func NewFloor() (System, error) {
	return &floor{
		primary: btree.NewG(32, func(a, b *Customer) bool { return a.ID < b.ID }),
		townName: btree.NewG(32, func(a, b *Customer) bool {
			return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID)) < 0
		}),
		lastName: btree.NewG(32, func(a, b *Customer) bool {
			return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID)) < 0
		}),
	}, nil
}

func (f *floor) Insert(c Customer) error {
	rec := &c
	if _, ok := f.primary.Get(rec); ok {
		return fmt.Errorf("floor: customer %s exists", c.ID)
	}
	f.primary.ReplaceOrInsert(rec)
	f.townName.ReplaceOrInsert(rec)
	f.lastName.ReplaceOrInsert(rec)
	return nil
}

func (f *floor) Update(c Customer) error {
	rec := &c
	old, ok := f.primary.ReplaceOrInsert(rec)
	if !ok {
		f.primary.Delete(rec)
		return fmt.Errorf("floor: customer %s: %w", c.ID, ErrNotFound)
	}
	f.townName.Delete(old)
	f.lastName.Delete(old)
	f.townName.ReplaceOrInsert(rec)
	f.lastName.ReplaceOrInsert(rec)
	return nil
}

func (f *floor) Lookup(town, last string, fn func(Customer)) error {
	f.townName.AscendGreaterOrEqual(&Customer{Town: town, LastName: last}, func(r *Customer) bool {
		if r.Town != town || r.LastName != last {
			return false
		}
		fn(*r)
		return true
	})
	return nil
}

func (f *floor) Range(town string, n int, fn func(Customer)) error {
	f.townName.AscendGreaterOrEqual(&Customer{Town: town}, func(r *Customer) bool {
		if r.Town != town || n == 0 {
			return false
		}
		n--
		fn(*r)
		return true
	})
	return nil
}

func (f *floor) Get(id string) (Customer, error) {
	r, ok := f.primary.Get(&Customer{ID: id})
	if !ok {
		return Customer{}, fmt.Errorf("floor: customer %s: %w", id, ErrNotFound)
	}
	return *r, nil
}

func (f *floor) Scan(fn func(Customer)) error {
	f.primary.Ascend(func(r *Customer) bool {
		fn(*r)
		return true
	})
	return nil
}

func (f *floor) Close() error { return nil }
