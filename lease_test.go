package indextable_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/internal/countingstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

// TestLeaseKeepsMaintainersApartOnBoundedStores: a second maintainer of the
// same partition, started while the first is between its read of a record
// and its mutations, finds the partition leased and leaves it.
func TestLeaseKeepsMaintainersApartOnBoundedStores(t *testing.T) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{Partition: partitionOf}}
	tbl := openWith(t, s, it.Index[person]{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy, Consistency: it.Eventual})
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R"})
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	_, err = tbl.Update(ctx, person{ID: 1, Town: "S"})
	require.NoError(t, err)
	s.beforeMutations = func() {
		_, err := tbl.Update(ctx, person{ID: 1, Town: "T"})
		require.NoError(t, err)
		_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
		require.ErrorIs(t, err, it.ErrConflict)
		assert.Contains(t, err.Error(), "leased to another maintainer")
	}
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	storetest.Drain(t, tbl)
	require.Empty(t, collect(t, tbl, it.Query{Index: "town", Eq: it.Tuple{"S"}}))
	requireNoDrift(t, tbl)
}

// TestLeaseKeepsOtherPartitioningsOut: while a maintainer of one partitioning of the
// queue (Partitions 1) applies a record's changes in pieces, neither
// maintainer of another partitioning (Partitions 2) may start, nor a Build that
// applies what it queued. (A maintainer takes its lease when it has a
// change to apply: there are records in both partitions.)
func TestLeaseKeepsOtherPartitioningsOut(t *testing.T) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{Partition: partitionOf}}
	tbl := openWith(t, s, it.Index[person]{Name: "town", Fields: []string{"Town"}, Strategy: it.FullCopy})
	for id := range 8 {
		_, err := tbl.Insert(ctx, person{ID: id, Town: "R"})
		require.NoError(t, err)
	}
	s.beforeMutations = func() {
		s.beforeMutations = nil
		for p := range 2 {
			_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{Partition: p, Partitions: 2})
			require.ErrorIs(t, err, it.ErrConflict, "partition %d of 2", p)
			assert.Contains(t, err.Error(), "maintainers of 1 partitions hold leases")
		}
	}
	_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Nil(t, s.beforeMutations, "the hook ran")
	for id := range 8 {
		_, err = tbl.Update(ctx, person{ID: id, Town: "S"})
		require.NoError(t, err)
	}
	for p := range 2 {
		n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{Partition: p, Partitions: 2})
		require.NoError(t, err, "the lease of the other partitioning is released")
		require.Positive(t, n, "partition %d of 2", p)
	}
	storetest.Drain(t, tbl)
	requireNoDrift(t, tbl)
}

// TestLeaseTakenOverByAnotherPartitioning: a maintainer whose lease expired while
// it applied a record's changes in pieces, and which maintainers of another
// partitioning took over, cannot renew it, and stops.
func TestLeaseTakenOverByAnotherPartitioning(t *testing.T) {
	ctx := context.Background()
	s := &hookedStore{MemoryStore: it.NewMemoryStore(), scope: kv.Atomicity{Partition: partitionOf}}
	tbl := openWith(t, s, indexByName("town"), indexByName("name"))
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R", Name: "Ann"})
	require.NoError(t, err)
	const ttl = 50 * time.Millisecond
	s.beforeMutations = func() {
		time.Sleep(2 * ttl)
		for p := range 2 {
			_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{Partition: p, Partitions: 2, LeaseTTL: ttl})
			require.NoError(t, err, "partition %d of 2 takes over", p)
		}
	}
	_, err = tbl.ApplyPending(ctx, it.MaintainerOptions{LeaseTTL: ttl})
	require.ErrorIs(t, err, it.ErrConflict)
	assert.Contains(t, err.Error(), "another partitioning took over")
	requireNoDrift(t, tbl)
}

// TestLapsedLeaseStopsTheMutations: a maintainer pauses after its marker
// for longer than its lease; another takes the partition and applies the
// record, and a synchronous write removes a tag. The first maintainer finds
// its lease gone before it writes a piece, and stops.
func TestLapsedLeaseStopsTheMutations(t *testing.T) {
	ctx := context.Background()
	s, tbl, ten := tenTagsQueued(t)
	const ttl = 20 * time.Millisecond
	s.afterMarker = func() {
		time.Sleep(2 * ttl)
		_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{LeaseTTL: ttl})
		require.NoError(t, err)
		_, err = tbl.Update(ctx, person{ID: 1, Tags: ten[:9]}) // fits: synchronous
		require.NoError(t, err)
	}
	_, err := tbl.ApplyPending(ctx, it.MaintainerOptions{LeaseTTL: ttl})
	require.ErrorIs(t, err, it.ErrConflict)
	assert.Contains(t, err.Error(), "lease")
	storetest.Drain(t, tbl)
	require.Empty(t, collect(t, tbl, it.Query{Index: "tags", Eq: it.Tuple{"j"}, Covered: true}))
	requireNoDrift(t, tbl)
}

// TestIdleMaintainerTakesNoLease: on a bounded store, a pass over an empty
// queue writes nothing, not even its lease.
func TestIdleMaintainerTakesNoLease(t *testing.T) {
	ctx := context.Background()
	s := countingstore.New(partitionedStore(it.NewMemoryStore()))
	tbl := openWith(t, s, eventualIndexes(colocatable(personIndexes()))...)
	before := s.Counts()
	n, err := tbl.ApplyPending(ctx, it.MaintainerOptions{})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, s.Counts().Sub(before).Applies)
}
