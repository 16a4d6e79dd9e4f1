package indextable

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzChangeRecord checks that a change record decodes to what was encoded,
// as queued and once a maintainer rewrote it as failed, and that any bytes
// decode or fail without panicking.
func FuzzChangeRecord(f *testing.F) {
	f.Add(int64(0), byte(scopeEventual), []byte(nil), false, 0, false, byte(0), "", []byte{changeFormat})
	f.Add(time.Now().UnixNano(), byte(scopeAll), []byte("\x01{}"), true, 3, true, byte(failedInvalidBatch), "refused", []byte{changeFormat, 0x80})
	f.Add(int64(7), byte(scopeIndex), []byte("k"), true, 1, false, byte(failedCodec), "x", []byte{changeFormatFailed, 1, 0x80})
	f.Fuzz(func(t *testing.T, ns int64, scope byte, before []byte, existed bool, count int, aside bool, cause byte, reason string, raw []byte) {
		if !existed {
			before = nil
		}
		check := func(c change, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("decode of an encoded change: %v", err)
			}
			if c.enqueued.UnixNano() != ns || c.scope != scope || !bytes.Equal(c.before, before) || (c.before != nil) != existed {
				t.Fatalf("round trip: got %+v, want time %d, scope %d, before %q (existed %v)", c, ns, scope, before, existed)
			}
		}
		v := encodeChange(nil, time.Unix(0, ns), scope, before, existed)
		check(decodeChange([]byte("k"), v))
		fl := failure{count: max(count, 0) % (1 << 20), setAside: aside, cause: cause & 3, reason: reason}
		w := encodeFailed(fl, v)
		c, err := decodeChange([]byte("k"), w)
		check(c, err)
		if c.failed != fl || !bytes.Equal(c.queued, v) || !bytes.Equal(c.value, w) || setAside(w) != aside {
			t.Fatalf("failure round trip: got %+v, queued %q; want %+v, %q", c.failed, c.queued, fl, v)
		}
		// A maintainer that knows formats 1 and 2 only leaves it alone.
		if w[0] == changeFormat || w[0] == changeFormatScopes {
			t.Fatalf("a failed change reads as format %d", w[0])
		}
		_, _ = decodeChange([]byte("k"), raw)
		_ = setAside(raw)
	})
}

// FuzzCatalogEntry checks the same for catalog entries.
func FuzzCatalogEntry(f *testing.F) {
	f.Add(uint64(1), int64(1), int8(IndexWriteOnly), []byte(nil), int64(0), int64(0), []byte(nil), []byte{0x0c})
	f.Add(uint64(1<<63+5), int64(7), int8(indexDropped), []byte("cursor"), int64(3), int64(9), []byte("def"), []byte{})
	f.Fuzz(func(t *testing.T, fp uint64, gen int64, state int8, cursor []byte, done, total int64, def, raw []byte) {
		c := catalogEntry{fingerprint: fp, gen: gen, state: IndexState(state), cursor: cursor, done: done, total: total, def: def}
		got, err := decodeCatalogEntry(c.encode())
		valid := gen > 0 && (c.state >= IndexWriteOnly && c.state <= IndexDisabled || c.state == indexDropped)
		switch {
		case !valid && err == nil:
			t.Fatalf("decoded an invalid entry %+v", got)
		case valid && err != nil:
			t.Fatalf("decode of %+v: %v", c, err)
		case valid && (got.fingerprint != fp || got.gen != gen || got.state != c.state || !bytes.Equal(got.cursor, cursor) ||
			got.cursor == nil && cursor != nil || got.done != done || got.total != total || !bytes.Equal(got.def, def) || got.def == nil && def != nil):
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
		_, _ = decodeCatalogEntry(raw)
	})
}

// FuzzIndexDefinition checks that a definition decodes as it was encoded,
// and that no input makes the decoder panic.
func FuzzIndexDefinition(f *testing.F) {
	f.Add("ID", "Town,LastName", "FirstName", false, uint8(2), true, false, true, int8(1), uint8(2), []byte{0x15, 0x01})
	f.Add("", "", "", true, uint8(0), false, false, false, int8(0), uint8(0), []byte(nil))
	f.Fuzz(func(t *testing.T, pk, fields, proj string, computed bool, strategy uint8, unique, sparse, multi bool, consistency int8, placement uint8, raw []byte) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		d := IndexDefinition{PrimaryKey: split(pk), Fields: split(fields), Computed: computed, Strategy: Strategy(strategy), Projection: split(proj),
			Unique: unique, Sparse: sparse, MultiValued: multi, Consistency: Consistency(consistency), Placement: Placement(placement)}
		got, err := decodeIndexDefinition(d.encode())
		if len(d.PrimaryKey) == 0 { // no table has no primary key
			if !errors.Is(err, ErrCodec) {
				t.Fatalf("decode of %+v: %v, want ErrCodec", d, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("decode of %+v: %v", d, err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip: got %+v, want %+v", got, d)
		}
		_, _ = decodeIndexDefinition(raw)
	})
}

// TestCatalogKeepsDefinitions checks that ReadCatalog finds each index's
// definition, and that an entry written before definitions were kept
// (format 1) gets its definition when the table is next opened.
func TestCatalogKeepsDefinitions(t *testing.T) {
	type rec struct {
		ID, Town, Name string
		Tags           []string
	}
	ctx := context.Background()
	s := NewMemoryStore()
	schema := Schema[rec]{Name: "t", PrimaryKey: []string{"ID"}, Indexes: []Index[rec]{
		{Name: "town", Fields: []string{"Town", "Name"}, Strategy: Partial, Projection: []string{"Tags"}, Sparse: true},
		{Name: "name", Fields: []string{"Name"}, Unique: true},
		{Name: "tags", Fields: []string{"Tags"}, MultiValued: true, Strategy: FullCopy, Consistency: Eventual},
		{Name: "upper", Key: func(r rec) []Tuple { return []Tuple{{strings.ToUpper(r.Name)}} }, Version: 2},
	}}
	_, err := Open(ctx, s, schema)
	require.NoError(t, err)
	want := map[string]IndexDefinition{
		"town":  {PrimaryKey: []string{"ID"}, Fields: []string{"Town", "Name"}, Strategy: Partial, Projection: []string{"Tags"}, Sparse: true, Placement: InterPartition},
		"name":  {PrimaryKey: []string{"ID"}, Fields: []string{"Name"}, Unique: true, Placement: InterPartition},
		"tags":  {PrimaryKey: []string{"ID"}, Fields: []string{"Tags"}, MultiValued: true, Strategy: FullCopy, Consistency: Eventual, Placement: InterPartition},
		"upper": {PrimaryKey: []string{"ID"}, Computed: true, Placement: InterPartition},
	}
	check := func() {
		t.Helper()
		tables, err := ReadCatalog(ctx, s)
		require.NoError(t, err)
		require.Len(t, tables, 1)
		require.Equal(t, "t", tables[0].Name)
		require.Len(t, tables[0].Indexes, len(want))
		for _, ix := range tables[0].Indexes {
			require.NotNil(t, ix.Definition, ix.Name)
			require.Equal(t, want[ix.Name], *ix.Definition, ix.Name)
			require.Equal(t, IndexReadable, ix.State, ix.Name)
		}
	}
	check()

	// Rewrite the town entry as format 1 wrote it: no definition.
	key := catalogKey(appendString(nil, "t"), "town")
	v, err := s.Get(ctx, key)
	require.NoError(t, err)
	c, err := decodeCatalogEntry(v)
	require.NoError(t, err)
	old, err := EncodeTuple(int64(1), c.fingerprint, c.gen, int64(c.state), nil, c.done, c.total)
	require.NoError(t, err)
	var b Batch
	b.Put(key, old)
	require.NoError(t, s.Apply(ctx, &b))
	tables, err := ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Nil(t, tables[0].Indexes[slices.IndexFunc(tables[0].Indexes, func(ix IndexInfo) bool { return ix.Name == "town" })].Definition)
	_, err = Open(ctx, s, schema)
	require.NoError(t, err)
	check()
}

// TestChangeOfAnUnknownIndex: a change of Build or Repair that names an
// index the table no longer has (dropped since) is removed, and harms
// nothing.
func TestChangeOfAnUnknownIndex(t *testing.T) {
	type rec struct{ ID, Town string }
	ctx := context.Background()
	s := NewMemoryStore()
	tbl, err := Open(ctx, s, Schema[rec]{Name: "t", PrimaryKey: []string{"ID"},
		Indexes: []Index[rec]{{Name: "town", Fields: []string{"Town"}, Strategy: FullCopy}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, rec{"1", "R"}); err != nil {
		t.Fatal(err)
	}
	gone := generationPrefix(tbl.prefix, false, "gone", 1)
	pk := appendString(nil, "1")
	for _, named := range [][]byte{gone, appendString(bytes.Clone(gone), "x")} {
		var b Batch
		tbl.enqueue(&b, pk, named, true, scopeIndex)
		if err := s.Apply(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := tbl.ApplyPending(ctx, MaintainerOptions{}); err != nil || n != 2 {
		t.Fatalf("ApplyPending applied %d changes, %v; want 2", n, err)
	}
	rep, err := tbl.Verify(ctx, VerifyOptions{})
	if err != nil || rep.Total() != 0 || rep.Entries != 1 {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

// TestApplyQueuedFailsOnAChangeSetAside: Build and Repair apply the
// changes they queued and wait for them; one that a maintainer elsewhere
// set aside makes them fail at once, naming it, rather than wait for ever.
func TestApplyQueuedFailsOnAChangeSetAside(t *testing.T) {
	type rec struct{ ID, Town string }
	ctx := context.Background()
	s := NewMemoryStore()
	tbl, err := Open(ctx, s, Schema[rec]{Name: "t", PrimaryKey: []string{"ID"},
		Indexes: []Index[rec]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec{"1", "R"})
	require.NoError(t, err)
	prefix := tbl.indexes.load().indexes[0].prefix
	key, value := tbl.changeRecord(appendString(nil, "1"), prefix, true, scopeIndex)
	var b Batch
	b.Put(key, encodeFailed(failure{count: 3, setAside: true, cause: failedInvalidBatch, reason: "indextable: invalid batch: too long"}, value))
	require.NoError(t, s.Apply(ctx, &b))
	err = tbl.applyQueued(ctx, MaintainerOptions{})
	require.ErrorIs(t, err, ErrChangeSetAside)
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.Equal(t, `indextable: change set aside: table "t", record [1], after 3 failures: invalid batch: too long`, err.Error())
}
