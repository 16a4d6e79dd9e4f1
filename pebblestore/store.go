// Package pebblestore is a store for indextable tables, a kv.Store, on
// Pebble, the LSM engine of CockroachDB: a table and its index tables
// persist in one directory, and survive a crash of the process.
//
//	s, err := pebblestore.Open("data", pebblestore.Options{})
//	...
//	customers, err := indextable.Open(ctx, s, schema)
//
// Tables share the directory as key prefixes (the table's name starts each
// of its keys), so one Store holds any number of tables. A batch is one
// Pebble batch: it commits all-or-nothing, and by default waits until it is
// durable. Open takes the directory's lock: a second Open of a directory
// that a store holds, in this process or another, fails with ErrLocked.
//
// A crash test checks what survives a crash: it runs a writer program on a
// directory, with indexes of every strategy, synchronous and then
// eventual, and kills it with SIGKILL at random moments, round after
// round. After each kill it reopens the store, lets a maintainer catch up,
// and checks that every acknowledged write is there with all its index
// entries and that Verify finds no drift (cd pebblestore && go test -run
// TestCrash -v .).
//
// The package lives in a module of its own, so that the indextable core
// never depends on Pebble.
package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/indextable/indextable/kv"
)

// ErrLocked reports a directory that another open store holds, in this
// process or in another one.
var ErrLocked = errors.New("pebblestore: directory in use")

// ErrReadOnly reports a write to a store opened with Options.ReadOnly. It
// wraps kv.ErrReadOnly, on which a maintainer stops.
var ErrReadOnly = fmt.Errorf("pebblestore: %w", kv.ErrReadOnly)

// ErrInvalidDir reports a path that Open cannot keep a store in: an empty
// one, one the system refuses (with a NUL byte, or a name too long), or one
// that names, or passes through, something other than a directory (a file,
// a dangling or looping symbolic link).
var ErrInvalidDir = errors.New("pebblestore: invalid directory")

// ErrNoStore reports an Open of a directory that does not exist or holds
// no store when it must hold one: read-only (Options.ReadOnly), or with
// Pebble's ErrorIfNotExists.
var ErrNoStore = errors.New("pebblestore: no store")

// Options configures Open. The zero value is a durable store with Pebble's
// defaults, a 64 MiB block cache and bloom filters for point reads.
type Options struct {
	// NoSync commits batches without waiting for the write-ahead log to reach
	// the disk. Bulk loads run several times faster, but a crash of the
	// process or the machine may lose the most recent acknowledged batches
	// (never part of one: recovery stops at the first torn batch).
	NoSync bool
	// CacheSize is the block cache's size in bytes; 0 means 64 MiB, and a
	// negative size is an error. Pebble charges its memtables to the cache,
	// so it must exceed twice MemTableSize (4 MiB by default) to hold any
	// blocks: Pebble's own default, 8 MiB, holds none, and every read
	// decompresses its blocks again.
	CacheSize int64
	// MemTableSize is the size of each memtable in bytes; 0 means
	// Pebble's 4 MiB, and a negative size is an error. Small memtables keep
	// memory low; a bulk load of keys that arrive in no order (index
	// entries) flushes and compacts much less with larger ones, such as
	// 64 MiB. CacheSize, when 0, then becomes 4 times MemTableSize if that
	// is more than 64 MiB; a CacheSize set must exceed twice MemTableSize.
	MemTableSize int64
	// Pebble tunes the engine; nil means Pebble's defaults with bloom
	// filters. Open uses a copy, sets its cache size when CacheSize is set
	// or it has none, and its Logger when Logger is set. Its FS and Lock are
	// ignored, and its Comparer replaced by the store's, Pebble's default
	// (the store orders keys by bytes.Compare). Open refuses a Comparer of
	// another name, ReadOnly without Options.ReadOnly, a Cache beside
	// CacheSize, and whatever Pebble's own checks refuse.
	Pebble *pebble.Options
	// Logger receives Pebble's messages: informational ones at Debug level,
	// errors at Error level. Nil drops them.
	Logger *slog.Logger
	// ReadOnly opens an existing store without writing to it, for tools:
	// the directory must hold a store (else Open fails with ErrNoStore),
	// Apply returns an error wrapping ErrReadOnly, and Pebble neither
	// flushes nor compacts. It still takes the directory's lock (creating
	// its LOCK file if there is none), so it fails with ErrLocked while a
	// program has the store open.
	ReadOnly bool
}

// Store is a kv.Store on a Pebble database. It is safe for
// concurrent use.
type Store struct {
	wo       *pebble.WriteOptions
	seed     maphash.Seed
	readOnly bool

	mu   sync.RWMutex // held to read by every call on db, to write by Close
	db   *pebble.DB   // nil once closed
	lock *pebble.Lock

	// stripes serialise batches that share a key, so that a batch's
	// expectations still hold when it commits: Pebble has no conditional
	// writes. Batches on disjoint keys commit concurrently, and Pebble
	// syncs them together. Each also caches expected catalog keys and the
	// value Get last read on it (see stripe).
	stripes [stripeCount]stripe
}

const (
	defaultCache = 64 << 20
	stripeCount  = 256
	firstChunk   = 16   // entries in a scan's first chunk
	maxChunk     = 1024 // most entries one iterator reads before it is closed
)

var _ kv.Store = (*Store)(nil)

// Open opens the store in dir, creating the directory and an empty store if
// needed. It fails with an error wrapping ErrLocked when another store holds
// dir, ErrInvalidDir when dir is empty or not a directory, ErrNoStore when
// dir must hold a store and does not, and kv.ErrInvalidArgument
// when an option is invalid, before it creates anything. A store that
// pebblestore v0.1.0 wrote, Open upgrades to the format of this version,
// unless read-only (see ErrFormat).
func Open(dir string, opts Options) (*Store, error) {
	po, err := pebbleOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir, opts.ReadOnly || po.ErrorIfNotExists); err != nil {
		return nil, err
	}
	// Pebble knows the directories this process holds by path, so every
	// path to one (through a symbolic link, or relative) must be the same.
	dir, err = canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		if isLockHeld(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("pebblestore: locking %s: %w", dir, err)
	}
	po.Lock = lock
	db, err := pebble.Open(dir, po)
	if err != nil {
		lock.Close()
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("%w: %w", ErrNoStore, err)
		}
		return nil, fmt.Errorf("pebblestore: opening %s: %w", dir, err)
	}
	s := &Store{wo: pebble.Sync, seed: maphash.MakeSeed(), db: db, lock: lock, readOnly: opts.ReadOnly}
	if opts.NoSync {
		s.wo = pebble.NoSync
	}
	if err := prepareFormat(db, opts.ReadOnly, s.wo, maxBatchBytes); err != nil {
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return s, nil
}

// pebbleOptions returns the Pebble options of opts, without a Lock, or an
// error wrapping kv.ErrInvalidArgument for an option that is out of
// range, that the store cannot honour, or that Pebble refuses.
func pebbleOptions(opts Options) (*pebble.Options, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("pebblestore: %w: %s", kv.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	po := &pebble.Options{}
	if opts.Pebble != nil {
		po = opts.Pebble.Clone()
	} else {
		for i := range po.Levels {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		}
	}
	switch {
	case opts.CacheSize < 0:
		return nil, invalid("Options.CacheSize %d is negative", opts.CacheSize)
	case po.CacheSize < 0:
		return nil, invalid("Options.Pebble.CacheSize %d is negative", po.CacheSize)
	case opts.CacheSize > 0 && po.Cache != nil:
		return nil, invalid("Options.CacheSize and Options.Pebble.Cache are both set, and Pebble would ignore CacheSize")
	case po.ReadOnly && !opts.ReadOnly:
		return nil, invalid("Options.Pebble.ReadOnly is set: set Options.ReadOnly instead")
	case po.Comparer != nil && po.Comparer.Name != pebble.DefaultComparer.Name:
		return nil, invalid("Options.Pebble.Comparer %q is not Pebble's default, and the store orders keys by bytes.Compare", po.Comparer.Name)
	case opts.MemTableSize < 0 || opts.MemTableSize >= 4<<30:
		return nil, invalid("Options.MemTableSize %d is not between 0 and 4 GiB", opts.MemTableSize)
	case opts.MemTableSize > 0 && po.MemTableSize > 0:
		return nil, invalid("Options.MemTableSize and Options.Pebble.MemTableSize are both set")
	case opts.MemTableSize > 0 && opts.CacheSize > 0 && opts.CacheSize <= 2*opts.MemTableSize:
		return nil, invalid("Options.CacheSize %d does not exceed twice Options.MemTableSize %d: Pebble charges its memtables to the cache, which would hold no blocks", opts.CacheSize, opts.MemTableSize)
	}
	if opts.MemTableSize > 0 {
		po.MemTableSize = uint64(opts.MemTableSize)
	}
	switch {
	case opts.CacheSize > 0:
		po.CacheSize = opts.CacheSize
	case po.CacheSize == 0:
		po.CacheSize = max(defaultCache, 4*opts.MemTableSize)
	}
	po.FS, po.Lock, po.ReadOnly, po.Comparer = vfs.Default, nil, opts.ReadOnly, comparer
	if opts.Logger != nil || po.Logger == nil {
		po.Logger = slogLogger{opts.Logger}
	}
	// pebble.Open runs the same checks, but only once the directory and its
	// lock exist.
	check := po.Clone()
	check.EnsureDefaults()
	if err := check.Validate(); err != nil {
		return nil, invalid("Pebble refuses Options.Pebble: %s", strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
	}
	return po, nil
}

// prepareDir checks that dir can hold a store: that it is a directory,
// which it creates unless mustExist.
func prepareDir(dir string, mustExist bool) error {
	if dir == "" {
		return fmt.Errorf("%w: empty path", ErrInvalidDir)
	}
	var err error
	if mustExist {
		var info fs.FileInfo
		if info, err = os.Stat(dir); err == nil && !info.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrInvalidDir, dir)
		}
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP),
		errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENAMETOOLONG),
		!mustExist && errors.Is(err, fs.ErrExist): // MkdirAll met no directory
		return fmt.Errorf("%w: %w", ErrInvalidDir, err)
	case mustExist && errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrNoStore, err)
	}
	return fmt.Errorf("pebblestore: %w", err)
}

// canonical returns the absolute path of dir with no symbolic links.
func canonical(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// isLockHeld reports whether err is Pebble's refusal of a held lock: the
// operating system's (another process) or its own (this process). An error
// creating the lock file (a directory it may not write, say) is not one.
func isLockHeld(err error) bool {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// DB returns the underlying Pebble database, for metrics, checkpoints and
// compactions. It holds each key under itself, unless the key is empty
// (held under 0x00) or starts with 0x00 (held under 0x00 and the key), and
// the store's format under a key that starts with 0x00 0x01. Writing to
// it directly bypasses the store's conditional
// batches and the indexes, and leaves stale what Apply caches of the keys
// it writes (see Apply); closing it is Close's work: Pebble panics on every
// later call, the store's included. It returns nil once the store is
// closed.
func (s *Store) DB() *pebble.DB {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db
}

// open returns the database under the read lock, or an error for a nil
// or done context or a closed store; the caller must call s.mu.RUnlock
// when err is nil.
func (s *Store) open(ctx context.Context) (*pebble.DB, error) {
	if ctx == nil {
		return nil, fmt.Errorf("pebblestore: %w: nil context", kv.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblestore: %w", err)
	}
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return nil, fmt.Errorf("pebblestore: %w", kv.ErrClosed)
	}
	return s.db, nil
}

// Get returns a copy of the value stored under key, or an error wrapping
// kv.ErrNotFound.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	db, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	st := &s.stripes[s.stripeOf(key)]
	seq := st.writes.Load()
	v, err := get(db, encodeKey(key), nil)
	if err == nil {
		st.noteRead(key, v, seq)
	}
	if err == nil && v == nil {
		return nil, fmt.Errorf("pebblestore: %w", kv.ErrNotFound)
	}
	return v, err
}

// get appends the value of the Pebble key key to dst and returns it
// (non-nil), or nil when key is absent.
func get(db *pebble.DB, key, dst []byte) ([]byte, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pebblestore: get: %w", err)
	}
	if dst == nil {
		dst = make([]byte, 0, len(v))
	}
	dst = append(dst, v...)
	closer.Close()
	return dst, nil
}

// GetMany appends copies of the values stored under keys to dst, in the
// order of keys, with nil for each absent key. It reads them in key order
// with one iterator, so the values are consistent with each other, and
// copies them into one buffer.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	db, err := s.open(ctx)
	if err != nil {
		return dst, err
	}
	defer s.mu.RUnlock()
	it, err := db.NewIter(nil)
	if err != nil {
		return dst, fmt.Errorf("pebblestore: get: %w", err)
	}
	order := make([]int, len(keys)) // the positions of keys, in key order
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	spans := make([][2]int, len(keys)) // of each value in buf; {-1, -1} when absent
	buf := []byte{}                    // never nil: nor is a present empty value
	for _, i := range order {
		spans[i] = [2]int{-1, -1}
		key := encodeKey(keys[i])
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			break
		}
		spans[i][0] = len(buf)
		buf = append(buf, v...)
		spans[i][1] = len(buf)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return dst, fmt.Errorf("pebblestore: get: %w", err)
	}
	for _, sp := range spans {
		if sp[0] < 0 {
			dst = append(dst, nil)
		} else {
			dst = append(dst, buf[sp[0]:sp[1]:sp[1]])
		}
	}
	return dst, nil
}

// Scan yields the entries of r. It reads up to 1,024 entries at a time
// with one Pebble iterator, which it closes before yielding them, so the
// loop body may take its time and call the store; each chunk resumes after
// the last key yielded. Chunks start small, so that a short scan reads
// little.
func (s *Store) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		var (
			chunk         chunk
			after         = r.After
			left, n, last = r.Limit, firstChunk, false
		)
		for !last {
			if r.Limit > 0 && left < n {
				n = left
			}
			if err := s.readChunk(ctx, r, after, n, &chunk); err != nil {
				yield(kv.Entry{}, err)
				return
			}
			for _, e := range chunk.entries {
				if !yield(e, nil) {
					return
				}
			}
			left -= len(chunk.entries)
			last = len(chunk.entries) < n || (r.Limit > 0 && left == 0)
			if !last {
				if chunk.after == nil {
					// Never nil, which would mean no resume point: the last
					// key may be the empty one.
					chunk.after = make([]byte, 0, 64)
				}
				chunk.after = append(chunk.after[:0], chunk.entries[len(chunk.entries)-1].Key...)
				after = chunk.after
				n = min(2*n, maxChunk)
			}
		}
	}
}

// chunk holds the entries of one iterator's read, copied into buf.
type chunk struct {
	entries []kv.Entry
	buf     []byte
	offsets []int // key and value ends in buf, two per entry
	after   []byte
}

// readChunk reads into c up to n entries of r that come strictly after after
// in scan order (from the start of r when after is nil).
func (s *Store) readChunk(ctx context.Context, r kv.ScanRange, after []byte, n int, c *chunk) error {
	c.entries, c.buf, c.offsets = c.entries[:0], c.buf[:0], c.offsets[:0]
	db, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if empty(r, after) {
		return nil
	}
	var lower, upper []byte
	if r.Start != nil {
		lower = encodeKey(r.Start)
	}
	if r.End != nil {
		upper = encodeKey(r.End)
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("pebblestore: scan: %w", err)
	}
	var valid bool
	switch {
	case r.Reverse && after != nil && (r.End == nil || bytes.Compare(after, r.End) < 0):
		valid = it.SeekLT(encodeKey(after))
	case r.Reverse:
		valid = it.Last()
	case after != nil && (r.Start == nil || bytes.Compare(after, r.Start) >= 0):
		key := encodeKey(after)
		valid = it.SeekGE(key)
		if valid && bytes.Equal(it.Key(), key) {
			valid = it.Next()
		}
	default:
		valid = it.First()
	}
	for ; valid; valid = step(it, r.Reverse) {
		key, ok := decodeKey(it.Key())
		if !ok {
			continue // the format marker
		}
		v, err := it.ValueAndErr()
		if err != nil {
			break
		}
		c.buf = append(c.buf, key...)
		c.offsets = append(c.offsets, len(c.buf))
		c.buf = append(c.buf, v...)
		c.offsets = append(c.offsets, len(c.buf))
		if len(c.offsets) == 2*n {
			break
		}
	}
	err = errors.Join(it.Error(), it.Close())
	if err != nil {
		return fmt.Errorf("pebblestore: scan: %w", err)
	}
	start := 0
	for i := 0; i < len(c.offsets); i += 2 {
		k, v := c.offsets[i], c.offsets[i+1]
		c.entries = append(c.entries, kv.Entry{Key: c.buf[start:k:k], Value: c.buf[k:v:v]})
		start = v
	}
	return nil
}

// empty reports a scan that can yield nothing: inverted bounds, or a resume
// point past the end of the range. Pebble's iterators require neither, and
// take an empty End for no bound at all.
func empty(r kv.ScanRange, after []byte) bool {
	if r.End != nil && (len(r.End) == 0 || r.Start != nil && bytes.Compare(r.Start, r.End) >= 0) {
		return true
	}
	if after == nil {
		return false
	}
	if r.Reverse {
		return len(after) == 0 || r.Start != nil && bytes.Compare(after, r.Start) <= 0
	}
	return r.End != nil && bytes.Compare(after, r.End) >= 0
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// Atomicity is unbounded: Pebble commits any batch atomically, and Apply
// refuses one that Pebble cannot hold (4 GiB) with ErrInvalidBatch, as
// the memory store refuses a key or value of 4 GiB.
func (s *Store) Atomicity() kv.Atomicity { return kv.Atomicity{} }

// Close waits for calls in progress, closes the database and releases the
// directory. A second Close returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	err = errors.Join(err, s.lock.Close())
	if err != nil {
		return fmt.Errorf("pebblestore: close: %w", err)
	}
	return nil
}

// slogLogger adapts a *slog.Logger, possibly nil, to Pebble's Logger.
type slogLogger struct{ l *slog.Logger }

func (l slogLogger) Infof(format string, args ...any) {
	if l.l != nil {
		l.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (l slogLogger) Errorf(format string, args ...any) {
	if l.l != nil {
		l.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Fatalf logs and panics: Pebble calls it on corruption it cannot survive,
// and expects it not to return.
func (l slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Errorf("%s", msg)
	panic("pebble: " + msg)
}
