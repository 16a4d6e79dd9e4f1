package indextable_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// limited is a memory store with the bounds of Azure Table storage and the
// partitions of partitionedStore: a store whose limits tests can reach
// without Azurite. It counts 99 operations a batch, expectations included
// (MaxOps), as azstore did before it counted writes alone, which the load
// tests' batch counts assume; writesLimited counts as azstore does.
type limited struct{ *it.MemoryStore }

func (limited) Atomicity() kv.Atomicity {
	return kv.Atomicity{Partition: partitionOf, MaxOps: 99, MaxBytes: 2 << 20, MaxKeyBytes: 383, MaxValueBytes: 704 << 10}
}

func (s limited) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.Atomicity().Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

// writesLimited is limited with azstore's count of a batch: 99 puts and
// deletes (MaxWrites), and any number of expectations.
type writesLimited struct{ *it.MemoryStore }

func (writesLimited) Atomicity() kv.Atomicity {
	a := limited{}.Atomicity()
	a.MaxOps, a.MaxWrites = 0, 99
	return a
}

func (s writesLimited) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.Atomicity().Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

// TestLimitsOfAStore: the conformance of a bounded store's limits, and
// writes that straddle them through a table, on one store and on 4 shards.
func TestLimitsOfAStore(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) kv.Store { return limited{it.NewMemoryStore()} })
	t.Run("shards of which one is bounded", func(t *testing.T) {
		// The sharded store holds every shard to the bounds it declares.
		storetest.TestStore(t, func(t *testing.T) kv.Store {
			s, err := it.OpenShardedStore(context.Background(), []kv.Store{limited{it.NewMemoryStore()}, it.NewMemoryStore()})
			require.NoError(t, err)
			return s
		})
	})
	t.Run("table", func(t *testing.T) { storetest.TestLimits(t, limited{it.NewMemoryStore()}, storetest.LimitsOptions{}) })
	t.Run("writes bounded", func(t *testing.T) {
		// Partitions of raw keys, as memBoundedScope's, so that the suite's
		// batches of several keys run.
		storetest.TestStore(t, func(t *testing.T) kv.Store {
			return l16store{it.NewMemoryStore(), kv.Atomicity{Partition: firstBytePartition, MaxWrites: 10, MaxBytes: 1 << 10}}
		})
		storetest.TestLimits(t, writesLimited{it.NewMemoryStore()}, storetest.LimitsOptions{})
	})
	t.Run("sharded", func(t *testing.T) {
		shards := []kv.Store{limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}}
		s, err := it.OpenShardedStore(context.Background(), shards, it.WithIndexSharding(it.ShardByHash))
		require.NoError(t, err)
		storetest.TestLimits(t, s, storetest.LimitsOptions{})
	})
}

// irec is the record of issue 16's samples: P leads the primary key.
type irec struct {
	P, ID, B string
	Data     []byte
	Tags     []string
}

// TestWritesRefusedUpFront (issue 16, items 1 to 3): on a store with
// Azure's limits, a write whose record, change records or entries the store
// could not hold is refused before anything is written, with an error that
// names the field, the index and the limit, rather than accepted and left
// for a maintainer that can never apply it, or a record that can never be
// deleted.
func TestWritesRefusedUpFront(t *testing.T) {
	ctx := context.Background()
	long := func(n int) string { return strings.Repeat("y", n) }
	for _, tc := range []struct {
		name    string
		rec     irec
		err     error
		message []string
	}{
		{"an inter-partition index's key", irec{P: "p", ID: "1", B: long(390)}, it.ErrInvalidKey,
			[]string{`index "pb"`, "field B takes 390 bytes where at most 361 fit", "keys of 383"}},
		{"the partition field, twice in an intra-partition key", irec{P: long(200), ID: "1"}, it.ErrInvalidKey,
			[]string{`index "pb"`, "field P (it is in the key 2 times) takes 200 bytes"}},
		{"an ID too long for a change record's key", irec{P: "p", ID: long(380)}, it.ErrInvalidKey,
			[]string{"field ID takes 380 bytes where at most 362 fit"}},
		{"a record a change record cannot copy", irec{P: "p", ID: "1", Data: make([]byte, 704<<10-11)}, it.ErrInvalidBatch,
			[]string{"at most 699012 fit", "a maintainer's batch", "three copies"}},
		{"a record beyond any value", irec{P: "p", ID: "1", Data: make([]byte, 2<<20)}, it.ErrInvalidBatch,
			[]string{"takes 2097176 bytes, and at most 699012 fit"}},
		{"a record with more unique keys than a delete can free", irec{P: "p", ID: "1", Tags: manyTags(49)}, it.ErrInvalidBatch,
			[]string{"49 unique keys", "of at most 99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := limited{it.NewMemoryStore()}
			tbl, err := it.Open(ctx, s, it.Schema[irec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
				Indexes: []it.Index[irec]{
					{Name: "b", Fields: []string{"B"}},
					{Name: "pb", Fields: []string{"P", "B"}},
					{Name: "tags", Fields: []string{"P", "Tags"}, MultiValued: true, Unique: true},
				}})
			require.NoError(t, err)
			_, err = tbl.Insert(ctx, tc.rec)
			require.ErrorIs(t, err, tc.err)
			for _, m := range tc.message {
				require.ErrorContains(t, err, m)
			}
			require.NotContains(t, err.Error(), `\x`, "no stored key bytes")
			_, err = tbl.Get(ctx, tc.rec.P, tc.rec.ID)
			require.ErrorIs(t, err, it.ErrNotFound)
			lag, err := tbl.Lag(ctx)
			require.NoError(t, err)
			require.Zero(t, lag.Pending, "nothing queued")
		})
	}
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	return tags
}

// l16rec is the record of the review's tests: P leads the primary key.
type l16rec struct {
	P, ID, B, U string
	Data        []byte
	Tags        []string
	Uniq        []string
}

func l16tags(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, from+i)
	}
	return out
}

var atMost = regexp.MustCompile(`at most (\d+) fit`)

// l16fit returns the N of an error's "at most N fit".
func l16fit(t *testing.T, err error) int {
	t.Helper()
	require.Error(t, err)
	m := atMost.FindStringSubmatch(err.Error())
	require.NotNil(t, m, "no 'at most N fit' in %v", err)
	n, err2 := strconv.Atoi(m[1])
	require.NoError(t, err2)
	return n
}

// TestDeleteAfterIntraEntriesGrow: a record with a unique key and
// a multi-valued intra-partition (non-unique) index grows its entries one
// acknowledged update at a time; its delete then needs more operations
// than a batch holds, and the fallback cannot take the unique entry out of
// the batch with the non-unique ones: the record can never be deleted.
func TestDeleteAfterIntraEntriesGrow(t *testing.T) {
	ctx := context.Background()
	s := limited{it.NewMemoryStore()}
	tbl, err := it.Open(ctx, s, it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[l16rec]{
			{Name: "u", Fields: []string{"P", "U"}, Unique: true},
			{Name: "tags", Fields: []string{"P", "Tags"}, MultiValued: true},
		}})
	require.NoError(t, err)
	rec := l16rec{P: "p", ID: "1", U: "u1", Tags: l16tags("t", 0, 90)}
	_, err = tbl.Insert(ctx, rec)
	require.NoError(t, err)
	for step := 1; step <= 3; step++ {
		rec.Tags = append(rec.Tags, l16tags("t", 90*step, 20)...)
		_, err = tbl.Update(ctx, rec)
		if err != nil {
			// Refusing the growth is one way to keep the promise.
			require.ErrorIs(t, err, it.ErrInvalidBatch)
			rec.Tags = rec.Tags[:len(rec.Tags)-20]
			break
		}
	}
	// What was acknowledged must stay deletable.
	require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}), "record with %d tags", len(rec.Tags))
}

// TestBuildAddsUniqueKeysPastADelete: writes keep a record's
// unique keys within what a delete can free (checkDeletable), but Build of
// another unique index adds one more key to every record, unchecked: a
// record at the bound can then never be deleted.
func TestBuildAddsUniqueKeysPastADelete(t *testing.T) {
	ctx := context.Background()
	s := limited{it.NewMemoryStore()}
	indexes := []it.Index[l16rec]{
		{Name: "uniq", Fields: []string{"P", "Uniq"}, MultiValued: true, Unique: true},
		{Name: "eb", Fields: []string{"B"}, Consistency: it.Eventual},
	}
	schema := it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{}, Indexes: indexes}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	rec := l16rec{P: "p", ID: "1", U: "u1"}
	for i := 0; ; i++ {
		more := append(append([]string(nil), rec.Uniq...), l16tags("k", len(rec.Uniq), 8)...)
		next := rec
		next.Uniq = more
		if i == 0 {
			_, err = tbl.Insert(ctx, next)
		} else {
			_, err = tbl.Update(ctx, next)
		}
		if err != nil {
			require.ErrorIs(t, err, it.ErrInvalidBatch)
			break
		}
		rec = next
	}
	// Grow one at a time to the last key a delete can free.
	rec = l16grow(t, tbl, rec)
	t.Logf("the record holds %d unique keys", len(rec.Uniq))
	storetest.Drain(t, tbl)

	// Another unique index, built over the table.
	schema.Indexes = append(schema.Indexes, it.Index[l16rec]{Name: "u", Fields: []string{"P", "U"}, Unique: true})
	tbl, err = it.Open(ctx, s, schema)
	require.NoError(t, err)
	if err := tbl.Build(ctx, it.BuildOptions{}); err != nil {
		// Refusing the build is one way to keep the promise.
		t.Logf("build refused: %v", err)
	}
	require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}), "a record acknowledged before the build stays deletable")
}

// l16grow adds unique keys to rec, one acknowledged update at a time, until
// the table refuses one more, and returns the record as last written.
func l16grow(t *testing.T, tbl *it.Table[l16rec], rec l16rec) l16rec {
	t.Helper()
	for {
		next := rec
		next.Uniq = append(append([]string(nil), rec.Uniq...), fmt.Sprintf("z%03d", len(rec.Uniq)))
		if _, err := tbl.Update(context.Background(), next); err != nil {
			return rec
		}
		rec = next
	}
}

// TestRebuildOfAUniqueIndexAtItsBound: a record's unique keys
// were grown, one acknowledged update at a time, to what a delete can
// free; a rebuild of that index (its Version bumped) must put them all in
// one batch with an expectation each, which no batch holds: Build can
// never finish, and the index never becomes readable again.
func TestRebuildOfAUniqueIndexAtItsBound(t *testing.T) {
	ctx := context.Background()
	s := limited{it.NewMemoryStore()}
	indexes := []it.Index[l16rec]{
		{Name: "uniq", Fields: []string{"P", "Uniq"}, MultiValued: true, Unique: true},
	}
	schema := it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{}, Indexes: indexes}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	rec := l16rec{P: "p", ID: "1", Uniq: l16tags("k", 0, 40)}
	_, err = tbl.Insert(ctx, rec)
	require.NoError(t, err)
	rec = l16grow(t, tbl, rec)
	t.Logf("the record holds %d unique keys", len(rec.Uniq))

	schema.Indexes = []it.Index[l16rec]{{Name: "uniq", Fields: []string{"P", "Uniq"}, MultiValued: true, Unique: true, Version: 2}}
	tbl, err = it.Open(ctx, s, schema)
	require.NoError(t, err)
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}), "an index over acknowledged records can be rebuilt")
	require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}))
}

// TestUniqueKeysADeleteFrees: a record holds at most as many unique keys
// as a delete while their index is rebuilt frees in one batch, with the
// record's deletion and its change record, reading, expecting and deleting
// each: 48 where a batch holds 99 operations, 97 where it holds 99 puts and
// deletes and any number of expectations. One more is refused; a record at
// the bound is deleted while its index is rebuilt, its entries put.
func TestUniqueKeysADeleteFrees(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store kv.Store
		most  int
		says  string
	}{
		{"99 operations", limited{it.NewMemoryStore()}, 48, "two operations of one batch, of at most 99"},
		{"99 writes", writesLimited{it.NewMemoryStore()}, 97, "in one batch with the record and a change record, of at most 99 puts and deletes"},
		{"99 writes, no other bound", l16store{it.NewMemoryStore(), kv.Atomicity{MaxWrites: 99}}, 97, "in one batch with the record and a change record, of at most 99 puts and deletes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tags := it.Index[l16rec]{Name: "tags", Fields: []string{"P", "Tags"}, MultiValued: true}
			indexes := []it.Index[l16rec]{{Name: "uniq", Fields: []string{"P", "Uniq"}, MultiValued: true, Unique: true}, tags}
			schema := it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{}, Indexes: indexes}
			tbl, err := it.Open(ctx, tc.store, schema)
			require.NoError(t, err)
			// Its tags' entries do not fit a delete's batch beside its unique
			// keys': the delete falls back, queueing a change record.
			rec := l16rec{P: "p", ID: "1", Uniq: l16tags("k", 0, tc.most), Tags: []string{"a", "b"}}
			_, err = tbl.Insert(ctx, rec)
			require.NoError(t, err, "%d unique keys", tc.most)
			more := rec
			more.Uniq = l16tags("k", 0, tc.most+1)
			_, err = tbl.Update(ctx, more)
			require.ErrorIs(t, err, it.ErrInvalidBatch)
			require.ErrorContains(t, err, fmt.Sprintf("%d unique keys", tc.most+1))
			require.ErrorContains(t, err, tc.says)

			_, err = tbl.Insert(ctx, l16rec{P: "p", ID: "2", Uniq: []string{"other"}})
			require.NoError(t, err)

			// Rebuilt, one record a chunk: the record is deleted once the
			// build has put its entries, before the index is readable.
			schema.Indexes = []it.Index[l16rec]{{Name: "uniq", Fields: []string{"P", "Uniq"}, MultiValued: true, Unique: true, Version: 2}, tags}
			tbl, err = it.Open(ctx, tc.store, schema)
			require.NoError(t, err)
			deleted := false
			require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 1, Progress: func(p it.BuildProgress) {
				if p.Done == 1 && !p.Readable && !deleted {
					deleted = true
					require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}), "a delete while the index is rebuilt")
				}
			}}))
			require.True(t, deleted)
			_, err = tbl.Insert(ctx, l16rec{P: "p", ID: "3", Uniq: rec.Uniq})
			require.NoError(t, err, "the delete freed every key")
		})
	}
}

// l16exact checks the "at most N fit" of the refusal of a record whose
// field is too long: a value of N bytes is written, one of N+1 refused.
// set returns the record with the field holding n bytes.
func l16exact(t *testing.T, tbl *it.Table[l16rec], set func(n int) l16rec, tooLong int) {
	t.Helper()
	ctx := context.Background()
	_, err := tbl.Insert(ctx, set(tooLong))
	require.ErrorIs(t, err, it.ErrInvalidKey)
	n := l16fit(t, err)
	t.Logf("refusal: %v", err)
	_, err = tbl.Insert(ctx, set(n+1))
	require.Error(t, err, "%d bytes, one more than the message says fit, are refused", n+1)
	_, err = tbl.Insert(ctx, set(n))
	require.NoError(t, err, "%d bytes, as the message says, fit", n)
	rec := set(n)
	require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}))
}

// l16encoded checks the refusal of a key field holding 0x00 bytes, which
// the encoding escapes: its limit is stated in encoded bytes.
func l16encoded(t *testing.T, tbl *it.Table[l16rec], set func(n int) l16rec, tooLong int) {
	t.Helper()
	_, err := tbl.Insert(context.Background(), set(tooLong))
	require.ErrorIs(t, err, it.ErrInvalidKey)
	require.ErrorContains(t, err, "as encoded (a string two more than its length, and one more for each 0x00 byte in it) where at most")
}

// TestAtMostNFit: the number a too-long key's refusal gives as
// fitting is the field's effective limit.
func TestAtMostNFit(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T, indexes ...it.Index[l16rec]) *it.Table[l16rec] {
		tbl, err := it.Open(ctx, limited{it.NewMemoryStore()}, it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"},
			Codec: &it.BinaryCodec{}, Indexes: indexes})
		require.NoError(t, err)
		return tbl
	}
	ys := func(n int) string { return strings.Repeat("y", n) }
	zeros := func(n int) string { return strings.Repeat("\x00", n) }
	t.Run("inter index", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "b", Fields: []string{"B"}})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", B: ys(n)} }, 400)
	})
	t.Run("intra index, P twice", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "pb", Fields: []string{"P", "B"}})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: ys(n), ID: "1"} }, 300)
	})
	t.Run("ID of a change record", func(t *testing.T) {
		tbl := open(t)
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: ys(n)} }, 400)
	})
	t.Run("unique index", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "u", Fields: []string{"P", "U"}, Unique: true})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", U: ys(n)} }, 400)
	})
	t.Run("multi-valued", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "tags", Fields: []string{"P", "Tags"}, MultiValued: true})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", Tags: []string{"a", ys(n)}} }, 400)
	})
	t.Run("key func", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "kf", Key: func(r l16rec) []it.Tuple { return []it.Tuple{{r.P, r.B}} }})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", B: ys(n)} }, 400)
	})
	t.Run("two indexes hold the field", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "b", Fields: []string{"B"}}, it.Index[l16rec]{Name: "pb", Fields: []string{"P", "B"}})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", B: ys(n)} }, 400)
	})
	t.Run("an eventual index holds it tighter", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "b", Fields: []string{"B"}},
			it.Index[l16rec]{Name: "eb", Fields: []string{"P", "B"}, Consistency: it.Eventual})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", B: ys(n)} }, 400)
	})
	t.Run("P beyond a change record's key, and twice in an intra key", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "pb", Fields: []string{"P", "B"}})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: ys(n), ID: "1"} }, 400)
	})
	t.Run("a key func holds P, which the primary key holds too", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "kf", Key: func(r l16rec) []it.Tuple { return []it.Tuple{{r.P, r.B}} }})
		l16exact(t, tbl, func(n int) l16rec { return l16rec{P: ys(n), ID: "1"} }, 300)
	})
	t.Run("a field of 0x00 bytes", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "b", Fields: []string{"B"}})
		l16encoded(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: "1", B: zeros(n)} }, 250)
	})
	t.Run("the ID of 0x00 bytes", func(t *testing.T) {
		tbl := open(t)
		l16encoded(t, tbl, func(n int) l16rec { return l16rec{P: "p", ID: zeros(n)} }, 250)
	})
	t.Run("P of 0x00 bytes, twice", func(t *testing.T) {
		tbl := open(t, it.Index[l16rec]{Name: "pb", Fields: []string{"P", "B"}})
		l16encoded(t, tbl, func(n int) l16rec { return l16rec{P: zeros(n), ID: "1"} }, 150)
	})
}

var takes = regexp.MustCompile(`takes (\d+) bytes, and at most (\d+) fit`)

// l16atLimit returns the length of Data that makes a record of tbl
// exactly as large as the refusal of a larger one says fits.
func l16atLimit(t *testing.T, tbl *it.Table[l16rec], rec l16rec) int {
	t.Helper()
	rec.Data = make([]byte, 1<<20)
	_, err := tbl.Insert(context.Background(), rec)
	require.ErrorIs(t, err, it.ErrInvalidBatch)
	m := takes.FindStringSubmatch(err.Error())
	require.NotNil(t, m, "%v", err)
	took, _ := strconv.Atoi(m[1])
	fit, _ := strconv.Atoi(m[2])
	return len(rec.Data) - (took - fit)
}

// TestRecordAtTheLimit: a record exactly as large as the refusal
// says fits is written, one byte more is not, and the one written can be
// updated at that size (twice before a maintainer runs), its queue
// applied, and deleted, for every kind of index.
func TestRecordAtTheLimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		indexes []it.Index[l16rec]
	}{
		{"no index", nil},
		{"eventual fullcopy", []it.Index[l16rec]{{Name: "eb", Fields: []string{"B"}, Strategy: it.FullCopy, Consistency: it.Eventual}}},
		{"intra fullcopy", []it.Index[l16rec]{{Name: "pb", Fields: []string{"P", "B"}, Strategy: it.FullCopy}}},
		{"inter fullcopy", []it.Index[l16rec]{{Name: "b", Fields: []string{"B"}, Strategy: it.FullCopy}}},
		{"intra fullcopy and eventual", []it.Index[l16rec]{
			{Name: "pb", Fields: []string{"P", "B"}, Strategy: it.FullCopy},
			{Name: "eb", Fields: []string{"B"}, Consistency: it.Eventual}}},
		{"unique keysonly and eventual", []it.Index[l16rec]{
			{Name: "u", Fields: []string{"P", "U"}, Unique: true},
			{Name: "eb", Fields: []string{"B"}, Strategy: it.FullCopy, Consistency: it.Eventual}}},
		{"unique fullcopy", []it.Index[l16rec]{{Name: "u", Fields: []string{"P", "U"}, Unique: true, Strategy: it.FullCopy}}},
		{"unique fullcopy and eventual", []it.Index[l16rec]{
			{Name: "u", Fields: []string{"P", "U"}, Unique: true, Strategy: it.FullCopy},
			{Name: "eb", Fields: []string{"B"}, Consistency: it.Eventual}}},
		{"unique fullcopy and intra fullcopy", []it.Index[l16rec]{
			{Name: "u", Fields: []string{"P", "U"}, Unique: true, Strategy: it.FullCopy},
			{Name: "pb", Fields: []string{"P", "B"}, Strategy: it.FullCopy}}},
		{"two fullcopy", []it.Index[l16rec]{
			{Name: "pb", Fields: []string{"P", "B"}, Strategy: it.FullCopy},
			{Name: "b", Fields: []string{"B"}, Strategy: it.FullCopy}}},
	} {
		for _, sharded := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s sharded=%v", tc.name, sharded), func(t *testing.T) {
				var s kv.Store = limited{it.NewMemoryStore()}
				if sharded {
					var err error
					s, err = it.OpenShardedStore(ctx, []kv.Store{limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}, limited{it.NewMemoryStore()}},
						it.WithIndexSharding(it.ShardByHash))
					require.NoError(t, err)
				}
				tbl, err := it.Open(ctx, s, it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"},
					Codec: &it.BinaryCodec{}, Indexes: tc.indexes})
				require.NoError(t, err)
				rec := l16rec{P: "p", ID: "1", B: "b", U: "u"}
				n := l16atLimit(t, tbl, rec)
				rec.Data = make([]byte, n+1)
				_, err = tbl.Insert(ctx, rec)
				require.ErrorIs(t, err, it.ErrInvalidBatch, "one byte over")
				rec.Data = make([]byte, n)
				_, err = tbl.Insert(ctx, rec)
				require.NoError(t, err, "at the limit (%d bytes of Data)", n)
				for i := range 2 {
					rec.Data[0] = byte(i + 1)
					rec.B = string(rune('c' + i)) // the same size
					_, err = tbl.Update(ctx, rec)
					require.NoError(t, err, "update %d at the limit", i)
				}
				storetest.Drain(t, tbl)
				got, err := tbl.Get(ctx, rec.P, rec.ID)
				require.NoError(t, err)
				require.Equal(t, rec.Data, got.Data)
				require.NoError(t, tbl.Delete(ctx, it.Tuple{rec.P, rec.ID}))
				storetest.Drain(t, tbl)
				requireNoDrift(t, tbl)
			})
		}
	}
}

// l16store is a memory store with the given bounds and partitionedStore's
// partitions.
type l16store struct {
	*it.MemoryStore
	a kv.Atomicity
}

func (s l16store) Atomicity() kv.Atomicity { return s.a }

func (s l16store) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.a.Allows(b); err != nil {
		return err
	}
	return s.MemoryStore.Apply(ctx, b)
}

// TestLimitsOfOtherBounds runs the randomized TestLimits on stores
// whose bounds relate otherwise than Azure's.
func TestLimitsOfOtherBounds(t *testing.T) {
	for _, a := range []kv.Atomicity{
		{Partition: partitionOf, MaxOps: 99, MaxBytes: 8 << 10, MaxKeyBytes: 200, MaxValueBytes: 6 << 10},
		{Partition: partitionOf, MaxOps: 12, MaxBytes: 64 << 10, MaxKeyBytes: 120, MaxValueBytes: 1 << 10},
		{Partition: partitionOf, MaxOps: 99, MaxBytes: 3 << 10, MaxKeyBytes: 383},
		{Partition: partitionOf, MaxValueBytes: 2 << 10, MaxKeyBytes: 100},
		{MaxOps: 99, MaxBytes: 8 << 10, MaxKeyBytes: 200, MaxValueBytes: 6 << 10},
		{Partition: partitionOf, MaxWrites: 12, MaxBytes: 64 << 10, MaxKeyBytes: 120, MaxValueBytes: 1 << 10},
		{MaxWrites: 12, MaxBytes: 64 << 10, MaxKeyBytes: 120, MaxValueBytes: 1 << 10},
		{Partition: partitionOf, MaxOps: 30, MaxWrites: 12, MaxBytes: 8 << 10, MaxKeyBytes: 200},
	} {
		t.Run(fmt.Sprintf("%d-%d-%d-%d-%d-%v", a.MaxOps, a.MaxWrites, a.MaxBytes, a.MaxKeyBytes, a.MaxValueBytes, a.Partition != nil), func(t *testing.T) {
			storetest.TestLimits(t, l16store{it.NewMemoryStore(), a}, storetest.LimitsOptions{Steps: 400})
		})
	}
}

// TestCostOfTheChecks: a write that fits pays nothing for the
// explanation of a refusal it does not get: an update allocates as much on
// a store with size bounds as on one with its partitions alone.
func TestCostOfTheChecks(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector makes sync.Pool drop what reads reuse")
	}
	ctx := context.Background()
	allocs := func(s kv.Store) float64 {
		tbl, err := it.Open(ctx, s, it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
			Indexes: []it.Index[l16rec]{{Name: "pb", Fields: []string{"P", "B"}}}})
		require.NoError(t, err)
		rec := l16rec{P: "p", ID: "1", B: "b"}
		_, err = tbl.Insert(ctx, rec)
		require.NoError(t, err)
		return testing.AllocsPerRun(200, func() {
			_, err := tbl.Update(ctx, rec)
			require.NoError(t, err)
		})
	}
	bare := allocs(partitionedStore(it.NewMemoryStore()))
	bounded := allocs(limited{it.NewMemoryStore()})
	t.Logf("allocations of an update: %v partitioned, %v with Azure's bounds", bare, bounded)
	require.Equal(t, bare, bounded)
}

// TestQueuedChangeMeetsANewIndex: a write acknowledged with a key
// that its indexes hold queues its change; an index added before the
// maintainer runs holds the key no longer. The maintainer must still apply
// the change (the new index's build refuses the record, as a write
// would), or the queue holds, forever, a change that stops the record's
// other indexes from following it.
func TestQueuedChangeMeetsANewIndex(t *testing.T) {
	ctx := context.Background()
	s := limited{it.NewMemoryStore()}
	schema := it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[l16rec]{{Name: "eb", Fields: []string{"B"}, Consistency: it.Eventual}}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	rec := l16rec{P: "p", ID: "1", B: strings.Repeat("y", 364)}
	_, err = tbl.Insert(ctx, rec)
	require.NoError(t, err, "the key fits index eb")

	schema.Indexes = append(schema.Indexes, it.Index[l16rec]{Name: "epb", Fields: []string{"P", "B"}, Consistency: it.Eventual})
	tbl2, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	_, err = tbl2.Insert(ctx, l16rec{P: "p", ID: "2", B: rec.B})
	require.ErrorIs(t, err, it.ErrInvalidKey, "the new index refuses such a key")

	storetest.Drain(t, tbl2)
	n, err := tbl2.Count(ctx, it.Query{Index: "eb", Eq: it.Tuple{rec.B}})
	require.NoError(t, err)
	require.Equal(t, 1, n, "index eb follows the acknowledged write")
}

// TestStuckChangeGrowsTheQueue: each maintainer pass over a change
// it cannot apply leaves one more marker in the queue.
func TestStuckChangeGrowsTheQueue(t *testing.T) {
	ctx := context.Background()
	s := limited{it.NewMemoryStore()}
	schema := it.Schema[l16rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"P", "ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[l16rec]{{Name: "eb", Fields: []string{"B"}, Consistency: it.Eventual}}}
	tbl, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, l16rec{P: "p", ID: "1", B: strings.Repeat("y", 364)})
	require.NoError(t, err)
	schema.Indexes = append(schema.Indexes, it.Index[l16rec]{Name: "epb", Fields: []string{"P", "B"}, Consistency: it.Eventual})
	tbl2, err := it.Open(ctx, s, schema)
	require.NoError(t, err)
	var pending []int
	for range 10 {
		_, err := tbl2.ApplyPending(ctx, it.MaintainerOptions{})
		require.NoError(t, err)
		lag, err := tbl2.Lag(ctx)
		require.NoError(t, err)
		pending = append(pending, lag.Pending)
	}
	t.Logf("pending after each pass: %v", pending)
	require.LessOrEqual(t, pending[len(pending)-1], 1, "a stuck change does not grow the queue")
}
