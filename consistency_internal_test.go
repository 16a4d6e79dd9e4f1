package indextable

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// FuzzChangeRecord checks that a change record decodes to what was encoded,
// and that any bytes decode or fail without panicking.
func FuzzChangeRecord(f *testing.F) {
	f.Add(int64(0), byte(scopeEventual), []byte(nil), false, []byte{changeFormat})
	f.Add(time.Now().UnixNano(), byte(scopeAll), []byte("\x01{}"), true, []byte{changeFormat, 0x80})
	f.Fuzz(func(t *testing.T, ns int64, scope byte, before []byte, existed bool, raw []byte) {
		if !existed {
			before = nil
		}
		v := encodeChange(nil, time.Unix(0, ns), scope, before, existed)
		c, err := decodeChange([]byte("k"), v)
		if err != nil {
			t.Fatalf("decode of an encoded change: %v", err)
		}
		if c.enqueued.UnixNano() != ns || c.scope != scope || !bytes.Equal(c.before, before) || (c.before != nil) != existed {
			t.Fatalf("round trip: got %+v, want time %d, scope %d, before %q (existed %v)", c, ns, scope, before, existed)
		}
		_, _ = decodeChange([]byte("k"), raw)
	})
}

// FuzzCatalogEntry checks the same for catalog entries.
func FuzzCatalogEntry(f *testing.F) {
	f.Add(uint64(1), int64(1), int8(IndexWriteOnly), []byte(nil), int64(0), int64(0), []byte{0x0c})
	f.Add(uint64(1<<63+5), int64(7), int8(indexDropped), []byte("cursor"), int64(3), int64(9), []byte{})
	f.Fuzz(func(t *testing.T, fp uint64, gen int64, state int8, cursor []byte, done, total int64, raw []byte) {
		c := catalogEntry{fingerprint: fp, gen: gen, state: IndexState(state), cursor: cursor, done: done, total: total}
		got, err := decodeCatalogEntry(c.encode())
		valid := gen > 0 && (c.state >= IndexWriteOnly && c.state <= IndexDisabled || c.state == indexDropped)
		switch {
		case !valid && err == nil:
			t.Fatalf("decoded an invalid entry %+v", got)
		case valid && err != nil:
			t.Fatalf("decode of %+v: %v", c, err)
		case valid && (got.fingerprint != fp || got.gen != gen || got.state != c.state || !bytes.Equal(got.cursor, cursor) ||
			got.cursor == nil && cursor != nil || got.done != done || got.total != total):
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
		_, _ = decodeCatalogEntry(raw)
	})
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
	gone := appendInt(appendString(appendInt(bytes.Clone(tbl.prefix), spaceIndex), "gone"), 1)
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
