package storetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

// ShardedTableOptions configures TestShardedTable.
type ShardedTableOptions struct {
	// Reopen, if not nil, returns a function that opens the same shards
	// each time it is called: new, empty ones the first time, then again
	// what they held when the test closed them. TestShardedTable then also
	// closes a loaded table's store, reopens it and reads the table again.
	Reopen func(t *testing.T) func() []indextable.Store
}

// shardCustomer is the record of the sharded table tests.
type shardCustomer struct {
	ID                    string
	Town, LastName, Email string
}

var (
	shardTowns     = []string{"Bellevue", "Kirkland", "Redmond", "Renton", "Seattle", "Tacoma"}
	shardLastNames = []string{"Adams", "Baker", "Chen", "Diaz", "Evans", "Garcia", "Jones", "Kim", "Lopez", "Nguyen", "Patel", "Smith"}
)

func shardSchema() indextable.Schema[shardCustomer] {
	return indextable.Schema[shardCustomer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Codec:      &indextable.BinaryCodec{},
		Indexes: []indextable.Index[shardCustomer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: indextable.KeysOnly},
		},
	}
}

// shardRandomCustomer returns customer id with a random town and surname.
func shardRandomCustomer(rng *rand.Rand, id int) shardCustomer {
	return shardCustomer{
		ID:       fmt.Sprintf("C%04d", id),
		Town:     shardTowns[rng.IntN(len(shardTowns))],
		LastName: shardLastNames[rng.IntN(len(shardLastNames))],
		Email:    fmt.Sprintf("c%d.%d@example.com", id, rng.IntN(1000)),
	}
}

// shardDrain runs the table's maintainer until its queue is empty.
func shardDrain(ctx context.Context, t *testing.T, tbl *indextable.Table[shardCustomer]) {
	t.Helper()
	for pass := 0; ; pass++ {
		require.Less(t, pass, 100, "the maintainer does not catch up")
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Zero(t, lag.Pending)
}

// shardLoad inserts n customers, then updates (moving some to other towns
// or surnames) and deletes some of them, and drains the queue. It returns
// what the table holds.
func shardLoad(ctx context.Context, t *testing.T, tbl *indextable.Table[shardCustomer], n int, seed uint64) map[string]shardCustomer {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	model := map[string]shardCustomer{}
	for i := range n {
		c := shardRandomCustomer(rng, i)
		_, err := tbl.Insert(ctx, c)
		require.NoError(t, err, "insert %s", c.ID)
		model[c.ID] = c
	}
	// Catch up half way, so that later changes replace applied entries.
	shardDrain(ctx, t, tbl)
	for step := range n / 4 {
		id := rng.IntN(n)
		c := shardRandomCustomer(rng, id)
		if _, ok := model[c.ID]; ok && step%3 == 0 {
			require.NoError(t, tbl.Delete(ctx, indextable.Tuple{c.ID}), "delete %s", c.ID)
			delete(model, c.ID)
			continue
		}
		_, err := tbl.Upsert(ctx, c)
		require.NoError(t, err, "upsert %s", c.ID)
		model[c.ID] = c
	}
	shardDrain(ctx, t, tbl)
	return model
}

// shardCase is a query and the records it must return, in order.
type shardCase struct {
	name string
	q    indextable.Query
	want []shardCustomer
}

// shardCases returns the queries to check against model: exact and prefix
// reads of both indexes, ranges and whole-index scans, which cross shards.
func shardCases(model map[string]shardCustomer) []shardCase {
	all := make([]shardCustomer, 0, len(model))
	for _, c := range model {
		all = append(all, c)
	}
	byTownName := func(a, b shardCustomer) int {
		return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}
	byName := func(a, b shardCustomer) int {
		return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}
	sorted := func(keep func(shardCustomer) bool, order func(a, b shardCustomer) int) []shardCustomer {
		var out []shardCustomer
		for _, c := range all {
			if keep(c) {
				out = append(out, c)
			}
		}
		slices.SortFunc(out, order)
		return out
	}
	var cases []shardCase
	for _, town := range []string{"Redmond", "Seattle", "Tacoma", "Spokane"} {
		cases = append(cases, shardCase{"town " + town,
			indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town}},
			sorted(func(c shardCustomer) bool { return c.Town == town }, byTownName)})
	}
	for _, tn := range [][2]string{{"Redmond", "Smith"}, {"Seattle", "Chen"}, {"Bellevue", "Kim"}, {"Renton", "Zed"}} {
		cases = append(cases, shardCase{"town+lastname " + tn[0] + "/" + tn[1],
			indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{tn[0], tn[1]}},
			sorted(func(c shardCustomer) bool { return c.Town == tn[0] && c.LastName == tn[1] }, byTownName)})
	}
	for _, name := range []string{"Adams", "Garcia", "Smith", "Young"} {
		cases = append(cases, shardCase{"lastname " + name,
			indextable.Query{Index: "lastname", Eq: indextable.Tuple{name}},
			sorted(func(c shardCustomer) bool { return c.LastName == name }, byName)})
	}
	cases = append(cases,
		shardCase{"town Redmond, lastname in [D, P)",
			indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}, Lower: indextable.Inclusive("D"), Upper: indextable.Exclusive("P")},
			sorted(func(c shardCustomer) bool { return c.Town == "Redmond" && c.LastName >= "D" && c.LastName < "P" }, byTownName)},
		shardCase{"towns in (Kirkland, Seattle]",
			indextable.Query{Index: "town_lastname", Lower: indextable.Exclusive("Kirkland"), Upper: indextable.Inclusive("Seattle")},
			sorted(func(c shardCustomer) bool { return c.Town > "Kirkland" && c.Town <= "Seattle" }, byTownName)},
		shardCase{"lastnames in [Chen, Kim]",
			indextable.Query{Index: "lastname", Lower: indextable.Inclusive("Chen"), Upper: indextable.Inclusive("Kim")},
			sorted(func(c shardCustomer) bool { return c.LastName >= "Chen" && c.LastName <= "Kim" }, byName)},
		shardCase{"all by town", indextable.Query{Index: "town_lastname"},
			sorted(func(shardCustomer) bool { return true }, byTownName)},
		shardCase{"all by lastname", indextable.Query{Index: "lastname"},
			sorted(func(shardCustomer) bool { return true }, byName)},
		shardCase{"all by ID", indextable.Query{},
			sorted(func(shardCustomer) bool { return true }, func(a, b shardCustomer) int { return cmp.Compare(a.ID, b.ID) })},
	)
	return cases
}

// shardCheck checks every query of shardCases against model: Find, both
// ways, Count, and FindPage page by page with its cursors, both ways.
func shardCheck(ctx context.Context, t *testing.T, tbl *indextable.Table[shardCustomer], model map[string]shardCustomer) {
	t.Helper()
	find := func(q indextable.Query) []shardCustomer {
		var got []shardCustomer
		for c, err := range tbl.Find(ctx, q) {
			require.NoError(t, err)
			got = append(got, c)
		}
		return got
	}
	pages := func(q indextable.Query, limit int) []shardCustomer {
		q.Limit = limit
		var got []shardCustomer
		for n := 0; ; n++ {
			require.Less(t, n, 1000, "FindPage does not end")
			page, cursor, err := tbl.FindPage(ctx, q)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), limit)
			got = append(got, page...)
			if cursor == "" {
				return got
			}
			require.Len(t, page, limit, "a page before the last is full")
			q.Cursor = cursor
		}
	}
	for _, c := range shardCases(model) {
		want := c.want
		rev := slices.Clone(want)
		slices.Reverse(rev)
		require.Equal(t, want, find(c.q), "%s: Find", c.name)
		r := c.q
		r.Reverse = true
		require.Equal(t, rev, find(r), "%s: Find, reverse", c.name)
		n, err := tbl.Count(ctx, c.q)
		require.NoError(t, err)
		require.Equal(t, len(want), n, "%s: Count", c.name)
		for _, limit := range []int{1, 7, 50} {
			if limit == 1 && len(want) > 20 {
				continue // one at a time only for the short results
			}
			require.Equal(t, want, pages(c.q, limit), "%s: FindPage by %d", c.name, limit)
			require.Equal(t, rev, pages(r, limit), "%s: FindPage by %d, reverse", c.name, limit)
		}
		if len(want) > 3 {
			l := c.q
			l.Limit = 3
			require.Equal(t, want[:3], find(l), "%s: Find, Limit 3", c.name)
			r.Limit = 3
			require.Equal(t, rev[:3], find(r), "%s: Find, Limit 3, reverse", c.name)
		}
	}
	for id, c := range model {
		got, err := tbl.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	_, err := tbl.Get(ctx, "C9999")
	require.ErrorIs(t, err, indextable.ErrNotFound)
	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "%+v", rep)
	require.EqualValues(t, len(model), rep.Records)
	require.EqualValues(t, 2*len(model), rep.Entries)
}

// shardCheckPlacement checks that every key lies on the shard that the
// store routes it to, that each record lies on the shard ShardFor gives its
// ID (and, under ShardByLeadingKey, each index entry on the one its first
// key component's gives), that the catalog and leases lie on shard 0, that
// nothing is left queued, and that every shard holds records and entries of
// each index.
func shardCheckPlacement(ctx context.Context, t *testing.T, s *indextable.ShardedStore, rule indextable.IndexSharding, model map[string]shardCustomer) {
	t.Helper()
	records := make([]int, s.Shards())
	entries := map[string][]int{} // by index, each shard's
	for _, ix := range shardSchema().Indexes {
		entries[ix.Name] = make([]int, s.Shards())
	}
	total := 0
	for i := range s.Shards() {
		for e, err := range s.Shard(i).Scan(ctx, indextable.ScanRange{}) {
			require.NoError(t, err)
			if e.Key[0] == 0xFF {
				continue // the shard's layout record
			}
			require.Equal(t, i, s.ShardOf(e.Key), "key %x", e.Key)
			k, err := indextable.DecodeTuple(e.Key)
			require.NoError(t, err)
			require.Equal(t, "customers", k[0])
			var on any
			switch k[1] {
			case int64(0): // a record: the table, 0, its ID
				require.Len(t, k, 3)
				require.Contains(t, model, k[2])
				on = k[2]
				records[i]++
				total++
			case int64(1): // an index entry: the table, 1, the index, its generation, its key
				require.GreaterOrEqual(t, len(k), 5)
				if rule == indextable.ShardByLeadingKey {
					on = k[4]
				}
				entries[k[2].(string)][i]++
			case int64(3):
				t.Fatalf("a change is queued on shard %d: %v", i, k)
			default: // the catalog and the maintainers' leases
				require.Zero(t, i, "%v", k)
			}
			if on != nil {
				want, err := indextable.ShardFor(s.Shards(), on)
				require.NoError(t, err)
				require.Equal(t, want, i, "%v", k)
			}
		}
	}
	require.Equal(t, len(model), total)
	for i, n := range records {
		require.NotZero(t, n, "shard %d holds no records", i)
	}
	for name, per := range entries {
		sum := 0
		for i, n := range per {
			require.NotZero(t, n, "shard %d holds no entries of index %s", i, name)
			sum += n
		}
		require.Equal(t, len(model), sum, "the entries of index %s", name)
	}
}

// TestShardedTable runs a table with a FullCopy and a KeysOnly index, both
// sharded by the index rule under test, over a ShardedStore of the shards
// that newShards opens, against a map; then, with opts.Reopen, over shards
// that it closes and reopens.
func TestShardedTable(t *testing.T, newShards func(t *testing.T) []indextable.Store, opts ShardedTableOptions) {
	ctx := context.Background()
	for _, rule := range []indextable.IndexSharding{indextable.ShardByLeadingKey, indextable.ShardByHash} {
		t.Run(rule.String(), func(t *testing.T) {
			t.Run("mixed", func(t *testing.T) {
				s, err := indextable.OpenShardedStore(context.Background(), newShards(t), indextable.WithIndexSharding(rule))
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				tbl, err := indextable.Open(ctx, s, shardSchema())
				require.NoError(t, err)
				model := shardLoad(ctx, t, tbl, 200, 1)
				shardCheckPlacement(ctx, t, s, rule, model)
				shardCheck(ctx, t, tbl, model)
				require.NoError(t, s.Close())
				_, err = tbl.Get(ctx, "C0000")
				require.ErrorIs(t, err, indextable.ErrClosed)
			})
			if opts.Reopen == nil {
				return
			}
			t.Run("reopen", func(t *testing.T) {
				open := opts.Reopen(t)
				openSharded := func() *indextable.ShardedStore {
					s, err := indextable.OpenShardedStore(context.Background(), open(), indextable.WithIndexSharding(rule))
					require.NoError(t, err)
					t.Cleanup(func() { s.Close() })
					return s
				}
				s := openSharded()
				tbl, err := indextable.Open(ctx, s, shardSchema())
				require.NoError(t, err)
				model := shardLoad(ctx, t, tbl, 200, 2)
				shardCheck(ctx, t, tbl, model)
				require.NoError(t, s.Close())

				s = openSharded()
				tbl, err = indextable.Open(ctx, s, shardSchema())
				require.NoError(t, err)
				status, err := tbl.IndexStatus(ctx)
				require.NoError(t, err)
				for _, st := range status {
					require.Equal(t, indextable.IndexReadable, st.State, st.Name)
				}
				shardCheckPlacement(ctx, t, s, rule, model)
				shardCheck(ctx, t, tbl, model)
				// The table goes on taking writes after the reopen.
				c := shardCustomer{ID: "C0500", Town: "Redmond", LastName: "Smith", Email: "new@example.com"}
				_, err = tbl.Insert(ctx, c)
				require.NoError(t, err)
				model[c.ID] = c
				shardDrain(ctx, t, tbl)
				for _, sc := range shardCases(model) {
					if !strings.Contains(sc.name, "Redmond") && !strings.Contains(sc.name, "Smith") {
						continue // the queries that the new customer changes
					}
					var got []shardCustomer
					for c, err := range tbl.Find(ctx, sc.q) {
						require.NoError(t, err)
						got = append(got, c)
					}
					require.Equal(t, sc.want, got, sc.name)
				}
				rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
				require.NoError(t, err)
				require.Zero(t, rep.Total(), "%+v", rep)
				require.EqualValues(t, len(model), rep.Records)
				require.NoError(t, s.Close())
			})
		})
	}
}
