package indextable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
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
			_, err := it.Open(ctx, nil, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}})
			return err
		},
		"Open with a nil context": func() error {
			_, err := it.Open(nilCtx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}})
			return err
		},
		"Update with a nil option": func() error { _, err := tbl.Update(ctx, person{ID: 1}, nil); return err },
		"Delete with a nil option": func() error { return tbl.Delete(ctx, 1, it.WriteOption(nil)) },
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
		"MemoryStore.Apply":   func() error { return s.Apply(nilCtx, &kv.Batch{}) },
		"MemoryStore.GetMany": func() error { _, err := s.GetMany(nilCtx, [][]byte{[]byte("k")}, nil); return err },
		"MemoryStore.Scan": func() error {
			for _, err := range s.Scan(nilCtx, kv.ScanRange{}) {
				return err
			}
			return nil
		},
		"OpenShardedStore with a nil option": func() error {
			_, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore()}, nil)
			return err
		},
		"OpenShardedStore with a nil shard": func() error {
			_, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), nil})
			return err
		},
		"OpenShardedStore": func() error {
			_, err := it.OpenShardedStore(nilCtx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore()})
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
	sharded, err := it.OpenShardedStore(ctx, []kv.Store{it.NewMemoryStore(), it.NewMemoryStore()})
	require.NoError(t, err)
	for _, s := range []kv.Store{it.NewMemoryStore(), sharded, partitionedStore(it.NewMemoryStore())} {
		require.NotPanics(t, func() { err = s.Apply(ctx, nil) })
		require.NoError(t, err)
		require.Empty(t, storeDump(t, s))
	}
	var b *kv.Batch
	require.Zero(t, b.Len())
	require.NoError(t, kv.CheckBatch(b))
}

// ageRec is the record of the tables of the bad-input tests.
type ageRec struct {
	ID   int
	Age  int
	Note string
}

// sentinels are the package's exported sentinels: a bad input's error
// must match one of them.
var sentinels = []error{
	it.ErrInvalidSchema, it.ErrExists, it.ErrUniqueViolation, it.ErrInvalidKey, it.ErrInvalidArgument,
	it.ErrInvalidQuery, it.ErrInvalidCursor, it.ErrUnsupportedType, it.ErrMalformedKey, it.ErrCodec,
	it.ErrNotFound, it.ErrClosed, it.ErrConflict, it.ErrInvalidBatch, it.ErrIndexNotReadable, it.ErrInvalidSharding,
}

// matchesSentinel reports whether err matches one of the sentinels.
func matchesSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// recovered runs f and returns what it panicked with, or nil.
func recovered(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// openAges opens the table "r2" of ageRec over s with indexes.
func openAges(t *testing.T, s kv.Store, indexes ...it.Index[ageRec]) *it.Table[ageRec] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[ageRec]{SchemaLease: testLease, Name: "r2", PrimaryKey: []string{"ID"}, Indexes: indexes})
	require.NoError(t, err)
	return tbl
}

// embeddedTown is embedded, unexported, in townEmbedder: its exported fields are
// townEmbedder's fields by Go's promotion rules (reflect's FieldByName, and
// JSON, see them).
type embeddedTown struct{ Town string }

type townEmbedder struct {
	ID int
	embeddedTown
}

// TestIfVersionZero: IfVersion(v) "applies only if the record's
// version is still v"; no record has version 0 (an insert starts from an
// odd incarnation), yet IfVersion(0) was taken as no condition at all, so
// a caller whose version variable was never set (var v it.Version)
// overwrote, or deleted, whatever was there, silently. It is refused.
func TestIfVersionZero(t *testing.T) {
	ctx := context.Background()
	tbl := openAges(t, it.NewMemoryStore())
	_, err := tbl.Insert(ctx, ageRec{ID: 1, Note: "first"})
	require.NoError(t, err)
	var never it.Version // not read from GetVersioned
	_, err = tbl.Update(ctx, ageRec{ID: 1, Note: "blind"}, it.IfVersion(never))
	assert.ErrorIs(t, err, it.ErrInvalidArgument, "a conditional Update on version 0, which no record has")
	err = tbl.Delete(ctx, it.Tuple{1}, it.IfVersion(never))
	assert.ErrorIs(t, err, it.ErrInvalidArgument, "a conditional Delete on version 0")
}

// TestOpenRefusesFieldsTheBinaryCodecDrops: the BinaryCodec does not
// store a field promoted from an unexported embedded struct (JSONCodec
// does), so an index on it held every record under the zero value and
// found nothing by the value written. Open refuses it for that codec.
func TestOpenRefusesFieldsTheBinaryCodecDrops(t *testing.T) {
	ctx := context.Background()
	for _, c := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		t.Run(fmt.Sprintf("%T", c), func(t *testing.T) {
			tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[townEmbedder]{SchemaLease: testLease, Name: "e", PrimaryKey: []string{"ID"}, Codec: c,
				Indexes: []it.Index[townEmbedder]{{Name: "town", Fields: []string{"Town"}}}})
			if _, binary := c.(*it.BinaryCodec); binary {
				require.ErrorIs(t, err, it.ErrInvalidSchema)
				return
			}
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, townEmbedder{ID: 1, embeddedTown: embeddedTown{Town: "Redmond"}})
			require.NoError(t, err)
			n, err := tbl.Count(ctx, it.Query{Index: "town", Eq: it.Tuple{"Redmond"}})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the record written with Town Redmond is not found by Town")
			n, err = tbl.Count(ctx, it.Query{Where: map[string]any{"Town": "Redmond"}})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "nor by Where")
			got, err := tbl.Get(ctx, 1)
			require.NoError(t, err)
			assert.Equal(t, "Redmond", got.Town, "the field is lost")
		})
	}
}

// TestOpenErrorsNameThePackageOnce: compileIndex reported a bad field or
// projection with lookupField's own error formatted into its message:
// "indextable: invalid schema: index "a": indextable: invalid schema: ...".
func TestOpenErrorsNameThePackageOnce(t *testing.T) {
	ctx := context.Background()
	for _, ix := range []it.Index[ageRec]{
		{Name: "a", Fields: []string{"Nope"}},
		{Name: "a", Fields: []string{"Age"}, Strategy: it.Partial, Projection: []string{"Nope"}},
		{Name: "a", Fields: []string{"Age"}, Strategy: it.Partial, Projection: []string{"Note", "Note"}},
		{Name: "a", Fields: []string{"Note"}, MultiValued: true},
	} {
		_, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[ageRec]{SchemaLease: testLease, Name: "r", PrimaryKey: []string{"ID"}, Indexes: []it.Index[ageRec]{ix}})
		require.ErrorIs(t, err, it.ErrInvalidSchema)
		assert.Equal(t, 1, strings.Count(err.Error(), "indextable:"), "%v", err)
	}
}

// TestKeyFuncPanics: a Key func is the program's code, and it
// may panic on a record it did not expect (an empty slice, a nil
// pointer). The panic went through Insert to the caller, and through
// Build and RunMaintainer, which run such funcs over stored records. It is
// recovered as an error wrapping ErrInvalidKey, naming the index.
func TestKeyFuncPanics(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	first := it.Index[ageRec]{Name: "first_letter", Key: func(r ageRec) []it.Tuple {
		return []it.Tuple{{r.Note[:1]}} // panics on an empty Note
	}}
	tbl := openAges(t, s, first)
	var err error
	p := recovered(func() { _, err = tbl.Insert(ctx, ageRec{ID: 1}) })
	require.Nil(t, p, "Insert panics with the Key func's panic")
	assert.ErrorIs(t, err, it.ErrInvalidKey)
}

func TestClosedStore(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openPeople(t, s)
	require.NoError(t, s.Close())
	_, err := tbl.Insert(ctx, person{ID: 1})
	require.ErrorIs(t, err, it.ErrClosed)
	_, err = tbl.Get(ctx, 1)
	require.ErrorIs(t, err, it.ErrClosed)
	require.ErrorIs(t, findError(t, tbl, it.Query{Index: "town"}), it.ErrClosed)
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := it.NewMemoryStore()
	tbl := openPeople(t, s)
	cancel()
	_, err := tbl.Upsert(ctx, person{ID: 1})
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, storeDump(t, s))
	_, err = it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "x", PrimaryKey: []string{"ID"}})
	require.ErrorIs(t, err, context.Canceled)
}

// TestPrimaryKeyValueErrorsSayWhere: a primary key value of the
// wrong kind, given to Get or Delete, fails with ErrInvalidKey naming the
// table, as a wrong number of components does, and not as an invalid
// query (the house rule: wrapped once, with what and where).
func TestPrimaryKeyValueErrorsSayWhere(t *testing.T) {
	type rec struct{ ID int32 }
	ctx := context.Background()
	tbl, err := it.Open(ctx, it.NewMemoryStore(), it.Schema[rec]{SchemaLease: testLease, Name: "accounts", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	_, err = tbl.Get(ctx, 2.5)
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.NotErrorIs(t, err, it.ErrInvalidQuery, err.Error())
	require.Contains(t, err.Error(), `table "accounts"`)
	err = tbl.Delete(ctx, "x")
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.NotErrorIs(t, err, it.ErrInvalidQuery, err.Error())
	require.Contains(t, err.Error(), `table "accounts"`)
}

// TestGetAllocatesNothing: a Get of a record on the memory store allocates
// nothing, its primary key argument included, whose value an error would
// make escape if it kept it (see Table.keyForError). Under the race
// detector sync.Pool drops Get's scratch.
func TestGetAllocatesNothing(t *testing.T) {
	if raceDetector {
		t.Skip("sync.Pool drops what it holds under the race detector")
	}
	ctx := context.Background()
	store := it.NewMemoryStore()
	tbl, err := it.Open(ctx, store, it.Schema[Customer]{
		SchemaLease: testLease, Name: "c", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[Customer]{{Name: "town", Fields: []string{"Town", "LastName"}}},
	})
	require.NoError(t, err)
	ids := make([]string, 10)
	for i := range ids {
		c := benchCustomer(i)
		ids[i] = c.ID
		_, err := tbl.Insert(ctx, c)
		require.NoError(t, err)
	}
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		c, err := tbl.Get(ctx, ids[n%len(ids)])
		if err != nil || c.ID != ids[n%len(ids)] {
			panic(fmt.Sprint(c.ID, err))
		}
		n++
	})
	assert.Zero(t, allocs)
	_, err = tbl.Get(ctx, "nobody")
	require.ErrorIs(t, err, it.ErrNotFound)
	assert.Contains(t, err.Error(), `primary key ("nobody")`)
	var txErr error
	require.NoError(t, it.Transact(ctx, store, func(tx *it.Tx) error {
		_, txErr = tbl.In(tx).Get(ctx, "nobody")
		return nil
	}))
	require.ErrorIs(t, txErr, it.ErrNotFound)
	assert.Equal(t, err.Error(), txErr.Error(), "Table.Get and TableTx.Get name a missing key alike")

	// A key as stored: a time in UTC, a float32 widened, by both.
	type timed struct {
		At time.Time
		F  float32
	}
	tt, err := it.Open(ctx, store, it.Schema[timed]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"At", "F"}, Codec: &it.BinaryCodec{}})
	require.NoError(t, err)
	at := time.Date(2024, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	_, err = tt.Get(ctx, at, float32(0.5))
	require.ErrorIs(t, err, it.ErrNotFound)
	assert.Contains(t, err.Error(), "primary key (2024-03-04T04:06:07Z, 0.5)")
	require.NoError(t, it.Transact(ctx, store, func(tx *it.Tx) error {
		_, txErr = tt.In(tx).Get(ctx, at, float32(0.5))
		return nil
	}))
	assert.Equal(t, err.Error(), txErr.Error(), "Table.Get and TableTx.Get name a missing key alike")
}
