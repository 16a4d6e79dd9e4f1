package indextable_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// eventualIndexes returns the indexes with every non-unique one Eventual.
func eventualIndexes(in []it.Index[person]) []it.Index[person] {
	out := slices.Clone(in)
	for i := range out {
		if !out[i].Unique {
			out[i].Consistency = it.Eventual
		}
	}
	return out
}

// partitioned is a memory store whose atomicity scope is one partition, as
// in Azure Table storage: a record and its change records share one, each
// index table has its own, and so does the catalog.
type partitioned struct{ *it.MemoryStore }

func partitionedStore(s *it.MemoryStore) kv.Store { return partitioned{s} }

func (partitioned) Atomicity() kv.Atomicity { return kv.Atomicity{Partition: partitionOf} }

// Apply refuses what the scope does not allow, as a real bounded store
// would.
func (s partitioned) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.Atomicity().Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

func partitionOf(key []byte) []byte {
	k, ok := kv.ParseKey(key)
	if !ok {
		return key
	}
	in := func(kind string, elem []byte) []byte {
		p, err := kv.AppendTuple(bytes.Clone(k.Table), kind)
		if err != nil {
			panic(err)
		}
		return append(p, elem...)
	}
	switch k.Space {
	case kv.SpaceRecords, kv.SpaceQueue, kv.SpaceIntra: // a record, its changes, its intra-partition entries
		if k.Lead == nil {
			return key
		}
		return in("record", k.Lead)
	case kv.SpaceIndex: // an index table
		if k.Index == nil {
			return key
		}
		return in("index", k.Index)
	}
	return key[:len(key)-len(k.Rest)] // the table's space
}

// maintainers runs a table's maintainers in goroutines, and stops and
// restarts them.
type maintainers struct {
	t       testing.TB
	tbl     *it.Table[person]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []error
	running bool
}

func startMaintainers(t testing.TB, tbl *it.Table[person], n int) *maintainers {
	m := &maintainers{t: t, tbl: tbl}
	m.start(n)
	return m
}

// start runs n maintainers, one per partition.
func (m *maintainers) start(n int) {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.running = cancel, true
	for i := range n {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			err := m.tbl.RunMaintainer(ctx, it.MaintainerOptions{Partition: i, Partitions: n, BatchSize: 1 + i*7})
			if !errors.Is(err, context.Canceled) {
				m.mu.Lock()
				m.errs = append(m.errs, err)
				m.mu.Unlock()
			}
		}()
	}
}

func (m *maintainers) stop() {
	if m.running {
		m.cancel()
		m.wg.Wait()
		m.running = false
	}
	require.Empty(m.t, m.errs)
}

// checkNoStaleResults reads a random index at the key of a random model
// record and checks that every result is a record of the model that has
// the key: a read never returns what no longer matches, even while the
// indexes lag.
func checkNoStaleResults(t testing.TB, r *rand.Rand, tbl *it.Table[person], model map[int]person, indexes []it.Index[person]) {
	t.Helper()
	name := indexes[r.IntN(len(indexes))].Name
	p := randomPerson(r, 0, names)
	if len(model) > 0 && r.IntN(4) > 0 {
		ids := make([]int, 0, len(model))
		for id := range model {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		p = model[ids[r.IntN(len(ids))]]
	}
	keys := modelKeys(name, p)
	if len(keys) == 0 {
		return
	}
	eq := keys[0][:1+r.IntN(len(keys[0]))]
	q := it.Query{Index: name, Eq: eq, Covered: r.IntN(2) == 0}
	for _, got := range collect(t, tbl, q) {
		want, ok := model[got.ID]
		require.True(t, ok, "%s %v returned record %d, which is gone", name, eq, got.ID)
		matches := false
		for _, k := range modelKeys(name, want) {
			matches = matches || kv.CompareTuples(k[:min(len(k), len(eq))], eq) == 0 && len(k) >= len(eq)
		}
		require.True(t, matches, "%s %v returned record %+v, which no longer matches", name, eq, got)
		whole := normalize([]person{want})
		if q.Covered && !assert.ObjectsAreEqual(whole, normalize([]person{got})) {
			want = covered(name, want)
		}
		require.Equal(t, normalize([]person{want}), normalize([]person{got}), "%s %v", name, eq)
	}
}

// TestModelEventual is the model test with eventual indexes, and with
// writes that fall back to the queue on a partitioned store.
func TestModelEventual(t *testing.T) {
	t.Run("eventual", func(t *testing.T) { testModel(t, &it.BinaryCodec{}, names, modeEventual) })
	t.Run("fallback", func(t *testing.T) { testModel(t, it.JSONCodec{}, names, modeFallback) })
}

func TestEventualUniqueIndexIsRefused(t *testing.T) {
	_, err := it.Open(context.Background(), it.NewMemoryStore(), it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: []it.Index[person]{
		{Name: "email", Fields: []string{"Email"}, Unique: true, Consistency: it.Eventual},
	}})
	require.ErrorIs(t, err, it.ErrInvalidSchema)
	assert.Contains(t, err.Error(), "must be Synchronous")
}
