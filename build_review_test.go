package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

// TestReviewLifecycleRacesSwappingWriters cycles a unique index and a
// full-copy one through DisableIndex, EnableIndex and Build (in chunks of
// a few records) while transactions swap the unique keys of two records
// and writes move records between towns: the unique keys are unique at
// every instant, so no Build may report a violation, and once the writers
// stop, a last Build leaves no drift.
func TestReviewLifecycleRacesSwappingWriters(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	const n = 40
	schema := it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[person]{
			{Name: "email", Fields: []string{"Email"}, Unique: true},
			{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy},
			{Name: "key", Key: func(p person) []it.Tuple { return []it.Tuple{{p.Town, p.Email}} }},
		}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	for id := range n {
		_, err := tbl.Insert(ctx, person{ID: id, Town: fmt.Sprint("t", id%3), Email: fmt.Sprint(id, "@e")})
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 22))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a, b := rng.IntN(n), rng.IntN(n)
				var err error
				if a == b { // a move to another town only
					err = it.Transact(ctx, s, func(tx *it.Tx) error {
						p := tbl.In(tx)
						one, err := p.Get(ctx, a)
						if err != nil {
							return err
						}
						one.Town = fmt.Sprint("t", rng.IntN(3))
						_, err = p.Update(ctx, one)
						return err
					})
				} else {
					err = it.Transact(ctx, s, func(tx *it.Tx) error {
						p := tbl.In(tx)
						one, err := p.Get(ctx, a)
						if err != nil {
							return err
						}
						two, err := p.Get(ctx, b)
						if err != nil {
							return err
						}
						one.Email, two.Email = two.Email, one.Email
						one.Town = fmt.Sprint("t", rng.IntN(3))
						if _, err := p.Update(ctx, one); err != nil {
							return err
						}
						_, err = p.Update(ctx, two)
						return err
					})
				}
				if err != nil && !errors.Is(err, it.ErrConflict) {
					errs <- err
					return
				}
			}
		}()
	}
	for round := range 30 {
		name := []string{"email", "town", "key"}[round%3]
		require.NoError(t, tbl.DisableIndex(ctx, name))
		require.NoError(t, tbl.EnableIndex(ctx, name))
		err := tbl.Build(ctx, it.BuildOptions{ChunkSize: 1 + round%4})
		require.NotErrorIs(t, err, it.ErrUniqueViolation, "round %d: the emails are unique at every instant", round)
		if err != nil {
			require.ErrorIs(t, err, it.ErrConflict, "round %d", round)
		}
	}
	close(stop)
	writers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	for name, st := range statusOf(t, tbl) {
		require.Equal(t, it.IndexReadable, st.State, name)
	}
	requireNoDrift(t, tbl)
	for id := range n {
		got := collect(t, tbl, it.Query{Index: "email", Eq: it.Tuple{fmt.Sprint(id, "@e")}})
		require.Len(t, got, 1, "email %d@e", id)
	}
}
