package azstore_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// stock is the record of the online schema change test: partitioned by
// shop, indexed by tag from the first schema and by price from the next.
type stock struct {
	Shop, ID string
	Price    int
	Tag      string
}

const (
	stockShops  = 3
	stockIDs    = 20
	stockPrices = 8
)

// randomStock returns a record of one of the test's 60 primary keys.
func randomStock(rng *rand.Rand) stock {
	return stock{Shop: fmt.Sprintf("s%d", rng.IntN(stockShops)), ID: fmt.Sprintf("%02d", rng.IntN(stockIDs)),
		Price: rng.IntN(stockPrices), Tag: []string{"red", "green", "blue"}[rng.IntN(3)]}
}

// stockWriters insert, update, upsert and delete random records through
// one table from two goroutines until stopped.
type stockWriters struct {
	stop      chan struct{}
	wg        sync.WaitGroup
	committed atomic.Int64  // writes that succeeded
	failed    chan struct{} // closed on the first error that is not a normal outcome
	once      sync.Once
	err       error
}

// startWriters starts two writers on tbl; seed varies their records.
func startWriters(tbl *indextable.Table[stock], seed uint64) *stockWriters {
	w := &stockWriters{stop: make(chan struct{}), failed: make(chan struct{})}
	ctx := context.Background()
	for g := range uint64(2) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			rng := rand.New(rand.NewPCG(seed, g))
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				rec := randomStock(rng)
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = tbl.Insert(ctx, rec)
				case 1:
					_, err = tbl.Update(ctx, rec)
				case 2:
					_, err = tbl.Upsert(ctx, rec)
				default:
					err = tbl.Delete(ctx, indextable.Tuple{rec.Shop, rec.ID})
				}
				switch {
				case err == nil:
					w.committed.Add(1)
				case errors.Is(err, kv.ErrConflict), errors.Is(err, kv.ErrNotFound), errors.Is(err, indextable.ErrExists):
				default:
					w.once.Do(func() {
						w.err = err
						close(w.failed)
					})
					return
				}
			}
		}()
	}
	return w
}

// await returns once the writers have committed n writes in all, or one
// of them has failed.
func (w *stockWriters) await(n int64) {
	for w.committed.Load() < n {
		select {
		case <-w.failed:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// halt stops the writers, waits for them and returns the first error that
// was not a normal outcome of a write.
func (w *stockWriters) halt() error {
	close(w.stop)
	w.wg.Wait()
	return w.err
}

// TestOnlineSchemaChangeOnAzurite is the online schema change on a store
// of bounded atomicity, as in a rolling deploy: two handles of one table,
// the newer with one more index (on Price, by Fields), share an Azure
// table while two writers keep changing records through the older. The
// newer handle's Open adds the index delete-only, the older learns it
// within the schema lease, and Build steps it to write-only and builds it
// only once every handle has seen each state: so once Build has returned
// and the maintainers have applied the queue, Verify finds no drift, and
// every query of the index, through either handle, returns what a scan of
// the fact table does. Then a third handle
// drops the index while the writers go on through the newer one, which
// learns the drop: Build on the third waits out the lease and deletes the
// index's entries, and no writer puts one back. Each placement of the new
// index is tried: intra-partition entries commit with their record,
// inter-partition ones go through the queue.
func TestOnlineSchemaChangeOnAzurite(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	tag := indextable.Index[stock]{Name: "tag", Fields: []string{"Tag"}}
	for _, tc := range []struct {
		name  string
		price indextable.Index[stock]
		// shops are the leading Eq values of the queries checked: each
		// shop for an index led by Shop, "" (no Eq) for one on Price.
		shops []string
	}{
		{
			name:  "inter-partition",
			price: indextable.Index[stock]{Name: "price", Fields: []string{"Price"}, Strategy: indextable.FullCopy, Placement: indextable.InterPartition},
			shops: []string{""},
		},
		{
			name:  "intra-partition",
			price: indextable.Index[stock]{Name: "price", Fields: []string{"Shop", "Price"}, Strategy: indextable.FullCopy, Placement: indextable.IntraPartition},
			shops: []string{"s0", "s1", "s2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openFresh(t, conn)
			openAs := func(revision int64, indexes ...indextable.Index[stock]) *indextable.Table[stock] {
				// A lease of 1 s: a write commits within a lease of its
				// view's check, with margin on a slow machine.
				tbl, err := indextable.Open(ctx, s, indextable.Schema[stock]{Name: "stock", PrimaryKey: []string{"Shop", "ID"},
					Indexes: indexes, SchemaLease: time.Second, Revision: revision})
				require.NoError(t, err)
				return tbl
			}
			requireClean := func(tbl *indextable.Table[stock]) {
				t.Helper()
				storetest.Drain(t, tbl)
				rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
				require.NoError(t, err)
				require.Zero(t, rep.Total(), "%+v", rep.Samples)
				require.Zero(t, rep.Pending)
			}

			older := openAs(1, tag)
			rng := rand.New(rand.NewPCG(1, 1))
			for range 40 {
				_, err := older.Upsert(ctx, randomStock(rng))
				require.NoError(t, err)
			}
			writers := startWriters(older, 2)
			newer := openAs(2, tag, tc.price)
			status, err := newer.IndexStatus(ctx)
			require.NoError(t, err)
			require.Equal(t, indextable.IndexDeleteOnly, status[1].State, "an index added to a table in use")
			var building int64 = -1 // the writes committed when the build's first chunk did
			require.NoError(t, newer.Build(ctx, indextable.BuildOptions{ChunkSize: 8, Progress: func(indextable.BuildProgress) {
				if building < 0 { // let the writers overtake the build
					building = writers.committed.Load()
					writers.await(building + 20)
				}
			}}))
			require.NoError(t, writers.halt())
			require.Greater(t, writers.committed.Load(), building+19, "writes while the index was built")
			t.Logf("%d writes through the older handle", writers.committed.Load())

			// Inter-partition entries lag their records until the
			// maintainers apply the queue: a query may miss a record
			// whose change is pending. Drained, the index is exact.
			requireClean(newer)
			var recs []stock // a scan of the fact table, in primary key order
			for r, err := range older.Find(ctx, indextable.Query{}) {
				require.NoError(t, err)
				recs = append(recs, r)
			}
			require.NotEmpty(t, recs)
			for _, q := range priceQueries(recs, tc.shops) {
				for _, h := range []struct {
					name string
					tbl  *indextable.Table[stock]
				}{{"newer", newer}, {"older", older}} {
					var got []stock
					for r, err := range h.tbl.Find(ctx, q.query) {
						require.NoError(t, err, "%s handle, %+v", h.name, q.query)
						got = append(got, r)
					}
					require.Equal(t, q.want, got, "%s handle, %+v", h.name, q.query)
				}
			}

			writers = startWriters(newer, 3)
			dropper := openAs(3, tag) // drops "price"
			require.NoError(t, dropper.Build(ctx, indextable.BuildOptions{}))
			writers.await(writers.committed.Load() + 20) // writes after the entries were deleted
			require.NoError(t, writers.halt())
			requireClean(dropper)
			priceIndex, err := kv.EncodeTuple("price")
			require.NoError(t, err)
			entries := 0
			for e, err := range s.Scan(ctx, kv.ScanRange{}) {
				require.NoError(t, err)
				k, ok := kv.ParseKey(e.Key)
				require.True(t, ok, "%q", e.Key)
				if k.Space == kv.SpaceIndex || k.Space == kv.SpaceIntra {
					require.NotEqual(t, priceIndex, k.Index, "an entry of the dropped index: %q", e.Key)
					entries++
				}
			}
			require.NotZero(t, entries, "the tag index's entries")
			_, err = newer.Count(ctx, indextable.Query{Index: "price"})
			require.ErrorIs(t, err, indextable.ErrIndexNotReadable, "the drop is learnt")
		})
	}
}

// priceQuery is a query of the price index and the records it should
// return.
type priceQuery struct {
	query indextable.Query
	want  []stock
}

// priceQueries returns the queries of the price index to check, with the
// records that each should return, taken from recs, a scan of the fact
// table: for each shop ("" for none), each price and a range of prices.
func priceQueries(recs []stock, shops []string) []priceQuery {
	var qs []priceQuery
	for _, shop := range shops {
		var eq indextable.Tuple
		if shop != "" {
			eq = indextable.Tuple{shop}
		}
		in := func(r stock) bool { return shop == "" || r.Shop == shop }
		for p := range stockPrices + 1 {
			qs = append(qs, priceQuery{indextable.Query{Index: "price", Eq: append(slices.Clone(eq), p)},
				filterStock(recs, func(r stock) bool { return in(r) && r.Price == p })})
		}
		inRange := filterStock(recs, func(r stock) bool { return in(r) && r.Price >= 2 && r.Price < 6 })
		slices.SortStableFunc(inRange, func(a, b stock) int { return cmp.Compare(a.Price, b.Price) }) // then by primary key
		qs = append(qs, priceQuery{indextable.Query{Index: "price", Eq: eq, Lower: indextable.Inclusive(2), Upper: indextable.Exclusive(6)}, inRange})
	}
	return qs
}

// filterStock returns the records of recs that keep returns true for.
func filterStock(recs []stock, keep func(stock) bool) []stock {
	var out []stock
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
