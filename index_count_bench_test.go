package indextable_test

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"github.com/google/btree"

	it "github.com/indextable/indextable"
)

// countedIndexes are the indexes of BenchmarkIndexes, in the order a table
// takes them: the first two are BenchmarkTable's. Each has the floor's
// order of its entries: its key's fields, then the ID.
var countedIndexes = []struct {
	name   string
	fields []string
	cmp    func(a, b *Customer) int
}{
	{"town_lastname", []string{"Town", "LastName"}, func(a, b *Customer) int {
		return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}},
	{"lastname", []string{"LastName"}, func(a, b *Customer) int {
		return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}},
	{"email", []string{"Email"}, func(a, b *Customer) int {
		return cmp.Or(cmp.Compare(a.Email, b.Email), cmp.Compare(a.ID, b.ID))
	}},
	{"firstname_lastname", []string{"FirstName", "LastName"}, func(a, b *Customer) int {
		return cmp.Or(cmp.Compare(a.FirstName, b.FirstName), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}},
}

// BenchmarkIndexes measures what each index costs a write: inserts and
// updates that move the Town+LastName key, as BenchmarkTable's, with 0 to 4
// of countedIndexes, on the memory store (binary codec) with the indexes
// of each strategy, against the floor kept by hand with the same indexes
// (a primary B-tree of records and a secondary B-tree of record pointers
// an index, as BenchmarkFloor's), in the same run. Names are
// BenchmarkIndexes/k=<indexes>/<system>/<op>, the system the floor, a
// strategy, or fact-only (no index, the strategy's row at k=0). Each
// table or floor is loaded with the benchRecords customers first.
//
//	go test -run='^$' -bench='^BenchmarkIndexes$' -benchmem -benchtime=20000x .
func BenchmarkIndexes(b *testing.B) {
	for k := range len(countedIndexes) + 1 {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			b.Run("floor", func(b *testing.B) {
				f := newIndexFloor(k)
				for _, c := range benchBase() {
					f.upsert(c)
				}
				benchWrites(b, f.upsert, f.upsert)
			})
			if k == 0 {
				b.Run("fact-only", func(b *testing.B) { benchTableWrites(b, indexSchema(0, it.KeysOnly, nil)) })
				return
			}
			for _, st := range strategies {
				b.Run(st.name, func(b *testing.B) { benchTableWrites(b, indexSchema(k, st.s, st.proj)) })
			}
		})
	}
}

// indexSchema is fixture.Schema's table with the first k countedIndexes, of
// strategy s and projection proj, and the binary codec.
func indexSchema(k int, s it.Strategy, proj []string) it.Schema[Customer] {
	schema := it.Schema[Customer]{Name: "customers", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{}}
	for _, ix := range countedIndexes[:k] {
		schema.Indexes = append(schema.Indexes, it.Index[Customer]{Name: ix.name, Fields: ix.fields, Strategy: s, Projection: proj})
	}
	return schema
}

// benchTableWrites loads the benchRecords customers into a table of schema
// on a new memory store, then times its writes.
func benchTableWrites(b *testing.B, schema it.Schema[Customer]) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), schema)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range benchBase() {
		if _, err := tbl.Insert(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	benchWrites(b, func(c Customer) {
		if _, err := tbl.Upsert(ctx, c); err != nil {
			b.Fatal(err)
		}
	}, func(c Customer) {
		if _, err := tbl.Insert(ctx, c); err != nil {
			b.Fatal(err)
		}
	})
}

// benchWrites times BenchmarkTable's update-moving-key and insert: upsert
// of the loaded customers, each moved to another town, then insert of new
// ones.
func benchWrites(b *testing.B, upsert, insert func(Customer)) {
	base, towns := benchBase(), benchTownNames()
	next := benchRecords
	b.Run("update-moving-key", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			c := base[i%benchRecords]
			c.Town = towns[(i/benchRecords+1+i)%benchTowns]
			upsert(c)
		}
	})
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		fresh := freshCustomers(b, &next)
		for range b.N {
			insert(fresh())
		}
	})
}

// indexFloor keeps the table by hand with k of countedIndexes: a primary
// B-tree of records and a secondary B-tree of record pointers an index, in
// the index's order, kept as BenchmarkFloor's floor keeps its two.
type indexFloor struct {
	primary *btree.BTreeG[*Customer]
	indexes []*btree.BTreeG[*Customer]
}

func newIndexFloor(k int) *indexFloor {
	f := &indexFloor{primary: btree.NewG(32, func(a, b *Customer) bool { return a.ID < b.ID })}
	for _, ix := range countedIndexes[:k] {
		f.indexes = append(f.indexes, btree.NewG(32, func(a, b *Customer) bool { return ix.cmp(a, b) < 0 }))
	}
	return f
}

func (f *indexFloor) upsert(c Customer) {
	rec := &c
	if old, ok := f.primary.ReplaceOrInsert(rec); ok {
		for _, t := range f.indexes {
			t.Delete(old)
		}
	}
	for _, t := range f.indexes {
		t.ReplaceOrInsert(rec)
	}
}
