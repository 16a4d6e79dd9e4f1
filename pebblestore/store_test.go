package pebblestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, dir string, opts pebblestore.Options) *pebblestore.Store {
	t.Helper()
	s, err := pebblestore.Open(dir, opts)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts pebblestore.Options
	}{{"Sync", pebblestore.Options{}}, {"NoSync", pebblestore.Options{NoSync: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.TestStore(t, func(t *testing.T) kv.Store {
				return open(t, t.TempDir(), tc.opts)
			})
		})
	}
}

// TestConformanceReopen: the empty key with large values, its neighbours
// and its deletes survive a close and an Open, which writes what Pebble's
// write-ahead log holds to sstables.
func TestConformanceReopen(t *testing.T) {
	storetest.TestStoreReopen(t, func(t *testing.T) func() kv.Store {
		dir := t.TempDir()
		return func() kv.Store { return open(t, dir, pebblestore.Options{}) }
	})
}

// TestReopen: what one store wrote, the next one on the directory reads.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, pebblestore.Options{})
	var b kv.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte{})
	require.NoError(t, s.Apply(ctx, &b))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close returns nil")

	s = open(t, dir, pebblestore.Options{})
	defer s.Close()
	v, err := s.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, []byte("1"), v)
	v, err = s.Get(ctx, []byte("b"))
	require.NoError(t, err)
	assert.Equal(t, []byte{}, v)
}

// TestReadOnly: a store opened read-only reads what was written (the
// write-ahead log included), refuses writes, leaves the directory's files
// as they were, and needs a store in the directory and its lock.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := pebblestore.Open(dir, pebblestore.Options{ReadOnly: true})
	require.ErrorIs(t, err, pebblestore.ErrNoStore, "no store yet")
	s := open(t, dir, pebblestore.Options{})
	var b kv.Batch
	b.Put([]byte("a"), []byte("1"))
	require.NoError(t, s.Apply(ctx, &b))
	_, err = pebblestore.Open(dir, pebblestore.Options{ReadOnly: true})
	require.ErrorIs(t, err, pebblestore.ErrLocked)
	require.NoError(t, s.Close())

	files := func() map[string]int64 {
		out := map[string]int64{}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			info, err := e.Info()
			require.NoError(t, err)
			out[e.Name()] = info.Size()
		}
		return out
	}
	before := files()
	ro := open(t, dir, pebblestore.Options{ReadOnly: true})
	v, err := ro.Get(ctx, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, []byte("1"), v)
	b.Reset()
	b.Put([]byte("b"), []byte("2"))
	err = ro.Apply(ctx, &b)
	require.ErrorIs(t, err, pebblestore.ErrReadOnly)
	require.ErrorIs(t, err, kv.ErrReadOnly, "the core's sentinel, on which a maintainer stops")
	assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
	require.NoError(t, ro.Close())
	require.Equal(t, before, files())
}

// TestReadOnlyApplyClosedOrDone: a read-only store's Apply keeps the Store
// contract before it refuses the write: a done context gives an error
// wrapping ctx.Err(), a closed store one wrapping ErrClosed.
func TestReadOnlyApplyClosedOrDone(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, open(t, dir, pebblestore.Options{}).Close())
	ro := open(t, dir, pebblestore.Options{ReadOnly: true})
	var b kv.Batch
	b.Put([]byte("k"), []byte("v"))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	err := ro.Apply(done, &b)
	assert.ErrorIs(t, err, context.Canceled, "Apply with a done context")
	assert.NotErrorIs(t, err, pebblestore.ErrReadOnly)
	require.NoError(t, ro.Close())
	err = ro.Apply(context.Background(), &b)
	assert.ErrorIs(t, err, kv.ErrClosed, "Apply after Close")
	assert.NotErrorIs(t, err, pebblestore.ErrReadOnly)
}

// TestMaintainerStopsOnReadOnlyStore: a maintainer on a read-only store
// returns the store's ErrReadOnly at once, as on a closed store, rather
// than retry (and log) a refusal that no retry helps. A retry is seen by
// its log line: the third one ends the maintainer's context.
func TestMaintainerStopsOnReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	type rec struct{ ID, Age int }
	schema := indextable.Schema[rec]{Name: "recs", PrimaryKey: []string{"ID"}, Indexes: []indextable.Index[rec]{
		{Name: "age", Fields: []string{"Age"}, Consistency: indextable.Eventual},
	}}
	dir := t.TempDir()
	s := open(t, dir, pebblestore.Options{})
	tbl, err := indextable.Open(ctx, s, schema)
	require.NoError(t, err)
	for i := range 5 {
		_, err := tbl.Insert(ctx, rec{ID: i, Age: i})
		require.NoError(t, err)
	}
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, lag.Pending)
	require.NoError(t, s.Close())

	ro := open(t, dir, pebblestore.Options{ReadOnly: true})
	defer ro.Close()
	tbl, err = indextable.Open(ctx, ro, schema)
	require.NoError(t, err, "a table opens on a read-only store whose catalog matches")
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logged := &lineCounter{limit: 3, full: cancel}
	err = tbl.RunMaintainer(mctx, indextable.MaintainerOptions{
		Logger: slog.New(slog.NewTextHandler(logged, nil)), MaxBackoff: time.Millisecond})
	require.ErrorIs(t, err, pebblestore.ErrReadOnly, "after %d retries", logged.lines())
	require.ErrorIs(t, err, kv.ErrReadOnly)
	assert.Zero(t, logged.lines(), "retries")
}

// lineCounter counts the lines written to it, and calls full once it has
// counted limit of them.
type lineCounter struct {
	mu    sync.Mutex
	n     int
	limit int
	full  func()
}

func (w *lineCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += bytes.Count(p, []byte("\n"))
	if w.n >= w.limit {
		w.full()
	}
	return len(p), nil
}

func (w *lineCounter) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// TestLocked: a directory held by a store, in this process or another,
// cannot be opened again until that store closes.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, pebblestore.Options{})
	_, err := pebblestore.Open(dir, pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked)
	assert.Contains(t, err.Error(), dir)

	// Another process: this test binary, run as a child that opens dir.
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenInChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PEBBLESTORE_CHILD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "ErrLocked")

	// Other paths to dir: a symbolic link, and one through "..".
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	_, err = pebblestore.Open(link, pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked, "through a symbolic link")
	_, err = pebblestore.Open(dir+"/../"+filepath.Base(dir), pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked, "through ..")

	require.NoError(t, s.Close())
	s = open(t, link, pebblestore.Options{})
	require.NoError(t, s.Close())
}

// TestOpenInChild is TestLocked's child process: it reports whether Open
// failed with ErrLocked.
func TestOpenInChild(t *testing.T) {
	dir := os.Getenv("PEBBLESTORE_CHILD_DIR")
	if dir == "" {
		t.Skip("run by TestLocked")
	}
	_, err := pebblestore.Open(dir, pebblestore.Options{})
	require.ErrorIs(t, err, pebblestore.ErrLocked)
	t.Log("ErrLocked:", err)
}

// TestOpenBadDirectory: a path that cannot hold a store, or, read-only,
// holds none, fails with a sentinel that says which, and creates nothing.
func TestOpenBadDirectory(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	loop := filepath.Join(tmp, "loop")
	require.NoError(t, os.Symlink(loop, loop))
	dangling := filepath.Join(tmp, "dangling")
	require.NoError(t, os.Symlink(filepath.Join(tmp, "nowhere"), dangling))
	long := filepath.Join(tmp, strings.Repeat("x", 300))
	for _, tc := range []struct {
		name     string
		dir      string
		readOnly bool
		is       []error
	}{
		{"empty path", "", false, []error{pebblestore.ErrInvalidDir}},
		{"empty path, read-only", "", true, []error{pebblestore.ErrInvalidDir}},
		{"a file", file, false, []error{pebblestore.ErrInvalidDir}},
		{"a file, read-only", file, true, []error{pebblestore.ErrInvalidDir}},
		{"under a file", filepath.Join(file, "sub"), false, []error{pebblestore.ErrInvalidDir}},
		{"under a file, read-only", filepath.Join(file, "sub"), true, []error{pebblestore.ErrInvalidDir}},
		{"a NUL byte", "st\x00re", false, []error{pebblestore.ErrInvalidDir}},
		{"a NUL byte, read-only", "st\x00re", true, []error{pebblestore.ErrInvalidDir}},
		{"a symbolic link loop", loop, false, []error{pebblestore.ErrInvalidDir}},
		{"a symbolic link loop, read-only", loop, true, []error{pebblestore.ErrInvalidDir}},
		{"under a symbolic link loop", filepath.Join(loop, "sub"), false, []error{pebblestore.ErrInvalidDir}},
		{"a dangling symbolic link", dangling, false, []error{pebblestore.ErrInvalidDir}},
		{"a name too long", long, false, []error{pebblestore.ErrInvalidDir}},
		{"missing, read-only", filepath.Join(tmp, "missing"), true, []error{pebblestore.ErrNoStore, fs.ErrNotExist}},
		{"no store, read-only", empty, true, []error{pebblestore.ErrNoStore}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := pebblestore.Open(tc.dir, pebblestore.Options{ReadOnly: tc.readOnly})
			require.Error(t, err)
			require.Nil(t, s)
			for _, want := range tc.is {
				assert.ErrorIs(t, err, want)
			}
			assert.NotErrorIs(t, err, pebblestore.ErrLocked)
			assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
			t.Log(err)
		})
	}
	_, err := os.Stat(filepath.Join(tmp, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a read-only Open creates no directory")
}

// TestOpenBadOptions: an option out of range, or one Pebble refuses, fails
// with an error wrapping indextable.ErrInvalidArgument before Open creates
// anything; a huge cache is no error (Pebble allocates it as it fills).
func TestOpenBadOptions(t *testing.T) {
	comparer := *pebble.DefaultComparer
	comparer.Name = "reversed"
	cache := pebble.NewCache(8 << 20)
	defer cache.Unref()
	for _, tc := range []struct {
		name string
		opts pebblestore.Options
	}{
		{"negative CacheSize", pebblestore.Options{CacheSize: -1}},
		{"negative Pebble.CacheSize", pebblestore.Options{Pebble: &pebble.Options{CacheSize: -1}}},
		{"CacheSize and Pebble.Cache", pebblestore.Options{CacheSize: 8 << 20, Pebble: &pebble.Options{Cache: cache}}},
		{"Pebble.ReadOnly", pebblestore.Options{Pebble: &pebble.Options{ReadOnly: true}}},
		{"Pebble.Comparer", pebblestore.Options{Pebble: &pebble.Options{Comparer: &comparer}}},
		{"Pebble.FormatMajorVersion", pebblestore.Options{Pebble: &pebble.Options{FormatMajorVersion: pebble.FormatNewest + 1000}}},
		{"Pebble.MemTableSize", pebblestore.Options{Pebble: &pebble.Options{MemTableSize: 1 << 40}}},
		{"negative MemTableSize", pebblestore.Options{MemTableSize: -1}},
		{"MemTableSize too large", pebblestore.Options{MemTableSize: 1 << 40}},
		{"MemTableSize and Pebble.MemTableSize", pebblestore.Options{MemTableSize: 8 << 20, Pebble: &pebble.Options{MemTableSize: 8 << 20}}},
		{"CacheSize at twice MemTableSize", pebblestore.Options{MemTableSize: 8 << 20, CacheSize: 16 << 20}},
		{"Pebble.L0StopWritesThreshold", pebblestore.Options{Pebble: &pebble.Options{L0CompactionThreshold: 8, L0StopWritesThreshold: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s, err := pebblestore.Open(dir, tc.opts)
			if s != nil {
				s.Close()
			}
			require.ErrorIs(t, err, indextable.ErrInvalidArgument)
			assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
			t.Log(err)
			_, err = os.Stat(dir)
			assert.ErrorIs(t, err, fs.ErrNotExist, "Open created the directory")
		})
	}
	for _, size := range []int64{1, math.MaxInt64} {
		s := open(t, t.TempDir(), pebblestore.Options{CacheSize: size})
		require.NoError(t, s.Close())
	}
}

// TestOpenErrorIfNotExists: with Pebble's ErrorIfNotExists, a directory
// with no store fails with ErrNoStore, and Open creates nothing.
func TestOpenErrorIfNotExists(t *testing.T) {
	opts := pebblestore.Options{Pebble: &pebble.Options{ErrorIfNotExists: true}}
	dir := filepath.Join(t.TempDir(), "store")
	_, err := pebblestore.Open(dir, opts)
	require.ErrorIs(t, err, pebblestore.ErrNoStore)
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, fs.ErrNotExist, "Open created the directory")
	require.NoError(t, os.Mkdir(dir, 0o755))
	_, err = pebblestore.Open(dir, opts)
	require.ErrorIs(t, err, pebblestore.ErrNoStore)
	require.NoError(t, open(t, dir, pebblestore.Options{}).Close())
	require.NoError(t, open(t, dir, opts).Close())
}

// TestTablesShareTheStore: tables in one store are key prefixes of it, and
// each reopens intact.
func TestTablesShareTheStore(t *testing.T) {
	ctx := context.Background()
	type customer struct{ ID, Town string }
	type order struct {
		ID       int
		Customer string
	}
	customers := indextable.Schema[customer]{Name: "customers", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[customer]{{Name: "town", Fields: []string{"Town"}}}}
	orders := indextable.Schema[order]{Name: "orders", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[order]{{Name: "customer", Fields: []string{"Customer"}, Strategy: indextable.FullCopy}}}
	dir := t.TempDir()
	for run := range 2 {
		s := open(t, dir, pebblestore.Options{})
		ct, err := indextable.Open(ctx, s, customers)
		require.NoError(t, err)
		ot, err := indextable.Open(ctx, s, orders)
		require.NoError(t, err)
		if run == 0 {
			_, err = ct.Insert(ctx, customer{"C1", "Redmond"})
			require.NoError(t, err)
			for i := range 3 {
				_, err = ot.Insert(ctx, order{i, "C1"})
				require.NoError(t, err)
			}
		}
		n, err := ct.Count(ctx, indextable.Query{Index: "town", Eq: indextable.Tuple{"Redmond"}})
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = ot.Count(ctx, indextable.Query{Index: "customer", Eq: indextable.Tuple{"C1"}})
		require.NoError(t, err)
		assert.Equal(t, 3, n)
		for _, tb := range []interface {
			Verify(context.Context, indextable.VerifyOptions) (*indextable.VerifyReport, error)
		}{ct, ot} {
			rep, err := tb.Verify(ctx, indextable.VerifyOptions{})
			require.NoError(t, err)
			assert.Zero(t, rep.Total())
		}
		require.NoError(t, s.Close())
	}
}

// closeStall is how long the goroutines and files a closed store leaves
// may go without one of them ending before TestCloseReleasesEverything
// calls them leaked: generous, as a busy machine may not run them for a
// while.
const closeStall = time.Minute

// TestCloseReleasesEverything: after Close, Pebble's goroutines have ended
// and its files are closed.
func TestCloseReleasesEverything(t *testing.T) {
	ctx := context.Background()
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(ents)
	}
	goroutines, files := runtime.NumGoroutine(), fds()
	s := open(t, t.TempDir(), pebblestore.Options{})
	var b kv.Batch
	b.Put([]byte("k"), []byte("v"))
	require.NoError(t, s.Apply(ctx, &b))
	require.NoError(t, s.DB().Flush())
	for range s.Scan(ctx, kv.ScanRange{}) {
	}
	require.Greater(t, runtime.NumGoroutine(), goroutines)
	require.Greater(t, fds(), files)
	require.NoError(t, s.Close())
	assert.Nil(t, s.DB())
	// Polled here: assert.Eventually adds goroutines of its own. A poll
	// that finds fewer goroutines and files than any before is progress;
	// only closeStall without any fails, however slow the machine.
	least, since := runtime.NumGoroutine()+fds(), time.Now()
	for runtime.NumGoroutine() > goroutines || fds() > files {
		if n := runtime.NumGoroutine() + fds(); n < least {
			least, since = n, time.Now()
		}
		require.Less(t, time.Since(since), closeStall, "goroutines %d (were %d), files %d (were %d)",
			runtime.NumGoroutine(), goroutines, fds(), files)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCloseDuringScan: a scan holds no iterator while its loop body runs,
// so the body may close the store, and the scan then ends with ErrClosed.
func TestCloseDuringScan(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), pebblestore.Options{})
	var b kv.Batch
	for i := range 40 {
		b.Put(fmt.Appendf(nil, "k%02d", i), []byte("v"))
	}
	require.NoError(t, s.Apply(ctx, &b))
	n := 0
	var last error
	for _, err := range s.Scan(ctx, kv.ScanRange{}) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 1 {
			require.NoError(t, s.Close())
		}
	}
	require.ErrorIs(t, last, kv.ErrClosed)
	assert.Less(t, n, 40)
}

// TestNilContext: every call refuses a nil context with an error wrapping
// indextable.ErrInvalidArgument, as the core's stores do, and panics not.
func TestNilContext(t *testing.T) {
	s := open(t, t.TempDir(), pebblestore.Options{})
	defer s.Close()
	var nilCtx context.Context
	var b kv.Batch
	b.Put([]byte("k"), []byte("v"))
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(nilCtx, []byte("k")); return err }},
		{"GetMany", func() error { _, err := s.GetMany(nilCtx, [][]byte{[]byte("k")}, nil); return err }},
		{"Apply", func() error { return s.Apply(nilCtx, &b) }},
		{"Apply of an empty batch", func() error { return s.Apply(nilCtx, &kv.Batch{}) }},
		{"Scan", func() error {
			for _, err := range s.Scan(nilCtx, kv.ScanRange{}) {
				return err
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = tc.call() })
			require.ErrorIs(t, err, indextable.ErrInvalidArgument)
			assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
		})
	}
	_, err := s.Get(context.Background(), []byte("k"))
	assert.ErrorIs(t, err, kv.ErrNotFound, "the batch was not applied")
}

// TestApplyBatchTooLarge: Pebble panics on a batch of 4 GiB or more, so
// Apply refuses one with an error wrapping kv.ErrInvalidBatch,
// and writes nothing. The values are never touched, so the memory they
// reserve is never used.
func TestApplyBatchTooLarge(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("no slice of 2 GiB")
	}
	ctx := context.Background()
	s := open(t, t.TempDir(), pebblestore.Options{})
	defer s.Close()
	// One key per batch is as big as a slice: the core's check of the
	// batch compares keys, which the race detector reads whole.
	big := make([]byte, 4<<30)
	half := big[:2<<30]
	for _, tc := range []struct {
		name string
		fill func(b *kv.Batch)
	}{
		{"one value", func(b *kv.Batch) { b.Put([]byte("k"), big) }},
		{"two values", func(b *kv.Batch) { b.Put([]byte("k1"), half); b.Put([]byte("k2"), half) }},
		{"a deleted key", func(b *kv.Batch) { b.Delete(big) }},
		{"a key and a value", func(b *kv.Batch) { b.Put(half, half) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b kv.Batch
			tc.fill(&b)
			var err error
			require.NotPanics(t, func() { err = s.Apply(ctx, &b) })
			require.ErrorIs(t, err, kv.ErrInvalidBatch)
			assert.Equal(t, 1, strings.Count(err.Error(), "pebblestore:"), err.Error())
			t.Log(err)
			for _, err := range s.Scan(ctx, kv.ScanRange{Limit: 1}) {
				require.NoError(t, err)
				t.Fatal("Apply wrote")
			}
		})
	}
}

type schemaRec struct {
	ID         int
	Town, Name string
}

// TestOlderSchema: two tables of one Pebble store, the second opened with
// one more index, as a newer program would during a rolling deploy. The
// older table learns the index from the catalog and maintains it from its
// next write, so after Build the new index holds every record; an index
// with a Key func, which the older program cannot compute, makes its
// writes fail with ErrStaleSchema and change nothing; a drop leaves no
// entry behind once Build has waited out the schema lease.
func TestOlderSchema(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), pebblestore.Options{NoSync: true})
	defer s.Close()
	town := indextable.Index[schemaRec]{Name: "town", Fields: []string{"Town"}}
	name := indextable.Index[schemaRec]{Name: "name", Fields: []string{"Name"}}
	upper := indextable.Index[schemaRec]{Name: "upper", Key: func(r schemaRec) []indextable.Tuple { return []indextable.Tuple{{strings.ToUpper(r.Name)}} }}
	openAs := func(indexes ...indextable.Index[schemaRec]) *indextable.Table[schemaRec] {
		tbl, err := indextable.Open(ctx, s, indextable.Schema[schemaRec]{Name: "r", PrimaryKey: []string{"ID"}, Indexes: indexes, SchemaLease: 20 * time.Millisecond})
		require.NoError(t, err)
		return tbl
	}
	requireClean := func(tbl *indextable.Table[schemaRec]) {
		rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
		require.NoError(t, err)
		require.Zero(t, rep.Total(), "%v", rep.Samples)
	}
	older := openAs(town)
	_, err := older.Insert(ctx, schemaRec{ID: 1, Town: "Oslo", Name: "A"})
	require.NoError(t, err)
	newer := openAs(town, name)
	_, err = older.Insert(ctx, schemaRec{ID: 2, Town: "Oslo", Name: "B"})
	require.NoError(t, err)
	require.NoError(t, newer.Build(ctx, indextable.BuildOptions{}))
	requireClean(newer)
	n, err := newer.Count(ctx, indextable.Query{Index: "name"})
	require.NoError(t, err)
	require.Equal(t, 2, n)

	computed := openAs(town, name, upper)
	_, err = older.Insert(ctx, schemaRec{ID: 3, Town: "Oslo", Name: "C"})
	require.ErrorIs(t, err, indextable.ErrStaleSchema)
	_, err = older.Get(ctx, 3)
	require.ErrorIs(t, err, kv.ErrNotFound)

	dropped := openAs(town) // drops "name" and "upper"
	_, err = computed.Insert(ctx, schemaRec{ID: 3, Town: "Oslo", Name: "C"})
	require.NoError(t, err, "the drop is learnt")
	require.NoError(t, dropped.Build(ctx, indextable.BuildOptions{}))
	requireClean(dropped)
	nameIndex, err := kv.EncodeTuple("name")
	require.NoError(t, err)
	for e, err := range s.Scan(ctx, kv.ScanRange{}) {
		require.NoError(t, err)
		k, ok := kv.ParseKey(e.Key)
		require.False(t, ok && k.Space == kv.SpaceIndex && bytes.Equal(k.Index, nameIndex), "an entry of the dropped index: %q", e.Key)
	}
}

// TestManyExpectations: a batch with enough expectations to be checked
// with one iterator checks each as a Get would: values, empty values,
// absent keys (the empty key too), and fails whole on any one.
func TestManyExpectations(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), pebblestore.Options{NoSync: true})
	defer s.Close()
	var b kv.Batch
	for i := range 12 {
		b.Put([]byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)))
	}
	b.Put([]byte("empty"), []byte{})
	require.NoError(t, s.Apply(ctx, &b))
	expect := func(last kv.Op) error {
		var b kv.Batch
		for i := 11; i >= 0; i-- { // out of key order
			b.ExpectValue([]byte(fmt.Sprint("k", i)), []byte(fmt.Sprint("v", i)))
		}
		b.ExpectValue([]byte("empty"), []byte{})
		b.ExpectAbsent([]byte("k5x"))
		b.ExpectAbsent(nil)
		b.Put([]byte("new"), []byte("n"))
		switch last.Kind {
		case kv.OpExpectValue:
			b.ExpectValue(last.Key, last.Value)
		case kv.OpExpectAbsent:
			b.ExpectAbsent(last.Key)
		}
		return s.Apply(ctx, &b)
	}
	for _, tc := range []struct {
		name string
		last kv.Op
	}{
		{"a value changed", kv.Op{Kind: kv.OpExpectValue, Key: []byte("k3"), Value: []byte("other")}},
		{"a key present", kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("k7")}},
		{"an empty value taken for absent", kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("empty")}},
		{"an absent key taken for empty", kv.Op{Kind: kv.OpExpectValue, Key: []byte("zz"), Value: []byte{}}},
	} {
		require.ErrorIs(t, expect(tc.last), kv.ErrConflict, tc.name)
		_, err := s.Get(ctx, []byte("new"))
		require.ErrorIs(t, err, kv.ErrNotFound, tc.name)
	}
	require.NoError(t, expect(kv.Op{}))
	v, err := s.Get(ctx, []byte("new"))
	require.NoError(t, err)
	require.Equal(t, "n", string(v))
}

// TestMemTableSize: a store with larger memtables holds, unflushed, the
// writes that fill several of Pebble's default ones.
func TestMemTableSize(t *testing.T) {
	value := bytes.Repeat([]byte("v"), 1<<10)
	for _, tc := range []struct {
		name    string
		opts    pebblestore.Options
		flushed bool
	}{
		{"default", pebblestore.Options{NoSync: true}, true},
		{"64 MiB", pebblestore.Options{NoSync: true, MemTableSize: 64 << 20}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), tc.opts)
			defer s.Close()
			for i := range 12 { // 12 MiB
				var b kv.Batch
				for j := range 1 << 10 {
					b.Put(fmt.Appendf(nil, "k%02d%04d", i, j), value)
				}
				require.NoError(t, s.Apply(context.Background(), &b))
			}
			require.Equal(t, tc.flushed, s.DB().Metrics().Flush.Count > 0)
		})
	}
}

// keptRec is a record whose every generation has strings of the same
// lengths, so that a value overwritten in place would show.
type keptRec struct {
	ID   string
	Name string
	Town string
	Tags []string
	Data []byte
	N    int
}

func keptRecRec(id, gen int) keptRec {
	// Every generation has strings of the same lengths, so that a value
	// overwritten in place would show.
	return keptRec{
		ID:   fmt.Sprintf("id%03d", id),
		Name: fmt.Sprintf("name-%03d-%06d", id, gen),
		Town: fmt.Sprintf("town-%02d-%06d", id%7, gen),
		Tags: []string{fmt.Sprintf("tag-%06d", gen), fmt.Sprintf("t%03d", id)},
		Data: []byte(fmt.Sprintf("data-%06d", gen)),
		N:    gen,
	}
}

func keptCopy(r keptRec) keptRec {
	c := r
	c.ID = strings.Clone(r.ID)
	c.Name = strings.Clone(r.Name)
	c.Town = strings.Clone(r.Town)
	c.Tags = nil
	for _, s := range r.Tags {
		c.Tags = append(c.Tags, strings.Clone(s))
	}
	c.Data = bytes.Clone(r.Data)
	return c
}

// TestGetRecordsStayPut: records that Get, a transaction's Get and Find
// returned stay as they were while writers upsert, delete and transact on
// the same records: a table decodes a Get's record in place, sharing the
// value the store returned (kv.Store lets a caller keep it), on Pebble as
// on the memory store. Run under -race in CI.
func TestGetRecordsStayPut(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) kv.Store{
		"memory": func(t *testing.T) kv.Store { return indextable.NewMemoryStore() },
		"pebble": func(t *testing.T) kv.Store {
			s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{NoSync: true})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
		"sharded-pebble": func(t *testing.T) kv.Store {
			var shards []kv.Store
			for range 2 {
				s, err := pebblestore.Open(t.TempDir(), pebblestore.Options{NoSync: true})
				require.NoError(t, err)
				shards = append(shards, s)
			}
			s, err := indextable.OpenShardedStore(ctx, shards)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		for _, codec := range []indextable.Codec{&indextable.BinaryCodec{}, indextable.JSONCodec{}} {
			t.Run(fmt.Sprintf("%s/%T", name, codec), func(t *testing.T) {
				store := open(t)
				tbl, err := indextable.Open(ctx, store, indextable.Schema[keptRec]{SchemaLease: 20 * time.Millisecond, Name: "kept", PrimaryKey: []string{"ID"}, Codec: codec,
					Indexes: []indextable.Index[keptRec]{
						{Name: "town", Fields: []string{"Town"}, Strategy: indextable.KeysOnly},
						{Name: "name", Fields: []string{"Name"}, Unique: !strings.HasPrefix(name, "sharded"), Strategy: indextable.FullCopy},
						{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: indextable.Partial, Projection: []string{"Name"}},
					}})
				require.NoError(t, err)
				const n = 24
				for i := range n {
					_, err := tbl.Insert(ctx, keptRecRec(i, 0))
					require.NoError(t, err)
				}
				type kept struct{ got, want keptRec }
				var (
					mu   sync.Mutex
					all  []kept
					gen  atomic.Int64
					wg   sync.WaitGroup
					stop atomic.Bool
				)
				rounds := 600
				if testing.Short() {
					rounds = 40
				}
				keep := func(r keptRec) {
					mu.Lock()
					all = append(all, kept{r, keptCopy(r)})
					mu.Unlock()
				}
				for w := range 3 { // readers
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; !stop.Load(); i++ {
							id := fmt.Sprintf("id%03d", (i*7+w)%n)
							r, _, err := tbl.GetVersioned(ctx, id)
							if err == nil {
								keep(r)
							} else if !errors.Is(err, indextable.ErrNotFound) {
								t.Error(err)
								return
							}
							if i%5 == 0 {
								for r, err := range tbl.Find(ctx, indextable.Query{Index: "town", Eq: indextable.Tuple{r.Town}}) {
									if err == nil {
										keep(r)
									}
								}
							}
							if i%7 == 0 {
								_ = indextable.Transact(ctx, store, func(tx *indextable.Tx) error {
									r, err := tbl.In(tx).Get(ctx, id)
									if err == nil {
										keep(r)
									}
									return nil
								})
							}
						}
					}()
				}
				for w := range 2 { // writers
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range rounds {
							id := (i*5 + w) % n
							g := int(gen.Add(1))
							switch i % 4 {
							case 0, 1:
								if _, err := tbl.Upsert(ctx, keptRecRec(id, g)); err != nil && !errors.Is(err, indextable.ErrConflict) {
									t.Error(err)
								}
							case 2:
								if err := tbl.Delete(ctx, fmt.Sprintf("id%03d", id)); err != nil && !errors.Is(err, indextable.ErrNotFound) {
									t.Error(err)
								}
							case 3:
								err := indextable.Transact(ctx, store, func(tx *indextable.Tx) error {
									_, err := tbl.In(tx).Upsert(ctx, keptRecRec(id, g))
									return err
								})
								if err != nil && !errors.Is(err, indextable.ErrConflict) {
									t.Error(err)
								}
							}
						}
					}()
				}
				// stop the readers once the writers are done
				done := make(chan struct{})
				go func() {
					for gen.Load() < int64(2*rounds) {
						time.Sleep(time.Millisecond)
					}
					stop.Store(true)
					close(done)
				}()
				<-done
				wg.Wait()
				require.NotEmpty(t, all)
				for _, k := range all {
					require.Equal(t, k.want, k.got, "a record read earlier changed")
				}
				t.Logf("%d records kept", len(all))
			})
		}
	}
}
