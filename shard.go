package indextable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// ErrInvalidSharding reports a ShardedStore asked for with no shards, a
// nil or repeated shard, or an unknown IndexSharding.
var ErrInvalidSharding = errors.New("indextable: invalid sharding")

// IndexSharding is the rule that spreads an index table over the shards of
// a ShardedStore.
type IndexSharding uint8

const (
	// ShardByLeadingKey places an index entry on the shard that its first
	// key component hashes to: all of Redmond in a Town, LastName index
	// lies on one shard, so an exact or prefix read of it queries one
	// shard. A hot leading value makes a hot shard.
	ShardByLeadingKey IndexSharding = iota
	// ShardByHash places an index entry by a hash of its whole key (and,
	// unless the index is unique, its record's primary key): even one hot
	// key value is spread, and every range read queries all shards,
	// merging their ordered streams.
	ShardByHash
)

// String names the rule.
func (r IndexSharding) String() string {
	switch r {
	case ShardByLeadingKey:
		return "by leading key"
	case ShardByHash:
		return "by hash"
	}
	return fmt.Sprintf("IndexSharding(%d)", uint8(r))
}

// ShardOption configures a ShardedStore.
type ShardOption func(*ShardedStore) error

// WithIndexSharding sets the rule of every index table that no
// WithShardedIndex names. The default is ShardByLeadingKey.
func WithIndexSharding(rule IndexSharding) ShardOption {
	return func(s *ShardedStore) error {
		if rule > ShardByHash {
			return fmt.Errorf("%w: unknown rule %v", ErrInvalidSharding, rule)
		}
		s.rule = rule
		return nil
	}
}

// WithShardedIndex sets the rule of index table index of table table.
func WithShardedIndex(table, index string, rule IndexSharding) ShardOption {
	return func(s *ShardedStore) error {
		if rule > ShardByHash {
			return fmt.Errorf("%w: index %q of table %q: unknown rule %v", ErrInvalidSharding, index, table, rule)
		}
		t := string(tuple.AppendString(nil, table))
		if s.rules[t] == nil {
			s.rules[t] = map[string]IndexSharding{}
		}
		s.rules[t][string(tuple.AppendString(nil, index))] = rule
		return nil
	}
}

// WithStoredLayout takes the index sharding rules from the layout record
// of the first shard, in place of those other options set: a tool opens a
// store so without its program. OpenShardedStore still checks every
// shard's record; a first shard with none returns an error wrapping
// ErrInvalidSharding.
func WithStoredLayout() ShardOption {
	return func(s *ShardedStore) error {
		s.stored = true
		return nil
	}
}

// ShardedStore is a Store spread over several Stores, its shards, of any
// backends. It is the pattern's sharded fact table: a record lies on the
// shard that its first primary key component hashes to (see ShardFor), and
// so do its queued changes and the entries of its table's intra-partition
// indexes. An index entry holds its record's primary key, so a read that
// found it fetches the record from its shard directly, with no search; it
// holds no shard number, which would tie every entry to the number of
// shards. An index table is itself sharded by its IndexSharding rule. The
// catalog and the maintainers' leases lie on the first shard.
//
// Its Atomicity is one shard (and, within a shard whose own scope is
// partitioned, one partition): a write whose index entries lie on other
// shards than its record commits the record with a change record, and a
// maintainer (Table.RunMaintainer or Table.ApplyPending) applies the
// entries, as on any partitioned store. A scan within one record, or
// within one leading key of a ShardByLeadingKey index, queries one shard;
// any other scan queries every shard at once and merges their ordered
// streams, with Limit and After applied across shards.
//
// Over two shards or more, as on any partitioned store, a unique index
// must lead with the first primary key field, so that its entries lie on
// their records' shards (a key is then unique among the records of one
// value of that field); Open refuses any other with ErrInvalidSchema.
//
// The number of shards is fixed: a store reopened over a different number
// of shards would misplace its keys, so OpenShardedStore refuses it.
// Resharding is not built in. Jump Consistent Hash keeps a move small: from
// N to N+1 shards only the keys that land on the new shard move (about
// 1/(N+1) of the records and of the index entries), and from N to N-1 only
// those of the last shard; removing any other shard moves most keys. An
// offline move stops the writers and drains the queue, copies each key
// whose shard differs under the new count to its new shard and deletes it
// from the old, deletes every shard's layout record, then reopens the store
// over the new shards and runs Verify. Moving online would take writes to
// both placements, and reads that try the new shard, then the old, until
// the copy ends.
type ShardedStore struct {
	shards []kv.Store
	parts  []func([]byte) []byte // each shard's own Partition, or nil
	rule   IndexSharding
	rules  map[string]map[string]IndexSharding // by encoded table, index name
	atom   kv.Atomicity
	stable bool // every shard's values may be kept
	stored bool // take the rules from the first shard's layout record
	closed atomic.Bool
}

// OpenShardedStore returns a store spread over shards, which it owns:
// Close closes them (on an error the caller keeps them). The number and
// order of shards and the index sharding rules place every key, so each
// shard keeps a layout record of them, written the first time and hidden
// from Get and Scan; opened again with another layout, OpenShardedStore
// returns an error wrapping ErrInvalidSharding that says what differs.
//
// Do not nest ShardedStores: shards of shards would all use the same hash.
func OpenShardedStore(ctx context.Context, shards []kv.Store, opts ...ShardOption) (*ShardedStore, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if len(shards) == 0 || len(shards) > maxShards {
		return nil, fmt.Errorf("%w: %d shards, want 1 to %d", ErrInvalidSharding, len(shards), maxShards)
	}
	s := &ShardedStore{shards: slices.Clone(shards), rules: map[string]map[string]IndexSharding{}, stable: true}
	for i, sh := range shards {
		if sh == nil {
			return nil, wrapErrorf(ErrInvalidSharding, fmt.Errorf("%w: shard %d is nil", ErrInvalidArgument, i), "")
		}
		for j, prev := range shards[:i] {
			if v := reflect.ValueOf(sh); v.Comparable() && v.Equal(reflect.ValueOf(prev)) {
				return nil, fmt.Errorf("%w: shards %d and %d are one store", ErrInvalidSharding, j, i)
			}
		}
		st, ok := sh.(kv.StableStore)
		s.stable = s.stable && ok && st.StableValues()
		a := sh.Atomicity()
		s.parts = append(s.parts, a.Partition)
		s.atom.MaxOps = minBound(s.atom.MaxOps, a.MaxOps)
		s.atom.MaxWrites = minBound(s.atom.MaxWrites, a.MaxWrites)
		s.atom.MaxBytes = minBound(s.atom.MaxBytes, a.MaxBytes)
		s.atom.MaxKeyBytes = minBound(s.atom.MaxKeyBytes, a.MaxKeyBytes)
		s.atom.MaxValueBytes = minBound(s.atom.MaxValueBytes, a.MaxValueBytes)
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: shard option %d is nil", ErrInvalidArgument, i)
		}
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	if s.stored {
		if err := s.readRules(ctx); err != nil {
			return nil, err
		}
	}
	if len(shards) == 1 {
		s.atom.Partition = s.parts[0]
	} else {
		s.atom.Partition = s.partition
	}
	if err := s.checkLayout(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// layoutKey holds, on each shard, the layout record: which shard of how
// many it is, and the index sharding rules. No tuple starts with 0xFF, so
// no table's key is it.
var layoutKey = []byte("\xff\xffindextable shard layout")

// layout describes shard i of s's layout.
func (s *ShardedStore) layout(i int) string {
	var rules []string
	for table, indexes := range s.rules {
		t, _, _ := kv.DecodeElement([]byte(table))
		for index, rule := range indexes {
			if rule == s.rule {
				continue // places as the default does
			}
			ix, _, _ := kv.DecodeElement([]byte(index))
			rules = append(rules, fmt.Sprintf(", index %q of table %q %v", ix, t, rule))
		}
	}
	slices.Sort(rules)
	return fmt.Sprintf("shard %d of %d; index tables %v%s", i, len(s.shards), s.rule, strings.Join(rules, ""))
}

// readRules sets s's index sharding rules to those of the first shard's
// layout record, which layout wrote.
func (s *ShardedStore) readRules(ctx context.Context) error {
	v, err := s.shards[0].Get(ctx, layoutKey)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: shard 0 keeps no layout record", ErrInvalidSharding)
	}
	if err != nil {
		return fmt.Errorf("shard 0: layout: %w", err)
	}
	bad := fmt.Errorf("%w: shard 0: layout record %q", ErrInvalidSharding, v)
	parseRule := func(rest string) (IndexSharding, string, bool) {
		for _, r := range []IndexSharding{ShardByLeadingKey, ShardByHash} {
			if after, ok := strings.CutPrefix(rest, r.String()); ok {
				return r, after, true
			}
		}
		return 0, rest, false
	}
	quoted := func(rest string) (string, string, bool) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", rest, false
		}
		name, err := strconv.Unquote(q)
		return name, rest[len(q):], err == nil
	}
	_, rest, ok := strings.Cut(string(v), "; index tables ")
	if !ok {
		return bad
	}
	if s.rule, rest, ok = parseRule(rest); !ok {
		return bad
	}
	s.rules = map[string]map[string]IndexSharding{}
	for rest != "" {
		var index, table string
		var rule IndexSharding
		if rest, ok = strings.CutPrefix(rest, ", index "); !ok {
			return bad
		}
		if index, rest, ok = quoted(rest); !ok {
			return bad
		}
		if rest, ok = strings.CutPrefix(rest, " of table "); !ok {
			return bad
		}
		if table, rest, ok = quoted(rest); !ok {
			return bad
		}
		if rest, ok = strings.CutPrefix(rest, " "); !ok {
			return bad
		}
		if rule, rest, ok = parseRule(rest); !ok {
			return bad
		}
		if err := WithShardedIndex(table, index, rule)(s); err != nil {
			return err
		}
	}
	return nil
}

// checkLayout compares every shard's layout record with s's layout, and
// writes it on the shards that have none.
func (s *ShardedStore) checkLayout(ctx context.Context) error {
	var missing []int
	for i, sh := range s.shards {
		v, err := sh.Get(ctx, layoutKey)
		switch {
		case errors.Is(err, ErrNotFound):
			missing = append(missing, i)
		case err != nil:
			return fmt.Errorf("shard %d: layout: %w", i, err)
		case string(v) != s.layout(i):
			return fmt.Errorf("%w: shard %d was opened as %q, now as %q", ErrInvalidSharding, i, v, s.layout(i))
		}
	}
	for _, i := range missing {
		var b kv.Batch
		b.ExpectAbsent(layoutKey)
		b.Put(layoutKey, []byte(s.layout(i)))
		if err := s.shards[i].Apply(ctx, &b); err != nil {
			return fmt.Errorf("shard %d: layout: %w", i, err)
		}
	}
	return nil
}

// IsShard reports whether store is one shard of a ShardedStore, from the
// layout record the ShardedStore keeps on it, and if so which shard, from 0,
// of how many. A tool that opens a store's directory can so refuse to read
// one shard as a whole store. A ShardedStore itself is no shard: it hides
// the record. A record it cannot read returns an error wrapping
// ErrInvalidSharding.
func IsShard(ctx context.Context, store kv.Store) (index, count int, ok bool, err error) {
	v, err := store.Get(ctx, layoutKey)
	switch {
	case errors.Is(err, ErrNotFound):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("shard layout: %w", err)
	}
	if _, err := fmt.Sscanf(string(v), "shard %d of %d;", &index, &count); err != nil || count < 1 || index < 0 || index >= count {
		return 0, 0, false, fmt.Errorf("%w: shard layout record %q", ErrInvalidSharding, v)
	}
	return index, count, true, nil
}

// maxShards bounds the shards of a ShardedStore, so that two bytes name one
// in a partition.
const maxShards = 1 << 16

// minBound returns the tighter of two bounds, where 0 is none.
func minBound(a, b int) int {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// Shards returns the number of shards.
func (s *ShardedStore) Shards() int { return len(s.shards) }

// Shard returns shard i, as given to OpenShardedStore; like indexing a
// slice, it panics unless 0 <= i < Shards().
func (s *ShardedStore) Shard(i int) kv.Store { return s.shards[i] }

// ShardFor returns the shard, among n, of a record whose first primary key
// component is v: Jump Consistent Hash (Lamping and Veach, 2014) to n
// buckets of the 64-bit FNV-1a hash of v's tuple encoding (see
// kv.EncodeTuple). Both are fixed by their definitions, so records keep
// their shards across processes, platforms and versions of this package. A
// ShardByLeadingKey index entry lies on the shard ShardFor gives its first
// key component. Pass v as the type of its field: 1 as an int and 1 as a
// float64 encode, and hash, differently. It returns an error wrapping
// ErrUnsupportedType if v cannot be a key, and ErrInvalidSharding if n is
// not in 1..65536.
func ShardFor(n int, v any) (int, error) {
	if n < 1 || n > maxShards {
		return 0, fmt.Errorf("%w: %d shards, want 1 to %d", ErrInvalidSharding, n, maxShards)
	}
	elem, err := kv.AppendElement(nil, v)
	if err != nil {
		return 0, err
	}
	return jumpHash(fnv1a(elem), n), nil
}

// ShardOf returns the shard that holds key.
func (s *ShardedStore) ShardOf(key []byte) int {
	i, _ := s.route(key)
	return i
}

// route returns the shard of key and, when there is one, a tuple prefix of
// key whose extensions, the keys from it to it+0xFF, all lie on that shard
// (nil if none).
//
// A key of a table (see KeySpace) is routed by its space and Lead: records
// and queued changes by the record's first primary key component,
// intra-partition index entries by their first key component, which is the
// record's; index entries by their table's rule; the catalog, the leases
// and anything else of a table to shard 0. Any other key is routed by a
// hash of the whole key.
func (s *ShardedStore) route(key []byte) (int, []byte) {
	if len(s.shards) == 1 {
		return 0, key[:0]
	}
	k, ok := kv.ParseKey(key)
	if !ok {
		return s.hashed(key), nil
	}
	through := key[:len(key)-len(k.Rest)] // the key up to Rest
	switch k.Space {
	case kv.SpaceRecords, kv.SpaceQueue, kv.SpaceIntra, kv.SpaceIndex:
		if k.Lead == nil {
			return s.hashed(key), nil
		}
		if k.Space == kv.SpaceIndex && s.indexRule(k.Table, k.Index) == ShardByHash {
			return s.hashed(key[len(through)-len(k.Lead):]), nil
		}
		return s.hashed(k.Lead), through
	}
	return 0, through
}

func (s *ShardedStore) indexRule(table, index []byte) IndexSharding {
	if rule, ok := s.rules[string(table)][string(index)]; ok {
		return rule
	}
	return s.rule
}

func (s *ShardedStore) hashed(b []byte) int { return jumpHash(fnv1a(b), len(s.shards)) }

// jumpHash is Jump Consistent Hash: the bucket, among n, of key. Growing n
// to n+1 moves only a 1/(n+1) share of keys, all to the new bucket.
func jumpHash(key uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// partition is the store's Atomicity.Partition: the shard, then the
// shard's own partition of key.
func (s *ShardedStore) partition(key []byte) []byte {
	i := s.ShardOf(key)
	p := []byte{byte(i >> 8), byte(i)}
	if part := s.parts[i]; part != nil {
		p = append(p, part(key)...)
	}
	return p
}

func (s *ShardedStore) check(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sharded store: %w", ErrClosed)
	}
	if ctx == nil {
		return fmt.Errorf("sharded store: %w", checkContext(ctx))
	}
	return ctx.Err()
}

// Get returns the value of key from its shard.
func (s *ShardedStore) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if isLayout(key) {
		return nil, fmt.Errorf("%w: the shard layout record", ErrNotFound)
	}
	return s.shards[s.ShardOf(key)].Get(ctx, key)
}

// GetMany looks keys up on their shards, on several at once.
func (s *ShardedStore) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if err := s.check(ctx); err != nil {
		return dst, err
	}
	if len(keys) == 0 {
		return dst, nil
	}
	first := s.ShardOf(keys[0])
	of := make([]int, len(keys))
	for i, k := range keys {
		of[i] = s.ShardOf(k)
		if of[i] != first {
			first = -1
		}
	}
	if first >= 0 && !slices.ContainsFunc(keys, isLayout) {
		return s.shards[first].GetMany(ctx, keys, dst)
	}
	type lookup struct {
		at   []int // positions in keys
		keys [][]byte
		vals [][]byte
		err  error
	}
	lookups := make([]lookup, len(s.shards))
	for i, k := range keys {
		if isLayout(k) {
			continue // absent
		}
		l := &lookups[of[i]]
		l.at = append(l.at, i)
		l.keys = append(l.keys, k)
	}
	var wg sync.WaitGroup
	for i := range lookups {
		if l := &lookups[i]; len(l.keys) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.vals, l.err = s.shards[i].GetMany(ctx, l.keys, nil)
			}()
		}
	}
	wg.Wait()
	var errs []error
	for i, l := range lookups {
		if l.err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, l.err))
		}
	}
	if len(errs) > 0 {
		return dst, errors.Join(errs...)
	}
	start := len(dst)
	dst = append(dst, make([][]byte, len(keys))...)
	for _, l := range lookups {
		for j, at := range l.at {
			dst[start+at] = l.vals[j]
		}
	}
	return dst, nil
}

func isLayout(key []byte) bool { return bytes.Equal(key, layoutKey) }

// Apply applies b on the one shard that holds its keys. A batch whose keys
// lie on two shards returns an error wrapping ErrInvalidBatch.
func (s *ShardedStore) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	// Every shard is held to the tightest bounds, which Atomicity reports.
	bounds := s.atom
	bounds.Partition = nil // the shards' own, checked by each shard
	if err := bounds.Allows(b); err != nil {
		return err
	}
	shard := s.ShardOf(b.Ops()[0].Key)
	for _, op := range b.Ops() {
		if i := s.ShardOf(op.Key); i != shard {
			return fmt.Errorf("%w: keys on shards %d and %d, atomicity scope is one shard", ErrInvalidBatch, shard, i)
		}
		if isLayout(op.Key) {
			return fmt.Errorf("%w: key %q is the shard layout record's", ErrInvalidBatch, op.Key)
		}
	}
	return s.shards[shard].Apply(ctx, b)
}

// Atomicity is one shard, and within it the shard's own scope; MaxOps,
// MaxWrites, MaxBytes, MaxKeyBytes and MaxValueBytes are the tightest of
// the shards', and Apply holds every shard to them.
func (s *ShardedStore) Atomicity() kv.Atomicity { return s.atom }

// StableValues reports whether every shard's values may be kept
// (kv.StableStore): a scan across shards yields them from pages of its own,
// which it never reuses.
func (s *ShardedStore) StableValues() bool { return s.stable }

// Close closes every shard.
func (s *ShardedStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	for i, sh := range s.shards {
		if err := sh.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Scan yields the entries of r in order. A range within one record, or
// within one leading key of a ShardByLeadingKey index table, is one shard's
// scan; any other is every shard's at once, merged. A merged scan reads
// each shard in pages: the first pages of all shards at once (64 entries,
// or a shard's share of Limit and 8 more), then a shard's next page, twice
// as large up to 1024, when the merge has used its last. No shard reads
// more than Limit entries, and After resumes every shard after one key, so
// a cursor (Table.FindPage) works across shards as on one store.
func (s *ShardedStore) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	if err := s.check(ctx); err != nil {
		return func(yield func(kv.Entry, error) bool) { yield(kv.Entry{}, err) }
	}
	if i, ok := s.scanShard(r); ok {
		if (r.End != nil && bytes.Compare(r.End, layoutKey) <= 0) || bytes.Compare(r.Start, layoutKey) > 0 {
			return s.shards[i].Scan(ctx, r) // a range without the layout record
		}
		return func(yield func(kv.Entry, error) bool) {
			limit, sr := r.Limit, r // r stays as it is, for the next range over it
			// One more, in case one is the layout record; none can follow
			// math.MaxInt.
			if limit > 0 && limit < math.MaxInt {
				sr.Limit++
			}
			n := 0
			for e, err := range s.shards[i].Scan(ctx, sr) {
				if err == nil && isLayout(e.Key) {
					continue
				}
				if !yield(e, err) {
					return
				}
				if n++; n == limit {
					return
				}
			}
		}
	}
	return s.merge(ctx, r)
}

// scanShard returns the one shard that holds every key of r, if there is
// one.
func (s *ShardedStore) scanShard(r kv.ScanRange) (int, bool) {
	if len(s.shards) == 1 {
		return 0, true
	}
	if r.Start == nil {
		return 0, false
	}
	i, prefix := s.route(r.Start)
	if prefix == nil {
		return 0, false
	}
	// The keys that extend the tuple prefix end before prefix+0xFF (see
	// tupleEnd); so do any other bytes after it, which route with it.
	// (prefix is r.Start's memory: extend a copy.)
	return i, r.End != nil && bytes.Compare(r.End, tuple.End(bytes.Clone(prefix))) <= 0
}

// A page is a run of one shard's scan, copied: at most pageMax entries.
type page struct {
	entries []kv.Entry
	err     error
}

const (
	pageMin   = 64
	pageMax   = 1024
	pageSlack = 8 // beyond a shard's share of a limit, in its first page
)

// merge scans r on every shard at once and yields their entries in order.
// Each shard is read by a goroutine in pages: the first pages of all
// shards at once, then a shard's next page when the merge has used its
// last, so no shard's scan stays open while the loop body runs and no
// shard reads far beyond what the merge yields.
func (s *ShardedStore) merge(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		fctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		// A first page of a limited scan holds a shard's share and some.
		first := pageMin
		if r.Limit > 0 {
			first = min(r.Limit, r.Limit/len(s.shards)+pageSlack, pageMax)
		}
		feeds := make([]feeder, len(s.shards))
		for i, sh := range s.shards {
			f := feeder{pages: make(chan page), more: make(chan struct{}, 1)}
			feeds[i] = f
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.run(fctx, sh, r, first)
			}()
		}
		heads := make([]page, len(feeds)) // each feed's current page, consumed from the front
		live := make([]bool, len(feeds))
		next := func(i int, started bool) error {
			for len(heads[i].entries) == 0 && live[i] {
				if started {
					feeds[i].more <- struct{}{}
				}
				started = true
				p, ok := <-feeds[i].pages
				if !ok {
					live[i] = false
					// A feed closes at its end, or early when ctx is done.
					return ctx.Err()
				}
				if p.err != nil {
					// The page's entries are dropped: they may sort after
					// entries of other shards not yet read.
					return fmt.Errorf("shard %d: %w", i, p.err)
				}
				heads[i] = p
			}
			return nil
		}
		for i := range feeds {
			live[i] = true
			if err := next(i, false); err != nil {
				yield(kv.Entry{}, err)
				return
			}
		}
		for n := 0; r.Limit <= 0 || n < r.Limit; n++ {
			best := -1
			for i := range heads {
				if len(heads[i].entries) == 0 {
					continue
				}
				if best < 0 {
					best = i
					continue
				}
				c := bytes.Compare(heads[i].entries[0].Key, heads[best].entries[0].Key)
				if (c < 0) != r.Reverse {
					best = i
				}
			}
			if best < 0 {
				return
			}
			e := heads[best].entries[0]
			heads[best].entries = heads[best].entries[1:]
			if !yield(e, nil) || n+1 == r.Limit {
				return // and read no page beyond the limit
			}
			if err := next(best, true); err != nil {
				yield(kv.Entry{}, err)
				return
			}
		}
	}
}

// A feeder reads one shard's part of a merged scan.
type feeder struct {
	pages chan page     // the pages, in order; closed after the last
	more  chan struct{} // the merge wants the next page
}

// run sends the entries of r on st, a page at a time, the first of size
// entries, each next one when asked, until the range or r.Limit is
// exhausted, an error, or ctx is done; then closes the pages. It leaves the
// shard's layout record out.
func (f feeder) run(ctx context.Context, st kv.Store, r kv.ScanRange, size int) {
	defer close(f.pages)
	left := r.Limit
	for {
		r.Limit = size
		if left > 0 {
			r.Limit = min(size, left)
		}
		var p page
		var mem []byte    // the page's keys and values, one after another
		var ends []int    // where each key, then each value, ends in mem
		read := 0         // entries read, the layout record included
		var resume []byte // the last key read
		for e, err := range st.Scan(ctx, r) {
			if err != nil {
				p.err = err
				break
			}
			read++
			if isLayout(e.Key) {
				resume = layoutKey
				continue
			}
			if mem == nil {
				mem = make([]byte, 0, 1024) // so that no key or value is nil
			}
			mem = append(mem, e.Key...)
			ends = append(ends, len(mem))
			resume = mem[len(mem)-len(e.Key):]
			mem = append(mem, e.Value...)
			ends = append(ends, len(mem))
		}
		p.entries = make([]kv.Entry, len(ends)/2)
		start := 0
		for i := range p.entries {
			k, v := ends[2*i], ends[2*i+1]
			p.entries[i] = kv.Entry{Key: mem[start:k:k], Value: mem[k:v:v]}
			start = v
		}
		if p.err != nil || read < r.Limit {
			if len(p.entries) > 0 || p.err != nil {
				select {
				case f.pages <- p:
				case <-ctx.Done():
				}
			}
			return
		}
		if len(p.entries) > 0 {
			select {
			case f.pages <- p:
			case <-ctx.Done():
				return
			}
			select {
			case <-f.more:
			case <-ctx.Done():
				return
			}
		}
		if left > 0 {
			if left -= len(p.entries); left <= 0 {
				return
			}
		}
		r.After = bytes.Clone(resume)
		size = min(2*size, pageMax)
	}
}
