package indextable_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// person is the record type of the model-based tests.
type person struct {
	ID    int
	Name  string
	Town  string
	Tags  []string
	Email string
	Score int
	Note  string
}

// personIndexes covers every strategy and option: composite, sparse,
// unique, multi-valued, computed.
func personIndexes() []it.Index[person] {
	return []it.Index[person]{
		{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.FullCopy},
		{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.Partial, Projection: []string{"Score", "Tags"}, Sparse: true},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.Partial, Projection: []string{"Note"}},
		{Name: "email", Fields: []string{"Email"}, Unique: true, Sparse: true, Strategy: it.KeysOnly},
		{Name: "score_mod", Key: func(p person) []it.Tuple {
			if p.Score < 0 {
				return nil
			}
			return []it.Tuple{{p.Score % 3, p.Town}}
		}, Strategy: it.FullCopy},
		{Name: "score_parity", Key: func(p person) []it.Tuple {
			return []it.Tuple{{p.Score & 1}}
		}, Strategy: it.Partial, Projection: []string{"Name"}},
	}
}

// intraIndexes lead with the primary key, so that a partitioned store
// keeps their entries in their records' partitions.
var intraIndexes = []it.Index[person]{
	{Name: "id_score", Fields: []string{"ID", "Score"}, Strategy: it.FullCopy},
	{Name: "id_email", Fields: []string{"ID", "Email"}, Unique: true, Strategy: it.KeysOnly},
}

func openPeople(t testing.TB, s kv.Store) *it.Table[person] {
	return openPeopleWith(t, s, nil)
}

func openPeopleWith(t testing.TB, s kv.Store, c it.Codec) *it.Table[person] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[person]{SchemaLease: countLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: personIndexes(), Codec: c})
	require.NoError(t, err)
	return tbl
}

// modelKeys is the reference: the key tuples record p has in index name,
// written independently of the library.
func modelKeys(name string, p person) []it.Tuple {
	switch name {
	case "town_name":
		return []it.Tuple{{p.Town, p.Name}}
	case "town":
		return []it.Tuple{{p.Town}}
	case "name":
		if p.Name == "" {
			return nil
		}
		return []it.Tuple{{p.Name}}
	case "tags":
		var out []it.Tuple
		seen := map[string]bool{}
		for _, tag := range p.Tags {
			if !seen[tag] {
				seen[tag] = true
				out = append(out, it.Tuple{tag})
			}
		}
		return out
	case "email":
		if p.Email == "" {
			return nil
		}
		return []it.Tuple{{p.Email}}
	case "score_mod":
		if p.Score < 0 {
			return nil
		}
		return []it.Tuple{{p.Score % 3, p.Town}}
	case "score_parity":
		return []it.Tuple{{p.Score & 1}}
	case "id_score":
		return []it.Tuple{{p.ID, p.Score}}
	case "id_email":
		return []it.Tuple{{p.ID, p.Email}}
	}
	panic(name)
}

type modelEntry struct {
	key it.Tuple
	p   person
}

// modelScan returns the entries of index name whose key starts with eq, in
// index order (key, then primary key; unique indexes by key alone).
func modelScan(name string, model map[int]person, eq it.Tuple) []modelEntry {
	var out []modelEntry
	for _, p := range model {
		for _, k := range modelKeys(name, p) {
			if len(k) >= len(eq) && kv.CompareTuples(k[:len(eq)], eq) == 0 {
				out = append(out, modelEntry{k, p})
			}
		}
	}
	slices.SortFunc(out, func(a, b modelEntry) int {
		return cmp.Or(kv.CompareTuples(a.key, b.key), cmp.Compare(a.p.ID, b.p.ID))
	})
	return out
}

// covered is what a covered read of index name returns for p.
func covered(name string, p person) person {
	switch name {
	case "town_name", "score_mod", "id_score":
		return p
	case "town":
		return person{ID: p.ID, Town: p.Town}
	case "name":
		return person{ID: p.ID, Name: p.Name, Score: p.Score, Tags: p.Tags}
	case "tags":
		return person{ID: p.ID, Note: p.Note}
	case "email":
		return person{ID: p.ID, Email: p.Email}
	case "id_email":
		return person{ID: p.ID, Email: p.Email}
	case "score_parity":
		return person{ID: p.ID, Name: p.Name}
	}
	panic(name)
}

func collect(t testing.TB, tbl *it.Table[person], q it.Query) []person {
	t.Helper()
	var out []person
	for p, err := range tbl.Find(context.Background(), q) {
		require.NoError(t, err)
		out = append(out, p)
	}
	return out
}

// normalize makes nil and empty slices compare equal.
func normalize(ps []person) []person {
	for i := range ps {
		if len(ps[i].Tags) == 0 {
			ps[i].Tags = nil
		}
	}
	return ps
}

// checkIndex compares a whole index, and the prefix eq of it, with the
// model: covered reads show the entries as stored (so a stale or extra
// entry shows), whole-record reads show the fetch path.
func checkIndex(t testing.TB, tbl *it.Table[person], model map[int]person, name string, eq it.Tuple) {
	t.Helper()
	ctx := context.Background()
	want := modelScan(name, model, eq)
	var wantCovered, wantFull []person
	for _, e := range want {
		wantCovered = append(wantCovered, covered(name, e.p))
		wantFull = append(wantFull, e.p)
	}
	q := it.Query{Index: name, Eq: eq, Covered: true}
	require.Equal(t, normalize(wantCovered), normalize(collect(t, tbl, q)), "covered scan of %s %v", name, eq)
	q.Covered = false
	require.Equal(t, normalize(wantFull), normalize(collect(t, tbl, q)), "scan of %s %v", name, eq)
	n, err := tbl.Count(ctx, q)
	require.NoError(t, err)
	require.Equal(t, len(want), n, "count of %s %v", name, eq)
	q.Reverse = true
	slices.Reverse(wantFull)
	require.Equal(t, normalize(wantFull), normalize(collect(t, tbl, q)), "reverse scan of %s %v", name, eq)
}

// checkRange compares a random range query on the component after eq,
// with random bounds, direction, limit and covering, and the same query
// read in pages through cursors, with the model.
func checkRange(t testing.TB, r *rand.Rand, tbl *it.Table[person], model map[int]person, name string, eq it.Tuple) {
	t.Helper()
	all := modelScan(name, model, eq)
	var values []any
	for _, e := range all {
		if len(e.key) > len(eq) {
			values = append(values, e.key[len(eq)])
		}
	}
	if len(values) == 0 {
		return
	}
	q := it.Query{Index: name, Eq: eq, Reverse: r.IntN(2) == 0, Covered: r.IntN(2) == 0}
	bound := func() *it.Bound {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return it.Inclusive(values[r.IntN(len(values))])
		}
		return it.Exclusive(values[r.IntN(len(values))])
	}
	q.Lower, q.Upper = bound(), bound()
	var want []person
	for _, e := range all {
		if len(e.key) <= len(eq) {
			continue
		}
		c := it.Tuple{e.key[len(eq)]}
		if b := q.Lower; b != nil {
			if cmp := kv.CompareTuples(c, it.Tuple{b.Value}); cmp < 0 || cmp == 0 && b.Exclusive {
				continue
			}
		}
		if b := q.Upper; b != nil {
			if cmp := kv.CompareTuples(c, it.Tuple{b.Value}); cmp > 0 || cmp == 0 && b.Exclusive {
				continue
			}
		}
		if q.Covered {
			want = append(want, covered(name, e.p))
		} else {
			want = append(want, e.p)
		}
	}
	if q.Reverse {
		slices.Reverse(want)
	}
	var paged []person
	q.Limit = 1 + r.IntN(4)
	for {
		page, next, err := tbl.FindPage(context.Background(), q)
		require.NoError(t, err)
		paged = append(paged, page...)
		if next == "" {
			break
		}
		q.Cursor = next
	}
	require.Equal(t, normalize(want), normalize(paged), "paged range %+v", q)
	q.Cursor = ""
	if len(want) > q.Limit {
		want = want[:q.Limit]
	}
	require.Equal(t, normalize(want), normalize(collect(t, tbl, q)), "range %+v", q)
}

var (
	towns  = []string{"Redmond", "Seattle", "Bellevue", ""}
	names  = []string{"Smith", "Jones", "Chen", "", "Smith\x00", "Smi\x00th", "Ünal"}
	tags   = []string{"a", "b", "c", ""}
	emails = []string{"", "", "x@e", "y@e", "z@e", "w@e", "v@e"}
)

func randomPerson(r *rand.Rand, id int, names []string) person {
	p := person{
		ID:    id,
		Name:  names[r.IntN(len(names))],
		Town:  towns[r.IntN(len(towns))],
		Email: emails[r.IntN(len(emails))],
		Score: r.IntN(20) - 3,
		Note:  fmt.Sprintf("n%d", r.IntN(5)),
	}
	for range r.IntN(4) {
		p.Tags = append(p.Tags, tags[r.IntN(len(tags))])
	}
	return p
}

func emailTaken(model map[int]person, p person) bool {
	if p.Email == "" {
		return false
	}
	for _, o := range model {
		if o.ID != p.ID && o.Email == p.Email {
			return true
		}
	}
	return false
}

// TestModel drives random inserts, upserts, updates (conditional or not)
// and deletes, with unique violations and conflicts among them, against a
// plain map, and after every step compares index queries with the map.
func TestModel(t *testing.T) {
	t.Run("json", func(t *testing.T) { testModel(t, it.JSONCodec{}, names, modeSynchronous) })
	// The binary codec keeps any bytes, so key strings may be invalid UTF-8.
	t.Run("binary", func(t *testing.T) {
		testModel(t, &it.BinaryCodec{}, append(names, "\xff", "\xff\x00"), modeSynchronous)
	})
}

// modelMode is how the model test's table keeps its indexes.
type modelMode int

const (
	modeSynchronous modelMode = iota
	// The non-unique indexes are Eventual; maintainers stop and restart at
	// random, and WaitIndexed comes before each comparison.
	modeEventual
	// Every index is Synchronous, but the store's atomicity scope is one
	// partition, so writes fall back to the queue (and writes that change
	// the unique index are refused).
	modeFallback
	// As modeFallback, over a ShardedStore of 4 shards whose index tables
	// are sharded by their leading key, or by hash. A write that changes
	// the unique index commits when all its entries lie on its record's
	// shard (seldom, beside six other indexes: TestUniqueIndexOverShards
	// has that case), and is refused otherwise.
	modeShardedLeading
	modeShardedHash
)

func testModel(t *testing.T, codec it.Codec, names []string, mode modelMode) {
	ctx := context.Background()
	var store kv.Store = it.NewMemoryStore()
	indexes := personIndexes()
	switch mode {
	case modeEventual:
		indexes = eventualIndexes(indexes)
	case modeFallback:
		// With two indexes in the records' partitions, which writes keep
		// in their own transactions.
		store = partitionedStore(it.NewMemoryStore())
		indexes = append(colocatable(indexes), intraIndexes...)
	case modeShardedLeading, modeShardedHash:
		rule := it.ShardByLeadingKey
		if mode == modeShardedHash {
			rule = it.ShardByHash
		}
		store = newShardedMemory(t, 4, it.WithIndexSharding(rule))
		indexes = append(colocatable(indexes), intraIndexes...)
	}
	sharded := mode == modeShardedLeading || mode == modeShardedHash
	hasEmail := slices.ContainsFunc(indexes, func(ix it.Index[person]) bool { return ix.Name == "email" })
	tbl, err := it.Open(ctx, store, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, Codec: codec})
	require.NoError(t, err)
	var m *maintainers
	if mode != modeSynchronous {
		m = startMaintainers(t, tbl, 1)
		defer m.stop()
	}
	model := map[int]person{}
	versions := map[int]it.Version{}
	r := rand.New(rand.NewPCG(1, 2))
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	var seen struct{ exists, notFound, unique, conflict int }
	for step := range steps {
		if m != nil && r.IntN(2) == 0 {
			m.stop()
		}
		id := r.IntN(40)
		p := randomPerson(r, id, names)
		_, present := model[id]
		// Every write succeeds but a unique violation, on every store: a
		// partitioned one keeps only unique indexes in their records'
		// partitions.
		taken := func(err error) bool {
			if !hasEmail || !emailTaken(model, p) {
				return false
			}
			require.ErrorIs(t, err, it.ErrUniqueViolation)
			return true
		}
		var err error
		var v it.Version
		op := r.IntN(10)
		switch {
		case op < 3:
			v, err = tbl.Insert(ctx, p)
			switch {
			case present:
				require.ErrorIs(t, err, it.ErrExists)
				seen.exists++
			case taken(err):
				seen.unique++
			default:
				require.NoError(t, err)
				model[id], versions[id] = p, v
			}
		case op < 5:
			v, err = tbl.Upsert(ctx, p)
			switch {
			case taken(err):
				seen.unique++
			default:
				require.NoError(t, err)
				model[id], versions[id] = p, v
			}
		case op < 8:
			var opts []it.WriteOption
			stale := false
			if present && r.IntN(2) == 0 {
				ver := versions[id]
				if stale = r.IntN(3) == 0; stale {
					ver++
				}
				opts = append(opts, it.IfVersion(ver))
			}
			v, err = tbl.Update(ctx, p, opts...)
			switch {
			case !present:
				require.ErrorIs(t, err, it.ErrNotFound)
				seen.notFound++
			case stale:
				require.ErrorIs(t, err, it.ErrConflict)
				seen.conflict++
			case taken(err):
				seen.unique++
			default:
				require.NoError(t, err)
				require.Equal(t, versions[id]+1, v)
				model[id], versions[id] = p, v
			}
		default:
			err = tbl.Delete(ctx, it.Tuple{id})
			switch {
			case present:
				require.NoError(t, err)
				delete(model, id)
				delete(versions, id)
			default:
				require.ErrorIs(t, err, it.ErrNotFound)
				seen.notFound++
			}
		}
		if m != nil {
			// Before the indexes catch up, a read returns only records
			// that match it; then the comparisons wait for them, applied by
			// new maintainers or by passes of ApplyPending when the old ones
			// stopped.
			checkNoStaleResults(t, r, tbl, model, indexes)
			if (mode == modeFallback || sharded) && !m.running {
				// Nothing applies the queue: the intra-partition indexes
				// hold the write already.
				for _, ix := range intraIndexes {
					var want []person
					for _, e := range modelScan(ix.Name, model, it.Tuple{id}) {
						want = append(want, e.p)
					}
					got := collect(t, tbl, it.Query{Index: ix.Name, Eq: it.Tuple{id}})
					require.Equal(t, normalize(want), normalize(got), "%s before the maintainers", ix.Name)
				}
			}
			if !m.running {
				if r.IntN(3) == 0 {
					storetest.Drain(t, tbl)
				} else {
					m.start(1 + r.IntN(3))
				}
			}
			require.NoError(t, tbl.WaitIndexed(ctx))
		}

		got, gotVersion, err := tbl.GetVersioned(ctx, id)
		if want, ok := model[id]; ok {
			require.NoError(t, err)
			require.Equal(t, normalize([]person{want}), normalize([]person{got}))
			require.Equal(t, versions[id], gotVersion)
		} else {
			require.ErrorIs(t, err, it.ErrNotFound)
		}
		// Every index, at a random key of the record just written, each step;
		// every index whole, every 25 steps.
		for _, ix := range indexes {
			keys := modelKeys(ix.Name, p)
			if len(keys) > 0 {
				k := keys[r.IntN(len(keys))]
				checkIndex(t, tbl, model, ix.Name, k[:1+r.IntN(len(k))])
				checkRange(t, r, tbl, model, ix.Name, k[:r.IntN(len(k))])
			}
			if step%25 == 0 {
				checkIndex(t, tbl, model, ix.Name, nil)
			}
		}
		if step%25 == 0 {
			n, err := tbl.Count(ctx, it.Query{})
			require.NoError(t, err)
			require.Equal(t, len(model), n)
		}
	}
	t.Logf("outcomes seen: %+v", seen)
	require.Positive(t, seen.exists)
	require.Positive(t, seen.notFound)
	require.Positive(t, seen.conflict)
	if hasEmail {
		require.Positive(t, seen.unique)
	}
}

// colocatable returns indexes without the unique ones that a partitioned
// store would keep outside their records' partitions, which it refuses.
func colocatable(indexes []it.Index[person]) []it.Index[person] {
	return slices.DeleteFunc(slices.Clone(indexes), func(ix it.Index[person]) bool {
		return ix.Unique && (len(ix.Fields) == 0 || ix.Fields[0] != "ID")
	})
}

func TestOpenRejectsInvalidSchemas(t *testing.T) {
	type bad struct {
		ID     string
		Tags   []string
		Nested struct{ A int }
		hidden string
	}
	ctx := context.Background()
	cases := []struct {
		name   string
		schema it.Schema[bad]
		want   string
	}{
		{"no name", it.Schema[bad]{SchemaLease: testLease, PrimaryKey: []string{"ID"}}, "no name"},
		{"no primary key", it.Schema[bad]{SchemaLease: testLease, Name: "t"}, "no primary key"},
		{"unknown primary key field", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"Nope"}}, `no exported field "Nope"`},
		{"unexported field", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"hidden"}}, `no exported field "hidden"`},
		{"slice primary key", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"Tags"}}, "is a slice"},
		{"struct key", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"Nested"}}, "cannot be a key component"},
		{"duplicate primary key field", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID", "ID"}}, "twice"},
		{"duplicate index names", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}}, {Name: "a", Fields: []string{"ID"}}}}, `two indexes are named "a"`},
		{"unnamed index", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{{Fields: []string{"ID"}}}}, "no name"},
		{"index without key", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{{Name: "a"}}}, "no key"},
		{"fields and key func", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}, Key: func(bad) []it.Tuple { return nil }}}}, "not both"},
		{"unknown index field", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{{Name: "a", Fields: []string{"Town"}}}}, `no exported field "Town"`},
		{"slice without MultiValued", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{{Name: "a", Fields: []string{"Tags"}}}}, "multi-valued"},
		{"MultiValued without slice", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{{Name: "a", Fields: []string{"ID"}, MultiValued: true}}}, "no key field is a slice"},
		{"projection on keys-only", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}, Projection: []string{"Tags"}}}}, "only for the Partial strategy"},
		{"partial without projection", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}, Strategy: it.Partial}}}, "needs a Projection"},
		{"projection of missing field", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}, Strategy: it.Partial, Projection: []string{"Phone"}}}}, `"Phone"`},
		{"key func with Sparse", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Key: func(bad) []it.Tuple { return nil }, Sparse: true}}}, "apply to Fields"},
		{"unknown strategy", it.Schema[bad]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: []it.Index[bad]{
			{Name: "a", Fields: []string{"ID"}, Strategy: it.Strategy(9)}}}, "unknown strategy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := it.Open(ctx, it.NewMemoryStore(), c.schema)
			require.ErrorIs(t, err, it.ErrInvalidSchema)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[string]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}})
	require.ErrorIs(t, err, it.ErrInvalidSchema)
}
