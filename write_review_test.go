package indextable_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

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
