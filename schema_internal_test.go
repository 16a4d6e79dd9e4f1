package indextable

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// BenchmarkVersionCondition times what the schema version condition costs a
// write on a store of unbounded atomicity, where every batch expects the
// table's schema version as the handle last read it (startBatch): inserts
// into two tables of the same workload on memory stores, one as opened and
// one whose handle leaves the condition out (versioned false, which only
// this benchmark sets), in one run. The workload is BenchmarkTable's binary
// keys-only one, whose entries are the smallest of the strategies, so that
// its insert is the one the condition weighs on most: 100,000 customers, a
// Town+LastName and a LastName index.
//
// The two conditions alternate, in vcRounds short rounds, the first of a
// round taking turns, so that a machine whose load changes during the run
// weighs on both alike: -count=1 gives vcRounds runs of each. Compare them
// with
//
//	go test -run='^$' -bench='^BenchmarkVersionCondition$' -benchtime=2000x -count=1 . > vc.txt
//	benchstat -col '/condition@(without with)' -ignore /round vc.txt
//
// make bench runs it so, after BenchmarkTable: 50 rounds of 2,000 inserts
// grow each table as much as BenchmarkTable's inserts grow its tables.
func BenchmarkVersionCondition(b *testing.B) {
	ctx := context.Background()
	// Both tables are loaded before either is timed, so that both run with
	// the same heap, and each grows only by its own inserts.
	conds := []struct {
		name      string
		versioned bool
		tbl       *Table[vcCustomer]
		next      int
	}{{name: "with", versioned: true}, {name: "without", versioned: false}}
	for i := range conds {
		c := &conds[i]
		tbl, err := Open(ctx, NewMemoryStore(), vcSchema())
		if err != nil {
			b.Fatal(err)
		}
		if !tbl.versioned {
			b.Fatal("a table on the memory store does not expect its schema version")
		}
		tbl.versioned = c.versioned
		for _, r := range vcCustomers(0, vcRecords) {
			if _, err := tbl.Insert(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		c.tbl, c.next = tbl, vcRecords
	}
	for round := range vcRounds {
		for k := range conds {
			c := &conds[(k+round)%len(conds)]
			b.Run(fmt.Sprintf("round=%02d/condition=%s", round+1, c.name), func(b *testing.B) {
				b.ReportAllocs()
				var batch []vcCustomer
				for i := range b.N {
					if len(batch) == 0 {
						b.StopTimer()
						batch = vcCustomers(c.next, min(4096, b.N-i))
						c.next += len(batch)
						b.StartTimer()
					}
					if _, err := c.tbl.Insert(ctx, batch[0]); err != nil {
						b.Fatal(err)
					}
					batch = batch[1:]
				}
			})
		}
	}
}

// vcRounds is how many times BenchmarkVersionCondition times each
// condition, in turn.
const vcRounds = 50

// vcRecords is how many customers the tables of BenchmarkVersionCondition
// hold before the timed inserts: bench_test.go's benchRecords.
const vcRecords = 100_000

// vcCustomer is the Customer of internal/fixture, which a test of this
// package cannot import (fixture imports it).
type vcCustomer struct {
	ID        string
	FirstName string
	LastName  string
	Town      string
	Email     string
	Phone     string
}

// vcCustomers returns the n customers numbered from start of fixture.Bench
// (100 towns, 1,000 surnames): the same records as the benchmarks of
// bench_test.go.
func vcCustomers(start, n int) []vcCustomer {
	out := make([]vcCustomer, n)
	for j := range out {
		i := start + j
		out[j] = vcCustomer{
			ID:        fmt.Sprintf("C%07d", i),
			FirstName: fmt.Sprintf("First%d", i%500),
			LastName:  fmt.Sprintf("Surname%04d", (i/100)%1000),
			Town:      fmt.Sprintf("Town%03d", i%100),
			Email:     fmt.Sprintf("c%d@example.com", i),
			Phone:     fmt.Sprintf("555-%07d", i),
		}
	}
	return out
}

// vcSchema is fixture.Schema(KeysOnly, nil, &BinaryCodec{}).
func vcSchema() Schema[vcCustomer] {
	return Schema[vcCustomer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Codec:      &BinaryCodec{},
		Indexes: []Index[vcCustomer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: KeysOnly},
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: KeysOnly},
		},
	}
}

// TestVersionConditionWorkload checks BenchmarkVersionCondition's two
// sides: without the condition, an insert applies the batch it applies with
// it, less the expectation of the schema version; and its customers are
// fixture.Bench's (the values pinned by fixture's TestPopulation).
func TestVersionConditionWorkload(t *testing.T) {
	ctx := context.Background()
	insert := func(versioned bool) []kv.Op {
		s := &batchLog{MemoryStore: NewMemoryStore()}
		tbl, err := Open(ctx, s, vcSchema())
		require.NoError(t, err)
		require.True(t, tbl.versioned, "a table on the memory store expects its schema version")
		tbl.versioned = versioned
		_, err = tbl.Insert(ctx, vcCustomers(7, 1)[0])
		require.NoError(t, err)
		return s.last
	}
	with, without := insert(true), insert(false)
	require.Len(t, with, 5, "the version, the record's absence, the record and two entries")
	require.Equal(t, kv.OpExpectValue, with[0].Kind)
	require.Equal(t, schemaVersionKey(tablePrefix("customers")), with[0].Key)
	require.Len(t, without, len(with)-1)
	for i, op := range without {
		require.Equal(t, with[i+1].Kind, op.Kind, "operation %d", i)
		require.Equal(t, with[i+1].Key, op.Key, "operation %d", i)
	}

	require.Equal(t, vcCustomer{ID: "C0123456", FirstName: "First456", LastName: "Surname0234",
		Town: "Town056", Email: "c123456@example.com", Phone: "555-0123456"}, vcCustomers(123456, 1)[0])
}

// batchLog is a memory store that keeps the operations of the last batch it
// was given.
type batchLog struct {
	*MemoryStore
	last []kv.Op
}

func (s *batchLog) Apply(ctx context.Context, b *kv.Batch) error {
	s.last = nil // keys and values copied: a table reuses them
	for _, op := range b.Ops() {
		s.last = append(s.last, kv.Op{Kind: op.Kind, Key: bytes.Clone(op.Key), Value: bytes.Clone(op.Value)})
	}
	return s.MemoryStore.Apply(ctx, b)
}
