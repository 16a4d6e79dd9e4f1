package azstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// TestTransactions runs storetest's model of bank transfers on an Azure
// table, with two banks in two partitions (a bank is the accounts' first
// primary key field, which names their partition): transfers within a
// bank commit as one entity group transaction, those across banks are
// refused whole. Ops is kept small: each operation costs a few requests
// to Azurite.
func TestTransactions(t *testing.T) {
	banks := []string{"north", "south"}
	records := func(bank string) []byte {
		k, err := kv.EncodeTuple("accounts", int64(kv.SpaceRecords), bank)
		require.NoError(t, err)
		return k
	}
	require.NotEqual(t, azstore.Partition(records(banks[0])), azstore.Partition(records(banks[1])))
	conn := azuritetest.Connection(t)
	storetest.TestTransactions(t, func(t *testing.T) kv.Store { return openFresh(t, conn) },
		storetest.TransactionsOptions{Banks: banks, Partitioned: true, Ops: 100})
}

// txItem is the record of the transaction tests: Part, its first primary
// key field, names its partition.
type txItem struct {
	Part  string
	ID    int
	Group string
	N     int
}

// openItems opens the table of txItems on s with indexes.
func openItems(t *testing.T, s kv.Store, indexes ...indextable.Index[txItem]) *indextable.Table[txItem] {
	t.Helper()
	tbl, err := indextable.Open(context.Background(), s, indextable.Schema[txItem]{
		Name: "items", PrimaryKey: []string{"Part", "ID"}, Indexes: indexes,
	})
	require.NoError(t, err)
	return tbl
}

// partGroup is an IntraPartition index: it leads with Part, so its entries
// lie in their records' partitions.
var partGroup = indextable.Index[txItem]{Name: "part_group", Fields: []string{"Part", "Group"}, Placement: indextable.IntraPartition}

// items returns n items of partition part, from ID from.
func items(part string, from, n int) []txItem {
	out := make([]txItem, n)
	for i := range out {
		out[i] = txItem{Part: part, ID: from + i, Group: fmt.Sprint("g", (from+i)%3), N: from + i}
	}
	return out
}

// insertAll inserts recs in a new transaction and commits it.
func insertAll(ctx context.Context, s kv.Store, tbl *indextable.Table[txItem], recs []txItem) error {
	tx := indextable.NewTx(s)
	for _, rec := range recs {
		if _, err := tbl.In(tx).Insert(ctx, rec); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// requireClean checks that Verify finds nothing in tbl.
func requireClean(t *testing.T, tbl *indextable.Table[txItem]) {
	t.Helper()
	rep, err := tbl.Verify(context.Background(), indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "Verify: %v", rep.Samples)
}

// findGroup returns the items that index holds under eq.
func findGroup(t *testing.T, tbl *indextable.Table[txItem], index string, eq ...any) []txItem {
	t.Helper()
	var out []txItem
	for rec, err := range tbl.Find(context.Background(), indextable.Query{Index: index, Eq: eq}) {
		require.NoError(t, err)
		out = append(out, rec)
	}
	return out
}

// TestTransactionRefused: a transaction that Azure cannot apply as one
// entity group transaction (records of two partitions, or more than 99
// puts and deletes) is refused by Commit with ErrInvalidBatch, saying why,
// and nothing of it is written. Each inserted record costs 2 writes, its
// put and its entry's, and an expectation that it is absent, which costs
// no action; so 49 records are the most a transaction inserts, which the
// last case commits.
func TestTransactionRefused(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	for _, tc := range []struct {
		name string
		recs []txItem
		err  string // "" when it commits
	}{
		{"two partitions", append(items("a", 0, 2), items("b", 0, 1)...), "atomicity scope is one partition"},
		{"over 99 writes", items("a", 0, 50), "100 puts and deletes, atomicity scope allows 99"},
		{"98 writes and 49 expectations", items("a", 0, 49), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openFresh(t, conn)
			tbl := openItems(t, s, partGroup)
			err := insertAll(ctx, s, tbl, tc.recs)
			if tc.err == "" {
				require.NoError(t, err)
				require.Len(t, findGroup(t, tbl, "part_group", "a"), len(tc.recs))
				requireClean(t, tbl)
				return
			}
			require.ErrorIs(t, err, indextable.ErrInvalidBatch)
			require.ErrorContains(t, err, tc.err)
			for _, rec := range tc.recs {
				_, err := tbl.Get(ctx, rec.Part, rec.ID)
				require.ErrorIs(t, err, indextable.ErrNotFound, "%+v", rec)
			}
			require.Empty(t, findGroup(t, tbl, "part_group", "a"))
			requireClean(t, tbl)
		})
	}
}

// TestTransactionRequests: a transaction that inserts 20 records of one
// partition, in a table with an IntraPartition index, is one request:
// inserts read nothing (each expects its record absent, unread), so the
// commit's batch is blind (its puts, and expectations that keys it puts
// are absent), which Apply sends at once as one entity group
// transaction. The same records inserted one by one cost a request each.
func TestTransactionRequests(t *testing.T) {
	ctx := context.Background()
	tr := &transport{}
	s := openWith(t, tr)
	tbl := openItems(t, s, partGroup)
	before := tr.requests.Load()
	require.NoError(t, insertAll(ctx, s, tbl, items("a", 0, 20)))
	require.EqualValues(t, 1, tr.requests.Load()-before)

	before = tr.requests.Load()
	for _, rec := range items("a", 20, 20) {
		_, err := tbl.Insert(ctx, rec)
		require.NoError(t, err)
	}
	require.EqualValues(t, 20, tr.requests.Load()-before)
	require.Len(t, findGroup(t, tbl, "part_group", "a"), 40)
	requireClean(t, tbl)
}

// TestTransactionLostAnswer: a transaction whose commit's answer is lost,
// and which the SDK sends again, is reported as applied: Transact runs
// its function once, and the transaction's writes land once (its counter
// ends one up, and its insert is not found to exist).
func TestTransactionLostAnswer(t *testing.T) {
	ctx := context.Background()
	tr := &transport{}
	s := openWith(t, tr)
	tbl := openItems(t, s, partGroup)
	_, err := tbl.Insert(ctx, txItem{Part: "a", ID: 0, Group: "counter", N: 7})
	require.NoError(t, err)
	tr.loseOnce.Store(true)
	runs := 0
	err = indextable.Transact(ctx, s, func(tx *indextable.Tx) error {
		runs++
		in := tbl.In(tx)
		c, err := in.Get(ctx, "a", 0)
		if err != nil {
			return err
		}
		c.N++
		if _, err := in.Update(ctx, c); err != nil {
			return err
		}
		_, err = in.Insert(ctx, txItem{Part: "a", ID: 1, Group: "g", N: 1})
		return err
	})
	require.NoError(t, err)
	require.False(t, tr.loseOnce.Load(), "the answer was lost")
	require.Equal(t, 1, runs)
	c, err := tbl.Get(ctx, "a", 0)
	require.NoError(t, err)
	require.Equal(t, 8, c.N)
	require.Len(t, findGroup(t, tbl, "part_group", "a", "g"), 1)
	requireClean(t, tbl)
}

// TestTransactionInterPartitionIndex: in a table with a synchronous
// InterPartition index, whose entries lie outside their records'
// partitions, a transaction over records of one partition follows the
// fallback rule as single writes do: it commits the records, and queues
// their changes to the index, which after a drain finds them.
func TestTransactionInterPartitionIndex(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	group := indextable.Index[txItem]{Name: "group", Fields: []string{"Group"}, Placement: indextable.InterPartition}
	tbl := openItems(t, s, group)
	_, err := tbl.Insert(ctx, txItem{Part: "a", ID: 0, Group: "g0", N: 1}) // a single write falls back
	require.NoError(t, err)

	err = indextable.Transact(ctx, s, func(tx *indextable.Tx) error {
		in := tbl.In(tx)
		c, err := in.Get(ctx, "a", 0)
		if err != nil {
			return err
		}
		c.Group, c.N = "g1", c.N+1
		if _, err := in.Update(ctx, c); err != nil {
			return err
		}
		for _, rec := range items("a", 1, 3) {
			if _, err := in.Insert(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	for g, want := range map[string][]txItem{
		"g0": {{Part: "a", ID: 3, Group: "g0", N: 3}}, // not the record that left it
		"g1": {{Part: "a", ID: 0, Group: "g1", N: 2}, {Part: "a", ID: 1, Group: "g1", N: 1}},
		"g2": {{Part: "a", ID: 2, Group: "g2", N: 2}},
	} {
		require.Equal(t, want, findGroup(t, tbl, "group", g), g)
	}
	requireClean(t, tbl)
}
