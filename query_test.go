package indextable_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

func TestQueriesTakeAnyLimit(t *testing.T) {
	ctx := context.Background()
	stores := map[string]kv.Store{"memory": it.NewMemoryStore(), "one shard": newShardedMemory(t, 1), "three shards": newShardedMemory(t, 3)}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			// No unique index: a sharded store cannot check one.
			indexes := slices.DeleteFunc(personIndexes(), func(ix it.Index[person]) bool { return ix.Unique })
			tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
			require.NoError(t, err)
			for i := range 5 {
				_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprint("N", i), Town: "R", Tags: []string{"a", "b"}, Score: i})
				require.NoError(t, err)
			}
			_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{}) // what a sharded store queued
			require.NoError(t, err)
			for _, c := range []struct {
				q it.Query
				n int
			}{
				{it.Query{}, 5},
				{it.Query{Index: "town_name", Eq: it.Tuple{"R"}}, 5},
				{it.Query{Index: "town", Reverse: true}, 5},
				{it.Query{Index: "name", Covered: true}, 5},
				{it.Query{Index: "tags"}, 10}, // an entry per tag
				{it.Query{Index: "score_mod", Eq: it.Tuple{1}}, 2},
				{it.Query{Where: map[string]any{"Town": "R"}}, 5},
			} {
				all := collect(t, tbl, c.q)
				require.Len(t, all, c.n)
				for _, limit := range []int{1, 2, math.MaxInt - 1, math.MaxInt} {
					q := c.q
					q.Limit = limit
					want := all[:min(limit, len(all))]
					msg := fmt.Sprintf("query %+v", q)
					assert.Equal(t, want, collect(t, tbl, q), msg)
					page, cursor, err := tbl.FindPage(ctx, q)
					require.NoError(t, err, msg)
					assert.Equal(t, want, page, msg)
					assert.Equal(t, limit < len(all), cursor != "", msg)
					n, err := tbl.Count(ctx, q)
					require.NoError(t, err, msg)
					assert.Equal(t, len(want), n, msg)
					ok, err := tbl.Exists(ctx, q)
					require.NoError(t, err, msg)
					assert.True(t, ok, msg)
				}
			}
		})
	}
}

// ShopLoc is embedded in locatedShop through a pointer, which may be nil.
type ShopLoc struct {
	Town string
	Zip  int
}

type locatedShop struct {
	ID   string
	Name string
	Note string
	*ShopLoc
}

// shopIndexes key on and project fields behind the embedded pointer, with
// every strategy.
func shopIndexes() []it.Index[locatedShop] {
	return []it.Index[locatedShop]{
		{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
		{Name: "town_full", Fields: []string{"Town"}, Strategy: it.FullCopy},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.Partial, Projection: []string{"Town", "Zip"}},
		{Name: "zip", Fields: []string{"Zip"}, Unique: true, Sparse: true},
		{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.Partial, Projection: []string{"Zip"}},
	}
}

// coveredShop is what a covered read of index name returns of s.
func coveredShop(name string, s locatedShop) locatedShop {
	switch name {
	case "town":
		return locatedShop{ID: s.ID, ShopLoc: &ShopLoc{Town: s.Town}}
	case "name":
		c := locatedShop{ID: s.ID, Name: s.Name}
		if s.ShopLoc != nil {
			c.ShopLoc = &ShopLoc{Town: s.Town, Zip: s.Zip}
		}
		return c
	case "zip":
		return locatedShop{ID: s.ID, ShopLoc: &ShopLoc{Zip: s.Zip}}
	case "town_name":
		return locatedShop{ID: s.ID, Name: s.Name, ShopLoc: &ShopLoc{Town: s.Town, Zip: s.Zip}}
	}
	return s
}

// TestReadsThroughAnEmbeddedPointer checks that reads set the fields
// behind an embedded pointer, allocating it, whichever way they decode a
// record (the codec, an index key, a projection), and that a record whose
// embedded pointer is nil is left out of the indexes on the fields behind
// it and read back with it nil.
func TestReadsThroughAnEmbeddedPointer(t *testing.T) {
	ctx := context.Background()
	a := locatedShop{ID: "a", Name: "n", Note: "x", ShopLoc: &ShopLoc{Town: "R", Zip: 1}}
	b := locatedShop{ID: "b", Name: "n", Note: "y"}                      // no location
	c := locatedShop{ID: "c", Name: "m", Note: "z", ShopLoc: &ShopLoc{}} // a zero location
	cases := []struct {
		index string
		want  []locatedShop // what a whole-record read returns
	}{
		{"", []locatedShop{a, b, c}},
		{"town", []locatedShop{c, a}},
		{"town_full", []locatedShop{c, a}},
		{"name", []locatedShop{c, a, b}},
		{"zip", []locatedShop{a}},
		{"town_name", []locatedShop{c, a}},
	}
	for _, codec := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[locatedShop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}, Indexes: shopIndexes(), Codec: codec})
		require.NoError(t, err)
		for _, s := range []locatedShop{a, b, c} {
			_, err := tbl.Insert(ctx, s)
			require.NoError(t, err)
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%T/%s", codec, tc.index), func(t *testing.T) {
				find := func(q it.Query) []locatedShop {
					q.Index = tc.index
					var out []locatedShop
					for s, err := range tbl.Find(ctx, q) {
						require.NoError(t, err)
						out = append(out, s)
					}
					return out
				}
				assert.Equal(t, tc.want, find(it.Query{}), "whole records")
				n, err := tbl.Count(ctx, it.Query{Index: tc.index})
				require.NoError(t, err)
				assert.Equal(t, len(tc.want), n)
				if tc.index == "" {
					return
				}
				var covered []locatedShop
				for _, s := range tc.want {
					covered = append(covered, coveredShop(tc.index, s))
				}
				assert.Equal(t, covered, find(it.Query{Covered: true}), "covered")
				if tc.index != "town_full" { // which holds whole records
					fields := []string{"ID", "Town"}
					if tc.index == "zip" {
						fields = []string{"ID", "Zip"}
					}
					assert.Equal(t, covered, find(it.Query{Fields: fields}), "covered by Fields")
				}
			})
		}
		// The pointer set and cleared again moves the record in and out.
		b2, a2 := b, a
		b2.ShopLoc, a2.ShopLoc = &ShopLoc{Town: "S", Zip: 2}, nil
		for _, s := range []locatedShop{a2, b2} {
			_, err := tbl.Update(ctx, s)
			require.NoError(t, err)
		}
		for _, index := range []string{"town", "town_full", "town_name"} {
			var got []locatedShop
			for s, err := range tbl.Find(ctx, it.Query{Index: index}) {
				require.NoError(t, err)
				got = append(got, s)
			}
			assert.Equal(t, []locatedShop{c, b2}, got, "%T: index %s", codec, index)
		}
	}
}

// TestPrimaryKeyThroughAnEmbeddedPointer checks that a covered read sets
// a primary key behind an embedded pointer, and that a record whose
// pointer is nil, with no primary key, is refused and writes nothing.
func TestPrimaryKeyThroughAnEmbeddedPointer(t *testing.T) {
	ctx := context.Background()
	for _, codec := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		s := it.NewMemoryStore()
		tbl, err := it.Open(ctx, s, it.Schema[locatedShop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"Zip"}, Codec: codec,
			Indexes: []it.Index[locatedShop]{{Name: "name", Fields: []string{"Name"}}}})
		require.NoError(t, err)
		a := locatedShop{ID: "a", Name: "n", ShopLoc: &ShopLoc{Town: "R", Zip: 1}}
		_, err = tbl.Insert(ctx, a)
		require.NoError(t, err)
		before := storeDump(t, s)
		_, err = tbl.Insert(ctx, locatedShop{ID: "b", Name: "n"})
		require.ErrorIs(t, err, it.ErrInvalidKey)
		require.Equal(t, before, storeDump(t, s))
		var got []locatedShop
		for s, err := range tbl.Find(ctx, it.Query{Index: "name", Covered: true}) {
			require.NoError(t, err)
			got = append(got, s)
		}
		assert.Equal(t, []locatedShop{{Name: "n", ShopLoc: &ShopLoc{Zip: 1}}}, got, "%T", codec)
	}
}

// shopLoc is embedded in hiddenShop through an unexported pointer, which
// neither codec of the package can set (JSON refuses, binary skips it);
// hiddenCodec can.
type shopLoc struct{ Town string }

type hiddenShop struct {
	ID string
	*shopLoc
}

// hiddenCodec encodes a hiddenShop as its ID and, when set, its Town, and
// anything else as JSON.
type hiddenCodec struct{ it.JSONCodec }

func (c hiddenCodec) Marshal(v any) ([]byte, error) {
	if s, ok := v.(*hiddenShop); ok {
		parts := []string{s.ID}
		if s.shopLoc != nil {
			parts = append(parts, s.Town)
		}
		return c.JSONCodec.Marshal(parts)
	}
	return c.JSONCodec.Marshal(v)
}

func (c hiddenCodec) Unmarshal(data []byte, v any) error {
	s, ok := v.(*hiddenShop)
	if !ok {
		return c.JSONCodec.Unmarshal(data, v)
	}
	var parts []string
	if err := c.JSONCodec.Unmarshal(data, &parts); err != nil || len(parts) == 0 {
		return fmt.Errorf("%w: %v", it.ErrCodec, err)
	}
	s.ID = parts[0]
	if len(parts) > 1 {
		s.shopLoc = &shopLoc{Town: parts[1]}
	}
	return nil
}

// TestCoveredReadsThroughAnUnexportedEmbeddedPointer checks that a covered
// read sets a field behind an unexported embedded pointer, which reflect
// alone would not, for a codec that stores it.
func TestCoveredReadsThroughAnUnexportedEmbeddedPointer(t *testing.T) {
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[hiddenShop]{SchemaLease: testLease, Name: "shops", PrimaryKey: []string{"ID"}, Codec: hiddenCodec{},
		Indexes: []it.Index[hiddenShop]{
			{Name: "town", Fields: []string{"Town"}},
			{Name: "id", Fields: []string{"ID"}, Strategy: it.Partial, Projection: []string{"Town"}},
		}})
	require.NoError(t, err)
	a, b := hiddenShop{ID: "a", shopLoc: &shopLoc{Town: "R"}}, hiddenShop{ID: "b"}
	for _, s := range []hiddenShop{a, b} {
		_, err := tbl.Insert(ctx, s)
		require.NoError(t, err)
	}
	for _, q := range []it.Query{
		{}, {Index: "town"}, {Index: "town", Covered: true}, {Index: "town", Fields: []string{"Town"}},
		{Index: "id"}, {Index: "id", Covered: true},
	} {
		var got []hiddenShop
		for s, err := range tbl.Find(ctx, q) {
			require.NoError(t, err)
			got = append(got, s)
		}
		want := []hiddenShop{a}
		if q.Index != "town" {
			want = append(want, b)
		}
		assert.Equal(t, want, got, "query %+v", q)
	}
}

// FuzzPlace is embedded in fuzzRec through a pointer, nil in some records.
type FuzzPlace struct{ City string }

// fuzzRec has a field of every key type, a pointer, a slice and an
// embedded pointer.
type fuzzRec struct {
	ID    int
	Name  string
	Town  string
	Tags  []string
	Email string
	Score int64
	Ratio float64
	Small float32
	When  time.Time
	Data  []byte
	Flag  bool
	Opt   *int
	U     uint64
	*FuzzPlace
}

// fuzzName, fuzzInt and fuzzTime are named types, for query values; the
// first two are key types.
type (
	fuzzName string
	fuzzInt  int16
	fuzzTime time.Time
)

// fuzzIndexes are the indexes FuzzQuery reads: the key fields of each
// (nil for a computed key) and the fields its entries hold besides the
// primary key (nil: whole records). "late" is added after the records, so
// it is write-only.
var fuzzIndexes = []struct {
	name         string
	fields, held []string
}{
	{"", []string{"ID"}, nil},
	{"town_name", []string{"Town", "Name"}, nil},
	{"town", []string{"Town"}, []string{"Town"}},
	{"name", []string{"Name"}, []string{"Name", "Score", "Tags", "City"}},
	{"tags", []string{"Tags"}, []string{"Name"}},
	{"email", []string{"Email"}, []string{"Email"}},
	{"score_mod", nil, nil},
	{"ratio", []string{"Ratio", "Small"}, []string{"Ratio", "Small"}},
	{"when", []string{"When", "Flag"}, nil},
	{"data", []string{"Data", "U"}, []string{"Data", "U", "Opt", "When"}},
	{"opt", []string{"Opt"}, []string{"Opt"}},
	{"city", []string{"City"}, []string{"City", "Town"}},
	{"lazy", []string{"Name", "Town"}, nil},
	{"id_score", []string{"ID", "Score"}, nil},
	{"id_town", []string{"ID", "Town"}, []string{"Town", "Name"}},
	{"late", []string{"Town"}, []string{"Town"}},
	{"nope", []string{"Town"}, nil},
}

// fuzzFields are the field names FuzzQuery puts in Fields and Where.
var fuzzFields = []string{"ID", "Name", "Town", "Tags", "Email", "Score", "Ratio", "Small", "When", "Data", "Flag", "Opt", "U", "City", "FuzzPlace", "Nope"}

func fuzzSchema(late, partitioned bool) []it.Index[fuzzRec] {
	ixs := []it.Index[fuzzRec]{
		{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.FullCopy},
		{Name: "town", Fields: []string{"Town"}},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.Partial, Projection: []string{"Score", "Tags", "City"}, Sparse: true},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: it.Partial, Projection: []string{"Name"}},
		// Not unique where a partitioned store refuses it (its records
		// have no email there).
		{Name: "email", Fields: []string{"Email"}, Unique: !partitioned, Sparse: true},
		{Name: "score_mod", Key: func(r fuzzRec) []it.Tuple {
			if r.Score < 0 {
				return nil
			}
			return []it.Tuple{{r.Score % 3, r.Town}}
		}, Strategy: it.FullCopy},
		{Name: "ratio", Fields: []string{"Ratio", "Small"}},
		{Name: "when", Fields: []string{"When", "Flag"}, Strategy: it.FullCopy},
		{Name: "data", Fields: []string{"Data", "U"}, Strategy: it.Partial, Projection: []string{"Opt", "When"}},
		{Name: "opt", Fields: []string{"Opt"}},
		{Name: "city", Fields: []string{"City"}, Strategy: it.Partial, Projection: []string{"Town"}},
		{Name: "lazy", Fields: []string{"Name", "Town"}, Strategy: it.FullCopy, Consistency: it.Eventual},
		{Name: "id_score", Fields: []string{"ID", "Score"}, Strategy: it.FullCopy, Placement: it.IntraPartition},
		{Name: "id_town", Fields: []string{"ID", "Town"}, Unique: true, Strategy: it.Partial, Projection: []string{"Name"}, Placement: it.IntraPartition},
	}
	if late {
		ixs = append(ixs, it.Index[fuzzRec]{Name: "late", Fields: []string{"Town"}})
	}
	return ixs
}

// fuzzRecord returns record id, its fields drawn from small sets, with
// extremes, so that records share keys. A JSON table gets no NaN or
// infinity, which JSON cannot encode, and a sharded one no email, which a
// unique index over shards cannot check.
func fuzzRecord(r *rand.Rand, id int, isJSON, sharded bool) fuzzRec {
	pick := func(n int) int { return r.IntN(n) }
	ratios := []float64{-math.MaxFloat64, -1.5, math.Copysign(0, -1), 0, 1.5, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	if isJSON {
		ratios = ratios[:6]
	}
	rec := fuzzRec{
		ID:    id,
		Name:  []string{"", "Ann", "Bob", "Bob\x00", "\xff"}[pick(5)],
		Town:  []string{"", "R", "S", "S\x00x"}[pick(4)],
		Score: []int64{math.MinInt64, -1, 0, 1, 2, 5, math.MaxInt64}[pick(7)],
		Ratio: ratios[pick(len(ratios))],
		Small: []float32{0, 0.1, -math.MaxFloat32, 3}[pick(4)],
		When:  []time.Time{{}, time.Unix(0, 0).UTC(), time.Unix(1700000000, 5).UTC(), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}[pick(4)],
		Data:  [][]byte{nil, {}, {0}, {0, 0xff}, []byte("d")}[pick(5)],
		Flag:  pick(2) == 0,
		U:     []uint64{0, 1, math.MaxUint64}[pick(3)],
	}
	for range pick(4) {
		rec.Tags = append(rec.Tags, []string{"", "a", "b", "c\x00"}[pick(4)])
	}
	if !sharded && pick(3) > 0 {
		rec.Email = fmt.Sprint("e", pick(30))
	}
	if pick(3) == 0 {
		n := pick(3) - 1
		rec.Opt = &n
	}
	if pick(3) > 0 {
		rec.FuzzPlace = &FuzzPlace{City: []string{"", "Oslo", "Rome"}[pick(3)]}
	}
	return rec
}

// openFuzzTable opens a table of fuzzRec over s with codec and writes its
// records: some after the "late" index was added, which is write-only, and
// some left queued for the Eventual index and any other the store
// queues for.
func openFuzzTable(t testing.TB, s kv.Store, codec it.Codec, seed uint64) *it.Table[fuzzRec] {
	ctx := context.Background()
	_, isJSON := codec.(it.JSONCodec)
	_, sharded := s.(*it.ShardedStore)
	r := rand.New(rand.NewPCG(seed, seed))
	write := func(tbl *it.Table[fuzzRec], from, to int) {
		for id := from; id < to; id++ {
			if _, err := tbl.Upsert(ctx, fuzzRecord(r, id%50, isJSON, sharded)); err != nil {
				require.ErrorIs(t, err, it.ErrUniqueViolation)
			}
		}
	}
	schema := it.Schema[fuzzRec]{SchemaLease: testLease, Name: "fuzz", PrimaryKey: []string{"ID"}, Codec: codec, Indexes: fuzzSchema(false, sharded)}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	write(tbl, 0, 40)
	schema.Indexes = fuzzSchema(true, sharded)
	tbl, err = it.Open(ctx, s, schema)
	require.NoError(t, err)
	write(tbl, 40, 60)
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	write(tbl, 60, 66)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{3}))
	return tbl
}

// fuzzInput reads the choices of FuzzQuery from its bytes, then zeros.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *fuzzInput) intn(n int) int { return int(in.byte()) % n }

func (in *fuzzInput) uint64() uint64 {
	var x uint64
	for range 8 {
		x = x<<8 | uint64(in.byte())
	}
	return x
}

func (in *fuzzInput) bytes() []byte {
	b := make([]byte, in.intn(12))
	for i := range b {
		b[i] = in.byte()
	}
	return b
}

// value returns a query value: of a record's field (name, or a component
// of a computed key when name is empty), or of any type.
func (in *fuzzInput) value(recs []fuzzRec, name string) any {
	c := in.byte()
	if c < 192 { // mostly a value that matches
		rec := reflect.ValueOf(recs[in.intn(len(recs))])
		if name == "" {
			return []any{rec.FieldByName("Score").Int() % 3, rec.FieldByName("Town").String()}[in.intn(2)]
		}
		f, err := rec.FieldByIndexErr(fieldIndex(name))
		if err != nil {
			return nil
		}
		if f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String {
			if f.Len() == 0 {
				return nil
			}
			f = f.Index(in.intn(f.Len()))
		}
		return f.Interface()
	}
	switch c % 14 {
	case 0:
		return []string{"", "a", "R", "\x00", "\xff", "S\x00"}[in.intn(6)]
	case 1:
		return string(in.bytes())
	case 2:
		return [][]byte{nil, {}, {0}, {0xff}}[in.intn(4)]
	case 3:
		return []any{0, -1, 1, math.MaxInt, math.MinInt, int64(math.MaxInt64), int8(math.MinInt8), int32(7)}[in.intn(8)]
	case 4:
		return []any{uint(0), uint64(math.MaxUint64), uint8(255), uint16(3)}[in.intn(4)]
	case 5:
		return []any{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1.5, float32(0.1), float32(math.Inf(-1))}[in.intn(7)]
	case 6:
		return in.byte()&1 == 1
	case 7:
		return []time.Time{{}, time.Unix(0, 0), time.Unix(1700000000, 5).In(time.FixedZone("X", 3600)), time.Unix(-1<<40, 0)}[in.intn(4)]
	case 8:
		return nil
	case 9:
		return []any{struct{}{}, struct{ A int }{1}, FuzzPlace{"Oslo"}}[in.intn(3)]
	case 10:
		s, n, w, f, f32 := "R", 1, time.Unix(0, 0), 1.5, float32(3)
		pn := &n
		return []any{&s, &n, &pn, &w, &f, &f32, (*int)(nil), (*string)(nil), (*float64)(nil), (*struct{})(nil), &FuzzPlace{}, make(chan int)}[in.intn(12)]
	case 11:
		return []any{[]string{"a"}, []int{1}, []any{"a"}, map[string]int{"a": 1}, []float64{1.5}, []float32{3}, []*float64{nil}}[in.intn(7)]
	case 12:
		return []any{fuzzName("Bob"), fuzzInt(2), fuzzName(""), fuzzTime(time.Unix(0, 0))}[in.intn(4)]
	}
	switch in.intn(6) { // raw bits
	case 0:
		return int64(in.uint64())
	case 1:
		return in.uint64()
	case 2:
		return math.Float64frombits(in.uint64())
	case 3:
		return time.Unix(int64(in.uint64()), int64(in.uint64()))
	case 4:
		return in.bytes()
	}
	return func() {}
}

func fieldIndex(name string) []int {
	f, ok := reflect.TypeFor[fuzzRec]().FieldByName(name)
	if !ok {
		return []int{0}
	}
	return f.Index
}

// query returns a query of tbl drawn from the input, and the records that
// values are picked from.
func (in *fuzzInput) query(tbl *it.Table[fuzzRec], recs []fuzzRec, cursors []string) it.Query {
	ix := fuzzIndexes[in.intn(len(fuzzIndexes))]
	q := it.Query{Index: ix.name}
	component := func(i int) string {
		if ix.fields == nil {
			return ""
		}
		return ix.fields[min(i, len(ix.fields)-1)]
	}
	width := len(ix.fields)
	if ix.fields == nil {
		width = 2 // score_mod's
	}
	for i := range in.intn(width+2) % (width + 1) {
		q.Eq = append(q.Eq, in.value(recs, component(i)))
	}
	for _, b := range []**it.Bound{&q.Lower, &q.Upper} {
		if c := in.byte(); c&3 == 3 {
			*b = &it.Bound{Value: in.value(recs, component(len(q.Eq))), Exclusive: c&4 == 4}
		}
	}
	flags := in.byte()
	q.Reverse, q.Covered, q.Stale = flags&1 == 1, flags&6 == 6, flags&8 == 8
	limits := []int{0, 1, 2, 3, 5, 64, 65, math.MaxInt, math.MaxInt - 1, 0, 1, 2, 7, -1, math.MinInt}
	if k := in.intn(len(limits) + 1); k < len(limits) {
		q.Limit = limits[k]
	} else {
		q.Limit = int(in.uint64())
	}
	for range []int{0, 0, 1, 2}[in.intn(4)] {
		q.Fields = append(q.Fields, fuzzFields[in.intn(len(fuzzFields))])
	}
	for range []int{0, 0, 0, 0, 1, 2}[in.intn(6)] {
		if q.Where == nil {
			q.Where = map[string]any{}
		}
		name := fuzzFields[in.intn(len(fuzzFields))]
		q.Where[name] = in.value(recs, name)
	}
	switch in.intn(16) {
	case 1:
		q.Cursor = string(in.bytes())
	case 2:
		q.Cursor = base64.RawURLEncoding.EncodeToString(in.bytes())
	case 3:
		q.Cursor = cursors[in.intn(len(cursors))]
	case 4, 5, 6, 7: // a cursor of this query, perhaps altered
		p := q
		p.Limit = 1 + in.intn(5)
		if _, cursor, err := tbl.FindPage(context.Background(), p); err == nil && cursor != "" {
			q.Cursor = cursor
			if c := in.byte(); c&3 == 3 {
				b := []byte(cursor)
				b[int(c)%len(b)] ^= in.byte() | 1
				q.Cursor = string(b)
			}
		}
	}
	return q
}

// fuzzTable is a table FuzzQuery reads, with its records and cursors of
// some of its queries.
type fuzzTable struct {
	tbl     *it.Table[fuzzRec]
	recs    []fuzzRec
	byID    map[int]fuzzRec
	cursors []string
}

// openFuzzTables opens the tables FuzzQuery reads: binary-coded on a
// store that reuses its scans' memory, JSON-coded over three shards.
func openFuzzTables(t testing.TB) []fuzzTable {
	ctx := context.Background()
	sharded, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	var tables []fuzzTable
	for i, s := range []struct {
		store kv.Store
		codec it.Codec
	}{{reusingStore{it.NewMemoryStore()}, &it.BinaryCodec{}}, {sharded, it.JSONCodec{}}} {
		ft := fuzzTable{tbl: openFuzzTable(t, s.store, s.codec, uint64(i)), byID: map[int]fuzzRec{}}
		for rec, err := range ft.tbl.Find(ctx, it.Query{}) {
			require.NoError(t, err)
			ft.recs = append(ft.recs, rec)
			ft.byID[rec.ID] = rec
		}
		for _, q := range []it.Query{{Limit: 3}, {Index: "town", Limit: 2}, {Index: "tags", Limit: 1, Reverse: true}} {
			_, cursor, err := ft.tbl.FindPage(ctx, q)
			require.NoError(t, err)
			ft.cursors = append(ft.cursors, cursor)
		}
		tables = append(tables, ft)
	}
	return tables
}

// FuzzQuery drives Find, FindPage, Count and Exists with arbitrary
// queries: none may panic, or fail with an error that is not one of the
// documented sentinels of a bad query; and for a query that succeeds,
// they must agree: a limited Find is a prefix of the unlimited one,
// FindPage's pages follow its cursors to the same records, and Count and
// Exists count them.
func FuzzQuery(f *testing.F) {
	// The bytes choose: the table, the index, how many Eq values, then
	// each value, Lower and Upper (3: inclusive, 7: exclusive, then the
	// value), flags (1: Reverse, 6: Covered), the Limit (7: math.MaxInt),
	// how many Fields and Where, and the cursor (4: one of the query).
	for i := range fuzzIndexes {
		ix := byte(i)
		f.Add([]byte{0, ix, 0, 0, 0, 0, 7})             // all of it
		f.Add([]byte{1, ix, 0, 0, 0, 6, 7})             // covered
		f.Add([]byte{0, ix, 0, 0, 0, 1, 1, 0, 0, 4, 1}) // reversed, from a cursor
		f.Add([]byte{1, ix, 1, 0, 7, 1, 0, 0, 0, 2})    // a value of a record
		f.Add([]byte{0, ix, 0, 3, 0, 9, 1, 0, 7, 0, 9}) // a range
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 2, 0, 4, 2, 1, 5}) // filtered
	tables := openFuzzTables(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		in := &fuzzInput{b}
		ft := tables[in.intn(len(tables))]
		q := in.query(ft.tbl, ft.recs, ft.cursors)
		checkQuery(t, ft, q)
	})
}

// queryErr fails t unless err is nil or one of the errors a bad query
// may return.
func queryErr(t *testing.T, err error, what string, q it.Query) {
	t.Helper()
	if err == nil {
		return
	}
	for _, want := range []error{it.ErrInvalidQuery, it.ErrInvalidCursor, it.ErrIndexNotReadable} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Fatalf("%s of %s: undocumented error %v", what, fmtQuery(q), err)
}

func fmtQuery(q it.Query) string {
	s := fmt.Sprintf("{Index:%q Eq:%#v Reverse:%v Limit:%d Cursor:%q Covered:%v Stale:%v Where:%#v Fields:%q", q.Index, q.Eq, q.Reverse, q.Limit, q.Cursor, q.Covered, q.Stale, q.Where, q.Fields)
	for name, b := range map[string]*it.Bound{"Lower": q.Lower, "Upper": q.Upper} {
		if b != nil {
			s += fmt.Sprintf(" %s:%#v", name, *b)
		}
	}
	return s + "}"
}

// findAll returns the records Find yields for q, as strings, and its
// error, which must be the last thing it yields.
func findAll(t *testing.T, tbl *it.Table[fuzzRec], q it.Query) ([]string, error) {
	t.Helper()
	var out []string
	var err error
	for rec, e := range tbl.Find(context.Background(), q) {
		require.NoError(t, err, "Find of %s yields after its error", fmtQuery(q))
		if err = e; e == nil {
			out = append(out, recString(rec))
		}
	}
	return out, err
}

// recString shows everything a record holds, pointers followed, NaNs
// equal.
func recString(r fuzzRec) string {
	opt, city := "nil", "nil"
	if r.Opt != nil {
		opt = fmt.Sprint(*r.Opt)
	}
	if r.FuzzPlace != nil {
		city = fmt.Sprintf("%q", r.City)
	}
	return fmt.Sprintf("%d %q %q %q %q %d %v %v %s %q %v %s %d %s", r.ID, r.Name, r.Town, r.Tags, r.Email, r.Score, r.Ratio, r.Small,
		r.When.UTC().Format(time.RFC3339Nano), r.Data, r.Flag, opt, r.U, city)
}

// checkQuery checks what the reads of q return, alone and against each
// other.
func checkQuery(t *testing.T, ft fuzzTable, q it.Query) {
	ctx := context.Background()
	tbl := ft.tbl
	checkRecords(t, ft, q)
	got, err := findAll(t, tbl, q)
	queryErr(t, err, "Find", q)
	n, countErr := tbl.Count(ctx, q)
	queryErr(t, countErr, "Count", q)
	require.Equal(t, err == nil, countErr == nil, "Find and Count of %s: %v, %v", fmtQuery(q), err, countErr)
	one := q
	one.Limit = 1
	_, oneErr := findAll(t, tbl, one)
	exists, existsErr := tbl.Exists(ctx, q)
	queryErr(t, existsErr, "Exists", q)
	require.Equal(t, oneErr == nil, existsErr == nil, "Find and Exists of %s: %v, %v", fmtQuery(q), oneErr, existsErr)
	page, cursor, pageErr := tbl.FindPage(ctx, q)
	queryErr(t, pageErr, "FindPage", q)
	if q.Limit <= 0 {
		require.ErrorIs(t, pageErr, it.ErrInvalidQuery, "FindPage of %s", fmtQuery(q))
	}
	if err != nil {
		return
	}
	all := q
	all.Limit = 0
	want, err := findAll(t, tbl, all)
	require.NoError(t, err, "Find of %s", fmtQuery(all))
	if q.Limit > 0 {
		want = want[:min(q.Limit, len(want))]
	}
	require.Equal(t, want, got, "Find of %s", fmtQuery(q))
	if q.Stale && pending(t, tbl) > 0 {
		// Count and Exists read no record: when changes are pending, a
		// stale one counts the entries as they are, where Find of a
		// keys-only or partial index checks the records it fetches.
		return
	}
	require.Equal(t, len(got), n, "Count of %s", fmtQuery(q))
	require.Equal(t, len(got) > 0, exists, "Exists of %s", fmtQuery(q))
	if q.Limit <= 0 {
		return
	}
	require.NoError(t, pageErr, "FindPage of %s", fmtQuery(q))
	require.Equal(t, want, pageStrings(page), "FindPage of %s", fmtQuery(q))
	// The cursors lead through every record of the unlimited query.
	want, _ = findAll(t, tbl, all)
	var pages []string
	for next := q; ; {
		require.True(t, len(page) > 0 || len(want) == 0, "an empty page of %s", fmtQuery(next))
		pages = append(pages, pageStrings(page)...)
		require.LessOrEqual(t, len(pages), len(want), "paging %s", fmtQuery(q))
		if cursor == "" {
			break
		}
		next.Cursor = cursor
		page, cursor, err = tbl.FindPage(ctx, next)
		require.NoError(t, err, "FindPage of %s", fmtQuery(next))
	}
	require.Equal(t, want, pages, "paging %s", fmtQuery(q))
}

func pageStrings(page []fuzzRec) []string {
	var out []string
	for _, rec := range page {
		out = append(out, recString(rec))
	}
	return out
}

// checkRecords checks that the records Find returns for q are those of the
// table: whole, or in the fields their index entries hold when q is
// covered or names Fields. A stale read, with changes pending, may return
// records as they were: it is not checked.
func checkRecords(t *testing.T, ft fuzzTable, q it.Query) {
	if q.Stale && pending(t, ft.tbl) > 0 {
		return
	}
	var held []string
	if q.Covered || len(q.Fields) > 0 {
		for _, ix := range fuzzIndexes {
			if ix.name == q.Index {
				held = ix.held
			}
		}
	}
	for rec, err := range ft.tbl.Find(context.Background(), q) {
		if err != nil {
			return
		}
		want, ok := ft.byID[rec.ID]
		require.True(t, ok, "Find of %s returns a record with ID %d, which the table has not", fmtQuery(q), rec.ID)
		if held == nil {
			require.Equal(t, recString(want), recString(rec), "Find of %s", fmtQuery(q))
			continue
		}
		for _, name := range held {
			require.Equal(t, fieldString(want, name), fieldString(rec, name), "field %s of record %d, Find of %s", name, rec.ID, fmtQuery(q))
		}
	}
}

// fieldString shows field name of r, or that it is behind a nil pointer.
func fieldString(r fuzzRec, name string) string {
	f, err := reflect.ValueOf(r).FieldByIndexErr(fieldIndex(name))
	switch {
	case err != nil:
		return "unreachable"
	case f.Kind() == reflect.Pointer && f.IsNil():
		return "nil"
	case f.Kind() == reflect.Pointer:
		f = f.Elem()
	}
	if w, ok := f.Interface().(time.Time); ok {
		return w.UTC().Format(time.RFC3339Nano)
	}
	if f.CanFloat() && f.Float() == 0 {
		return "0" // a key holds -0 as +0, which Go holds equal
	}
	return fmt.Sprintf("%q", fmt.Sprint(f.Interface()))
}

// TestQueryValuesOfEveryShape: a pointer to a float for a float32 field is
// its value, rounded (it panicked, calling Float on the pointer), a nil one
// is nil, and a slice is refused: a query value is one key component.
func TestQueryValuesOfEveryShape(t *testing.T) {
	type rec struct {
		ID string
		F  float32
		S  string
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "f", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[rec]{{Name: "f", Fields: []string{"F"}}, {Name: "s", Fields: []string{"S"}}}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec{ID: "a", F: 0.1, S: "x"})
	require.NoError(t, err)
	x, x32 := 0.1, float32(0.1)
	for _, c := range []struct {
		index string
		value any
		n     int   // records found
		err   error // or the error
	}{
		{"f", &x, 1, nil},
		{"f", &x32, 1, nil},
		{"f", (*float64)(nil), 0, nil},
		{"f", []float64{0.1}, 0, it.ErrInvalidQuery},
		{"f", &[]float32{0.1}, 0, it.ErrInvalidQuery},
		{"s", []string{"x"}, 0, it.ErrInvalidQuery},
		{"s", []any{"x"}, 0, it.ErrInvalidQuery},
	} {
		var n int
		require.NotPanics(t, func() { n, err = tbl.Count(ctx, it.Query{Index: c.index, Eq: it.Tuple{c.value}}) }, "%T", c.value)
		require.ErrorIs(t, err, c.err, "%T", c.value)
		require.Equal(t, c.n, n, "%T", c.value)
	}
}

// TestReadOverlappingADisablingFails: a DisableIndex that lands in the
// middle of a read deletes entries the read has not reached; the read ends
// with ErrIndexNotReadable instead of returning part of the index as all
// of it (it returned the entries it had read, and no error).
func TestReadOverlappingADisablingFails(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(*it.Table[person], it.Query) error{
		"Find": func(tbl *it.Table[person], q it.Query) error {
			for _, err := range tbl.Find(ctx, q) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"FindPage": func(tbl *it.Table[person], q it.Query) error {
			q.Limit = 100
			_, _, err := tbl.FindPage(ctx, q)
			return err
		},
		"Count": func(tbl *it.Table[person], q it.Query) error { _, err := tbl.Count(ctx, q); return err },
	}
	for name, read := range reads {
		for _, index := range []string{"town_name", "town", "name"} {
			s := &hookStore{MemoryStore: it.NewMemoryStore()}
			tbl := openPeople(t, s)
			for i := range 300 {
				_, err := tbl.Insert(ctx, person{ID: i, Town: "R", Name: fmt.Sprint("n", i)})
				require.NoError(t, err)
			}
			disabled := false
			s.onScan = func(e kv.Entry) {
				if k, ok := kv.ParseKey(e.Key); !disabled && ok && k.Space == kv.SpaceIndex && k.Index != nil {
					disabled = true
					require.NoError(t, tbl.DisableIndex(ctx, index))
				}
			}
			err := read(tbl, it.Query{Index: index})
			require.True(t, disabled)
			require.ErrorIs(t, err, it.ErrIndexNotReadable, "%s of %s", name, index)
		}
	}
}

// TestFloatKeysCompareAsGoDoes: a record with Score -0 was missed by
// Eq{0.0} and Where{Score: 0.0}, found by Score < 0 and not by Score >= 0:
// a key held -0 apart from +0. Keys now hold -0 as +0, which Go holds
// equal; NaN stays one key, above +Inf.
func TestFloatKeysCompareAsGoDoes(t *testing.T) {
	ctx := context.Background()
	type rec struct {
		ID    int
		Score float64
	}
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "f", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[rec]{{Name: "score", Fields: []string{"Score"}}}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec{ID: 1, Score: math.Copysign(0, -1)})
	require.NoError(t, err)
	count := func(q it.Query) int {
		n, err := tbl.Count(ctx, q)
		require.NoError(t, err)
		return n
	}
	negZero := math.Copysign(0, -1)
	assert.Equal(t, negZero == 0, count(it.Query{Index: "score", Eq: it.Tuple{0.0}}) == 1, "Score == 0")
	assert.Equal(t, negZero == 0, count(it.Query{Where: map[string]any{"Score": 0.0}}) == 1, "Where Score 0")
	assert.Equal(t, negZero >= 0, count(it.Query{Index: "score", Lower: it.Inclusive(0.0)}) == 1, "Score >= 0")
	assert.Equal(t, negZero < 0, count(it.Query{Index: "score", Upper: it.Exclusive(0.0)}) == 1, "Score < 0")

	// NaN is one key, above +Inf, as documented: above any lower bound.
	_, err = tbl.Insert(ctx, rec{ID: 2, Score: math.NaN()})
	require.NoError(t, err)
	assert.Equal(t, 1, count(it.Query{Index: "score", Lower: it.Exclusive(math.Inf(1))}), "NaN > +Inf")
	assert.Equal(t, 1, count(it.Query{Index: "score", Eq: it.Tuple{math.NaN()}}), "NaN == NaN")
}

// TestKeyFuncTuplesOfTwoLengthsAnswerTheWrongQuery: an entry of a
// non-unique index is its key's elements, then the primary key's, with
// nothing between them. A Key func that returns tuples of two lengths
// makes the entry of key ("a") for record 5 the same bytes as an entry of
// key ("a", 5) with no primary key after it, inside the range of
// Eq{"a", 5}: the query returned record 5, whose only key is ("a"), from
// every strategy, and a bound on the second component returned it too.
// Reads of a Key-func index now skip entries with fewer key components
// than the query fixes.
func TestKeyFuncTuplesOfTwoLengthsAnswerTheWrongQuery(t *testing.T) {
	ctx := context.Background()
	type rec struct {
		ID    int
		A     string
		B     int
		Short bool
	}
	key := func(r rec) []it.Tuple {
		if r.Short {
			return []it.Tuple{{r.A}}
		}
		return []it.Tuple{{r.A, r.B}}
	}
	for _, st := range []it.Strategy{it.KeysOnly, it.FullCopy} {
		t.Run(st.String(), func(t *testing.T) {
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "k", PrimaryKey: []string{"ID"},
				Indexes: []it.Index[rec]{{Name: "ab", Key: key, Strategy: st}}})
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, rec{ID: 1, A: "a", B: 5})
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, rec{ID: 5, A: "a", Short: true}) // key ("a") only
			require.NoError(t, err)
			for _, q := range []it.Query{
				{Index: "ab", Eq: it.Tuple{"a", 5}},
				{Index: "ab", Eq: it.Tuple{"a"}, Lower: it.Inclusive(5)},
				{Index: "ab", Eq: it.Tuple{"a"}, Lower: it.Inclusive(3), Upper: it.Inclusive(7)},
			} {
				var ids []int
				for r, err := range tbl.Find(ctx, q) {
					require.NoError(t, err)
					ids = append(ids, r.ID)
				}
				assert.Equal(t, []int{1}, ids, "Eq %v, Lower %v, Upper %v: record 5 has no key (\"a\", x)", q.Eq, q.Lower, q.Upper)
				n, err := tbl.Count(ctx, q)
				require.NoError(t, err)
				assert.Equal(t, 1, n, "Count of Eq %v, Lower %v", q.Eq, q.Lower)
			}
		})
	}
}

// TestKeyFuncQueryPastTheKeyMatchesThePrimaryKey: a Fields index
// refuses a query that gives more components than its key has; a Key func
// index cannot know its key's length, and a query past the key matches
// the primary key's bytes: with every key ("a"), Eq{"a", 5} returned
// record 5.
func TestKeyFuncQueryPastTheKeyMatchesThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	tbl := openAges(t, it.NewMemoryStore(), it.Index[ageRec]{Name: "note", Key: func(r ageRec) []it.Tuple { return []it.Tuple{{r.Note}} }})
	for i := range 10 {
		_, err := tbl.Insert(ctx, ageRec{ID: i, Note: "a"})
		require.NoError(t, err)
	}
	n, err := tbl.Count(ctx, it.Query{Index: "note", Eq: it.Tuple{"a", 5}})
	if err != nil {
		assert.ErrorIs(t, err, it.ErrInvalidQuery) // refused: fine
		return
	}
	assert.Zero(t, n, "no key is (\"a\", 5); the query matched record 5 by its primary key")
}

func TestQueries(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, it.NewMemoryStore())
	for i, n := range []string{"Adams", "Baker", "Clark", "Davis", "Evans"} {
		for j, town := range []string{"Redmond", "Seattle"} {
			_, err := tbl.Insert(ctx, person{ID: i*10 + j, Name: n, Town: town})
			require.NoError(t, err)
		}
	}
	// "Evans\x00" encodes with the encoding of "Evans" as a byte prefix.
	_, err := tbl.Insert(ctx, person{ID: 50, Name: "Evans\x00", Town: "Kirkland"})
	require.NoError(t, err)
	ids := func(q it.Query) []int {
		var out []int
		for _, p := range collect(t, tbl, q) {
			out = append(out, p.ID)
		}
		return out
	}
	cases := []struct {
		name string
		q    it.Query
		want []int
	}{
		{"exact on the full key", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond", "Clark"}}, []int{20}},
		{"prefix", it.Query{Index: "town_name", Eq: it.Tuple{"Seattle"}}, []int{1, 11, 21, 31, 41}},
		{"range inclusive", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond"}, Lower: it.Inclusive("Baker"), Upper: it.Inclusive("Davis")}, []int{10, 20, 30}},
		{"range exclusive", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond"}, Lower: it.Exclusive("Baker"), Upper: it.Exclusive("Davis")}, []int{20}},
		{"range from a prefix of a value", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond"}, Lower: it.Inclusive("C")}, []int{20, 30, 40}},
		{"descending with limit", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond"}, Reverse: true, Limit: 2}, []int{40, 30}},
		{"range on the first component", it.Query{Index: "name", Lower: it.Inclusive("D")}, []int{30, 31, 40, 41, 50}},
		{"primary key order", it.Query{Limit: 3}, []int{0, 1, 10}},
		{"primary key range", it.Query{Lower: it.Inclusive(30), Upper: it.Exclusive(41)}, []int{30, 31, 40}},
		{"nothing matches", it.Query{Index: "town_name", Eq: it.Tuple{"Tacoma"}}, nil},
		{"exact excludes longer values", it.Query{Index: "name", Eq: it.Tuple{"Evans"}}, []int{40, 41}},
		{"inclusive upper bound excludes longer values", it.Query{Index: "name", Upper: it.Inclusive("Evans")}, []int{0, 1, 10, 11, 20, 21, 30, 31, 40, 41}},
		{"exclusive lower bound keeps longer values", it.Query{Index: "name", Lower: it.Exclusive("Evans")}, []int{50}},
		{"filtered scan", it.Query{Where: map[string]any{"Town": "Seattle"}}, []int{1, 11, 21, 31, 41}},
		{"filtered scan on two fields", it.Query{Where: map[string]any{"Town": "Redmond", "Name": "Clark"}}, []int{20}},
		{"filtered scan with limit", it.Query{Where: map[string]any{"Town": "Seattle"}, Limit: 2}, []int{1, 11}},
		{"filtered scan matching nothing", it.Query{Where: map[string]any{"Town": "Tacoma"}}, nil},
		{"filtered range of a partial index", it.Query{Index: "name", Lower: it.Inclusive("D"), Where: map[string]any{"Town": "Seattle"}}, []int{31, 41}},
		{"filtered keys-only read with limit", it.Query{Index: "town", Eq: it.Tuple{"Redmond"}, Where: map[string]any{"Name": "Evans"}, Limit: 1}, []int{40}},
		{"filtered full-copy read, descending", it.Query{Index: "town_name", Eq: it.Tuple{"Redmond"}, Reverse: true, Where: map[string]any{"ID": 10}}, []int{10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, ids(c.q)) })
	}

	ok, err := tbl.Exists(ctx, it.Query{Index: "town", Eq: it.Tuple{"Seattle"}})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = tbl.Exists(ctx, it.Query{Index: "town", Eq: it.Tuple{"Tacoma"}})
	require.NoError(t, err)
	assert.False(t, ok)
	// Fields the entries hold: read from the index alone, other fields zero.
	assert.Equal(t, []person{{ID: 30, Name: "Davis"}, {ID: 31, Name: "Davis"}},
		collect(t, tbl, it.Query{Index: "name", Eq: it.Tuple{"Davis"}, Fields: []string{"Name"}}))
	n, err := tbl.Count(ctx, it.Query{Where: map[string]any{"Town": "Seattle"}})
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	n, err = tbl.Count(ctx, it.Query{Index: "town", Eq: it.Tuple{"Redmond"}, Where: map[string]any{"Name": "Evans"}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ok, err = tbl.Exists(ctx, it.Query{Where: map[string]any{"Town": "Tacoma"}})
	require.NoError(t, err)
	assert.False(t, ok)

	bad := []struct {
		name string
		q    it.Query
		err  error
	}{
		{"unknown index", it.Query{Index: "nope"}, it.ErrInvalidQuery},
		{"too many components", it.Query{Index: "town", Eq: it.Tuple{"a", "b"}}, it.ErrInvalidQuery},
		{"bound past the key", it.Query{Index: "town", Eq: it.Tuple{"a"}, Lower: it.Inclusive("b")}, it.ErrInvalidQuery},
		{"wrong type", it.Query{Index: "town", Eq: it.Tuple{3}}, it.ErrInvalidQuery},
		{"wrong bound type", it.Query{Index: "town", Upper: it.Exclusive(1.5)}, it.ErrInvalidQuery},
		{"unsupported type", it.Query{Index: "score_mod", Eq: it.Tuple{struct{}{}}}, it.ErrUnsupportedType},
		{"negative limit", it.Query{Limit: -1}, it.ErrInvalidQuery},
		{"garbage cursor", it.Query{Index: "town", Cursor: "!!"}, it.ErrInvalidCursor},
		{"Where on an unknown field", it.Query{Where: map[string]any{"Nope": 1}}, it.ErrInvalidQuery},
		{"Where on a slice field", it.Query{Where: map[string]any{"Tags": "a"}}, it.ErrInvalidQuery},
		{"Where with the wrong type", it.Query{Where: map[string]any{"Town": 3}}, it.ErrInvalidQuery},
		{"Where on a covered read", it.Query{Index: "town", Covered: true, Where: map[string]any{"Town": "Seattle"}}, it.ErrInvalidQuery},
		{"Fields names an unknown field", it.Query{Index: "town", Fields: []string{"Nope"}}, it.ErrInvalidQuery},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, findError(t, tbl, c.q), c.err)
			_, err := tbl.Count(ctx, c.q)
			require.ErrorIs(t, err, c.err)
		})
	}
}

func TestFindPageResumesWithCursors(t *testing.T) {
	ctx := context.Background()
	tbl := openPeople(t, it.NewMemoryStore())
	for i := range 23 {
		_, err := tbl.Insert(ctx, person{ID: i, Name: fmt.Sprintf("N%02d", i%7), Town: []string{"R", "S"}[i%2], Tags: []string{"a", "b"}})
		require.NoError(t, err)
	}
	for _, q := range []it.Query{
		{Index: "town_name", Eq: it.Tuple{"R"}},
		{Index: "town", Eq: it.Tuple{"S"}, Reverse: true},
		{Index: "name", Lower: it.Inclusive("N02")},
		{Index: "tags", Covered: true},
		{Index: "tags"},
		{},
		{Where: map[string]any{"Town": "S"}},
		{Index: "name", Where: map[string]any{"Town": "R"}, Reverse: true},
	} {
		want := collect(t, tbl, q)
		for _, size := range []int{1, 4, 7, len(want), 100} {
			q := q
			q.Limit = size
			var got []person
			for {
				page, next, err := tbl.FindPage(ctx, q)
				require.NoError(t, err)
				require.NotEmpty(t, page, "no empty last page")
				got = append(got, page...)
				if next == "" {
					break
				}
				require.Len(t, page, size)
				q.Cursor = next
			}
			require.Equal(t, want, got, "query %+v, page size %d", q, size)
		}
	}

	q := it.Query{Index: "town_name", Eq: it.Tuple{"R"}, Limit: 2}
	_, cursor, err := tbl.FindPage(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, cursor)
	tampered := []byte(cursor)
	tampered[len(tampered)/2] ^= 1
	foreign := q
	foreign.Eq = it.Tuple{"S"}
	for name, c := range map[string]struct {
		q      it.Query
		cursor string
	}{
		"tampered":      {q, string(tampered)},
		"other query":   {foreign, cursor},
		"other index":   {it.Query{Index: "town", Eq: it.Tuple{"R"}, Limit: 2}, cursor},
		"other order":   {it.Query{Index: "town_name", Eq: it.Tuple{"R"}, Limit: 2, Reverse: true}, cursor},
		"other filter":  {it.Query{Index: "town_name", Eq: it.Tuple{"R"}, Limit: 2, Where: map[string]any{"Name": "N01"}}, cursor},
		"truncated":     {q, cursor[:10]},
		"not base64url": {q, "?" + cursor},
	} {
		t.Run(name, func(t *testing.T) {
			c.q.Cursor = c.cursor
			_, _, err := tbl.FindPage(ctx, c.q)
			require.ErrorIs(t, err, it.ErrInvalidCursor)
		})
	}
	_, _, err = tbl.FindPage(ctx, it.Query{Index: "town"})
	require.ErrorIs(t, err, it.ErrInvalidQuery)
}

// findError runs q and returns the error it must end with.
func findError(t testing.TB, tbl *it.Table[person], q it.Query) error {
	t.Helper()
	var errs []error
	for _, err := range tbl.Find(context.Background(), q) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "a failing query yields one error")
	require.Error(t, errs[0])
	return errs[0]
}

// TestFloat32Keys checks that a float64 query value finds a float32 field
// holding the same number, as the field's type rounds it.
func TestFloat32Keys(t *testing.T) {
	type reading struct {
		ID    int
		Value float32
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[reading]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[reading]{{Name: "value", Fields: []string{"Value"}}}})
	require.NoError(t, err)
	for i, v := range []float32{0.1, 0.2, 0.3} {
		_, err := tbl.Insert(ctx, reading{ID: i, Value: v})
		require.NoError(t, err)
	}
	n, err := tbl.Count(ctx, it.Query{Index: "value", Eq: it.Tuple{0.1}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = tbl.Count(ctx, it.Query{Index: "value", Lower: it.Inclusive(0.2), Upper: it.Inclusive(0.3)})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// TestByteAndFloatKeyQueries queries []byte keys (not comparable as
// interface values) and float32 elements of a multi-valued field.
func TestByteAndFloatKeyQueries(t *testing.T) {
	type rec struct {
		ID     int
		Bin    []byte
		Levels []*float32
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[rec]{
			{Name: "bin", Fields: []string{"Bin"}},
			{Name: "levels", Fields: []string{"Levels"}, MultiValued: true},
		}})
	require.NoError(t, err)
	tenth, half := float32(0.1), float32(0.5)
	_, err = tbl.Insert(ctx, rec{ID: 1, Bin: []byte("x\x00y"), Levels: []*float32{&tenth, nil, &half}})
	require.NoError(t, err)
	for _, q := range []it.Query{
		{Index: "bin", Eq: it.Tuple{[]byte("x\x00y")}},
		{Index: "bin", Lower: it.Inclusive([]byte("x")), Upper: it.Exclusive([]byte("y"))},
		{Index: "levels", Eq: it.Tuple{0.1}},
		{Index: "levels", Eq: it.Tuple{nil}},
		{Index: "levels", Lower: it.Exclusive(0.1), Upper: it.Inclusive(0.5)},
	} {
		n, err := tbl.Count(ctx, q)
		require.NoError(t, err, "%+v", q)
		assert.Equal(t, 1, n, "%+v", q)
	}
}

// TestStaleReadsTakeTheEntriesAsTheyAre: with a change pending, an exact
// full-copy read leaves out the entry its record no longer has, scanning
// the queue and reading the record; a Stale one returns the entry as it
// is, the record as it was, in one scan of the index. A keys-only read
// fetches its records anyway and stays exact when Stale.
func TestStaleReadsTakeTheEntriesAsTheyAre(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(it.NewMemoryStore())
	tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: countLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: eventualIndexes(personIndexes())})
	require.NoError(t, err)
	was := person{ID: 1, Town: "R", Name: "A"}
	_, err = tbl.Insert(ctx, was)
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	_, err = tbl.Update(ctx, person{ID: 1, Town: "S", Name: "A"}) // pending
	require.NoError(t, err)

	read := func(q it.Query) ([]person, countingstore.Counts) {
		before := s.Counts()
		got := collect(t, tbl, q)
		return got, s.Counts().Sub(before)
	}
	exact := it.Query{Index: "town_name", Eq: it.Tuple{"R"}}
	got, used := read(exact)
	require.Empty(t, got)
	require.Equal(t, int64(2), used.Scans, "the queue and the index")
	require.Positive(t, used.Gets+used.GetManys, "the pending record")

	stale := exact
	stale.Stale = true
	got, used = read(stale)
	require.Equal(t, []person{was}, got, "the entry as it is")
	require.Equal(t, countingstore.Counts{Scans: 1, ScanEntries: 1}, used, "one scan of the index")

	got, _ = read(it.Query{Index: "town", Eq: it.Tuple{"R"}, Stale: true})
	require.Empty(t, got, "a keys-only read checks the records it fetches")

	storetest.Drain(t, tbl)
	got, _ = read(it.Query{Index: "town_name", Eq: it.Tuple{"S"}, Stale: true})
	require.Equal(t, []person{{ID: 1, Town: "S", Name: "A"}}, got, "caught up")
}

// pending returns how many changes tbl's queue holds.
func pending[T any](t *testing.T, tbl *it.Table[T]) int {
	lag, err := tbl.Lag(context.Background())
	require.NoError(t, err)
	return lag.Pending
}

// TestNumbersConvertWhenExact: a query value or bound of another numeric
// kind than its field's is taken when converting it keeps it exact, in Eq,
// bounds, Where and primary keys, and refused with ErrInvalidQuery when it
// would not.
func TestNumbersConvertWhenExact(t *testing.T) {
	type rec struct {
		ID    int32
		Price float64
		Small float32
		Qty   uint8
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "n", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[rec]{
			{Name: "price", Fields: []string{"Price"}},
			{Name: "small", Fields: []string{"Small"}},
			{Name: "qty", Fields: []string{"Qty"}},
		}})
	require.NoError(t, err)
	for i := range int32(5) {
		_, err := tbl.Insert(ctx, rec{ID: i, Price: float64(i) * 50, Small: float32(i) * 0.5, Qty: uint8(i)})
		require.NoError(t, err)
	}
	big, two := int64(1)<<24+1, 2
	for _, c := range []struct {
		name string
		q    it.Query
		n    int // records found, or
		err  error
	}{
		{"int bound on a float64 field", it.Query{Index: "price", Lower: it.Inclusive(100)}, 3, nil},
		{"uint Eq on a float64 field", it.Query{Index: "price", Eq: it.Tuple{uint(150)}}, 1, nil},
		{"int pointer on a float32 field", it.Query{Index: "small", Eq: it.Tuple{&two}}, 1, nil},
		{"whole float on a uint8 field", it.Query{Index: "qty", Lower: it.Exclusive(1.0), Upper: it.Inclusive(3.0)}, 2, nil},
		{"whole float in Where", it.Query{Where: map[string]any{"Qty": 4.0}}, 1, nil},
		{"whole float on the primary key", it.Query{Eq: it.Tuple{float32(2)}}, 1, nil},
		{"fraction on an integer field", it.Query{Index: "qty", Lower: it.Inclusive(2.5)}, 0, it.ErrInvalidQuery},
		{"infinity on an integer field", it.Query{Index: "qty", Upper: it.Inclusive(math.Inf(1))}, 0, it.ErrInvalidQuery},
		{"NaN on an integer field", it.Query{Index: "qty", Eq: it.Tuple{math.NaN()}}, 0, it.ErrInvalidQuery},
		{"int a float32 cannot hold", it.Query{Index: "small", Eq: it.Tuple{big}}, 0, it.ErrInvalidQuery},
		{"string on a float field", it.Query{Index: "price", Eq: it.Tuple{"100"}}, 0, it.ErrInvalidQuery},
	} {
		n, err := tbl.Count(ctx, c.q)
		require.ErrorIs(t, err, c.err, c.name)
		require.Equal(t, c.n, n, c.name)
	}
	r, err := tbl.Get(ctx, 3.0)
	require.NoError(t, err)
	require.EqualValues(t, 3, r.ID)
}

// TestEqualKeysInPrimaryKeyOrder: records with equal index keys come in
// primary key order, and in reverse with Reverse, for every strategy and
// on a ShardedStore too, whose shards each hold some of them.
func TestEqualKeysInPrimaryKeyOrder(t *testing.T) {
	ctx := context.Background()
	for _, s := range []struct {
		name  string
		store kv.Store
	}{{"memory", it.NewMemoryStore()}, {"sharded", newShardedMemory(t, 3)}} {
		tbl, err := it.Open(ctx, s.store, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"},
			Indexes: []it.Index[person]{
				{Name: "keys", Fields: []string{"Town"}},
				{Name: "full", Fields: []string{"Town"}, Strategy: it.FullCopy},
				{Name: "partial", Fields: []string{"Town"}, Strategy: it.Partial, Projection: []string{"Name"}},
			}})
		require.NoError(t, err)
		var want []int
		for _, id := range rand.Perm(40) {
			_, err := tbl.Insert(ctx, person{ID: id, Town: towns[id%2]})
			require.NoError(t, err)
		}
		storetest.Drain(t, tbl) // a ShardedStore's entries follow through the queue
		for id := 0; id < 40; id += 2 {
			want = append(want, id)
		}
		for _, index := range []string{"keys", "full", "partial"} {
			q := it.Query{Index: index, Eq: it.Tuple{towns[0]}}
			require.Equal(t, want, idsInOrder(collect(t, tbl, q)), "%s %s", s.name, index)
			q.Reverse = true
			backward := slices.Clone(want)
			slices.Reverse(backward)
			require.Equal(t, backward, idsInOrder(collect(t, tbl, q)), "%s %s reversed", s.name, index)
		}
	}
}

func idsInOrder(people []person) []int {
	out := make([]int, 0, len(people))
	for _, p := range people {
		out = append(out, p.ID)
	}
	return out
}

func TestFloat32BoundsNeverBecomeInfinite(t *testing.T) {
	type rec struct {
		ID    int
		Small float32
	}
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "f", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[rec]{{Name: "small", Fields: []string{"Small"}}}})
	require.NoError(t, err)
	for i, v := range []float32{float32(math.Inf(-1)), 1, float32(math.Inf(1))} {
		_, err := tbl.Insert(ctx, rec{ID: i, Small: v})
		require.NoError(t, err)
	}
	for _, c := range []struct {
		name string
		q    it.Query
		max  int // records that may be found: those the value selects exactly
	}{
		{"Eq 1e39", it.Query{Index: "small", Eq: it.Tuple{1e39}}, 0},
		{"Upper Inclusive 1e39", it.Query{Index: "small", Upper: it.Inclusive(1e39)}, 2},
		{"Lower Inclusive -1e300", it.Query{Index: "small", Lower: it.Inclusive(-1e300)}, 2},
	} {
		n, err := tbl.Count(ctx, c.q)
		if err != nil {
			require.ErrorIs(t, err, it.ErrInvalidQuery, c.name)
			continue
		}
		require.LessOrEqual(t, n, c.max, "%s: a finite bound selected an infinite value", c.name)
	}
}

// TestQueryNumberErrorsNameTheValue: a query number that the field's type
// cannot hold exactly is named in the error by its digits, and by its type
// when that is a named one.
func TestQueryNumberErrorsNameTheValue(t *testing.T) {
	ctx := context.Background()
	type rec struct {
		ID int
		F  float32
	}
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[rec]{{Name: "f", Fields: []string{"F"}}}})
	require.NoError(t, err)
	for _, tc := range []struct {
		value any
		want  string
	}{
		{16777217, "16777217 is not exactly a float32"},
		{time.Duration(16777217), "time.Duration 16777217 is not exactly a float32"},
		{1e300, "1e+300 is out of the range of float32"},
	} {
		n := 0
		for _, err := range tbl.Find(ctx, it.Query{Index: "f", Eq: it.Tuple{tc.value}}) {
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			n++
		}
		assert.Equal(t, 1, n, "%v", tc.value)
	}
}
