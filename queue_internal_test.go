package indextable

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
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

// TestChangeOfAnUnknownIndex: a change of Build or Repair that names an
// index the table no longer has (dropped since) is removed, and harms
// nothing.
func TestChangeOfAnUnknownIndex(t *testing.T) {
	type rec struct{ ID, Town string }
	ctx := context.Background()
	s := NewMemoryStore()
	tbl, err := Open(ctx, s, Schema[rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"},
		Indexes: []Index[rec]{{Name: "town", Fields: []string{"Town"}, Strategy: FullCopy}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Insert(ctx, rec{"1", "R"}); err != nil {
		t.Fatal(err)
	}
	gone := generationPrefix(tbl.prefix, false, "gone", 1)
	pk := tuple.AppendString(nil, "1")
	for _, named := range [][]byte{gone, tuple.AppendString(bytes.Clone(gone), "x")} {
		var b kv.Batch
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
	tbl, err := Open(ctx, s, Schema[rec]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"},
		Indexes: []Index[rec]{{Name: "town", Fields: []string{"Town"}}}})
	require.NoError(t, err)
	_, err = tbl.Insert(ctx, rec{"1", "R"})
	require.NoError(t, err)
	prefix := tbl.indexes.load().indexes[0].prefix
	key, value := tbl.changeRecord(tuple.AppendString(nil, "1"), prefix, true, scopeIndex)
	var b kv.Batch
	b.Put(key, encodeFailed(failure{count: 3, setAside: true, cause: failedInvalidBatch, reason: "indextable: invalid batch: too long"}, value))
	require.NoError(t, s.Apply(ctx, &b))
	err = tbl.applyQueued(ctx, MaintainerOptions{})
	require.ErrorIs(t, err, ErrChangeSetAside)
	require.ErrorIs(t, err, ErrInvalidBatch)
	require.Equal(t, `indextable: change set aside: table "t", record ("1"), after 3 failures: invalid batch: too long`, err.Error())
}
