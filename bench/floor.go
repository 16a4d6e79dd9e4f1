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

// keysOnlyFloor keeps the workload by hand as a keys-only index keeps it,
// the floor of keys-only and partial reads: a primary google/btree of
// records and two secondary trees that hold only their key and the ID, so
// that a read takes each entry, gets its record from the primary tree (a
// second hop) and copies it out. Like every System, it serves one
// goroutine at a time: its search key is reused.
type keysOnlyFloor struct {
	primary  *btree.BTreeG[*Customer]
	townName *btree.BTreeG[townKey] // by Town, LastName, ID
	lastName *btree.BTreeG[lastKey] // by LastName, ID
	pivot    Customer               // the primary tree's search key
}

// townKey and lastKey are the entries of keysOnlyFloor's secondary trees.
type (
	townKey struct{ town, lastName, id string }
	lastKey struct{ lastName, id string }
)

// NewKeysOnlyFloor returns the hand-kept B-trees whose indexes hold keys
// only.
func NewKeysOnlyFloor() (System, error) {
	return &keysOnlyFloor{
		primary: btree.NewG(32, func(a, b *Customer) bool { return a.ID < b.ID }),
		townName: btree.NewG(32, func(a, b townKey) bool {
			return cmp.Or(cmp.Compare(a.town, b.town), cmp.Compare(a.lastName, b.lastName), cmp.Compare(a.id, b.id)) < 0
		}),
		lastName: btree.NewG(32, func(a, b lastKey) bool {
			return cmp.Or(cmp.Compare(a.lastName, b.lastName), cmp.Compare(a.id, b.id)) < 0
		}),
	}, nil
}

// record returns the record with id, if the primary tree holds it.
func (f *keysOnlyFloor) record(id string) (*Customer, bool) {
	f.pivot.ID = id
	return f.primary.Get(&f.pivot)
}

func (f *keysOnlyFloor) Insert(c Customer) error {
	if _, ok := f.record(c.ID); ok {
		return fmt.Errorf("floor-keys-only: customer %s exists", c.ID)
	}
	f.primary.ReplaceOrInsert(&c)
	f.townName.ReplaceOrInsert(townKey{c.Town, c.LastName, c.ID})
	f.lastName.ReplaceOrInsert(lastKey{c.LastName, c.ID})
	return nil
}

func (f *keysOnlyFloor) Update(c Customer) error {
	old, ok := f.record(c.ID)
	if !ok {
		return fmt.Errorf("floor-keys-only: customer %s: %w", c.ID, ErrNotFound)
	}
	f.primary.ReplaceOrInsert(&c)
	f.townName.Delete(townKey{old.Town, old.LastName, old.ID})
	f.lastName.Delete(lastKey{old.LastName, old.ID})
	f.townName.ReplaceOrInsert(townKey{c.Town, c.LastName, c.ID})
	f.lastName.ReplaceOrInsert(lastKey{c.LastName, c.ID})
	return nil
}

// each calls fn with the record of every entry of the Town, LastName tree
// from pivot on while match holds, and stops on the first a hop misses.
func (f *keysOnlyFloor) each(pivot townKey, match func(townKey) bool, fn func(Customer)) error {
	var err error
	f.townName.AscendGreaterOrEqual(pivot, func(k townKey) bool {
		if !match(k) {
			return false
		}
		r, ok := f.record(k.id)
		if !ok {
			err = fmt.Errorf("floor-keys-only: entry of a missing customer %s", k.id)
			return false
		}
		fn(*r)
		return true
	})
	return err
}

func (f *keysOnlyFloor) Lookup(town, last string, fn func(Customer)) error {
	return f.each(townKey{town: town, lastName: last}, func(k townKey) bool {
		return k.town == town && k.lastName == last
	}, fn)
}

func (f *keysOnlyFloor) Range(town string, n int, fn func(Customer)) error {
	return f.each(townKey{town: town}, func(k townKey) bool {
		if k.town != town || n == 0 {
			return false
		}
		n--
		return true
	}, fn)
}

func (f *keysOnlyFloor) Get(id string) (Customer, error) {
	r, ok := f.record(id)
	if !ok {
		return Customer{}, fmt.Errorf("floor-keys-only: customer %s: %w", id, ErrNotFound)
	}
	return *r, nil
}

func (f *keysOnlyFloor) Scan(fn func(Customer)) error {
	f.primary.Ascend(func(r *Customer) bool {
		fn(*r)
		return true
	})
	return nil
}

func (f *keysOnlyFloor) Close() error { return nil }
