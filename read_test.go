package indextable_test

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadsCostWhatTheStrategySays(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(it.NewMemoryStore())
	tbl := openPeople(t, s)
	for i := range 150 {
		_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprint("N", i), Town: "R", Score: i, Note: "n"})
		require.NoError(t, err)
	}
	cases := []struct {
		q                     it.Query
		scans, getManys, gets int64
	}{
		{it.Query{Index: "town_name", Eq: it.Tuple{"R"}}, 1, 0, 0},                  // full copy: one lookup
		{it.Query{Index: "town", Eq: it.Tuple{"R"}}, 1, 3, 0},                       // keys only: facts in 3 batches of <=64
		{it.Query{Index: "town", Eq: it.Tuple{"R"}, Covered: true}, 1, 0, 0},        // keys only, covered
		{it.Query{Index: "name", Lower: it.Inclusive("N")}, 1, 3, 0},                // partial, whole records
		{it.Query{Index: "name", Lower: it.Inclusive("N"), Covered: true}, 1, 0, 0}, // partial, from the index alone
		{it.Query{Index: "town", Eq: it.Tuple{"R"}, Limit: 10}, 1, 1, 0},            // a limit fetches only what it needs
		// Fields that the entries hold make a read covered; one they lack does not.
		{it.Query{Index: "name", Lower: it.Inclusive("N"), Fields: []string{"ID", "Name", "Score"}}, 1, 0, 0},
		{it.Query{Index: "name", Lower: it.Inclusive("N"), Fields: []string{"Name", "Note"}}, 1, 3, 0},
		{it.Query{Index: "town", Eq: it.Tuple{"R"}, Fields: []string{"Town"}}, 1, 0, 0},
	}
	for _, c := range cases {
		before := s.Counts()
		n := len(collect(t, tbl, c.q))
		got := s.Counts().Sub(before)
		want := 150
		if c.q.Limit > 0 {
			want = c.q.Limit
		}
		assert.Equal(t, want, n, "%+v", c.q)
		assert.Equal(t, []int64{c.scans, c.getManys, c.gets}, []int64{got.Scans, got.GetManys, got.Gets}, "%+v", c.q)
		if c.getManys > 0 {
			assert.Equal(t, int64(want), got.ManyKeys)
		}
	}
}

// hookStore calls onScan after each entry a scan yields, to interleave a
// concurrent write at a chosen point of a read.
type hookStore struct {
	*it.MemoryStore
	onScan func(kv.Entry)
}

func (s hookStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		for e, err := range s.MemoryStore.Scan(ctx, r) {
			if !yield(e, err) {
				return
			}
			if err == nil && s.onScan != nil {
				s.onScan(e)
			}
		}
	}
}

// TestNormalizedReadsSkipRecordsThatMovedOn checks the fetch path: an entry
// read before its record changed is not returned with the new record.
func TestNormalizedReadsSkipRecordsThatMovedOn(t *testing.T) {
	ctx := context.Background()
	s := &hookStore{MemoryStore: it.NewMemoryStore()}
	tbl := openPeople(t, s)
	for i := range 5 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	moved := false
	s.onScan = func(kv.Entry) {
		if !moved {
			// The first entry has been read; record 2 leaves Redmond before the
			// read fetches the records.
			moved = true
			_, err := tbl.Update(ctx, person{ID: 2, Town: "S"})
			require.NoError(t, err)
		}
	}
	var got []int
	for p, err := range tbl.Find(ctx, it.Query{Index: "town", Eq: it.Tuple{"R"}}) {
		require.NoError(t, err)
		got = append(got, p.ID)
	}
	require.True(t, moved)
	assert.Equal(t, []int{0, 1, 3, 4}, got)
}

// TestReadAllocations checks that a read allocates a constant amount, and
// per record only the codec's one copy of it; none on a store whose values
// may be kept (StableStore), which records share memory with.
func TestReadAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts need a full run")
	}
	ctx := context.Background()
	for _, st := range []struct {
		name    string
		s       it.Strategy
		proj    []string
		covered bool
	}{
		{"full-copy", it.FullCopy, nil, false},
		{"keys-only", it.KeysOnly, nil, false},
		{"partial", it.Partial, []string{"FirstName"}, false},
		{"partial covered", it.Partial, []string{"FirstName"}, true},
	} {
		for _, stable := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stable=%t", st.name, stable), func(t *testing.T) {
				var s kv.Store = it.NewMemoryStore()
				perRecord := 0.0
				if !stable {
					s, perRecord = struct{ kv.Store }{s}, 1 // hides StableValues
				}
				tbl, err := it.Open(ctx, s, it.Schema[Customer]{
					SchemaLease: testLease,
					Name:        "c", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
					Indexes: []it.Index[Customer]{{Name: "town", Fields: []string{"Town", "LastName"}, Strategy: st.s, Projection: st.proj}},
				})
				require.NoError(t, err)
				for i := range 300 {
					c := benchCustomer(i)
					c.Town = "Redmond"
					_, err := tbl.Insert(ctx, c)
					require.NoError(t, err)
				}
				allocs := func(limit int) float64 {
					q := it.Query{Index: "town", Eq: it.Tuple{"Redmond"}, Limit: limit, Covered: st.covered}
					return testing.AllocsPerRun(20, func() {
						n := 0
						for _, err := range tbl.Find(ctx, q) {
							require.NoError(t, err)
							n++
						}
						require.Equal(t, limit, n)
					})
				}
				// Allocations whatever the records: Find's iterator, the
				// store's scan, the Tuple and its value here, and none for
				// the read's loop bodies, which the pooled reader binds
				// once. Under the race detector sync.Pool drops readers.
				constant := 5.0
				if raceDetector {
					constant = 40
				}
				for _, n := range []int{1, 10, 64, 65, 200} {
					a := allocs(n)
					t.Logf("%d records: %.0f allocations", n, a)
					assert.LessOrEqual(t, a, perRecord*float64(n)+constant, "%d records", n)
				}
			})
		}
	}
}

// reusingStore yields each scanned entry from one buffer that it scribbles
// over once the loop body returns, as a store whose iterator reuses its
// memory may; it does not say StableValues.
type reusingStore struct{ kv.Store }

func (s reusingStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		var buf []byte
		for e, err := range s.Store.Scan(ctx, r) {
			buf = append(append(buf[:0], e.Key...), e.Value...)
			e = kv.Entry{Key: buf[:len(e.Key)], Value: buf[len(e.Key):]}
			ok := yield(e, err)
			for i := range buf {
				buf[i] = 0xEE
			}
			if !ok {
				return
			}
		}
	}
}

// TestRecordsOutliveScanEntries checks that records read from a store whose
// scan memory is reused do not share it: every strategy, covered or not,
// and the fact table, with both codecs, alone and as a shard.
func TestRecordsOutliveScanEntries(t *testing.T) {
	ctx := context.Background()
	stable, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	require.True(t, stable.StableValues(), "memory shards keep their values")
	for i, c := range []it.Codec{&it.BinaryCodec{}, it.JSONCodec{}, &it.BinaryCodec{}} {
		var s kv.Store = reusingStore{it.NewMemoryStore()}
		if i == 2 { // a shard that reuses its memory makes the sharded store copy
			sharded, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), s})
			require.NoError(t, err)
			require.False(t, sharded.StableValues())
			s = sharded
		}
		tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: colocatable(personIndexes()), Codec: c})
		require.NoError(t, err)
		model := map[int]person{}
		r := rand.New(rand.NewPCG(7, 7))
		for id := range 50 {
			p := randomPerson(r, id, []string{"Ann", "Bob", "Cy"})
			if _, err := tbl.Insert(ctx, p); err == nil {
				model[id] = p
			}
		}
		_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{}) // what a sharded store queued
		require.NoError(t, err)
		for _, q := range []it.Query{
			{}, {Index: "town_name"}, {Index: "town"}, {Index: "name"}, {Index: "name", Covered: true},
			{Index: "tags", Covered: true}, {Index: "score_parity", Covered: true},
		} {
			var got []person
			for p, err := range tbl.Find(ctx, q) {
				require.NoError(t, err)
				got = append(got, p)
			}
			require.NotEmpty(t, got)
			for _, p := range got {
				want := model[p.ID]
				if q.Covered {
					want = covered(q.Index, want)
				}
				require.Equal(t, want, p, "%T, query %+v", c, q)
			}
		}
	}
}

// TestCoveredReadsOfComputedUniqueKeys reads the primary key back from the
// value of a unique entry whose key is computed.
func TestCoveredReadsOfComputedUniqueKeys(t *testing.T) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[person]{SchemaLease: testLease, Name: "p", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[person]{{Name: "lower_email", Unique: true, Strategy: it.Partial, Projection: []string{"Town"},
			Key: func(p person) []it.Tuple { return []it.Tuple{{strings.ToLower(p.Email)}} }}}})
	require.NoError(t, err)
	for i, e := range []string{"B@x", "a@X"} {
		_, err := tbl.Insert(ctx, person{ID: i + 7, Email: e, Town: "T" + e})
		require.NoError(t, err)
	}
	_, err = tbl.Insert(ctx, person{ID: 9, Email: "A@x"})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	got := collect(t, tbl, it.Query{Index: "lower_email", Covered: true})
	assert.Equal(t, []person{{ID: 8, Town: "Ta@X"}, {ID: 7, Town: "TB@x"}}, got)
}

// TestCoveredReadsAtLengthBoundaries reads entries whose value starts with
// 0xFF (a length of 255), which must not be taken for an escaped zero at
// the end of the key's last string.
func TestCoveredReadsAtLengthBoundaries(t *testing.T) {
	type rec struct {
		ID   string
		Mail string
		Note string
	}
	ctx := context.Background()
	for _, codec := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"ID"}, Codec: codec,
			Indexes: []it.Index[rec]{
				{Name: "note", Fields: []string{"Mail"}, Strategy: it.Partial, Projection: []string{"Note"}},
				{Name: "unique", Fields: []string{"Mail"}, Unique: true, Strategy: it.Partial, Projection: []string{"Note"}},
			}})
		require.NoError(t, err)
		var want []rec
		for n := 118; n < 260; n++ { // payload lengths across 127 and 255
			r := rec{ID: strings.Repeat("i", n), Mail: fmt.Sprint("m", n), Note: strings.Repeat("n", n)}
			_, err := tbl.Insert(ctx, r)
			require.NoError(t, err)
			want = append(want, r)
		}
		slices.SortFunc(want, func(a, b rec) int { return strings.Compare(a.Mail, b.Mail) })
		for _, ix := range []string{"note", "unique"} {
			var got []rec
			for r, err := range tbl.Find(ctx, it.Query{Index: ix, Covered: true}) {
				require.NoError(t, err, "%T %s", codec, ix)
				got = append(got, r)
			}
			require.Equal(t, want, got, "%T %s", codec, ix)
		}
	}
}

// pagingStore reads each scan a page at a time, as Azure Table storage
// does: a page holds up to pagingStoreSize entries, or the scan's Limit
// when that is smaller, and is read whole before any of it is yielded. A
// counting store under it counts the entries the pages read, which a
// read that stops early still paid for.
type pagingStore struct{ kv.Store }

const pagingStoreSize = 1000

func (s pagingStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		var page []kv.Entry
		for left := r.Limit; ; {
			n := pagingStoreSize
			if r.Limit > 0 {
				n = min(n, left)
			}
			pr := r
			pr.Limit = n
			page = page[:0]
			for e, err := range s.Store.Scan(ctx, pr) {
				if err != nil {
					yield(kv.Entry{}, err)
					return
				}
				page = append(page, kv.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			left -= len(page)
			if len(page) < n || r.Limit > 0 && left == 0 {
				return
			}
			r.After = page[len(page)-1].Key
		}
	}
}

// TestLimitedReadsScanWhatTheyNeed checks that a read with a Limit asks
// the store for about what it needs while changes are pending, in rounds
// that continue after the last key read when entries are skipped; and
// that it returns what the same read without a Limit returns first, and
// Count and FindPage agree.
//
// The table holds 500 records that every query selects, and changes
// queued for its Eventual indexes: records moved out of the queries'
// ranges (their entries there are left behind, to be skipped), either
// the first ones each query reads, forward or in Reverse, or some drawn
// at random; or records changed in place, whose entries stay. With 20
// changes a read knows the records to check; with 100 it checks them all.
//
// The table's store reads a page at a time (pagingStore). A counting store
// over it counts the entries the read consumed, one under it those the
// store read.
func TestLimitedReadsScanWhatTheyNeed(t *testing.T) {
	const (
		records = 500
		limit   = 10
		slack   = 4
	)
	ctx := context.Background()
	record := func(i int) person {
		return person{ID: i, Name: fmt.Sprintf("N%03d", i), Town: "R", Tags: []string{"t", "x"},
			Email: fmt.Sprintf("e%03d", i), Score: i, Note: fmt.Sprint("n", i%4)}
	}
	moved := func(p person) person {
		p.Name, p.Town, p.Tags = "M"+p.Name[1:], "S", []string{"u"}
		return p
	}
	inPlace := func(p person) person {
		p.Score = -p.Score - 1
		return p
	}
	first := func(n int) func(bool) []int { // the records each query reads first
		return func(reverse bool) []int {
			ids := make([]int, n)
			for i := range ids {
				ids[i] = i
				if reverse {
					ids[i] = records - 1 - i
				}
			}
			return ids
		}
	}
	random := func(bool) []int {
		return rand.New(rand.NewPCG(3, 3)).Perm(records)[:20]
	}
	where := map[string]any{"Note": "n1"} // a quarter of the records
	queries := []struct {
		name string
		q    it.Query
		// queue: the read scans the queue first, reading its changes.
		queue bool
	}{
		{"full-copy", it.Query{Index: "town_name", Eq: it.Tuple{"R"}}, true},
		{"keys-only", it.Query{Index: "town", Eq: it.Tuple{"R"}}, false},
		{"keys-only covered", it.Query{Index: "town", Eq: it.Tuple{"R"}, Covered: true}, true},
		{"partial", it.Query{Index: "name", Lower: it.Inclusive("N")}, false},
		{"partial covered", it.Query{Index: "name", Lower: it.Inclusive("N"), Covered: true}, true},
		{"multi-valued", it.Query{Index: "tags", Eq: it.Tuple{"t"}}, false},
		{"multi-valued covered", it.Query{Index: "tags", Eq: it.Tuple{"t"}, Covered: true}, true},
		{"unique", it.Query{Index: "email", Lower: it.Inclusive("e")}, false},
		{"full-copy where", it.Query{Index: "town_name", Eq: it.Tuple{"R"}, Where: where}, true},
		{"keys-only where", it.Query{Index: "town", Eq: it.Tuple{"R"}, Where: where}, false},
	}
	changes := []struct {
		name   string
		ids    func(reverse bool) []int
		change func(person) person
	}{
		{"first moved", first(20), moved},
		{"random moved", random, moved},
		{"first changed in place", first(20), inPlace},
		{"many first moved", first(100), moved},
	}
	for _, ch := range changes {
		for _, reverse := range []bool{false, true} {
			read := countingstore.New(it.NewMemoryStore())
			consumed := countingstore.New(pagingStore{read})
			tbl, err := it.Open(ctx, consumed, it.Schema[person]{SchemaLease: countLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: eventualIndexes(personIndexes())})
			require.NoError(t, err)
			for i := range records {
				_, err := tbl.Insert(ctx, record(i))
				require.NoError(t, err)
			}
			storetest.Drain(t, tbl)
			ids := ch.ids(reverse)
			for _, id := range ids {
				_, err := tbl.Update(ctx, ch.change(record(id)))
				require.NoError(t, err)
			}
			changed := len(ids)
			require.Equal(t, changed, pending(t, tbl))
			for _, c := range queries {
				name := fmt.Sprintf("%s/reverse=%t/%s", ch.name, reverse, c.name)
				q := c.q
				q.Reverse = reverse
				all := collect(t, tbl, q)
				require.Greater(t, len(all), limit, name)
				q.Limit = limit
				before, beforeRead := consumed.Counts(), read.Counts()
				got := collect(t, tbl, q)
				used, usedRead := consumed.Counts().Sub(before), read.Counts().Sub(beforeRead)
				assert.Equal(t, all[:limit], got, name)

				// The entries of the index read, and those the read needed:
				// up to its last result.
				scanned, needed := usedRead.ScanEntries, used.ScanEntries
				if c.queue {
					queued := int64(min(changed, 65)) // pendingRecords reads up to 65
					scanned, needed = scanned-queued, needed-queued
				}
				t.Logf("%s: %d entries scanned (%d needed) in %d scans", name, scanned, needed, used.Scans)
				if changed <= 64 && c.q.Where == nil {
					// The first round asks for Limit and the entries of the
					// records with changes (a normalized read, which knows
					// none, doubles Limit until it has its results).
					assert.LessOrEqual(t, scanned, int64(limit+changed+slack), name)
				} else {
					// The skips are a guess: rounds double until the read
					// has its results, reading at most about twice what it
					// needed beyond the first round.
					assert.LessOrEqual(t, scanned, 3*needed+slack, name)
				}

				n, err := tbl.Count(ctx, q)
				require.NoError(t, err, name)
				assert.Equal(t, limit, n, "Count: "+name)
				page, cursor, err := tbl.FindPage(ctx, q)
				require.NoError(t, err, name)
				assert.Equal(t, all[:limit], page, "FindPage: "+name)
				q.Cursor = cursor
				page, _, err = tbl.FindPage(ctx, q)
				require.NoError(t, err, name)
				assert.Equal(t, all[limit:2*limit], page, "FindPage, the next page: "+name)
			}
		}
	}
}

// TestCheckedCoveredReadsKeepCoveredFields: a covered read checks the
// entries of records with pending changes against the records, and
// returns what such an entry holds, the covered fields, as it does for
// the others, not the whole record: results do not depend on what is
// pending. Keys-only and partial, read directly and through the fetch.
func TestCheckedCoveredReadsKeepCoveredFields(t *testing.T) {
	ctx := context.Background()
	for _, ix := range []it.Index[person]{
		{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly, Consistency: it.Eventual},
		{Name: "town", Fields: []string{"Town"}, Strategy: it.Partial, Projection: []string{"Score"}, Consistency: it.Eventual},
	} {
		t.Run(ix.Strategy.String(), func(t *testing.T) {
			tbl := openWith(t, it.NewMemoryStore(), ix)
			p := person{ID: 1, Town: "Oslo", Name: "A", Score: 3, Note: "n"}
			_, err := tbl.Insert(ctx, p)
			require.NoError(t, err)
			_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
			require.NoError(t, err)
			want := person{ID: 1, Town: "Oslo"}
			if ix.Strategy == it.Partial {
				want.Score = 3
			}
			q := it.Query{Index: "town", Eq: it.Tuple{"Oslo"}, Covered: true}
			require.Equal(t, []person{want}, collect(t, tbl, q), "nothing pending")
			p.Note = "m" // the entry stays, its record's change is pending
			_, err = tbl.Update(ctx, p)
			require.NoError(t, err)
			lag, err := tbl.Lag(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, lag.Pending)
			require.Equal(t, []person{want}, collect(t, tbl, q), "checked against the record")
		})
	}
}

// ignoringStopStore's Scan yields every entry of the range whatever its
// loop body returns, as a faulty store might.
type ignoringStopStore struct{ kv.Store }

func (s ignoringStopStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		for e, err := range s.Store.Scan(ctx, r) {
			yield(e, err)
		}
	}
}

// TestReadsStopOverAScanThatDoesNot: a read that stops, because its caller
// broke out of the loop or it has its Limit, yields nothing more though
// the store's scan goes on calling it: every strategy, with and without a
// Limit, and the fact table.
func TestReadsStopOverAScanThatDoesNot(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, ignoringStopStore{it.NewMemoryStore()})
	for i := range 20 {
		_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprint("N", i), Town: "R", Score: i, Note: "n"})
		require.NoError(t, err)
	}
	for _, q := range []it.Query{
		{Index: "town_name", Eq: it.Tuple{"R"}},
		{Index: "town", Eq: it.Tuple{"R"}},
		{Index: "name", Lower: it.Inclusive("N")},
		{Index: "town", Eq: it.Tuple{"R"}, Covered: true},
		{},
	} {
		for _, limit := range []int{0, 3} {
			q.Limit = limit
			n := 0
			for _, err := range tbl.Find(ctx, q) {
				require.NoError(t, err)
				if n++; n == 2 {
					break
				}
			}
			require.Equal(t, 2, n, "%+v", q)
			if limit > 0 {
				q.Limit = 1
				require.Len(t, collect(t, tbl, q), 1, "%+v", q)
			}
		}
	}
}

// exactRecord is a record the binary codec decodes exactly, whose every
// field a read writes: a read decodes each record over the one before.
type exactRecord struct {
	ID    int
	Name  string
	Flag  bool
	Score float64
	Pair  [2]int16
	Inner struct{ A, B string }
}

// TestReadsDecodeOverThePreviousRecord: records with zero and non-zero
// fields, in turns, read back as written through the fact table and a
// FullCopy index, with and without a Limit: no field keeps the value of
// the record read before it.
func TestReadsDecodeOverThePreviousRecord(t *testing.T) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[exactRecord]{SchemaLease: countLease, Name: "exact",
		PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[exactRecord]{{Name: "flag", Fields: []string{"Flag"}, Strategy: it.FullCopy}}})
	require.NoError(t, err)
	var want []exactRecord
	for i := range 40 {
		r := exactRecord{ID: i, Flag: true}
		if i%2 == 0 {
			r.Name, r.Score, r.Pair, r.Inner.A, r.Inner.B = fmt.Sprint("n", i), float64(i)+0.5, [2]int16{int16(i), -1}, "a", "b"
		}
		_, err := tbl.Insert(ctx, r)
		require.NoError(t, err)
		want = append(want, r)
	}
	for _, q := range []it.Query{{}, {Index: "flag", Eq: it.Tuple{true}}} {
		for _, limit := range []int{0, 7} {
			q.Limit = limit
			var got []exactRecord
			for r, err := range tbl.Find(ctx, q) {
				require.NoError(t, err)
				got = append(got, r)
			}
			n := len(want)
			if limit > 0 {
				n = limit
			}
			require.Equal(t, want[:n], got, "%+v", q)
		}
	}
}
