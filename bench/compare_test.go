package bench

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
)

// benchRecords is how many customers each System holds before the
// operations are timed.
const benchRecords = 100_000

// compared are the Systems of BenchmarkCompare, the floor first and the
// keys-only floor (what keys-only and partial reads compare with) next.
var compared = []struct {
	name string
	open func(b *testing.B) (System, error)
	heap bool // keeps its data on the Go heap: report bytes per record
}{
	{"floor", func(*testing.B) (System, error) { return NewFloor() }, true},
	{"floor-keys-only", func(*testing.B) (System, error) { return NewKeysOnlyFloor() }, true},
	{"indextable-full-copy", memoryTable(indextable.FullCopy), true},
	{"indextable-keys-only", memoryTable(indextable.KeysOnly), true},
	{"indextable-partial", memoryTable(indextable.Partial), true},
	{"indextable-pebble-full-copy", func(b *testing.B) (System, error) {
		s, err := pebblestore.Open(b.TempDir(), pebblestore.Options{NoSync: true})
		if err != nil {
			return nil, err
		}
		return NewIndexTable(s, indextable.FullCopy)
	}, false},
	{"go-memdb", func(*testing.B) (System, error) { return NewMemDB() }, true},
	{"buntdb", func(*testing.B) (System, error) { return NewBuntDB() }, true},
}

func memoryTable(s indextable.Strategy) func(*testing.B) (System, error) {
	return func(*testing.B) (System, error) { return NewIndexTable(indextable.NewMemoryStore(), s) }
}

// base is the loaded data set, made once; towns are its towns' names.
var (
	base = sync.OnceValue(func() []Customer {
		out := make([]Customer, benchRecords)
		for i := range out {
			out[i] = NewCustomer(i)
		}
		return out
	})
	towns = sync.OnceValue(func() []string {
		out := make([]string, Towns)
		for i := range out {
			out[i] = fmt.Sprintf("Town%03d", i)
		}
		return out
	})
)

// BenchmarkCompare loads benchRecords customers into each System and times
// the workload's operations on it: an exact Town, LastName lookup (one
// record), the first 100 customers of a town in LastName order, a get by
// ID, an update that moves both index keys, and an insert. Reads run first,
// on the loaded data; updates and inserts last. Compare within one run; the
// Makefile's bench-compare turns the output into a table of ratios to the
// floor.
func BenchmarkCompare(b *testing.B) {
	data := base()
	for _, sys := range compared {
		b.Run(sys.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, err := sys.open(b)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for _, c := range data {
				// Strings of its own, as a record decoded from a request
				// would have, so that what a system keeps of them counts.
				if err := s.Insert(clone(c)); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perRecord := float64(after.HeapAlloc-before.HeapAlloc) / benchRecords
			benchOps(b, s, data, perRecord, sys.heap)
		})
	}
}

func benchOps(b *testing.B, s System, data []Customer, perRecord float64, heap bool) {
	b.Run("lookup", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := range b.N {
			c := spread(data, i)
			if err := s.Lookup(c.Town, c.LastName, func(Customer) { n++ }); err != nil {
				b.Fatal(err)
			}
		}
		if n != b.N {
			b.Fatalf("lookups found %d records, want %d", n, b.N)
		}
	})
	b.Run("range100", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := range b.N {
			if err := s.Range(towns()[i%Towns], 100, func(Customer) { n++ }); err != nil {
				b.Fatal(err)
			}
		}
		if n != 100*b.N {
			b.Fatalf("ranges found %d records, want %d", n, 100*b.N)
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := s.Get(spread(data, i).ID); err != nil {
				b.Fatal(err)
			}
		}
		if heap {
			b.ReportMetric(perRecord, "heap-bytes/record")
		}
	})
	b.Run("update", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if err := s.Update(Moved(spread(data, i), i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	next := len(data) // the next new customer
	b.Run("insert", func(b *testing.B) {
		b.ReportAllocs()
		timeInserts(b, s, &next)
	})
}

// timeInserts times b.N inserts of new customers into s, numbered from
// *next on, made with the timer stopped.
func timeInserts(b *testing.B, s System, next *int) {
	fresh := make([]Customer, b.N)
	for i := range fresh {
		fresh[i] = NewCustomer(*next)
		*next++
	}
	b.ResetTimer()
	for _, c := range fresh {
		if err := s.Insert(c); err != nil {
			b.Fatal(err)
		}
	}
}

// spread returns the i-th customer of data in an order that jumps across
// the whole table, as reads of a large table do.
func spread(data []Customer, i int) Customer { return data[(i*7919)%len(data)] }

// clone returns c with copies of its strings.
func clone(c Customer) Customer {
	return Customer{
		ID:        strings.Clone(c.ID),
		FirstName: strings.Clone(c.FirstName),
		LastName:  strings.Clone(c.LastName),
		Town:      strings.Clone(c.Town),
		Email:     strings.Clone(c.Email),
		Phone:     strings.Clone(c.Phone),
	}
}
