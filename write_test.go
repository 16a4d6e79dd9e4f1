package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentWriters races writers over a few records; afterwards every
// index must equal what the final records justify, and each unique email
// must have at most one owner.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, it.NewMemoryStore())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for range 300 {
				p := randomPerson(r, r.IntN(8), names)
				var err error
				switch r.IntN(3) {
				case 0:
					_, err = tbl.Upsert(ctx, p)
				case 1:
					err = tbl.Delete(ctx, it.Tuple{p.ID})
				default:
					_, err = tbl.Update(ctx, p)
				}
				if err != nil && !errors.Is(err, it.ErrUniqueViolation) && !errors.Is(err, it.ErrNotFound) {
					assert.NoError(t, err)
				}
			}
		}()
	}
	wg.Wait()
	model := map[int]person{}
	for p, err := range tbl.Find(ctx, it.Query{}) {
		require.NoError(t, err)
		model[p.ID] = p
	}
	for _, ix := range personIndexes() {
		checkIndex(t, tbl, model, ix.Name, nil)
	}
}

// storeDump returns a copy of every key and value in s.
func storeDump(t testing.TB, s kv.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range s.Scan(context.Background(), kv.ScanRange{}) {
		require.NoError(t, err)
		if k, ok := kv.ParseKey(e.Key); ok && slices.Contains([]kv.KeySpace{kv.SpaceCatalog, kv.SpaceLeases, kv.SpaceUsage, kv.SpaceRecordType}, k.Space) {
			continue // the catalog, the maintainers' leases, the usage totals, the record type
		}
		out[string(e.Key)] = string(e.Value)
	}
	return out
}

func TestFailedWritesLeaveDataAsItWas(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openPeople(t, s)
	_, err := tbl.Insert(ctx, person{ID: 1, Name: "A", Town: "R", Email: "a@e", Tags: []string{"x"}})
	require.NoError(t, err)
	v, err := tbl.Insert(ctx, person{ID: 2, Name: "B", Town: "S", Email: "b@e"})
	require.NoError(t, err)
	before := storeDump(t, s)

	_, err = tbl.Insert(ctx, person{ID: 3, Email: "a@e"})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	assert.Contains(t, err.Error(), `index "email"`)
	assert.Contains(t, err.Error(), "record (1)")
	_, err = tbl.Update(ctx, person{ID: 2, Email: "a@e"})
	require.ErrorIs(t, err, it.ErrUniqueViolation)
	_, err = tbl.Insert(ctx, person{ID: 2})
	require.ErrorIs(t, err, it.ErrExists)
	_, err = tbl.Update(ctx, person{ID: 9})
	require.ErrorIs(t, err, it.ErrNotFound)
	_, err = tbl.Update(ctx, person{ID: 2, Town: "T"}, it.IfVersion(v+1))
	require.ErrorIs(t, err, it.ErrConflict)
	err = tbl.Delete(ctx, it.Tuple{2}, it.IfVersion(v+1))
	require.ErrorIs(t, err, it.ErrConflict)
	err = tbl.Delete(ctx, it.Tuple{"2"})
	require.ErrorIs(t, err, it.ErrInvalidKey)
	err = tbl.Delete(ctx, it.Tuple{2, 3})
	require.ErrorIs(t, err, it.ErrInvalidKey)
	_, err = tbl.Get(ctx, "x")
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.Equal(t, before, storeDump(t, s))

	// A computed key with an unsupported type is refused before any write.
	bad, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "bad", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{
		{Name: "k", Key: func(p person) []it.Tuple { return []it.Tuple{{struct{}{}}} }}}})
	require.NoError(t, err)
	_, err = bad.Insert(ctx, person{ID: 1})
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.ErrorIs(t, err, it.ErrUnsupportedType)
	require.Equal(t, before, storeDump(t, s))

	// A successful conditional write, then the record's version moves on.
	v2, err := tbl.Update(ctx, person{ID: 2, Town: "T"}, it.IfVersion(v))
	require.NoError(t, err)
	require.Equal(t, v+1, v2)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{2}, it.IfVersion(v2)))
}

// scopedStore declares a bounded atomicity scope, as Azure Table storage
// does, over a memory store.
type scopedStore struct {
	*it.MemoryStore
	scope kv.Atomicity
}

func (s scopedStore) Atomicity() kv.Atomicity { return s.scope }

func TestWritesRespectTheAtomicityScope(t *testing.T) {
	ctx := context.Background()
	s := scopedStore{it.NewMemoryStore(), kv.Atomicity{MaxOps: 5}}
	tbl := openPeople(t, s)
	// The record and its entries do not fit: the record commits with its
	// unique entry, which only its own batch can check, and a change
	// record for the other indexes.
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R", Name: "A", Email: "a@e"})
	require.NoError(t, err)
	require.Len(t, storeDump(t, s), 3)

	// Without a unique entry the write falls back to the queue: the record
	// and one change record.
	_, err = tbl.Insert(ctx, person{ID: 2, Town: "R", Name: "A"})
	require.NoError(t, err)
	require.Len(t, storeDump(t, s), 5)
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, lag.Pending)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{1}), "a record stays deletable with its unique key")

	// Without indexes the record fits: expectation and put.
	plain, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "plain", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	_, err = plain.Insert(ctx, person{ID: 1})
	require.NoError(t, err)

	// A write falls back only if a maintainer can apply its change: with
	// four operations a batch, it could not remove the change record and a
	// marker while expecting the record.
	tight := scopedStore{it.NewMemoryStore(), kv.Atomicity{MaxOps: 4}}
	tbl = openPeople(t, tight)
	_, err = tbl.Insert(ctx, person{ID: 1, Town: "R", Name: "A"})
	require.ErrorIs(t, err, it.ErrInvalidBatch)
	assert.Contains(t, err.Error(), "with room for a maintainer")
	require.Empty(t, storeDump(t, tight))
}

func TestWritesTouchOnlyTheEntriesThatChange(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(it.NewMemoryStore())
	tbl := openPeople(t, s)
	p := person{ID: 1, Name: "A", Town: "R", Tags: []string{"x", "y", "x"}, Email: "a@e", Score: 4, Note: "n"}
	before := s.Counts()
	_, err := tbl.Insert(ctx, p)
	require.NoError(t, err)
	// The schema version; record + guard; town_name, town, name, tags x and
	// y, email (+ guard), score_mod, score_parity.
	assert.Equal(t, int64(1+2+8+1), s.Counts().Sub(before).Ops)

	// A Note change touches the record and the entries that hold Note: the
	// full copies and the tags projection (two entries).
	p.Note = "m"
	before = s.Counts()
	_, err = tbl.Update(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, int64(1+2+2+2), s.Counts().Sub(before).Ops)

	// Dropping tag y deletes its entry and rewrites nothing else but copies.
	p.Tags = []string{"x"}
	before = s.Counts()
	_, err = tbl.Update(ctx, p)
	require.NoError(t, err)
	// version, record+guard, delete tags/y, full copies x2, name projection
	// (holds Tags).
	assert.Equal(t, int64(1+2+1+2+1), s.Counts().Sub(before).Ops)
}

// TestInsertIsBlind: an insert of a new record is one batch that expects
// the record absent, without reading it first; an insert of a taken key
// still fails with ErrExists, after a read.
func TestInsertIsBlind(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(it.NewMemoryStore())
	tbl := openPeople(t, s)
	p := person{ID: 1, Name: "A", Town: "R"} // no Email: no unique key to check
	before := s.Counts()
	_, err := tbl.Insert(ctx, p)
	require.NoError(t, err)
	c := s.Counts().Sub(before)
	assert.Equal(t, int64(0), c.Gets)
	assert.Equal(t, int64(1), c.Applies)

	before = s.Counts()
	_, err = tbl.Insert(ctx, p)
	require.ErrorIs(t, err, it.ErrExists)
	c = s.Counts().Sub(before)
	assert.Equal(t, int64(1), c.Gets)
}

// TestWriteAllocations checks that a write reuses its buffers: an insert
// with two indexes allocates the encoded record, its entries and what the
// store keeps, not its batch or keys.
func TestWriteAllocations(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("allocation counts need a full run without the race detector")
	}
	ctx := context.Background()
	for _, st := range []it.Strategy{it.FullCopy, it.KeysOnly, it.Partial} {
		var proj []string
		if st == it.Partial {
			proj = []string{"FirstName"}
		}
		tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[Customer]{
			SchemaLease: testLease,
			Name:        "c", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
			Indexes: []it.Index[Customer]{
				{Name: "town", Fields: []string{"Town", "LastName"}, Strategy: st, Projection: proj},
				{Name: "last", Fields: []string{"LastName"}, Strategy: st, Projection: proj},
			},
		})
		require.NoError(t, err)
		next := 0
		allocs := testing.AllocsPerRun(200, func() {
			c := benchCustomer(next)
			next++
			_, err := tbl.Insert(ctx, c)
			require.NoError(t, err)
		}) - testing.AllocsPerRun(200, func() { _ = benchCustomer(next) })
		t.Logf("%v: %.0f allocations an insert", st, allocs)
		assert.LessOrEqual(t, allocs, 11.0, "%v", st) // 13 to 15 without reuse
	}
}

// TestKeysComeFromTheStoredRecord checks that index entries are those of the
// record as the codec stores it, so fields the codec alters or drops leave
// no entries behind, and that a primary key the codec would alter is
// refused.
func TestKeysComeFromTheStoredRecord(t *testing.T) {
	type doc struct {
		ID     string
		Tag    string `json:"-"` // indexed, but JSON does not store it
		Title  string
		Hidden string `json:"-"`
	}
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl, err := it.Open(ctx, s, it.Schema[doc]{SchemaLease: testLease, Name: "docs", PrimaryKey: []string{"ID"}, Indexes: []it.Index[doc]{
		{Name: "tag", Fields: []string{"Tag"}, Strategy: it.FullCopy},
		{Name: "title", Fields: []string{"Title"}},
	}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, doc{ID: "1", Tag: "a", Title: "T\xff"})
	require.NoError(t, err)
	_, err = tbl.Update(ctx, doc{ID: "1", Tag: "b", Title: "U\xfe"})
	require.NoError(t, err)

	// JSON stored no Tag, and the titles with U+FFFD: so are the entries.
	n, err := tbl.Count(ctx, it.Query{Index: "tag"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = tbl.Count(ctx, it.Query{Index: "tag", Eq: it.Tuple{""}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = tbl.Count(ctx, it.Query{Index: "title", Eq: it.Tuple{"U\ufffd"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{"1"}))
	require.Empty(t, storeDump(t, s))

	// A primary key JSON would alter is refused, and nothing is written.
	_, err = tbl.Insert(ctx, doc{ID: "\xff"})
	require.ErrorIs(t, err, it.ErrInvalidKey)
	assert.Contains(t, err.Error(), "does not survive the codec")
	require.Empty(t, storeDump(t, s))
}

// TestVersionsDoNotRepeatAcrossIncarnations checks that a conditional
// update based on a read from before a delete and re-insert is refused.
func TestVersionsDoNotRepeatAcrossIncarnations(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, it.NewMemoryStore())
	v1, err := tbl.Insert(ctx, person{ID: 1, Name: "A"})
	require.NoError(t, err)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{1}))
	v2, err := tbl.Insert(ctx, person{ID: 1, Name: "B"})
	require.NoError(t, err)
	require.NotEqual(t, v1, v2)
	_, err = tbl.Update(ctx, person{ID: 1, Name: "C"}, it.IfVersion(v1))
	require.ErrorIs(t, err, it.ErrConflict)
	v3, err := tbl.Update(ctx, person{ID: 1, Name: "C"}, it.IfVersion(v2))
	require.NoError(t, err)
	require.Equal(t, v2+1, v3)
}

// TestDeleteTakesThePrimaryKeyAsGetDoes: Delete takes a primary key's
// values as Get does, or one Tuple of them, with write options after them;
// an option before a value is refused and deletes nothing.
func TestDeleteTakesThePrimaryKeyAsGetDoes(t *testing.T) {
	type rec struct {
		Group string
		N     int
		Town  string
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"Group", "N"},
		Indexes: []it.Index[rec]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	versions := map[int]it.Version{}
	for n := range 4 {
		versions[n], err = tbl.Insert(ctx, rec{Group: "g", N: n, Town: "Oslo"})
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Delete(ctx, "g", 0))
	require.NoError(t, tbl.Delete(ctx, it.Tuple{"g", 1}))
	require.ErrorIs(t, tbl.Delete(ctx, "g", 2, it.IfVersion(versions[2]+1)), it.ErrConflict)
	require.ErrorIs(t, tbl.Delete(ctx, it.IfVersion(versions[2]), "g", 2), it.ErrInvalidArgument)
	require.ErrorIs(t, tbl.Delete(ctx, "g", 2, it.WriteOption(nil)), it.ErrInvalidArgument)
	require.ErrorIs(t, tbl.Delete(ctx, "g"), it.ErrInvalidKey)
	require.NoError(t, tbl.Delete(ctx, "g", 2, it.IfVersion(versions[2])))
	n, err := tbl.Count(ctx, it.Query{Index: "town", Eq: it.Tuple{"Oslo"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = tbl.Get(ctx, it.Tuple{"g", 3})
	require.NoError(t, err)
}

// Record types of every family the BinaryCodec's exactness tells apart:
// exact ones, whose writes compute entries from the record itself, and
// others, whose writes compute them from the record decoded back.
type (
	rvInner struct {
		Town string
		N    int8
	}
	rvExact struct {
		ID    int
		Name  string
		Score float64
		Tags  [2]string
		In    rvInner
		U     uint16
		OK    bool
	}
	rvFloat32 struct {
		ID int
		F  float32
	}
	rvTime struct {
		ID int
		At time.Time
	}
	rvPtr struct {
		ID int
		P  *string
		S  []string
		M  map[string]int
	}
	rvHidden struct {
		ID   int
		Name string
		note string
	}
	rvTimes struct {
		ID int
		At [1]rvTime
	}
)

// String prints r with what its pointer points to, not its address.
func (r rvPtr) String() string {
	p := "nil"
	if r.P != nil {
		p = fmt.Sprintf("&%q", *r.P)
	}
	return fmt.Sprintf("{%d %s %#v %#v}", r.ID, p, r.S, r.M)
}

// GoString is String.
func (r rvPtr) GoString() string { return r.String() }

// rvCheck writes records (each a version of the record of its ID: the
// first inserted, the later ones updates), then deletes them, on a table
// of the BinaryCodec whose Key func index shows the record as fmt prints
// it (a monotonic clock reading, a nil slice, an unexported field): Verify
// finds no drift after each step, and the deletes leave no entry.
func rvCheck[T any](t *testing.T, id func(T) int, fields []string, records []T) {
	t.Helper()
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := it.Schema[T]{SchemaLease: testLease, Name: "rv", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[T]{
			{Name: "printed", Key: func(r T) []it.Tuple { return []it.Tuple{{fmt.Sprintf("%+v", r)}} }},
			{Name: "printed-all", Key: func(r T) []it.Tuple { return []it.Tuple{{fmt.Sprintf("%#v", r)}} }, Strategy: it.FullCopy},
		}}
	if fields != nil {
		schema.Indexes = append(schema.Indexes, it.Index[T]{Name: "fields", Fields: fields, Strategy: it.FullCopy})
	}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	empty := storeDump(t, s)
	seen := map[int]bool{}
	for i, r := range records {
		if seen[id(r)] {
			_, err = tbl.Update(ctx, r)
		} else {
			_, err = tbl.Insert(ctx, r)
		}
		require.NoError(t, err, "record %d", i)
		seen[id(r)] = true
		requireNoDrift(t, tbl)
	}
	for pk := range seen {
		require.NoError(t, tbl.Delete(ctx, pk))
		requireNoDrift(t, tbl)
	}
	require.Equal(t, empty, storeDump(t, s), "the deletes leave no entry")
}

// TestReviewExactAndInexactRecordsKeepIndexesRight covers the write path
// that skips decoding the payload back for exact record types, and the
// types it must not take it for.
func TestReviewExactAndInexactRecordsKeepIndexesRight(t *testing.T) {
	negZero := math.Copysign(0, -1)
	nan := math.Float64frombits(0x7ff8000000000001)
	t.Run("exact", func(t *testing.T) {
		rvCheck(t, func(r rvExact) int { return r.ID }, []string{"Score", "Name"}, []rvExact{
			{ID: 1, Name: "a\xff", Score: negZero, Tags: [2]string{"x", ""}, In: rvInner{"T", -3}, U: 7, OK: true},
			{ID: 2, Name: "", Score: nan},
			{ID: 1, Name: "b", Score: 0, In: rvInner{"U", 127}},
			{ID: 2, Name: "c", Score: math.Inf(-1)},
		})
	})
	t.Run("float32", func(t *testing.T) {
		rvCheck(t, func(r rvFloat32) int { return r.ID }, []string{"F"}, []rvFloat32{
			{ID: 1, F: float32(math.Copysign(0, -1))},
			{ID: 2, F: math.Float32frombits(0x7fc00001)},
			{ID: 1, F: math.MaxFloat32},
			{ID: 2, F: math.SmallestNonzeroFloat32},
		})
	})
	t.Run("time with a monotonic reading and a zone", func(t *testing.T) {
		now := time.Now()
		rvCheck(t, func(r rvTime) int { return r.ID }, []string{"At"}, []rvTime{
			{ID: 1, At: now},
			{ID: 2, At: now.In(time.FixedZone("X", 3600))},
			{ID: 1, At: now.Add(time.Second)},
			{ID: 2, At: time.Time{}},
		})
	})
	t.Run("time in an array", func(t *testing.T) {
		now := time.Now()
		rvCheck(t, func(r rvTimes) int { return r.ID }, nil, []rvTimes{
			{ID: 1, At: [1]rvTime{{ID: 9, At: now}}},
			{ID: 1, At: [1]rvTime{{ID: 9, At: now.Add(time.Minute)}}},
		})
	})
	t.Run("pointers, slices and maps", func(t *testing.T) {
		e := ""
		rvCheck(t, func(r rvPtr) int { return r.ID }, nil, []rvPtr{
			{ID: 1, P: &e, S: []string{}, M: map[string]int{}},
			{ID: 2},
			{ID: 1, S: []string{"a"}},
			{ID: 2, P: &e, M: map[string]int{"k": 1}},
		})
	})
	t.Run("unexported field", func(t *testing.T) {
		rvCheck(t, func(r rvHidden) int { return r.ID }, []string{"Name"}, []rvHidden{
			{ID: 1, Name: "a", note: "kept by the caller only"},
			{ID: 1, Name: "a", note: "other"},
			{ID: 2, Name: "b", note: "x"},
		})
	})
}

// rvKeeper is a record whose Key func keeps every record it is given.
type rvKeeper struct {
	ID   int
	Name string
	Arr  [3]string
}

// TestReviewKeyFuncKeepsRecords: a Key func that keeps the records it is
// given (an exact type, whose writes show it their record) finds them
// unchanged after later writes, which reuse the write buffers.
func TestReviewKeyFuncKeepsRecords(t *testing.T) {
	ctx := context.Background()
	var kept []rvKeeper
	schema := it.Schema[rvKeeper]{SchemaLease: testLease, Name: "keep", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[rvKeeper]{{Name: "k", Key: func(r rvKeeper) []it.Tuple {
			kept = append(kept, r)
			return []it.Tuple{{r.Name, r.Arr[1]}}
		}}}}
	tbl, err := it.Open(ctx, it.NewMemoryStore(), schema)
	require.NoError(t, err)
	var want []rvKeeper
	for i := range 20 {
		r := rvKeeper{ID: i % 5, Name: fmt.Sprint("n", i), Arr: [3]string{fmt.Sprint(i), fmt.Sprint("a", i), "z"}}
		kept = kept[:0]
		_, err := tbl.Upsert(ctx, r)
		require.NoError(t, err)
		require.Contains(t, kept, r, "the Key func saw the record written")
		want = append(want, kept...)
	}
	snapshot := append([]rvKeeper(nil), want...)
	_, err = tbl.Upsert(ctx, rvKeeper{ID: 1, Name: "last"})
	require.NoError(t, err)
	require.Equal(t, snapshot, want[:len(snapshot)], "what the Key func kept did not change")
	requireNoDrift(t, tbl)
}

// taggedNote is a note the binary codec does not decode exactly (a nil
// slice may come back empty), so a write decodes the record it stores to
// take its keys from it.
type taggedNote struct {
	ID   int
	Text string
	Tags []string
}

// TestWriteKeyFuncKeepsItsRecord: a single write encodes into memory that
// the next write of the table reuses; a Key func may keep the record it is
// given, decoded from that memory, which must not share it: with a codec
// that decodes in place (binary) and one that copies (JSON).
func TestWriteKeyFuncKeepsItsRecord(t *testing.T) {
	ctx := context.Background()
	for _, codec := range []it.Codec{&it.BinaryCodec{}, it.JSONCodec{}} {
		t.Run(fmt.Sprintf("%T", codec), func(t *testing.T) {
			var seen []string // the Text of each record the Key func was given
			byWord := it.Index[taggedNote]{Name: "word", Key: func(n taggedNote) []it.Tuple {
				seen = append(seen, n.Text)
				return []it.Tuple{{n.Text[:4]}}
			}}
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[taggedNote]{SchemaLease: countLease, Name: "notes",
				PrimaryKey: []string{"ID"}, Codec: codec, Indexes: []it.Index[taggedNote]{byWord}})
			require.NoError(t, err)
			var want []string
			for i := range 100 {
				n := taggedNote{ID: i % 10, Text: fmt.Sprintf("note %03d of the test", i), Tags: []string{"t"}}
				switch {
				case i < 10:
					_, err = tbl.Insert(ctx, n)
				case i%2 == 0:
					_, err = tbl.Update(ctx, n)
				default:
					_, err = tbl.Upsert(ctx, n)
				}
				require.NoError(t, err)
				want = append(want, n.Text)
			}
			// An update gives the Key func the record it replaces too.
			var got []string
			for _, s := range seen {
				if !slices.Contains(got, s) {
					got = append(got, s)
				}
			}
			require.Equal(t, want, got)
		})
	}
}
