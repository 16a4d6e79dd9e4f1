package indextable_test

import (
	"cmp"
	"context"
	"sync"
	"testing"

	"github.com/google/btree"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/fixture"
)

// The benchmarks load benchRecords customers into a table with two indexes,
// a composite (Town, LastName) and a LastName index, both of one strategy,
// and time the operations of the Index Table pattern against the floor: the
// same workload kept by hand in google/btree trees (floor), whose reads the
// keys-only floor repeats with keys-only indexes. Reads run first, on the
// loaded data; updates and inserts last. A fixed number of operations keeps
// the table near its loaded size. Compare within one run:
//
//	go test -run='^$' -bench=. -benchmem -benchtime=20000x .
const (
	benchRecords  = 100_000
	benchTowns    = fixture.BenchTowns    // 1,000 customers a town: a 100-record prefix range
	benchSurnames = fixture.BenchSurnames // 100 customers a surname, one in each town
)

// Customer is the record of the benchmarks.
type Customer = fixture.Customer

// benchBase is the loaded data set and benchTownNames its towns, made once
// so that no benchmark times fmt.Sprintf.
var (
	benchBase      = sync.OnceValue(func() []Customer { return fixture.Bench.Customers(0, benchRecords) })
	benchTownNames = sync.OnceValue(fixture.Bench.TownNames)
)

// freshCustomers returns a source of customers numbered from *next on,
// made in batches with the timer stopped.
func freshCustomers(b *testing.B, next *int) func() Customer {
	var batch []Customer
	return func() Customer {
		if len(batch) == 0 {
			b.StopTimer()
			batch = fixture.Bench.Customers(*next, 4096)
			*next += len(batch)
			b.StartTimer()
		}
		c := batch[0]
		batch = batch[1:]
		return c
	}
}

// benchCustomer returns customer i of the data set.
func benchCustomer(i int) Customer { return fixture.Bench.Customer(i) }

var strategies = []struct {
	name string
	s    it.Strategy
	proj []string
}{
	{"full-copy", it.FullCopy, nil},
	{"keys-only", it.KeysOnly, nil},
	{"partial", it.Partial, []string{"FirstName"}},
}

func openBenchTable(b *testing.B, s it.Strategy, proj []string, codec it.Codec) *it.Table[Customer] {
	b.Helper()
	tbl, err := it.Open(context.Background(), it.NewMemoryStore(), fixture.Schema(s, proj, codec))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchBase() {
		if _, err := tbl.Insert(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	return tbl
}

var codecs = []struct {
	name  string
	codec func() it.Codec
}{
	{"binary", func() it.Codec { return &it.BinaryCodec{} }},
	{"json", func() it.Codec { return it.JSONCodec{} }},
}

func BenchmarkTable(b *testing.B) {
	for _, c := range codecs {
		for _, st := range strategies {
			b.Run(c.name+"/"+st.name, func(b *testing.B) {
				benchTable(b, openBenchTable(b, st.s, st.proj, c.codec()), st.s)
			})
		}
	}
}

func benchTable(b *testing.B, tbl *it.Table[Customer], strategy it.Strategy) {
	ctx := context.Background()
	base, towns := benchBase(), benchTownNames()
	next := benchRecords
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := range b.N {
			c := base[i%benchRecords]
			for _, err := range tbl.Find(ctx, it.Query{Index: "town_lastname", Eq: it.Tuple{c.Town, c.LastName}}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		b.ReportMetric(float64(n)/float64(b.N), "records/op")
	})
	b.Run("range100", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			n := 0
			q := it.Query{Index: "town_lastname", Eq: it.Tuple{towns[i%benchTowns]}, Limit: 100}
			for _, err := range tbl.Find(ctx, q) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 100 {
				b.Fatalf("range read %d records", n)
			}
		}
	})
	if strategy == it.Partial {
		b.Run("range100-covered", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				q := it.Query{Index: "town_lastname", Eq: it.Tuple{towns[i%benchTowns]}, Limit: 100, Covered: true}
				for _, err := range tbl.Find(ctx, q) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := tbl.Get(ctx, base[i%benchRecords].ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update-moving-key", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			c := base[i%benchRecords]
			c.Town = towns[(i/benchRecords+1+i)%benchTowns]
			if _, err := tbl.Upsert(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		fresh := freshCustomers(b, &next)
		for range b.N {
			if _, err := tbl.Insert(ctx, fresh()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// floor keeps the same table and indexes by hand: a primary B-tree of
// records and two secondary B-trees of keys pointing at the records.
type floor struct {
	primary  *btree.BTreeG[*Customer]
	townName *btree.BTreeG[*Customer] // ordered by Town, LastName, ID
	lastName *btree.BTreeG[*Customer] // ordered by LastName, ID
}

func newFloor() *floor {
	return &floor{
		primary: btree.NewG(32, func(a, b *Customer) bool { return a.ID < b.ID }),
		townName: btree.NewG(32, func(a, b *Customer) bool {
			return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID)) < 0
		}),
		lastName: btree.NewG(32, func(a, b *Customer) bool {
			return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID)) < 0
		}),
	}
}

func (f *floor) upsert(c Customer) {
	rec := &c
	if old, ok := f.primary.ReplaceOrInsert(rec); ok {
		f.townName.Delete(old)
		f.lastName.Delete(old)
	}
	f.townName.ReplaceOrInsert(rec)
	f.lastName.ReplaceOrInsert(rec)
}

// keysOnlyFloor keeps the table by hand as a keys-only index keeps it: a
// primary B-tree of records and two secondary B-trees that hold only their
// key and the ID, so that a read takes each entry, gets its record from the
// primary tree (a second hop) and copies it out. It is the floor of the
// keys-only and partial reads.
type keysOnlyFloor struct {
	primary  *btree.BTreeG[*Customer]
	townName *btree.BTreeG[townKey] // ordered by Town, LastName, ID
	lastName *btree.BTreeG[lastKey] // ordered by LastName, ID
	pivot    Customer               // the primary tree's search key, reused
}

// townKey and lastKey are the entries of keysOnlyFloor's secondary trees.
type (
	townKey struct{ town, lastName, id string }
	lastKey struct{ lastName, id string }
)

func newKeysOnlyFloor() *keysOnlyFloor {
	return &keysOnlyFloor{
		primary: btree.NewG(32, func(a, b *Customer) bool { return a.ID < b.ID }),
		townName: btree.NewG(32, func(a, b townKey) bool {
			return cmp.Or(cmp.Compare(a.town, b.town), cmp.Compare(a.lastName, b.lastName), cmp.Compare(a.id, b.id)) < 0
		}),
		lastName: btree.NewG(32, func(a, b lastKey) bool {
			return cmp.Or(cmp.Compare(a.lastName, b.lastName), cmp.Compare(a.id, b.id)) < 0
		}),
	}
}

func (f *keysOnlyFloor) upsert(c Customer) {
	rec := &c
	if old, ok := f.primary.ReplaceOrInsert(rec); ok {
		f.townName.Delete(townKey{old.Town, old.LastName, old.ID})
		f.lastName.Delete(lastKey{old.LastName, old.ID})
	}
	f.townName.ReplaceOrInsert(townKey{c.Town, c.LastName, c.ID})
	f.lastName.ReplaceOrInsert(lastKey{c.LastName, c.ID})
}

// record returns the record with id: the second hop of a keys-only read.
func (f *keysOnlyFloor) record(b *testing.B, id string) *Customer {
	f.pivot.ID = id
	r, ok := f.primary.Get(&f.pivot)
	if !ok {
		b.Fatalf("entry of a missing record %s", id)
	}
	return r
}

// benchKeysOnlyFloor times the keys-only floor's lookup and range100, read
// as BenchmarkFloor's are.
func benchKeysOnlyFloor(b *testing.B) {
	f := newKeysOnlyFloor()
	base, towns := benchBase(), benchTownNames()
	for _, c := range base {
		f.upsert(c)
	}
	b.Run("lookup-keys-only", func(b *testing.B) {
		b.ReportAllocs()
		var out []Customer
		for i := range b.N {
			c := base[i%benchRecords]
			out = out[:0]
			f.townName.AscendGreaterOrEqual(townKey{c.Town, c.LastName, ""}, func(k townKey) bool {
				if k.town != c.Town || k.lastName != c.LastName {
					return false
				}
				out = append(out, *f.record(b, k.id))
				return true
			})
		}
	})
	b.Run("range100-keys-only", func(b *testing.B) {
		b.ReportAllocs()
		out := make([]Customer, 0, 100)
		for i := range b.N {
			town := towns[i%benchTowns]
			out = out[:0]
			f.townName.AscendGreaterOrEqual(townKey{town: town}, func(k townKey) bool {
				if k.town != town || len(out) == 100 {
					return false
				}
				out = append(out, *f.record(b, k.id))
				return true
			})
			if len(out) != 100 {
				b.Fatalf("range read %d records", len(out))
			}
		}
	})
}

// BenchmarkFloor times the workload of BenchmarkTable on the floor, and
// then the reads of the keys-only floor (lookup-keys-only and
// range100-keys-only), which keys-only and partial reads compare with.
func BenchmarkFloor(b *testing.B) {
	f := newFloor()
	base, towns := benchBase(), benchTownNames()
	for _, c := range base {
		f.upsert(c)
	}
	next := benchRecords
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		var out []Customer
		for i := range b.N {
			c := base[i%benchRecords]
			pivot := &Customer{Town: c.Town, LastName: c.LastName}
			out = out[:0]
			f.townName.AscendGreaterOrEqual(pivot, func(r *Customer) bool {
				if r.Town != c.Town || r.LastName != c.LastName {
					return false
				}
				out = append(out, *r)
				return true
			})
		}
	})
	b.Run("range100", func(b *testing.B) {
		b.ReportAllocs()
		out := make([]Customer, 0, 100)
		for i := range b.N {
			town := towns[i%benchTowns]
			out = out[:0]
			f.townName.AscendGreaterOrEqual(&Customer{Town: town}, func(r *Customer) bool {
				if r.Town != town || len(out) == 100 {
					return false
				}
				out = append(out, *r)
				return true
			})
			if len(out) != 100 {
				b.Fatalf("range read %d records", len(out))
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, ok := f.primary.Get(&base[i%benchRecords]); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("update-moving-key", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			c := base[i%benchRecords]
			c.Town = towns[(i/benchRecords+1+i)%benchTowns]
			f.upsert(c)
		}
	})
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		fresh := freshCustomers(b, &next)
		for range b.N {
			f.upsert(fresh())
		}
	})
	benchKeysOnlyFloor(b)
}
