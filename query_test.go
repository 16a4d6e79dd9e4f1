package indextable_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

func TestQueriesTakeAnyLimit(t *testing.T) {
	ctx := context.Background()
	stores := map[string]it.Store{"memory": it.NewMemoryStore(), "one shard": newShardedMemory(t, 1), "three shards": newShardedMemory(t, 3)}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			// No unique index: a sharded store cannot check one.
			indexes := slices.DeleteFunc(personIndexes(), func(ix it.Index[person]) bool { return ix.Unique })
			tbl, err := it.Open(ctx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes})
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

// ShopLoc is embedded in shop through a pointer, which may be nil.
type ShopLoc struct {
	Town string
	Zip  int
}

type shop struct {
	ID   string
	Name string
	Note string
	*ShopLoc
}

// shopIndexes key on and project fields behind the embedded pointer, with
// every strategy.
func shopIndexes() []it.Index[shop] {
	return []it.Index[shop]{
		{Name: "town", Fields: []string{"Town"}, Strategy: it.KeysOnly},
		{Name: "town_full", Fields: []string{"Town"}, Strategy: it.FullCopy},
		{Name: "name", Fields: []string{"Name"}, Strategy: it.Partial, Projection: []string{"Town", "Zip"}},
		{Name: "zip", Fields: []string{"Zip"}, Unique: true, Sparse: true},
		{Name: "town_name", Fields: []string{"Town", "Name"}, Strategy: it.Partial, Projection: []string{"Zip"}},
	}
}

// coveredShop is what a covered read of index name returns of s.
func coveredShop(name string, s shop) shop {
	switch name {
	case "town":
		return shop{ID: s.ID, ShopLoc: &ShopLoc{Town: s.Town}}
	case "name":
		c := shop{ID: s.ID, Name: s.Name}
		if s.ShopLoc != nil {
			c.ShopLoc = &ShopLoc{Town: s.Town, Zip: s.Zip}
		}
		return c
	case "zip":
		return shop{ID: s.ID, ShopLoc: &ShopLoc{Zip: s.Zip}}
	case "town_name":
		return shop{ID: s.ID, Name: s.Name, ShopLoc: &ShopLoc{Town: s.Town, Zip: s.Zip}}
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
	a := shop{ID: "a", Name: "n", Note: "x", ShopLoc: &ShopLoc{Town: "R", Zip: 1}}
	b := shop{ID: "b", Name: "n", Note: "y"}                      // no location
	c := shop{ID: "c", Name: "m", Note: "z", ShopLoc: &ShopLoc{}} // a zero location
	cases := []struct {
		index string
		want  []shop // what a whole-record read returns
	}{
		{"", []shop{a, b, c}},
		{"town", []shop{c, a}},
		{"town_full", []shop{c, a}},
		{"name", []shop{c, a, b}},
		{"zip", []shop{a}},
		{"town_name", []shop{c, a}},
	}
	for _, codec := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[shop]{Name: "shops", PrimaryKey: []string{"ID"}, Indexes: shopIndexes(), Codec: codec})
		require.NoError(t, err)
		for _, s := range []shop{a, b, c} {
			_, err := tbl.Insert(ctx, s)
			require.NoError(t, err)
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%T/%s", codec, tc.index), func(t *testing.T) {
				find := func(q it.Query) []shop {
					q.Index = tc.index
					var out []shop
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
				var covered []shop
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
		for _, s := range []shop{a2, b2} {
			_, err := tbl.Update(ctx, s)
			require.NoError(t, err)
		}
		for _, index := range []string{"town", "town_full", "town_name"} {
			var got []shop
			for s, err := range tbl.Find(ctx, it.Query{Index: index}) {
				require.NoError(t, err)
				got = append(got, s)
			}
			assert.Equal(t, []shop{c, b2}, got, "%T: index %s", codec, index)
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
		tbl, err := it.Open(ctx, s, it.Schema[shop]{Name: "shops", PrimaryKey: []string{"Zip"}, Codec: codec,
			Indexes: []it.Index[shop]{{Name: "name", Fields: []string{"Name"}}}})
		require.NoError(t, err)
		a := shop{ID: "a", Name: "n", ShopLoc: &ShopLoc{Town: "R", Zip: 1}}
		_, err = tbl.Insert(ctx, a)
		require.NoError(t, err)
		before := storeDump(t, s)
		_, err = tbl.Insert(ctx, shop{ID: "b", Name: "n"})
		require.ErrorIs(t, err, it.ErrInvalidKey)
		require.Equal(t, before, storeDump(t, s))
		var got []shop
		for s, err := range tbl.Find(ctx, it.Query{Index: "name", Covered: true}) {
			require.NoError(t, err)
			got = append(got, s)
		}
		assert.Equal(t, []shop{{Name: "n", ShopLoc: &ShopLoc{Zip: 1}}}, got, "%T", codec)
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
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[hiddenShop]{Name: "shops", PrimaryKey: []string{"ID"}, Codec: hiddenCodec{},
		Indexes: []it.Index[hiddenShop]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	a, b := hiddenShop{ID: "a", shopLoc: &shopLoc{Town: "R"}}, hiddenShop{ID: "b"}
	for _, s := range []hiddenShop{a, b} {
		_, err := tbl.Insert(ctx, s)
		require.NoError(t, err)
	}
	for _, q := range []it.Query{{}, {Index: "town"}, {Index: "town", Covered: true}, {Index: "town", Fields: []string{"Town"}}} {
		var got []hiddenShop
		for s, err := range tbl.Find(ctx, q) {
			require.NoError(t, err)
			got = append(got, s)
		}
		want := []hiddenShop{a}
		if q.Index == "" {
			want = append(want, b)
		}
		assert.Equal(t, want, got, "query %+v", q)
	}
}
