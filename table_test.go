package indextable_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
)

// TestNilArguments: a nil context, store or option is refused with
// ErrInvalidArgument, never a panic, and changes nothing.
func TestNilArguments(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context // a nil context, as a careless caller passes it
	s := it.NewMemoryStore()
	tbl := openPeople(t, s)
	_, err := tbl.Insert(ctx, person{ID: 1, Town: "R"})
	require.NoError(t, err)
	before := storeDump(t, s)
	calls := map[string]func() error{
		"Open with a nil store": func() error {
			_, err := it.Open(ctx, nil, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}})
			return err
		},
		"Open with a nil context": func() error {
			_, err := it.Open(nilCtx, s, it.Schema[person]{Name: "people", PrimaryKey: []string{"ID"}})
			return err
		},
		"Update with a nil option": func() error { _, err := tbl.Update(ctx, person{ID: 1}, nil); return err },
		"Delete with a nil option": func() error { return tbl.Delete(ctx, it.Tuple{1}, nil) },
		"Get":                      func() error { _, err := tbl.Get(nilCtx, 1); return err },
		"GetVersioned":             func() error { _, _, err := tbl.GetVersioned(nilCtx, 1); return err },
		"Insert":                   func() error { _, err := tbl.Insert(nilCtx, person{ID: 2}); return err },
		"Upsert":                   func() error { _, err := tbl.Upsert(nilCtx, person{ID: 2}); return err },
		"Update":                   func() error { _, err := tbl.Update(nilCtx, person{ID: 1}); return err },
		"Delete":                   func() error { return tbl.Delete(nilCtx, it.Tuple{1}) },
		"Find": func() error {
			for _, err := range tbl.Find(nilCtx, it.Query{}) {
				return err
			}
			return nil
		},
		"FindPage":     func() error { _, _, err := tbl.FindPage(nilCtx, it.Query{Limit: 1}); return err },
		"Count":        func() error { _, err := tbl.Count(nilCtx, it.Query{}); return err },
		"Exists":       func() error { _, err := tbl.Exists(nilCtx, it.Query{}); return err },
		"Build":        func() error { return tbl.Build(nilCtx, it.BuildOptions{}) },
		"Verify":       func() error { _, err := tbl.Verify(nilCtx, it.VerifyOptions{}); return err },
		"Repair":       func() error { _, err := tbl.Repair(nilCtx, it.VerifyOptions{}); return err },
		"DisableIndex": func() error { return tbl.DisableIndex(nilCtx, "town") },
		"EnableIndex":  func() error { return tbl.EnableIndex(nilCtx, "town") },
		"IndexStatus":  func() error { _, err := tbl.IndexStatus(nilCtx); return err },
		"RunMaintainer": func() error {
			return tbl.RunMaintainer(nilCtx, it.MaintainerOptions{})
		},
		"ApplyPending": func() error { _, err := tbl.ApplyPending(nilCtx, it.MaintainerOptions{}); return err },
		"WaitIndexed":  func() error { return tbl.WaitIndexed(nilCtx) },
		"Lag":          func() error { _, err := tbl.Lag(nilCtx); return err },
		"Usage":        func() error { _, err := tbl.Usage(nilCtx); return err },
		"SaveUsage":    func() error { return tbl.SaveUsage(nilCtx) },
		"Stats":        func() error { _, err := tbl.Stats(nilCtx); return err },
		"Advise":       func() error { _, err := tbl.Advise(nilCtx, it.AdviseOptions{}); return err },
		"ReadCatalog with a nil store": func() error {
			_, err := it.ReadCatalog(ctx, nil)
			return err
		},
		"ReadCatalog": func() error { _, err := it.ReadCatalog(nilCtx, s); return err },
		"UsageOf":     func() error { _, err := it.UsageOf(ctx, nil, "people"); return err },
		"StatsOf":     func() error { _, err := it.StatsOf(ctx, nil, it.TableInfo{Name: "people"}); return err },
		"VerifyTable": func() error {
			_, err := it.VerifyTable(ctx, nil, it.TableInfo{Name: "people"}, it.VerifyOptions{})
			return err
		},
		"RepairTable": func() error {
			_, err := it.RepairTable(nilCtx, s, it.TableInfo{Name: "people"}, it.VerifyOptions{})
			return err
		},
		"MemoryStore.Get":     func() error { _, err := s.Get(nilCtx, []byte("k")); return err },
		"MemoryStore.Apply":   func() error { return s.Apply(nilCtx, &it.Batch{}) },
		"MemoryStore.GetMany": func() error { _, err := s.GetMany(nilCtx, [][]byte{[]byte("k")}, nil); return err },
		"MemoryStore.Scan": func() error {
			for _, err := range s.Scan(nilCtx, it.ScanRange{}) {
				return err
			}
			return nil
		},
		"OpenShardedStore with a nil option": func() error {
			_, err := it.OpenShardedStore(ctx, []it.Store{it.NewMemoryStore(), it.NewMemoryStore()}, nil)
			return err
		},
		"OpenShardedStore with a nil shard": func() error {
			_, err := it.OpenShardedStore(ctx, []it.Store{it.NewMemoryStore(), nil})
			return err
		},
		"OpenShardedStore": func() error {
			_, err := it.OpenShardedStore(nilCtx, []it.Store{it.NewMemoryStore(), it.NewMemoryStore()})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call() })
			require.ErrorIs(t, err, it.ErrInvalidArgument)
			require.Equal(t, before, storeDump(t, s), "the store changed")
		})
	}
}

// TestNilBatch: a nil batch is an empty one to every store of the
// package: Apply changes nothing and returns nil.
func TestNilBatch(t *testing.T) {
	ctx := context.Background()
	sharded, err := it.OpenShardedStore(ctx, []it.Store{it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	for _, s := range []it.Store{it.NewMemoryStore(), sharded, partitionedStore(it.NewMemoryStore())} {
		require.NotPanics(t, func() { err = s.Apply(ctx, nil) })
		require.NoError(t, err)
		require.Empty(t, storeDump(t, s))
	}
	var b *it.Batch
	require.Zero(t, b.Len())
	require.NoError(t, it.CheckBatch(b))
}
