package indextable_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
)

func mustKey(t testing.TB, elems ...any) []byte {
	t.Helper()
	k, err := kv.EncodeTuple(elems...)
	require.NoError(t, err)
	return k
}

func TestVerifyFindsAndRepairsDrift(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openWith(t, s, indexByName("town"), indexByName("town_name"), indexByName("email"))
	for _, p := range []person{
		{ID: 1, Town: "R", Name: "A", Email: "a"},
		{ID: 2, Town: "S", Name: "B", Email: "b"},
		{ID: 3, Town: "R", Name: "C"},
	} {
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
	}
	rep := requireNoDrift(t, tbl)
	require.Equal(t, int64(3), rep.Records)
	require.Equal(t, int64(3+3+2), rep.Entries)

	// Damage the index tables, and record 3 behind the table's back.
	stale, err := json.Marshal(person{ID: 2, Town: "S", Name: "B", Email: "b", Note: "old"})
	require.NoError(t, err)
	rec3, err := json.Marshal(person{ID: 3, Town: "R", Name: "C", Email: "a"})
	require.NoError(t, err)
	var b kv.Batch
	b.Delete(mustKey(t, "people", 1, "town", 1, "R", 1))               // missing
	b.Put(mustKey(t, "people", 1, "town_name", 1, "S", "B", 2), stale) // stale copy
	b.Put(mustKey(t, "people", 1, "town", 1, "Q", 3), nil)             // stale key
	b.Put(mustKey(t, "people", 1, "town", 1, "R", 99), nil)            // dangling
	b.Put(mustKey(t, "people", 0, 3), append(binary.AppendUvarint(nil, 7), rec3...))
	require.NoError(t, s.Apply(ctx, &b))

	var phases []string
	opts := it.VerifyOptions{ChunkSize: 2, Progress: func(p it.VerifyProgress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		assert.LessOrEqual(t, p.Done, p.Total)
	}}
	rep, err = tbl.Verify(ctx, opts)
	require.NoError(t, err)
	// Record 3's email is record 1's; its full copy in town_name is stale.
	want := map[it.DriftKind]int{it.DriftMissing: 1, it.DriftStale: 3, it.DriftDangling: 1, it.DriftUniqueViolation: 1}
	require.Equal(t, want, rep.Drift, "%v", rep.Samples)
	require.Equal(t, []string{"records", "town", "town_name", "email"}, phases)
	require.Contains(t, rep.Samples, it.Drift{Kind: it.DriftDangling, Index: "town", Key: it.Tuple{"R"}, PrimaryKey: it.Tuple{int64(99)}})
	require.Contains(t, rep.Samples, it.Drift{Kind: it.DriftUniqueViolation, Index: "email", Key: it.Tuple{"a"}, PrimaryKey: it.Tuple{int64(3)}})
	rep, err = tbl.Verify(ctx, it.VerifyOptions{MaxSamples: 2})
	require.NoError(t, err)
	require.Len(t, rep.Samples, 2)
	require.Equal(t, 6, rep.Total())

	rep, err = tbl.Repair(ctx, opts)
	require.NoError(t, err)
	require.Equal(t, 5, rep.Repaired)
	rep, err = tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Equal(t, map[it.DriftKind]int{it.DriftUniqueViolation: 1}, rep.Drift, "Repair leaves only what it cannot choose")

	model := map[int]person{1: {ID: 1, Town: "R", Name: "A", Email: "a"}, 2: {ID: 2, Town: "S", Name: "B", Email: "b"}, 3: {ID: 3, Town: "R", Name: "C", Email: "a"}}
	checkIndex(t, tbl, model, "town", nil)
	checkIndex(t, tbl, model, "town_name", nil)
}

// TestVerifySkipsQueuedChanges: a record whose changes are still queued is
// late, not drifted.
func TestVerifySkipsQueuedChanges(t *testing.T) {
	ctx := context.Background()
	tbl := openWith(t, it.NewMemoryStore(), eventualIndexes(personIndexes())...)
	for i := range 5 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R", Email: string(rune('a' + i))})
		require.NoError(t, err)
	}
	rep := requireNoDrift(t, tbl)
	require.Equal(t, 5, rep.Pending)
	storetest.Drain(t, tbl)
	rep = requireNoDrift(t, tbl)
	require.Zero(t, rep.Pending)
}

// TestVerifyIgnoresChangesQueuedDuringThePass: a change queued after the
// pass began is late, not drift.
func TestVerifyIgnoresChangesQueuedDuringThePass(t *testing.T) {
	ctx := context.Background()
	town := indexByName("town")
	town.Consistency = it.Eventual
	tbl := openWith(t, it.NewMemoryStore(), town)
	for i := range 3 {
		_, err := tbl.Insert(ctx, person{ID: i, Town: "R"})
		require.NoError(t, err)
	}
	storetest.Drain(t, tbl)
	moved := false
	rep, err := tbl.Verify(ctx, it.VerifyOptions{ChunkSize: 1, Progress: func(p it.VerifyProgress) {
		if !moved {
			moved = true
			_, err := tbl.Update(ctx, person{ID: 2, Town: "S"})
			require.NoError(t, err)
		}
	}})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "%v", rep.Samples)
}

// TestVerifyFindsTwoRecordsMissingOneUniqueKey: two records claim one key
// of a unique index and neither has its entry: one is missing, the other a
// violation, which Repair leaves.
func TestVerifyFindsTwoRecordsMissingOneUniqueKey(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	tbl := openWith(t, s, indexByName("email"))
	for _, p := range []person{{ID: 1, Email: "a"}, {ID: 2, Email: "b"}} {
		_, err := tbl.Insert(ctx, p)
		require.NoError(t, err)
	}
	rec2, err := json.Marshal(person{ID: 2, Email: "a"})
	require.NoError(t, err)
	var b kv.Batch
	b.Delete(mustKey(t, "people", 1, "email", 1, "a"))
	b.Delete(mustKey(t, "people", 1, "email", 1, "b"))
	b.Put(mustKey(t, "people", 0, 2), append(binary.AppendUvarint(nil, 7), rec2...))
	require.NoError(t, s.Apply(ctx, &b))

	rep, err := tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	want := map[it.DriftKind]int{it.DriftMissing: 1, it.DriftUniqueViolation: 1}
	require.Equal(t, want, rep.Drift)
	rep, err = tbl.Repair(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Equal(t, want, rep.Drift)
	require.Equal(t, 1, rep.Repaired)
	rep, err = tbl.Verify(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Equal(t, map[it.DriftKind]int{it.DriftUniqueViolation: 1}, rep.Drift)
}

// TestBuildOnAPartitionedStore: where a record, its entries and the
// catalog never share a batch, Build writes intra-partition entries with
// their records and queues the others, and the indexes end readable and
// exact. A unique index outside the records' partitions is refused.
func TestBuildOnAPartitionedStore(t *testing.T) {
	ctx := context.Background()
	s := partitionedStore(it.NewMemoryStore())
	r := rand.New(rand.NewPCG(7, 8))
	want := map[int]person{}
	for i := range 40 {
		p := randomPerson(r, i, names)
		p.Email = fmt.Sprintf("p%d@example.com", i)
		_, err := openWith(t, s).Insert(ctx, p)
		require.NoError(t, err)
		want[i] = p
	}
	indexes := append([]it.Index[person]{indexByName("town"), indexByName("tags")}, intraIndexes...)
	tbl := openWith(t, s, indexes...)
	var progress []it.BuildProgress
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{ChunkSize: 7, Progress: func(p it.BuildProgress) { progress = append(progress, p) }}))
	for _, st := range statusOf(t, tbl) {
		require.Equal(t, it.IndexReadable, st.State, st.Name)
	}
	require.Len(t, progress, 4*(40/7+2), "six full chunks, a partial one and the flip, for each index")
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Zero(t, lag.Pending, "Build applied what it queued")
	rep := requireNoDrift(t, tbl)
	wantEntries := 0
	for _, p := range want {
		for _, ix := range indexes {
			wantEntries += len(modelKeys(ix.Name, p))
		}
	}
	require.EqualValues(t, wantEntries, rep.Entries)
	for _, ix := range indexes {
		checkIndex(t, tbl, want, ix.Name, nil)
	}

	// The email index, which could be neither built nor kept outside the
	// records' partitions, is refused before anything is written.
	_, err = it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"},
		Indexes: append([]it.Index[person]{indexByName("email")}, append(indexes, indexByName("name"))...)})
	require.ErrorIs(t, err, it.ErrInvalidSchema)
	require.NotContains(t, statusOf(t, tbl), "name")
}

// TestRepairOnAPartitionedStore: fixes that span partitions are queued in
// the records' partitions, and applied before Repair returns; on a
// partitioned store and over 4 shards under each rule.
func TestRepairOnAPartitionedStore(t *testing.T) {
	for name, s := range map[string]kv.Store{
		"partitioned":     partitionedStore(it.NewMemoryStore()),
		"sharded/leading": newShardedMemory(t, 4),
		"sharded/hash":    newShardedMemory(t, 4, it.WithIndexSharding(it.ShardByHash)),
	} {
		t.Run(name, func(t *testing.T) { testRepairOnAPartitionedStore(t, s) })
	}
}

func testRepairOnAPartitionedStore(t *testing.T, s kv.Store) {
	ctx := context.Background()
	tbl := openWith(t, s, indexByName("town"), intraIndexes[0])
	for i, town := range []string{"R", "S", "T", "U"} {
		_, err := tbl.Insert(ctx, person{ID: i + 1, Town: town, Score: 10 * i})
		require.NoError(t, err)
	}
	storetest.Drain(t, tbl)
	var b kv.Batch
	b.Put(mustKey(t, "people", 1, "town", 1, "Q", 9), nil) // dangling
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Put(mustKey(t, "people", 1, "town", 1, "Z", 1), nil) // its record is in R
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Put(mustKey(t, "people", 1, "town", 1, "Y", 1), nil) // and not in Y either
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Delete(mustKey(t, "people", 1, "town", 1, "U", 4)) // moved: missing, and stale
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Put(mustKey(t, "people", 1, "town", 1, "V", 4), nil)
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Delete(mustKey(t, "people", 1, "town", 1, "S", 2)) // missing
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.Delete(mustKey(t, "people", 5, "id_score", 1, 3, 20, 3)) // missing, in record 3's partition
	require.NoError(t, s.Apply(ctx, &b))

	rep, err := tbl.Repair(ctx, it.VerifyOptions{})
	require.NoError(t, err)
	require.Equal(t, map[it.DriftKind]int{it.DriftMissing: 3, it.DriftDangling: 1, it.DriftStale: 3}, rep.Drift)
	require.Equal(t, 7, rep.Repaired)
	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	require.Zero(t, lag.Pending)
	rep = requireNoDrift(t, tbl)
	require.EqualValues(t, 8, rep.Entries)
}

// TestRepairLeavesAConcurrentWriteAlone: a write during Repair to a record
// whose fix Repair queued is late, not drift.
func TestRepairLeavesAConcurrentWriteAlone(t *testing.T) {
	for _, drift := range []bool{false, true} {
		ctx := context.Background()
		s := partitionedStore(it.NewMemoryStore())
		tbl := openWith(t, s, indexByName("town"), indexByName("tags"))
		_, err := tbl.Insert(ctx, person{ID: 1, Town: "R", Tags: []string{"a"}})
		require.NoError(t, err)
		storetest.Drain(t, tbl)
		want := map[it.DriftKind]int{}
		if drift {
			var b kv.Batch
			b.Delete(mustKey(t, "people", 1, "town", 1, "R", 1))
			require.NoError(t, s.Apply(ctx, &b))
			want[it.DriftMissing] = 1
		}
		wrote := false
		rep, err := tbl.Repair(ctx, it.VerifyOptions{Progress: func(p it.VerifyProgress) {
			if p.Phase == "records" && !wrote {
				wrote = true
				_, err := tbl.Update(ctx, person{ID: 1, Town: "R", Tags: []string{"b"}})
				require.NoError(t, err)
			}
		}})
		require.NoError(t, err)
		require.Equal(t, want, rep.Drift, "drift %v: samples %v", drift, rep.Samples)
		storetest.Drain(t, tbl)
		requireNoDrift(t, tbl)
	}
}

// TestVerifyTableWithoutTypes checks that a tool, with only the store,
// finds what the program's Verify finds (every strategy, unique and
// multi-valued indexes, both codecs), repairs it, and skips what it cannot
// check: an index with a Key func, which also makes it refuse to repair
// where fixes may be queued.
func TestVerifyTableWithoutTypes(t *testing.T) {
	ctx := context.Background()
	for _, codec := range []it.Codec{it.JSONCodec{}, &it.BinaryCodec{}} {
		t.Run(fmt.Sprintf("%T", codec), func(t *testing.T) {
			s := it.NewMemoryStore()
			indexes := []it.Index[person]{indexByName("town"), indexByName("town_name"), indexByName("name"), indexByName("tags"), indexByName("email")}
			tbl, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, Codec: codec})
			require.NoError(t, err)
			r := rand.New(rand.NewPCG(3, 3))
			for id := range 60 {
				_, err := tbl.Insert(ctx, randomPerson(r, id, []string{"Ann", "Bob", "Cy", "Di"}))
				if err != nil {
					require.ErrorIs(t, err, it.ErrUniqueViolation)
				}
			}
			info := func() it.TableInfo {
				tables, err := it.ReadCatalog(ctx, s)
				require.NoError(t, err)
				require.Len(t, tables, 1)
				return tables[0]
			}
			rep, err := it.VerifyTable(ctx, s, info(), it.VerifyOptions{})
			require.NoError(t, err)
			require.Zero(t, rep.Total(), "%v", rep.Samples)
			require.Equal(t, int64(60), rep.Records+int64(rep.Pending)+int64(60-countRecords(t, tbl)))

			// Damage every index table behind the program's back.
			var b kv.Batch
			for _, name := range []string{"town", "town_name", "name", "tags", "email"} {
				n := 0
				for e, err := range s.Scan(ctx, kv.ScanRange{Start: mustKey(t, "people", 1, name), End: mustKey(t, "people", 1, name+"\x00")}) {
					require.NoError(t, err)
					if n++; n%7 == 0 {
						b.Delete(bytes.Clone(e.Key)) // missing
					}
				}
			}
			b.Put(mustKey(t, "people", 1, "town", 1, "Nowhere", 999), nil) // dangling
			require.NoError(t, s.Apply(ctx, &b))

			want, err := tbl.Verify(ctx, it.VerifyOptions{})
			require.NoError(t, err)
			require.NotZero(t, want.Total())
			var phases []string
			got, err := it.VerifyTable(ctx, s, info(), it.VerifyOptions{Progress: func(p it.VerifyProgress) {
				if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
					phases = append(phases, p.Phase)
				}
			}})
			require.NoError(t, err)
			require.ElementsMatch(t, want.Samples, got.Samples, "the tool reads indexes in name order")
			want.Samples, got.Samples = nil, nil
			require.Equal(t, want, got)
			require.Equal(t, []string{"records", "email", "name", "tags", "town", "town_name"}, phases)

			rep, err = it.RepairTable(ctx, s, info(), it.VerifyOptions{})
			require.NoError(t, err)
			require.Equal(t, want.Total()-want.Drift[it.DriftUniqueViolation], rep.Repaired)
			requireNoDrift(t, tbl)

			// An index with a Key func is skipped; a repair leaves it alone,
			// unless fixes may go through the queue, which it would fall
			// behind: then it refuses.
			indexes = append(indexes, indexByName("score_mod"))
			tbl, err = it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: indexes, Codec: codec})
			require.NoError(t, err)
			rep, err = it.VerifyTable(ctx, s, info(), it.VerifyOptions{})
			require.NoError(t, err)
			require.Equal(t, []string{"score_mod"}, rep.Skipped)
			b.Reset()
			b.Put(mustKey(t, "people", 1, "town", 1, "Nowhere", 999), nil)
			require.NoError(t, s.Apply(ctx, &b))
			rep, err = it.RepairTable(ctx, s, info(), it.VerifyOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, rep.Repaired)
			requireNoDrift(t, tbl)
			_, err = it.RepairTable(ctx, partitionedStore(s), info(), it.VerifyOptions{})
			require.ErrorIs(t, err, it.ErrInvalidSchema)
		})
	}
}

func countRecords[T any](t testing.TB, tbl *it.Table[T]) int64 {
	n, err := tbl.Count(context.Background(), it.Query{})
	require.NoError(t, err)
	return int64(n)
}

// readOnlyStore refuses every batch, as a store opened read-only does.
type readOnlyStore struct{ kv.Store }

func (readOnlyStore) Apply(context.Context, *kv.Batch) error { return errors.New("read-only") }

type moneyAmount float64

func (m moneyAmount) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.2f", float64(m))), nil
}

// TestRecordTypeFollowsTheType: a table keeps the record type of the type it
// was last opened with, drops it for a type no record type can stand for (tools
// then refuse, saying why), and opens on a store that refuses writes.
func TestRecordTypeFollowsTheType(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	schema := func() []it.Index[person] { return []it.Index[person]{indexByName("town")} }
	_, err := it.Open(ctx, s, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: schema()})
	require.NoError(t, err)
	info := func() it.TableInfo {
		tables, err := it.ReadCatalog(ctx, s)
		require.NoError(t, err)
		return tables[0]
	}
	first := info()
	require.Equal(t, "json", first.Codec)
	require.Contains(t, first.RecordType, `Town string`)

	type slim struct {
		ID   int
		Town string
	}
	_, err = it.Open(ctx, s, it.Schema[slim]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Codec: &it.BinaryCodec{},
		Indexes: []it.Index[slim]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	require.Equal(t, "binary", info().Codec)
	require.Equal(t, `struct{ID int "";Town string "";}`, info().RecordType)

	type priced struct {
		ID    int
		Town  string
		Price moneyAmount
	}
	_, err = it.Open(ctx, s, it.Schema[priced]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"},
		Indexes: []it.Index[priced]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	require.Empty(t, info().RecordType, "a type with its own JSON encoding has no record type")
	_, err = it.VerifyTable(ctx, s, info(), it.VerifyOptions{})
	require.ErrorContains(t, err, "keeps no record type")

	_, err = it.Open(ctx, readOnlyStore{s}, it.Schema[person]{SchemaLease: testLease, Name: "people", PrimaryKey: []string{"ID"}, Indexes: schema()})
	require.NoError(t, err, "the record type is best effort")
}

// TestVerifyIgnoresWritesBetweenAnEntryAndItsRecord lands a delete, or an
// update that moves the key, between the index pass's read of an entry and
// its look-up of the entry's record: the write took the entry with it,
// atomically, so there is no drift to report (Verify reported a dangling
// or stale entry, and a second Verify was clean).
func TestVerifyIgnoresWritesBetweenAnEntryAndItsRecord(t *testing.T) {
	ctx := context.Background()
	for _, write := range []string{"delete", "move"} {
		s := &onceStore{Store: it.NewMemoryStore()}
		tbl := openWith(t, s, indexByName("town"), indexByName("email"))
		for i := range 3 {
			_, err := tbl.Insert(ctx, person{ID: i, Town: "R", Email: fmt.Sprint(i)})
			require.NoError(t, err)
		}
		s.onGetMany = func(keys [][]byte) bool {
			k, ok := kv.ParseKey(keys[0])
			return ok && k.Space == kv.SpaceRecords // records, looked up by the index pass
		}
		s.hook = func() {
			var err error
			if write == "delete" {
				err = tbl.Delete(ctx, it.Tuple{1})
			} else {
				_, err = tbl.Update(ctx, person{ID: 1, Town: "S", Email: "moved"})
			}
			require.NoError(t, err)
		}
		rep, err := tbl.Verify(ctx, it.VerifyOptions{})
		require.NoError(t, err)
		require.Nil(t, s.hook, "the write ran")
		require.Zero(t, rep.Total(), "%s: %v", write, rep.Samples)
		requireNoDrift(t, tbl)
	}
}

// TestConcurrentVerifyBuildAndRepair runs Verify, Build and Repair at once,
// twice each: they share the table's key prefixes, which none may append
// to in place (two of them raced, under -race, building their scan ends in
// the spare capacity of one shared prefix).
func TestConcurrentVerifyBuildAndRepair(t *testing.T) {
	ctx := context.Background()
	s := it.NewMemoryStore()
	plain := openWith(t, s)
	for i := range 50 {
		_, err := plain.Insert(ctx, person{ID: i, Town: towns[i%3], Email: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	tbl := openWith(t, s, indexByName("town"), indexByName("email"), indexByName("town_name"))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 2 {
		for _, run := range []func() error{
			func() error { _, err := tbl.Verify(ctx, it.VerifyOptions{ChunkSize: 7}); return err },
			func() error { return tbl.Build(ctx, it.BuildOptions{ChunkSize: 5}) },
			func() error { _, err := tbl.Repair(ctx, it.VerifyOptions{ChunkSize: 3}); return err },
		} {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- run() }()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, tbl.Build(ctx, it.BuildOptions{}))
	requireNoDrift(t, tbl)
}

// agesWithOneRecord returns a store holding table "r2" of ageRec, with an
// index on Age and one record.
func agesWithOneRecord(t *testing.T) kv.Store {
	s := it.NewMemoryStore()
	tbl := openAges(t, s, it.Index[ageRec]{Name: "age", Fields: []string{"Age"}})
	_, err := tbl.Insert(context.Background(), ageRec{ID: 1, Age: 30})
	require.NoError(t, err)
	return s
}

// TestVerifyTableOfADefinitionWithoutPrimaryKey: VerifyTable and
// RepairTable take a TableInfo, which a tool reads from a store's catalog
// (ReadCatalog) or builds itself. A definition that names no primary key
// field (built by hand, or a damaged catalog entry) made openTool index
// t.pk[0] of an empty slice, a panic: VerifyTable refuses it with
// ErrInvalidSchema, and ReadCatalog refuses such a stored definition with
// ErrCodec.
func TestVerifyTableOfADefinitionWithoutPrimaryKey(t *testing.T) {
	ctx := context.Background()
	s := agesWithOneRecord(t)
	// The tool's own TableInfo, as read, then without a primary key.
	infos, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	info := infos[0]
	require.NotNil(t, info.Indexes[0].Definition)
	def := *info.Indexes[0].Definition
	def.PrimaryKey = nil
	info.Indexes[0].Definition = &def
	for name, call := range map[string]func() (*it.VerifyReport, error){
		"VerifyTable": func() (*it.VerifyReport, error) { return it.VerifyTable(ctx, s, info, it.VerifyOptions{}) },
		"RepairTable": func() (*it.VerifyReport, error) { return it.RepairTable(ctx, s, info, it.VerifyOptions{}) },
	} {
		var err error
		p := recovered(func() { _, err = call() })
		if !assert.Nil(t, p, "%s of a definition without a primary key panics", name) {
			continue
		}
		assert.Error(t, err, name)
		assert.True(t, matchesSentinel(err), "%s: %v", name, err)
	}

	// The same definition, stored in the catalog: ReadCatalog refuses it.
	catKey := mustKey(t, "r2", 2, "age")
	v, err := s.Get(ctx, catKey)
	require.NoError(t, err)
	entry, err := kv.DecodeTuple(v)
	require.NoError(t, err)
	// format 1; no primary key; Fields ["Age"]; no projection; computed,
	// strategy, unique, sparse, multi, consistency, placement.
	entry[len(entry)-1] = mustKey(t, 1, 0, 1, "Age", 0, false, 0, false, false, false, 0, int(it.InterPartition))
	putRaw(t, s, catKey, mustKey(t, entry...))
	_, err = it.ReadCatalog(ctx, s)
	require.ErrorIs(t, err, it.ErrCodec, "no table has no primary key: the definition is damaged")
}

// TestVerifyTableErrorsMatchASentinel: the errors of VerifyTable
// for a table whose record type or codec a tool cannot use wrapped only the
// unexported errRecordType ("record type: ..."), which matched no sentinel;
// it is now ErrInvalidSchema, with one prefix.
func TestVerifyTableErrorsMatchASentinel(t *testing.T) {
	ctx := context.Background()
	s := agesWithOneRecord(t)
	infos, err := it.ReadCatalog(ctx, s)
	require.NoError(t, err)
	good := infos[0]
	require.Equal(t, "json", good.Codec)
	for _, tc := range []struct {
		name string
		edit func(*it.TableInfo)
	}{
		{"no record type kept", func(i *it.TableInfo) { i.Codec, i.RecordType = "", "" }},
		{"a codec tools cannot decode", func(i *it.TableInfo) { i.Codec = "*main.myCodec" }},
		{"a record type that does not parse", func(i *it.TableInfo) { i.RecordType = "struct{ID nope;}" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := good
			tc.edit(&info)
			_, err := it.VerifyTable(ctx, s, info, it.VerifyOptions{})
			require.Error(t, err)
			t.Log(err)
			assert.True(t, matchesSentinel(err), "matches no sentinel: %v", err)
			assert.Equal(t, 1, strings.Count(err.Error(), "indextable:"), "%v", err)
		})
	}
}
