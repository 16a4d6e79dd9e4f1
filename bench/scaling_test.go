package bench

import (
	"fmt"
	"testing"

	"github.com/indextable/indextable"
)

// BenchmarkScaling loads 10,000, 100,000 and 1,000,000 customers into a
// full-copy table on the memory store and times a get, an exact lookup, a
// range of 100 and an insert at each size: their cost should grow with the
// logarithm of the size, not with the size. scan-lookup answers the exact
// lookup without an index, by scanning the fact table: the cost the index
// saves. The floor's get, lookup and range100 at each size, in the same
// run, show what of the growth is the machine's (caches the data outgrows)
// rather than the library's.
//
//	go test -run='^$' -bench=Scaling -count=3 .
func BenchmarkScaling(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s, err := NewIndexTable(indextable.NewMemoryStore(), indextable.FullCopy)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			data := make([]Customer, n)
			for i := range data {
				data[i] = NewCustomer(i)
				if err := s.Insert(data[i]); err != nil {
					b.Fatal(err)
				}
			}
			scaleOps(b, s, data, "")
			floor, _ := NewFloor()
			for _, c := range data {
				if err := floor.Insert(c); err != nil {
					b.Fatal(err)
				}
			}
			scaleOps(b, floor, data, "floor-")
		})
	}
}

// scaleOps times the operations on s, named with prefix; the floor's
// (prefix "floor-") only the reads the library's are compared with.
func scaleOps(b *testing.B, s System, data []Customer, prefix string) {
	b.Run(prefix+"get", func(b *testing.B) {
		for i := range b.N {
			if _, err := s.Get(spread(data, i).ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(prefix+"lookup", func(b *testing.B) {
		for i := range b.N {
			c := spread(data, i)
			if err := s.Lookup(c.Town, c.LastName, func(Customer) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(prefix+"range100", func(b *testing.B) {
		for i := range b.N {
			if err := s.Range(towns()[i%Towns], 100, func(Customer) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if prefix != "" {
		return
	}
	b.Run("scan-lookup", func(b *testing.B) {
		for i := range b.N {
			c, n := spread(data, i), 0
			err := s.Scan(func(r Customer) {
				if r.Town == c.Town && r.LastName == c.LastName {
					n++
				}
			})
			if err != nil || n == 0 {
				b.Fatal(err, n)
			}
		}
	})
	next := len(data)
	b.Run("insert", func(b *testing.B) { timeInserts(b, s, &next) })
}
