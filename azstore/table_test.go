package azstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// movie is the pattern's example record: partitioned by genre, with a
// multi-valued actor index.
type movie struct {
	Genre, Title string
	Year         int
	Actors       []string
}

// TestTableOnAzure runs a table with indexes on Azurite against a map of
// what it should hold. The genre_year index lies in its records'
// partitions, the genre's: each write commits the record and its entries
// in one entity group transaction, and reads agree with the map at once.
// The other two lie in other partitions: writes queue them with a change
// record in the same transaction, and after a maintainer catches up every
// query agrees with the map and Verify finds nothing.
func TestTableOnAzure(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	model := map[string]movie{}
	tbl, err := indextable.Open(ctx, s, indextable.Schema[movie]{
		Name:       "movies",
		PrimaryKey: []string{"Genre", "Title"},
		Indexes: []indextable.Index[movie]{
			{Name: "actor", Fields: []string{"Actors"}, MultiValued: true, Strategy: indextable.Partial, Projection: []string{"Year"}},
			{Name: "year", Fields: []string{"Year"}, Strategy: indextable.FullCopy},
			{Name: "genre_year", Fields: []string{"Genre", "Year"}, Strategy: indextable.FullCopy},
		},
	})
	require.NoError(t, err)
	status, err := tbl.IndexStatus(ctx)
	require.NoError(t, err)
	for _, st := range status {
		want := indextable.InterPartition
		if st.Name == "genre_year" {
			want = indextable.IntraPartition
		}
		require.Equal(t, want, st.Placement, st.Name)
	}
	// inGenre reads a genre's movies of one year, through the index and
	// from the map.
	inGenre := func(genre string, year int) (got, want []string) {
		for m, err := range tbl.Find(ctx, indextable.Query{Index: "genre_year", Eq: indextable.Tuple{genre, year}}) {
			require.NoError(t, err)
			got = append(got, m.Title)
		}
		for _, m := range model {
			if m.Genre == genre && m.Year == year {
				want = append(want, m.Title)
			}
		}
		slices.Sort(want)
		return got, want
	}
	genres := []string{"Action", "Comedy", "Sci-Fi"}
	actors := []string{"Ava", "Ben", "Cara", "Dan", "Eve"}
	rng := rand.New(rand.NewPCG(5, 5))
	for step := range 120 {
		m := movie{Genre: genres[rng.IntN(3)], Title: fmt.Sprintf("T%02d", rng.IntN(20)), Year: 2000 + rng.IntN(5)}
		for _, a := range actors {
			if rng.IntN(3) == 0 {
				m.Actors = append(m.Actors, a)
			}
		}
		id := m.Genre + "/" + m.Title
		if _, ok := model[id]; ok && rng.IntN(4) == 0 {
			require.NoError(t, tbl.Delete(ctx, indextable.Tuple{m.Genre, m.Title}), "step %d", step)
			delete(model, id)
			continue
		}
		_, err := tbl.Upsert(ctx, m)
		require.NoError(t, err, "step %d", step)
		model[id] = m
		got, want := inGenre(m.Genre, m.Year)
		require.Equal(t, want, got, "step %d: %s movies of %d, before any maintainer", step, m.Genre, m.Year)
		if step%40 == 39 {
			_, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
			require.NoError(t, err)
		}
	}
	storetest.Drain(t, tbl)

	byActor := map[string][]string{}
	for id, m := range model {
		for _, a := range m.Actors {
			byActor[a] = append(byActor[a], id)
		}
	}
	for _, a := range actors {
		var got []string
		for m, err := range tbl.Find(ctx, indextable.Query{Index: "actor", Eq: indextable.Tuple{a}}) {
			require.NoError(t, err)
			got = append(got, m.Genre+"/"+m.Title)
		}
		want := byActor[a]
		slices.Sort(want)
		assert.Equal(t, want, got, "actor %s", a)
	}
	n, err := tbl.Count(ctx, indextable.Query{Index: "year"})
	require.NoError(t, err)
	assert.Equal(t, len(model), n)
	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, rep.Total(), "%+v", rep)
	assert.EqualValues(t, len(model), rep.Records)
}

// TestBuildOnAzure adds an intra-partition and an inter-partition index to
// a table that holds movies, and builds them: the first with each record's
// transaction, the second through the queue, which Build applies. Then
// Repair puts back an entry of each that went missing.
func TestBuildOnAzure(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	// A short schema lease: Build waits four of them before it builds
	// indexes added to a table that already had a schema.
	schema := indextable.Schema[movie]{Name: "movies", PrimaryKey: []string{"Genre", "Title"}, SchemaLease: 200 * time.Millisecond}
	plain, err := indextable.Open(ctx, s, schema)
	require.NoError(t, err)
	var movies []movie
	for i := range 30 {
		m := movie{Genre: []string{"Action", "Comedy", "Sci-Fi"}[i%3], Title: fmt.Sprintf("T%02d", i), Year: 2000 + i%4, Actors: []string{"Ava", "Ben"}[:1+i%2]}
		_, err := plain.Insert(ctx, m)
		require.NoError(t, err)
		movies = append(movies, m)
	}
	schema.Indexes = []indextable.Index[movie]{
		{Name: "genre_year", Fields: []string{"Genre", "Year"}},
		{Name: "actor", Fields: []string{"Actors"}, MultiValued: true},
	}
	tbl, err := indextable.Open(ctx, s, schema)
	require.NoError(t, err)
	require.NoError(t, tbl.Build(ctx, indextable.BuildOptions{ChunkSize: 8}))
	count := func(index string, eq ...any) int {
		n, err := tbl.Count(ctx, indextable.Query{Index: index, Eq: eq})
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 30, count("actor", "Ava"))
	assert.Equal(t, 15, count("actor", "Ben"))
	assert.Equal(t, 3, count("genre_year", "Sci-Fi", 2001), "T05, T17, T29")
	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, rep.Total(), "%+v", rep)
	assert.EqualValues(t, 30+45, rep.Entries)

	// Delete an entry of each index behind the table's back.
	for _, index := range []indextable.Tuple{{"movies", int64(5), "genre_year", int64(1)}, {"movies", int64(1), "actor", int64(1)}} {
		prefix, err := kv.EncodeTuple(index...)
		require.NoError(t, err)
		for e, err := range s.Scan(ctx, kv.ScanRange{Start: prefix, End: append(prefix, 0xff), Limit: 1}) {
			require.NoError(t, err)
			var b kv.Batch
			b.Delete(e.Key)
			require.NoError(t, s.Apply(ctx, &b))
			break
		}
	}
	rep, err = tbl.Repair(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[indextable.DriftKind]int{indextable.DriftMissing: 2}, rep.Drift)
	rep, err = tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, rep.Total(), "%+v", rep)
}
