package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/stretchr/testify/require"
)

// faultSchema is the customers table of TestMemberFaults: a synchronous
// FullCopy (Town, LastName) index and an Eventual KeysOnly LastName one,
// and at revision 2 a unique Email index, built while the members fail.
func faultSchema(revision int64) indextable.Schema[fixture.Customer] {
	s := fixture.Schema(indextable.FullCopy, nil, &indextable.BinaryCodec{})
	s.Indexes[1].Strategy, s.Indexes[1].Consistency = indextable.KeysOnly, indextable.Eventual
	s.SchemaLease, s.Revision = 2*time.Second, revision
	if revision > 1 {
		s.Indexes = append(s.Indexes, indextable.Index[fixture.Customer]{Name: "email", Fields: []string{"Email"}, Unique: true})
	}
	return s
}

// faultRun is the state of one TestMemberFaults run: the model of each
// writer's customers, and when writes were acknowledged.
type faultRun struct {
	t     *testing.T
	mu    sync.Mutex
	model map[string][]fixture.Customer // ID: what the record may be; {} absent
	acks  []time.Time
	done  chan struct{} // closed to stop the writers
}

// TestMemberFaults writes a customers table on a 3-member cluster with
// three writers, a maintainer, and a Build and a Repair of a new index,
// while a member crashes (Kill) and later restarts: the leader in one
// run, a follower in the other. Every acknowledged write is there with its
// entries; a refused one changed nothing; one whose outcome is unknown
// left the record as it was or as written. After WaitIndexed, Verify is
// clean. The longest wait between two acknowledged writes after the stop
// (the election, for the leader) is logged.
func TestMemberFaults(t *testing.T) {
	for _, victim := range []string{"leader", "follower"} {
		t.Run(victim, func(t *testing.T) { runMemberFaults(t, victim) })
	}
}

func runMemberFaults(t *testing.T, victim string) {
	ctx := context.Background()
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	s := openFresh(t, c, etcdstore.Options{})
	defer s.Close()
	tbl, err := indextable.Open(ctx, s, faultSchema(1))
	require.NoError(t, err)
	r := &faultRun{t: t, model: map[string][]fixture.Customer{}, done: make(chan struct{})}
	mctx, stopMaintainer := context.WithCancel(ctx)
	maintained := make(chan struct{})
	go func() {
		defer close(maintained)
		err := tbl.RunMaintainer(mctx, indextable.MaintainerOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("maintainer: %v", err)
		}
	}()
	var wg sync.WaitGroup // the writers
	for w := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); r.write(tbl, w) }()
	}
	r.waitAcks(60)

	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	stopped := leader
	if victim == "follower" {
		stopped = (leader + 1) % 3
	}
	stopAt := time.Now()
	require.NoError(t, c.Kill(stopped)) // a crash: no leadership handed over
	var lifecycle sync.WaitGroup
	lifecycle.Add(2)
	var built *indextable.Table[fixture.Customer]
	go func() { // a newer program adds an index and builds it
		defer lifecycle.Done()
		newer, err := indextable.Open(ctx, s, faultSchema(2))
		if err == nil {
			err = newer.Build(ctx, indextable.BuildOptions{ChunkSize: 16})
		}
		if err != nil {
			t.Errorf("Build: %v", err)
			return
		}
		built = newer
	}()
	go func() {
		defer lifecycle.Done()
		rep, err := tbl.Repair(ctx, indextable.VerifyOptions{})
		if err != nil || rep.Total() > 0 {
			t.Errorf("Repair: %v, findings %+v", err, rep)
		}
	}()
	r.waitAcks(60)
	t.Logf("%s stopped: the longest wait between acknowledged writes after it was %v", victim, r.longestWait(stopAt))
	require.NoError(t, c.Restart(stopped))
	r.waitAcks(60)
	lifecycle.Wait()
	close(r.done)
	wg.Wait()
	require.NotNil(t, built, "Build failed")
	require.NoError(t, built.WaitIndexed(ctx))
	stopMaintainer()
	<-maintained
	r.check(ctx, built)
}

// write runs writer w's inserts, updates and deletes of its customers
// until r.done is closed.
func (r *faultRun) write(tbl *indextable.Table[fixture.Customer], w int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(w), 23))
	for n := 0; ; n++ {
		select {
		case <-r.done:
			return
		default:
		}
		id := 3*rng.IntN(40) + w
		c := fixture.Random(rng, id)
		r.mu.Lock()
		was := r.model[c.ID]
		r.mu.Unlock()
		if len(was) > 1 { // unknown: read what it became
			got, err := tbl.Get(ctx, c.ID)
			if err != nil && !errors.Is(err, indextable.ErrNotFound) {
				continue
			}
			was = r.settle(c.ID, was, got, err == nil)
		}
		var err error
		now := []fixture.Customer{c}
		switch {
		case len(was) == 0:
			_, err = tbl.Insert(ctx, c)
		case rng.IntN(4) == 0:
			err, now = tbl.Delete(ctx, c.ID), nil
		default:
			_, err = tbl.Update(ctx, c)
		}
		r.record(c.ID, was, now, err)
	}
}

// settle checks that got (present or not) is one of the states may
// allows (none: absent; one: that record; two, after an unknown outcome:
// either, the zero Customer for absent), and makes it the model's.
func (r *faultRun) settle(id string, may []fixture.Customer, got fixture.Customer, present bool) []fixture.Customer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(may) == 0 {
		may = []fixture.Customer{{}}
	}
	now := []fixture.Customer{}
	if present {
		now = []fixture.Customer{got}
	} else {
		got = fixture.Customer{}
	}
	if !slices.Contains(may, got) {
		r.t.Errorf("%s is %+v, none of %+v", id, got, may)
	}
	r.model[id] = now
	return now
}

// record enters the outcome err of a write that made id's state now
// (nil: absent) from was.
func (r *faultRun) record(id string, was, now []fixture.Customer, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.model[id] = now
		r.acks = append(r.acks, time.Now())
	case errors.Is(err, indextable.ErrConflict), errors.Is(err, indextable.ErrStaleSchema),
		errors.Is(err, indextable.ErrExists), errors.Is(err, indextable.ErrNotFound):
		// Refused: nothing changed.
	default: // the outcome is unknown
		r.t.Logf("%s: %v", id, err)
		before := fixture.Customer{} // absent
		if len(was) > 0 {
			before = was[0]
		}
		after := fixture.Customer{}
		if len(now) > 0 {
			after = now[0]
		}
		r.model[id] = []fixture.Customer{before, after}
	}
}

// waitAcks waits until n more writes are acknowledged: progress, not
// time, so a slow machine only makes it wait longer.
func (r *faultRun) waitAcks(n int) {
	r.mu.Lock()
	want := len(r.acks) + n
	r.mu.Unlock()
	for {
		r.mu.Lock()
		got := len(r.acks)
		r.mu.Unlock()
		if got >= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// longestWait returns the longest time between two acknowledged writes
// after since (since itself counting as one).
func (r *faultRun) longestWait(since time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var longest time.Duration
	last := since
	for _, a := range r.acks {
		if a.After(since) {
			longest, last = max(longest, a.Sub(last)), a
		}
	}
	return longest
}

// check compares the table with the model: every record, its entries in
// each index, and a clean Verify.
func (r *faultRun) check(ctx context.Context, tbl *indextable.Table[fixture.Customer]) {
	t := r.t
	for id, may := range r.model {
		got, err := tbl.Get(ctx, id)
		if err != nil {
			require.ErrorIs(t, err, indextable.ErrNotFound)
		}
		was := r.settle(id, may, got, err == nil)
		if len(was) == 0 {
			continue
		}
		for _, q := range []indextable.Query{
			{Index: "town_lastname", Eq: indextable.Tuple{got.Town, got.LastName}},
			{Index: "lastname", Eq: indextable.Tuple{got.LastName}},
			{Index: "email", Eq: indextable.Tuple{got.Email}},
		} {
			found := false
			for c, err := range tbl.Find(ctx, q) {
				require.NoError(t, err)
				found = found || c == got
			}
			require.True(t, found, "%s not found by %s", id, q.Index)
		}
	}
	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "Verify: %+v", rep.Samples)
	require.Positive(t, rep.Records, fmt.Sprint("records verified"))
}
