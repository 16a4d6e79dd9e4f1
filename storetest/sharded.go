package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// ShardedTableOptions configures TestShardedTable.
type ShardedTableOptions struct {
	// Records is how many customers the table is loaded with: 0 means
	// 200, which three shards take in a few seconds. A quarter as many
	// updates and deletes follow.
	Records int
	// Reopen, if not nil, returns a function that opens the same shards
	// each time it is called: new, empty ones the first time, then again
	// what they held when the test closed them. TestShardedTable then also
	// loads a table, closes its store, reopens it, and reads and writes the
	// table again.
	Reopen func(t *testing.T) func() []kv.Store
}

// TestShardedTable runs a table over a ShardedStore of a backend's shards
// against a map of what the table should hold, under each IndexSharding
// rule: ShardByLeadingKey, then ShardByHash. The table holds customers by
// ID, with a FullCopy (Town, LastName) index and a KeysOnly LastName
// index. Each run loads it (inserts, the maintainer's catch-up, then
// updates that move customers between towns and surnames, and deletes)
// and checks:
//
//   - placement: each key lies on the shard the store routes it to, each
//     record on the shard of its ID, under ShardByLeadingKey each index
//     entry on the shard of its first key component, the catalog on
//     shard 0, nothing left queued, and records and entries of each index
//     on every shard;
//   - reads: Get of every customer, and Find (both ways, with and without
//     a Limit), Count and FindPage (page by page, both ways) of exact,
//     prefix and range queries and whole-index scans, which cross the
//     shards, against the map;
//   - Verify, which finds nothing;
//   - Close: the table then fails with ErrClosed.
//
// newShards opens the shards of a new ShardedStore; they must be new and
// empty, and one to five of them, so that every shard holds entries of
// both indexes under ShardByLeadingKey. The ShardedStore closes them. With
// opts.Reopen the test also reopens a loaded store (see
// ShardedTableOptions). Each run is a subtest, <rule>/open or
// <rule>/reopen.
func TestShardedTable(t *testing.T, newShards func(t *testing.T) []kv.Store, opts ShardedTableOptions) {
	if opts.Records <= 0 {
		opts.Records = 200
	}
	for _, rule := range []indextable.IndexSharding{indextable.ShardByLeadingKey, indextable.ShardByHash} {
		t.Run(rule.String(), func(t *testing.T) {
			t.Run("open", func(t *testing.T) {
				shardOpen(t, newShards(t), rule, opts.Records)
			})
			if opts.Reopen != nil {
				t.Run("reopen", func(t *testing.T) {
					shardReopen(t, opts.Reopen(t), rule, opts.Records)
				})
			}
		})
	}
}

// Drain applies tbl's queued changes until none is pending. It fails t
// when the passes stop making progress: 3 in a row that apply nothing
// while changes are pending, or 100 in a row that meet a lease another
// maintainer holds (one that crashed, say: each is tried again a
// millisecond later, so a short lease expires in between).
func Drain[T any](t testing.TB, tbl *indextable.Table[T]) {
	t.Helper()
	ctx := context.Background()
	for idle, leased := 0, 0; ; {
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		if errors.Is(err, kv.ErrConflict) {
			leased++
			require.Less(t, leased, 100, "the queue stays leased: %v", err)
			time.Sleep(time.Millisecond)
			continue
		}
		require.NoError(t, err)
		leased = 0
		lag, err := tbl.Lag(ctx)
		require.NoError(t, err)
		if lag.Pending == 0 {
			return
		}
		if n > 0 {
			idle = 0
			continue
		}
		idle++
		require.Less(t, idle, 3, "%d changes pending that no maintainer pass applies", lag.Pending)
	}
}

// shardOpenStore opens a ShardedStore of shards under rule, which the test
// closes at the end if it has not.
func shardOpenStore(t *testing.T, shards []kv.Store, rule indextable.IndexSharding) *indextable.ShardedStore {
	t.Helper()
	require.NotEmpty(t, shards)
	require.LessOrEqual(t, len(shards), 5, "TestShardedTable takes one to five shards")
	s, err := indextable.OpenShardedStore(context.Background(), shards, indextable.WithIndexSharding(rule))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// shardOpen loads a table of records customers over shards, checks it,
// closes the store and checks that the table is then closed.
func shardOpen(t *testing.T, shards []kv.Store, rule indextable.IndexSharding, records int) {
	ctx := context.Background()
	s := shardOpenStore(t, shards, rule)
	tbl, err := indextable.Open(ctx, s, shardSchema())
	require.NoError(t, err)
	model := shardLoad(ctx, t, tbl, records, 1)
	shardCheckPlacement(ctx, t, s, rule, model)
	shardCheck(ctx, t, tbl, model)
	require.NoError(t, s.Close())
	_, err = tbl.Get(ctx, "C0000")
	require.ErrorIs(t, err, kv.ErrClosed)
}

// shardReopen loads a table of records customers over the shards that open
// opens, checks it, closes the store and opens it again: the table is
// readable and holds the same, and goes on taking writes.
func shardReopen(t *testing.T, open func() []kv.Store, rule indextable.IndexSharding, records int) {
	ctx := context.Background()
	s := shardOpenStore(t, open(), rule)
	tbl, err := indextable.Open(ctx, s, shardSchema())
	require.NoError(t, err)
	model := shardLoad(ctx, t, tbl, records, 2)
	shardCheck(ctx, t, tbl, model)
	require.NoError(t, s.Close())

	s = shardOpenStore(t, open(), rule)
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
	c := fixture.Customer{ID: fmt.Sprintf("C%04d", records), Town: "Redmond", LastName: "Smith", Email: "new@example.com"}
	_, err = tbl.Insert(ctx, c)
	require.NoError(t, err)
	model[c.ID] = c
	Drain(t, tbl)
	for _, sc := range shardCases(model) {
		if !strings.Contains(sc.name, "Redmond") && !strings.Contains(sc.name, "Smith") {
			continue // the queries that the new customer changes
		}
		var got []fixture.Customer
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
}

// shardSchema is TestShardedTable's table: the customers by ID, with a
// FullCopy (Town, LastName) and a KeysOnly LastName index.
func shardSchema() indextable.Schema[fixture.Customer] {
	return indextable.Schema[fixture.Customer]{
		Name:       "customers",
		PrimaryKey: []string{"ID"},
		Codec:      &indextable.BinaryCodec{},
		Indexes: []indextable.Index[fixture.Customer]{
			{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.FullCopy},
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: indextable.KeysOnly},
		},
	}
}

// shardLoad inserts n customers, then updates (moving some to other towns
// or surnames) and deletes some of them, and drains the queue. It returns
// what the table holds.
func shardLoad(ctx context.Context, t *testing.T, tbl *indextable.Table[fixture.Customer], n int, seed uint64) map[string]fixture.Customer {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	model := map[string]fixture.Customer{}
	for i := range n {
		c := fixture.Random(rng, i)
		_, err := tbl.Insert(ctx, c)
		require.NoError(t, err, "insert %s", c.ID)
		model[c.ID] = c
	}
	// Catch up half way, so that later changes replace applied entries.
	Drain(t, tbl)
	for step := range n / 4 {
		id := rng.IntN(n)
		c := fixture.Random(rng, id)
		if _, ok := model[c.ID]; ok && step%3 == 0 {
			require.NoError(t, tbl.Delete(ctx, indextable.Tuple{c.ID}), "delete %s", c.ID)
			delete(model, c.ID)
			continue
		}
		_, err := tbl.Upsert(ctx, c)
		require.NoError(t, err, "upsert %s", c.ID)
		model[c.ID] = c
	}
	Drain(t, tbl)
	return model
}

// shardCase is a query and the records it must return, in order.
type shardCase struct {
	name string
	q    indextable.Query
	want []fixture.Customer
}

// shardCases returns the queries to check against model: exact and prefix
// reads of both indexes, ranges and whole-index scans, which cross shards.
func shardCases(model map[string]fixture.Customer) []shardCase {
	all := make([]fixture.Customer, 0, len(model))
	for _, c := range model {
		all = append(all, c)
	}
	byTownName := func(a, b fixture.Customer) int {
		return cmp.Or(cmp.Compare(a.Town, b.Town), cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}
	byName := func(a, b fixture.Customer) int {
		return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	}
	sorted := func(keep func(fixture.Customer) bool, order func(a, b fixture.Customer) int) []fixture.Customer {
		var out []fixture.Customer
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
			sorted(func(c fixture.Customer) bool { return c.Town == town }, byTownName)})
	}
	for _, tn := range [][2]string{{"Redmond", "Smith"}, {"Seattle", "Chen"}, {"Bellevue", "Kim"}, {"Renton", "Zed"}} {
		cases = append(cases, shardCase{"town+lastname " + tn[0] + "/" + tn[1],
			indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{tn[0], tn[1]}},
			sorted(func(c fixture.Customer) bool { return c.Town == tn[0] && c.LastName == tn[1] }, byTownName)})
	}
	for _, name := range []string{"Adams", "Garcia", "Smith", "Young"} {
		cases = append(cases, shardCase{"lastname " + name,
			indextable.Query{Index: "lastname", Eq: indextable.Tuple{name}},
			sorted(func(c fixture.Customer) bool { return c.LastName == name }, byName)})
	}
	cases = append(cases,
		shardCase{"town Redmond, lastname in [D, P)",
			indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}, Lower: indextable.Inclusive("D"), Upper: indextable.Exclusive("P")},
			sorted(func(c fixture.Customer) bool { return c.Town == "Redmond" && c.LastName >= "D" && c.LastName < "P" }, byTownName)},
		shardCase{"towns in (Kirkland, Seattle]",
			indextable.Query{Index: "town_lastname", Lower: indextable.Exclusive("Kirkland"), Upper: indextable.Inclusive("Seattle")},
			sorted(func(c fixture.Customer) bool { return c.Town > "Kirkland" && c.Town <= "Seattle" }, byTownName)},
		shardCase{"lastnames in [Chen, Kim]",
			indextable.Query{Index: "lastname", Lower: indextable.Inclusive("Chen"), Upper: indextable.Inclusive("Kim")},
			sorted(func(c fixture.Customer) bool { return c.LastName >= "Chen" && c.LastName <= "Kim" }, byName)},
		shardCase{"all by town", indextable.Query{Index: "town_lastname"},
			sorted(func(fixture.Customer) bool { return true }, byTownName)},
		shardCase{"all by lastname", indextable.Query{Index: "lastname"},
			sorted(func(fixture.Customer) bool { return true }, byName)},
		shardCase{"all by ID", indextable.Query{},
			sorted(func(fixture.Customer) bool { return true }, func(a, b fixture.Customer) int { return cmp.Compare(a.ID, b.ID) })},
	)
	return cases
}

// shardCheck checks every query of shardCases against model: Find, both
// ways, Count, and FindPage page by page with its cursors, both ways.
func shardCheck(ctx context.Context, t *testing.T, tbl *indextable.Table[fixture.Customer], model map[string]fixture.Customer) {
	t.Helper()
	find := func(q indextable.Query) []fixture.Customer {
		var got []fixture.Customer
		for c, err := range tbl.Find(ctx, q) {
			require.NoError(t, err)
			got = append(got, c)
		}
		return got
	}
	pages := func(q indextable.Query, limit int) []fixture.Customer {
		q.Limit = limit
		var got []fixture.Customer
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
	_, err := tbl.Get(ctx, "none")
	require.ErrorIs(t, err, kv.ErrNotFound)
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
func shardCheckPlacement(ctx context.Context, t *testing.T, s *indextable.ShardedStore, rule indextable.IndexSharding, model map[string]fixture.Customer) {
	t.Helper()
	records := make([]int, s.Shards())
	entries := map[string][]int{} // by index, each shard's
	for _, ix := range shardSchema().Indexes {
		entries[ix.Name] = make([]int, s.Shards())
	}
	total := 0
	for i := range s.Shards() {
		for e, err := range s.Shard(i).Scan(ctx, kv.ScanRange{}) {
			require.NoError(t, err)
			if e.Key[0] == 0xFF {
				continue // the shard's layout record
			}
			require.Equal(t, i, s.ShardOf(e.Key), "key %x", e.Key)
			k, ok := kv.ParseKey(e.Key)
			require.True(t, ok, "key %x", e.Key)
			require.Equal(t, "customers", element(t, k.Table))
			var on any
			switch k.Space {
			case kv.SpaceRecords: // its primary key is its ID alone
				require.Empty(t, k.Rest, "%x", e.Key)
				on = element(t, k.Lead)
				require.Contains(t, model, on)
				records[i]++
				total++
			case kv.SpaceIndex:
				require.NotNil(t, k.Lead, "%x", e.Key)
				if rule == indextable.ShardByLeadingKey {
					on = element(t, k.Lead)
				}
				entries[element(t, k.Index).(string)][i]++
			case kv.SpaceQueue:
				t.Fatalf("a change is queued on shard %d: %x", i, e.Key)
			default: // the catalog and the maintainers' leases
				require.Zero(t, i, "%x", e.Key)
			}
			if on != nil {
				want, err := indextable.ShardFor(s.Shards(), on)
				require.NoError(t, err)
				require.Equal(t, want, i, "%x", e.Key)
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

// element decodes one encoded tuple element.
func element(t *testing.T, b []byte) any {
	v, rest, err := kv.DecodeElement(b)
	require.NoError(t, err)
	require.Empty(t, rest)
	return v
}
