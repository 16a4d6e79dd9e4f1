package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/faultstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// faultStep is one step of the scripted run: a write, or (p.ID < 0) a
// pass of the maintainer.
type faultStep struct {
	del bool
	p   person
}

// faultScript is a fixed run of upserts and deletes over a few records,
// every one of which succeeds when nothing fails, with maintainer passes
// among them.
func faultScript() []faultStep {
	r := rand.New(rand.NewPCG(7, 8))
	var steps []faultStep
	present := map[int]bool{}
	for i := range 36 {
		if i%5 == 4 {
			steps = append(steps, faultStep{p: person{ID: -1}})
			continue
		}
		id := r.IntN(8)
		if present[id] && r.IntN(3) == 0 {
			steps = append(steps, faultStep{del: true, p: person{ID: id}})
			present[id] = false
			continue
		}
		p := randomPerson(r, id, names)
		p.Email = "" // no unique violations, and nothing refused on a partitioned store
		if r.IntN(2) == 0 {
			p.Email = fmt.Sprint(id, "@e")
		}
		steps = append(steps, faultStep{p: p})
		present[id] = true
	}
	return steps
}

// faultRun runs the script until a step fails with a crash. It returns the
// acknowledged records and the write that was in flight at the crash (ID
// -1 if none).
func faultRun(t *testing.T, tbl *it.Table[person], steps []faultStep) (acked map[int]person, inflight faultStep, crashed bool) {
	ctx := context.Background()
	acked = map[int]person{}
	for _, st := range steps {
		var err error
		switch {
		case st.p.ID < 0:
			// A long lease, never renewed within the run, so that the
			// run makes the same store calls every time.
			_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{BatchSize: 3, LeaseTTL: time.Hour})
		case st.del:
			err = tbl.Delete(ctx, it.Tuple{st.p.ID})
		default:
			_, err = tbl.Upsert(ctx, st.p)
		}
		switch {
		case errors.Is(err, faultstore.ErrCrashed):
			return acked, st, true
		case errors.Is(err, faultstore.ErrInjected):
			continue // failed and not applied; the run goes on
		case st.del && errors.Is(err, it.ErrNotFound):
			continue // its record's write failed earlier
		case st.p.ID < 0 && errors.Is(err, it.ErrConflict):
			continue // a failed pass could not release its lease
		case err != nil:
			require.NoError(t, err)
		case st.p.ID < 0:
		case st.del:
			delete(acked, st.p.ID)
		default:
			acked[st.p.ID] = st.p
		}
	}
	return acked, faultStep{p: person{ID: -1}}, false
}

// TestFaultPoints crashes the scripted run at every store call it makes
// (with the crashing batch applied or not), and fails each call once in
// other runs. After a restart from what the store kept and the maintainer's
// catch-up, Verify finds no drift and every acknowledged write is there.
func TestFaultPoints(t *testing.T) {
	modes := []struct {
		name    string
		store   func() kv.Store
		indexes []it.Index[person]
	}{
		{"synchronous", func() kv.Store { return it.NewMemoryStore() }, personIndexes()},
		{"eventual", func() kv.Store { return it.NewMemoryStore() }, eventualIndexes(personIndexes())},
		{"fallback", func() kv.Store { return partitionedStore(it.NewMemoryStore()) }, withoutUnique(personIndexes())},
	}
	steps := faultScript()
	ops := []faultstore.Op{faultstore.Get, faultstore.GetMany, faultstore.Scan, faultstore.Apply}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			open := func(s kv.Store) *it.Table[person] {
				tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: countLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: mode.indexes})
				require.NoError(t, err)
				return tbl
			}
			// A run without faults counts the calls.
			fs := faultstore.New(mode.store())
			tbl := open(fs)
			start := map[faultstore.Op]int{}
			for _, op := range ops {
				start[op] = fs.Calls(op)
			}
			_, _, crashed := faultRun(t, tbl, steps)
			require.False(t, crashed)
			points := 0
			for _, op := range ops {
				calls := fs.Calls(op) - start[op]
				for n := 1; n <= calls; n++ {
					for _, fault := range []string{"crash", "crash-applied", "fail"} {
						if fault == "crash-applied" && op != faultstore.Apply {
							continue
						}
						points++
						name := fmt.Sprintf("%v call %d, %s", op, n, fault)
						inner := mode.store()
						fs := faultstore.New(inner)
						tbl := open(fs)
						switch fault {
						case "fail":
							fs.FailAt(op, n)
						default:
							fs.CrashAt(op, n, fault == "crash-applied")
						}
						acked, inflight, crashed := faultRun(t, tbl, steps)
						require.Equal(t, fault != "fail", crashed, name)
						// On a partitioned store, no change record is left
						// without a hint, but a marker beside hinted changes.
						if inner.Atomicity().Partition != nil {
							require.Empty(t, unhinted(t, inner), "%s: change records without a hint", name)
						}

						// Restart over what the store kept, once the leases
						// of the dead maintainers have expired.
						expireLeases(t, inner)
						tbl = open(inner)
						storetest.Drain(t, tbl)
						require.Empty(t, keysIn(t, inner, kv.SpaceQueue), "%s: the whole queue drains, not only what Lag sees", name)
						rep, err := tbl.Verify(ctx, it.VerifyOptions{})
						require.NoError(t, err, name)
						require.Zero(t, rep.Total(), "%s: %v", name, rep.Samples)
						got := map[int]person{}
						for p, err := range tbl.Find(ctx, it.Query{}) {
							require.NoError(t, err)
							got[p.ID] = p
						}
						// The write in flight may or may not have happened.
						if id := inflight.p.ID; id >= 0 && !equalPerson(got[id], acked[id]) {
							if inflight.del {
								delete(acked, id)
							} else {
								acked[id] = inflight.p
							}
						}
						require.Equal(t, len(acked), len(got), name)
						for id, p := range acked {
							require.True(t, equalPerson(p, got[id]), "%s: record %d is %+v, acknowledged %+v", name, id, got[id], p)
						}
					}
				}
			}
			t.Logf("%d fault points", points)
		})
	}
}

func equalPerson(a, b person) bool {
	return fmt.Sprintf("%+v", normalize([]person{a})) == fmt.Sprintf("%+v", normalize([]person{b}))
}

// withoutUnique returns the indexes that are not unique.
func withoutUnique(in []it.Index[person]) []it.Index[person] {
	var out []it.Index[person]
	for _, ix := range in {
		if !ix.Unique {
			out = append(out, ix)
		}
	}
	return out
}

// expireLeases deletes the maintainers' leases from s, as time would.
func expireLeases(t testing.TB, s kv.Store) {
	t.Helper()
	var b kv.Batch
	for e, err := range s.Scan(context.Background(), kv.ScanRange{}) {
		require.NoError(t, err)
		if k, ok := kv.ParseKey(e.Key); ok && k.Space == kv.SpaceLeases {
			b.Delete(e.Key)
		}
	}
	require.NoError(t, s.Apply(context.Background(), &b))
}
