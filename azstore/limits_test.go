package azstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestLimitsOnAzure writes records whose key fields and sizes straddle
// Azure's limits through a table, on one Azure table and on a
// ShardedStore of four (storetest.TestLimits): what is acknowledged is
// indexed, what is refused changed nothing, every record can be deleted.
func TestLimitsOnAzure(t *testing.T) {
	conn := azuritetest.Connection(t)
	t.Run("table", func(t *testing.T) {
		storetest.TestLimits(t, openFresh(t, conn), storetest.LimitsOptions{Steps: 150})
	})
	t.Run("sharded", func(t *testing.T) {
		shards := []kv.Store{openFresh(t, conn), openFresh(t, conn), openFresh(t, conn), openFresh(t, conn)}
		s, err := indextable.OpenShardedStore(context.Background(), shards, indextable.WithIndexSharding(indextable.ShardByHash))
		require.NoError(t, err)
		storetest.TestLimits(t, s, storetest.LimitsOptions{Steps: 150})
	})
}

// irec is the record of issue 16's samples.
type irec struct {
	P, ID, B string
	Data     []byte
}

// TestRefusedUpFrontOnAzure (issue 16, items 1 to 3): writes whose keys,
// change records or entries Azure could not hold were acknowledged, and
// then spun in the maintainer or left a record that could not be deleted.
// Each is refused now, naming the field, the index and the limit, and
// nothing is written or queued.
func TestRefusedUpFrontOnAzure(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	long := func(n int) string { return strings.Repeat("y", n) }
	for _, tc := range []struct {
		name    string
		rec     irec
		err     error
		message string
	}{
		{"an inter-partition index's value", irec{P: "p", ID: "1", B: long(390)}, indextable.ErrInvalidKey, "field B takes 390 bytes where at most 361 fit"},
		{"an ID", irec{P: "p", ID: long(370)}, indextable.ErrInvalidKey, "field ID takes 370 bytes where at most 362 fit"},
		{"the partition field", irec{P: long(190), ID: "1"}, indextable.ErrInvalidKey, "field P (it is in the key 2 times) takes 190 bytes"},
		{"a record near an entity's size", irec{P: "p", ID: "1", Data: make([]byte, 704<<10-11)}, kv.ErrInvalidBatch, "at most"},
		{"a record of 2 MiB", irec{P: "p", ID: "1", Data: make([]byte, 2<<20)}, kv.ErrInvalidBatch, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := indextable.Open(ctx, openFresh(t, conn), indextable.Schema[irec]{Name: "t", PrimaryKey: []string{"P", "ID"},
				Codec: &indextable.BinaryCodec{}, Indexes: []indextable.Index[irec]{
					{Name: "b", Fields: []string{"B"}},
					{Name: "pb", Fields: []string{"P", "B"}},
				}})
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, tc.rec)
			require.ErrorIs(t, err, tc.err)
			require.ErrorContains(t, err, tc.message)
			_, err = tbl.Get(ctx, tc.rec.P, tc.rec.ID)
			require.ErrorIs(t, err, kv.ErrNotFound)
			lag, err := tbl.Lag(ctx)
			require.NoError(t, err)
			require.Zero(t, lag.Pending)
		})
	}
}

// TestLimitsMeasured finds, by bisection on Azurite, the longest ID,
// indexed value and partition field, and the largest record, that a table
// "t" (primary key P, ID; an inter-partition index "b" on B and an
// intra-partition one "pb" on P, B) accepts: each is written, indexed and
// deleted, and one byte more is refused. README's Azure limits are these.
func TestLimitsMeasured(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	tbl, err := indextable.Open(ctx, openFresh(t, conn), indextable.Schema[irec]{Name: "t", PrimaryKey: []string{"P", "ID"},
		Codec: &indextable.BinaryCodec{}, Indexes: []indextable.Index[irec]{
			{Name: "b", Fields: []string{"B"}},
			{Name: "pb", Fields: []string{"P", "B"}},
		}})
	require.NoError(t, err)
	long := func(n int) string { return strings.Repeat("y", n) }
	for _, c := range []struct {
		name string
		rec  func(n int) irec
	}{
		{"ID", func(n int) irec { return irec{P: "p", ID: long(n)} }},
		{"B", func(n int) irec { return irec{P: "p", ID: "1", B: long(n)} }},
		{"P", func(n int) irec { return irec{P: long(n), ID: "1"} }},
		{"record", func(n int) irec { return irec{P: "p", ID: "1", Data: make([]byte, n)} }},
	} {
		fits := func(n int) bool {
			rec := c.rec(n)
			_, err := tbl.Insert(ctx, rec)
			if err != nil {
				require.True(t, errors.Is(err, indextable.ErrInvalidKey) || errors.Is(err, kv.ErrInvalidBatch), "%s of %d: %v", c.name, n, err)
				return false
			}
			storetest.Drain(t, tbl)
			require.NoError(t, tbl.Delete(ctx, indextable.Tuple{rec.P, rec.ID}))
			storetest.Drain(t, tbl)
			return true
		}
		lo, hi := 0, 1<<20 // fits(lo), !fits(hi)
		if c.name != "record" {
			hi = 1 << 10
		}
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		t.Logf("the longest %s that fits: %d bytes", c.name, lo)
		require.True(t, fits(lo))
		require.False(t, fits(lo+1))
	}
	report, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, report.Total())
}
