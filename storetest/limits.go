package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// LimitsOptions configures TestLimits.
type LimitsOptions struct {
	// Steps is how many random writes the test makes; 0 means 200.
	Steps int
}

// limitRecord is the record TestLimits writes: P leads the primary key,
// so a partitioned store keeps the entries of indexes that lead with it
// in its record's partition, and P is then in such an entry's key twice.
type limitRecord struct {
	P, ID, B, U string
	Data        []byte
}

// TestLimits writes, through a table with indexes of every placement
// (inter- and intra-partition, unique, FullCopy, Eventual), records whose
// key fields and sizes straddle the limits that the store's Atomicity
// declares (MaxKeyBytes, MaxValueBytes, MaxBytes), and checks what the
// table promises there: a write it acknowledges is indexed once the queue
// is applied; one it refuses (ErrInvalidKey, ErrInvalidBatch) changed
// nothing; every record can be updated and deleted; and Verify finds
// nothing. It needs a store of its own, which it closes.
func TestLimits(t *testing.T, s kv.Store, opts LimitsOptions) {
	if opts.Steps <= 0 {
		opts.Steps = 200
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	tbl, err := indextable.Open(ctx, s, indextable.Schema[limitRecord]{
		Name: "limits", PrimaryKey: []string{"P", "ID"}, Codec: &indextable.BinaryCodec{},
		Indexes: []indextable.Index[limitRecord]{
			{Name: "b", Fields: []string{"B"}, Strategy: indextable.KeysOnly},
			{Name: "pb", Fields: []string{"P", "B"}, Strategy: indextable.FullCopy},
			{Name: "u", Fields: []string{"P", "U"}, Unique: true, Strategy: indextable.KeysOnly},
			{Name: "eu", Fields: []string{"U"}, Strategy: indextable.FullCopy, Consistency: indextable.Eventual},
		},
	})
	require.NoError(t, err)
	g := newLimitGen(s.Atomicity())
	model := map[int]limitRecord{}
	var seen struct{ written, refusedKey, refusedSize, longKeys, bigValues int }
	for step := range opts.Steps {
		slot := g.r.IntN(12)
		old, present := model[slot]
		rec := g.record(slot, old, present)
		var err error
		deletes := false
		switch op := g.r.IntN(4); {
		case !present:
			_, err = tbl.Insert(ctx, rec)
		case op == 0:
			deletes = true
			err = tbl.Delete(ctx, indextable.Tuple{old.P, old.ID})
		case op == 1:
			_, err = tbl.Upsert(ctx, rec)
		default:
			_, err = tbl.Update(ctx, rec)
		}
		switch {
		case err == nil && deletes:
			delete(model, slot)
		case err == nil:
			seen.written++
			if len(rec.ID) > g.key/2 || len(rec.B) > g.key/2 || len(rec.P) > g.key/4 {
				seen.longKeys++
			}
			if len(rec.Data) > g.value/2 {
				seen.bigValues++
			}
			model[slot] = rec
		case errors.Is(err, indextable.ErrInvalidKey):
			seen.refusedKey++
			requireReadable(t, err)
		case errors.Is(err, kv.ErrInvalidBatch):
			seen.refusedSize++
			requireReadable(t, err)
		default:
			require.NoError(t, err, "step %d", step)
		}
		if want, ok := model[slot]; ok {
			got, err := tbl.Get(ctx, want.P, want.ID)
			require.NoError(t, err, "step %d: the record is as the model has it", step)
			require.Equal(t, want, got, "step %d", step)
		}
		if err != nil && !present {
			_, err := tbl.Get(ctx, rec.P, rec.ID)
			require.ErrorIs(t, err, kv.ErrNotFound, "step %d: a refused insert wrote nothing", step)
		}
		if step%25 == 24 {
			checkLimitTable(t, tbl, model)
		}
	}
	t.Logf("outcomes: %+v", seen)
	checkLimitTable(t, tbl, model)
	for slot, rec := range model {
		require.NoError(t, tbl.Delete(ctx, indextable.Tuple{rec.P, rec.ID}), "every record can be deleted")
		delete(model, slot)
	}
	checkLimitTable(t, tbl, model)
	require.Positive(t, seen.written)
	if g.key > 0 {
		require.Positive(t, seen.refusedKey, "writes beyond the key limit")
		require.Positive(t, seen.longKeys, "writes near the key limit")
	}
	if g.value > 0 {
		require.Positive(t, seen.refusedSize, "writes beyond the size limit")
		require.Positive(t, seen.bigValues, "writes near the size limit")
	}
}

// requireReadable fails t when a refusal's message shows raw key bytes.
func requireReadable(t *testing.T, err error) {
	t.Helper()
	require.NotContains(t, err.Error(), `\x`, "a refusal names fields and limits, not stored keys")
}

// limitGen draws TestLimits' records.
type limitGen struct {
	r          *rand.Rand
	key, value int // the store's bounds, or 0
}

func newLimitGen(a kv.Atomicity) *limitGen {
	g := &limitGen{r: rand.New(rand.NewPCG(16, 16)), key: a.MaxKeyBytes, value: a.MaxValueBytes}
	if a.MaxBytes > 0 && (g.value == 0 || a.MaxBytes/3 < g.value) {
		g.value = a.MaxBytes / 3
	}
	return g
}

// near returns, when long, a length within spread of limit, else a short
// one.
func (g *limitGen) near(long bool, limit, spread, short int) int {
	if !long || limit <= 0 {
		return g.r.IntN(short + 1)
	}
	return max(limit-spread+g.r.IntN(2*spread+1), 0)
}

// record returns a record for slot: a new one (new primary key) when none
// is there, else the one there with other B, U and Data. At most one of
// its key fields is near the key limit, so that some such writes fit.
func (g *limitGen) record(slot int, old limitRecord, present bool) limitRecord {
	rec := old
	long := g.r.IntN(4) // P, ID, B or none
	if !present {
		rec.P = fmt.Sprintf("p%d", slot%3) + strings.Repeat("p", g.near(long == 0, g.key/2, 24, 2))
		rec.ID = fmt.Sprintf("i%02d", slot) + strings.Repeat("i", g.near(long == 1, g.key, 40, 4))
	}
	rec.B = fmt.Sprintf("b%d", g.r.IntN(4)) + strings.Repeat("b", g.near(long == 2, g.key, 32, 3))
	rec.U = fmt.Sprintf("u%02d-%d", slot, g.r.IntN(3))
	rec.Data = make([]byte, g.near(g.r.IntN(3) == 0, g.value, 512, 64))
	for i := range rec.Data {
		rec.Data[i] = byte(i * 7)
	}
	return rec
}

// checkLimitTable applies the queue and checks that the table's indexes
// hold exactly model's records and that Verify finds nothing.
func checkLimitTable(t *testing.T, tbl *indextable.Table[limitRecord], model map[int]limitRecord) {
	t.Helper()
	ctx := context.Background()
	for idle := 0; ; {
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		require.NoError(t, err)
		lag, err := tbl.Lag(ctx)
		require.NoError(t, err)
		if lag.Pending == 0 {
			break
		}
		if n == 0 {
			idle++
			require.Less(t, idle, 3, "%d changes pending that no maintainer pass applies", lag.Pending)
		}
	}
	report, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, report.Total(), "Verify: %+v", report)
	for _, index := range []string{"", "b", "pb", "u", "eu"} {
		n, err := tbl.Count(ctx, indextable.Query{Index: index})
		require.NoError(t, err)
		require.Equal(t, len(model), n, "index %q", index)
	}
	for _, rec := range model {
		found := false
		for got, err := range tbl.Find(ctx, indextable.Query{Index: "b", Eq: indextable.Tuple{rec.B}}) {
			require.NoError(t, err)
			if got.P == rec.P && got.ID == rec.ID {
				require.Equal(t, rec, got)
				found = true
			}
		}
		require.True(t, found, "record %.20s/%.20s under its B", rec.P, rec.ID)
	}
}
