package indextable

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// Query errors.
var (
	// ErrInvalidQuery reports a query that does not fit the table's schema.
	ErrInvalidQuery = errors.New("indextable: invalid query")
	// ErrInvalidCursor reports a continuation cursor that was altered or
	// belongs to another query.
	ErrInvalidCursor = errors.New("indextable: invalid cursor")
)

// Query selects records through one index table, or through the fact table
// in primary key order when Index is empty.
//
// Eq fixes the leading key components: all of them for an exact match, or
// fewer for a prefix ("Town = Redmond" on a Town, LastName index). Lower
// and Upper bound the component after them ("Town = Redmond, LastName
// from S"). Results come in key order, and with a multi-valued index once
// per matching entry.
type Query struct {
	// Index names the index table to read; empty reads the fact table.
	Index string
	// Eq holds values for the leading key components.
	Eq Tuple
	// Lower and Upper bound the key component after Eq; nil is unbounded.
	Lower, Upper *Bound
	// Reverse returns results in descending key order. Results are in key
	// order; records with equal keys (in a non-unique index) come in
	// primary key order, which Reverse reverses too.
	Reverse bool
	// Limit caps the results; 0 means no limit. FindPage needs one.
	Limit int
	// Cursor resumes the query after the last result of a previous page, as
	// returned by FindPage for the same query.
	Cursor string
	// Covered asks for the fields the index entry holds only, read from the
	// index without touching the fact table: the primary key, the index's
	// single-valued key fields and, for a Partial index, its projection. The
	// other fields are left zero; a result that the read checked against its
	// fact record (see Table.Find) has these fields from the record. A
	// FullCopy entry holds the whole record.
	Covered bool
	// Where keeps only the records whose fields hold the given values, by
	// field name; each field is single-valued and of a key type. Without
	// Index, the whole fact table is read and filtered: the scan an index
	// saves, which Usage counts by the fields filtered on, so that Advise
	// can propose the index. Limit counts the records kept. A covered read
	// cannot be filtered.
	Where map[string]any
	// Stale makes a read of an index whose entries may lag their records
	// (an Eventual index, or any index on a store whose writes may fall
	// back to the queue) take the entries as they are, without the check
	// of pending changes that keeps a read exact (see Table.Find). Like a
	// read of a DynamoDB global secondary index, it may return a record
	// as it was (under a key it no longer has, or deleted since), or miss
	// one, until the maintainers apply the pending changes. It
	// saves the read's scan of the table's queue and a fact-table read per
	// result of a record with pending changes (every result, when many are
	// pending). A read that fetches every record anyway (KeysOnly or
	// Partial, not covered) costs the same either way, and stays exact.
	Stale bool
	// Fields names the fields the caller uses; the others may be left zero.
	// A query of a KeysOnly or Partial index whose entries hold every one
	// of them (its primary key, single-valued key fields and projection) is
	// answered from the index alone, as a Covered one, unless it has a
	// Where. Usage counts the fields that reads name, so that Advise can
	// say when a FullCopy index could keep only those.
	Fields []string
}

// Bound is one end of a range on a key component.
//
// A bound's Value, like a value of Query.Eq or Where, must be of the key
// field's kind: a string for a string field, and so on. Numbers convert
// when that keeps them exact: an int bounds a float64 field, and 100.0 an
// int field, but 2.5 does not bound an int field, nor 16777217 a float32
// one (float32 cannot hold it); those queries fail with ErrInvalidQuery. A
// float for a float32 field is rounded to float32, as the field's values
// were. Integers of any size and sign compare by value. An index with a
// Key func declares no field: its values are compared as encoded, where
// every integer sorts before every float, so give it the kinds its Key
// func returns.
type Bound struct {
	// Value is compared with the key component, as a tuple element.
	Value any
	// Exclusive leaves out Value itself.
	Exclusive bool
}

// Inclusive returns a bound that includes v.
func Inclusive(v any) *Bound { return &Bound{Value: v} }

// Exclusive returns a bound that excludes v.
func Exclusive(v any) *Bound { return &Bound{Value: v, Exclusive: true} }

// fetchChunk is how many facts a normalized or partial read fetches from
// the fact table in one GetMany.
const fetchChunk = 64

// scanPlan is a query compiled against the schema.
type scanPlan struct {
	ix           *indexTable // nil for the fact table
	r            kv.ScanRange
	table, index string
	buf          []byte // holds r.Start and r.End, reused by the next plan
	eq           []byte // the encoded Eq, in buf
	where        []whereCond
	filter       string // Where's field names, sorted and joined by commas
	// fixed is the key components a read of a non-unique Key-func index
	// fixes, whose entries must have as many (see shortKey); else 0.
	fixed int
}

// whereCond is one equality of Query.Where: a field, and the value it must
// hold, encoded as a key element.
type whereCond struct {
	f    field
	want []byte
}

// compileWhere compiles q.Where into p.
func (t *Table[T]) compileWhere(q Query, p *scanPlan) error {
	if len(q.Where) == 0 {
		return nil
	}
	if q.Covered {
		return fmt.Errorf("%w: Where needs whole records; a covered read has only the index's fields", ErrInvalidQuery)
	}
	names := make([]string, 0, len(q.Where))
	for name := range q.Where {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f, err := lookupField(t.rtype, name, false)
		if err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "Where")
		}
		w, _, err := queryComponent(&f, q.Where[name])
		if err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "Where")
		}
		want, err := kv.AppendElement(nil, w)
		if err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "Where %q", name)
		}
		p.where = append(p.where, whereCond{f, want})
	}
	p.filter = strings.Join(names, ",")
	return nil
}

// fingerprint identifies the query a cursor belongs to: its table, index,
// range, direction and filter.
func (p *scanPlan) fingerprint() uint64 {
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	parts := [][]byte{[]byte(p.table), []byte(p.index), p.r.Start, p.r.End, {boolByte(p.r.Reverse)}, []byte(p.filter)}
	for _, c := range p.where {
		parts = append(parts, c.want)
	}
	for _, part := range parts {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(part))))
		h.Write(part)
	}
	return h.Sum64()
}

// compile compiles q into p, reusing p's buffer.
func (t *Table[T]) compile(q Query, p *scanPlan) error {
	*p = scanPlan{buf: p.buf[:0]}
	prefix := t.factSpace
	fields := t.pk
	if q.Index != "" {
		view := t.indexes.load()
		p.ix = view.lookup(q.Index)
		switch {
		case p.ix == nil && slices.Contains(view.dropped, q.Index):
			return fmt.Errorf("%w: table %q, index %q was dropped by another process", ErrIndexNotReadable, t.name, q.Index)
		case p.ix == nil:
			return fmt.Errorf("%w: table %q has no index %q", ErrInvalidQuery, t.name, q.Index)
		}
		prefix, fields = p.ix.prefix, p.ix.fields
	}
	if q.Limit < 0 {
		return fmt.Errorf("%w: negative limit %d", ErrInvalidQuery, q.Limit)
	}
	if err := t.compileWhere(q, p); err != nil {
		return err
	}
	for _, name := range q.Fields {
		if sf, ok := t.rtype.FieldByName(name); !ok || !sf.IsExported() {
			return fmt.Errorf("%w: Fields: %s has no exported field %q", ErrInvalidQuery, t.rtype, name)
		}
	}
	fixed := len(q.Eq)
	if q.Lower != nil || q.Upper != nil {
		fixed++
	}
	if p.ix != nil && p.ix.keyFunc != nil && !p.ix.unique {
		p.fixed = fixed
	}
	if fields != nil {
		if fixed > len(fields) {
			return fmt.Errorf("%w: %d key components given, the key has %d", ErrInvalidQuery, fixed, len(fields))
		}
		if err := fieldComponents(&q, fields); err != nil {
			return err
		}
	}
	// One buffer holds the start key and, after it, the end key.
	if cap(p.buf) < 2*len(prefix)+64 {
		p.buf = make([]byte, 0, 2*len(prefix)+64)
	}
	eq, err := kv.AppendTuple(append(p.buf, prefix...), q.Eq...)
	if err != nil {
		return wrapErrorf(ErrInvalidQuery, err, "")
	}
	p.buf = eq[:0] // keep a buffer that grew for the next plan
	p.eq = eq[len(prefix):]
	// A key that extends the tuple encoded as k lies in [k, tupleEnd(k)).
	p.r.Start, p.r.End = eq, tuple.AppendEnd(eq[len(eq):], eq) // the end after the start, in p.buf
	if q.Lower != nil {
		if p.r.Start, err = kv.AppendElement(bytes.Clone(eq), q.Lower.Value); err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "lower bound")
		}
		if q.Lower.Exclusive {
			p.r.Start = tuple.End(p.r.Start)
		}
	}
	if q.Upper != nil {
		if p.r.End, err = kv.AppendElement(bytes.Clone(eq), q.Upper.Value); err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "upper bound")
		}
		if !q.Upper.Exclusive {
			p.r.End = tuple.End(p.r.End)
		}
	}
	p.r.Reverse = q.Reverse
	p.table, p.index = t.name, q.Index
	if q.Cursor != "" {
		if p.r.After, err = p.decodeCursor(q.Cursor); err != nil {
			return err
		}
	}
	return nil
}

// fieldComponents checks q's Eq values and bounds against the key fields
// they are compared with, and converts them as queryComponent does (a copy
// of Eq, or of a bound, holds a converted value).
func fieldComponents(q *Query, fields []field) error {
	cloned := false
	for i, v := range q.Eq {
		w, converted, err := queryComponent(&fields[i], v)
		if err != nil {
			return wrapErrorf(ErrInvalidQuery, err, "Eq")
		}
		if converted {
			if !cloned {
				q.Eq, cloned = slices.Clone(q.Eq), true
			}
			q.Eq[i] = w
		}
	}
	for i, b := range []**Bound{&q.Lower, &q.Upper} {
		if *b != nil {
			w, converted, err := queryComponent(&fields[len(q.Eq)], (*b).Value)
			if err != nil {
				return wrapErrorf(ErrInvalidQuery, err, "%s bound", [...]string{"lower", "upper"}[i])
			}
			if converted {
				*b = &Bound{Value: w, Exclusive: (*b).Exclusive}
			}
		}
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// A cursor is base64url of: format byte, query fingerprint (8 bytes), last
// key, checksum (8 bytes, FNV-64a of what precedes it). The fingerprint ties
// it to its query; the checksum catches alterations; and the key must lie
// in the query's range, so even a forged cursor reads nothing the query
// could not.
const cursorFormat = 1

func (p *scanPlan) encodeCursor(lastKey []byte) string {
	b := make([]byte, 0, 17+len(lastKey))
	b = append(b, cursorFormat)
	b = binary.BigEndian.AppendUint64(b, p.fingerprint())
	b = append(b, lastKey...)
	h := fnv.New64a()
	h.Write(b)
	b = h.Sum(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *scanPlan) decodeCursor(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 17 || b[0] != cursorFormat {
		return nil, fmt.Errorf("%w: not a cursor", ErrInvalidCursor)
	}
	body := b[:len(b)-8]
	h := fnv.New64a()
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), b[len(b)-8:]) {
		return nil, fmt.Errorf("%w: checksum mismatch (altered)", ErrInvalidCursor)
	}
	if binary.BigEndian.Uint64(body[1:9]) != p.fingerprint() {
		return nil, fmt.Errorf("%w: it belongs to another query", ErrInvalidCursor)
	}
	key := body[9:]
	if !(kv.ScanRange{Start: p.r.Start, End: p.r.End}).Contains(key) {
		return nil, fmt.Errorf("%w: its position is outside the query's range", ErrInvalidCursor)
	}
	return key, nil
}

// coverFields returns q as a Covered query when the entries of its KeysOnly
// or Partial index hold every field of q.Fields.
func (t *Table[T]) coverFields(q Query) Query {
	if len(q.Fields) == 0 || q.Covered || len(q.Where) > 0 || q.Index == "" {
		return q
	}
	ix := t.indexes.load().lookup(q.Index)
	if ix == nil || ix.strategy == FullCopy {
		return q
	}
	for _, name := range q.Fields {
		if !slices.ContainsFunc(t.pk, func(f field) bool { return f.name == name }) &&
			!slices.ContainsFunc(ix.fields, func(f field) bool { return f.name == name && !f.multi }) &&
			!slices.ContainsFunc(ix.proj.fields, func(f field) bool { return f.name == name }) {
			return q
		}
	}
	q.Covered = true
	return q
}

// Find returns the records that q selects, in key order, and records with
// equal keys in primary key order (both descending with Query.Reverse).
//
// A read of an index that may be behind its records (an Eventual index, or
// any index on a store with bounded atomicity) returns no record under a
// key it no longer has. A KeysOnly or Partial read checks each entry
// against the record it fetches anyway, a GetMany per 64 entries. A
// FullCopy or covered read first scans the queue for the records with
// changes pending (on a store that partitions keys, the queue's hints, one
// partition: see MaintainerOptions.SweepInterval), trusts the entries of
// the other records, and reads those records from the fact table, leaving
// out an entry whose record no longer has its key; with more than 64
// changes pending, it checks every result. This is exact: a record without
// a pending change had exact entries when the scan passed it, and since
// then only a maintainer changed them, from the record as it then was, so
// the record matched the query at some moment of the read.
// Query.Stale skips the queue scan and the checks, for reads that may be
// stale.
func (t *Table[T]) Find(ctx context.Context, q Query) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := t.coverFields(q) // a q assigned outside would be captured by reference, an allocation more
		rd := t.newReader()
		defer t.freeReader(rd)
		if err := t.prepare(ctx, q, rd); err != nil {
			yield(rd.zero, err)
			return
		}
		t.read(ctx, rd, q, nil, yield)
	}
}

// FindPage returns up to q.Limit records that q selects and, when more
// follow, a cursor that resumes the query after them (set it as q.Cursor);
// the cursor is empty on the last page.
func (t *Table[T]) FindPage(ctx context.Context, q Query) ([]T, string, error) {
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("%w: FindPage needs a positive Limit", ErrInvalidQuery)
	}
	q = t.coverFields(q)
	rd := t.newReader()
	defer t.freeReader(rd)
	err := t.prepare(ctx, q, rd)
	if err != nil {
		return nil, "", err
	}
	// Read one record past the page, to know whether a cursor is needed;
	// past a page of math.MaxInt records, none can follow.
	limit := q.Limit
	q.Limit = 0
	if limit < math.MaxInt {
		q.Limit = limit + 1
	}
	page := make([]T, 0, min(limit, fetchChunk))
	var keys [2][]byte // the entry keys of the last two records read
	t.read(ctx, rd, q, func(key []byte) {
		keys[0], keys[1] = keys[1], append(keys[0][:0], key...)
	}, func(rec T, e error) bool {
		page, err = append(page, rec), e
		return e == nil
	})
	if err != nil {
		return nil, "", err
	}
	if len(page) <= limit {
		return page, "", nil
	}
	rd.n-- // the record read past the page is not returned
	return page[:limit], rd.plan.encodeCursor(keys[0]), nil
}

// Count returns how many index entries (or, without an index, records) q
// selects, up to q.Limit when set, without decoding any record; for an
// index whose entries may be stale, it counts the records Find returns.
func (t *Table[T]) Count(ctx context.Context, q Query) (int, error) {
	rd := t.newReader()
	defer t.freeReader(rd)
	rd.counting = true
	if len(q.Where) == 0 {
		q.Covered = true // counted from the entries alone, so checked as a covered read
	}
	if err := t.prepare(ctx, q, rd); err != nil {
		return 0, err
	}
	if rd.check || len(rd.pending) > 0 || len(q.Where) > 0 || rd.plan.fixed > 0 {
		n := 0
		var err error
		t.read(ctx, rd, q, nil, func(_ T, e error) bool {
			if e != nil {
				err = e
				return false
			}
			n++
			return true
		})
		return n, err
	}
	r := rd.plan.r
	r.Limit = q.Limit
	for _, err := range t.store.Scan(ctx, r) {
		if err != nil {
			return 0, err
		}
		rd.n++
	}
	if err := t.stillReadable(ctx, rd.plan.ix); err != nil {
		return 0, err
	}
	return rd.n, nil
}

// Exists reports whether q selects anything, reading at most one entry.
func (t *Table[T]) Exists(ctx context.Context, q Query) (bool, error) {
	q.Limit = 1
	n, err := t.Count(ctx, q)
	return n > 0, err
}

// prepare compiles q for rd, checks that its index is readable, and decides
// which of its entries must be checked against the fact table (see
// Table.pendingRecords).
func (t *Table[T]) prepare(ctx context.Context, q Query, rd *reader[T]) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if q.Index != "" {
		if err := t.knowIndex(ctx, q.Index); err != nil {
			return err
		}
	}
	if err := t.compile(q, &rd.plan); err != nil {
		return err
	}
	ix := rd.plan.ix
	// A page resumed from a cursor is the query already counted; only its
	// records are counted (as returned).
	resumed := q.Cursor != ""
	if ix == nil {
		if !resumed {
			t.scans.Add(1)
			if rd.plan.filter != "" {
				t.noteFilter(rd.plan.filter)
			}
		}
		return nil
	}
	ix, err := t.readable(ctx, ix)
	if err != nil {
		return err
	}
	if ix.gen != rd.plan.ix.gen {
		// Enabled anew, and built, since q was compiled: compile it again.
		return t.prepare(ctx, q, rd)
	}
	rd.plan.ix = ix
	if !resumed {
		ix.use.noteRead(rd.plan.eq)
		ix.use.noteFields(fieldsNeeded(q, ix, rd.counting))
	}
	// A normalized or partial read checks every record anyway.
	if (ix.strategy == FullCopy || q.Covered) && t.mayBeStale(ix) && !q.Stale {
		// An intra-partition read of one partition needs only its queue.
		var within []byte
		if ix.intra && len(q.Eq) > 0 {
			k := rd.plan.r.Start[len(ix.prefix):]
			if _, rest, err := kv.DecodeElement(k); err == nil {
				within = k[:len(k)-len(rest)]
			}
		}
		var err error
		rd.pending, rd.check, err = t.pendingRecords(ctx, rd.pending, within)
		return err
	}
	return nil
}

// fieldsNeeded returns the fields a read of q from ix needs, for Usage:
// nil for whole records; else those it names (Fields) and filters on
// (Where), which for a Count, or a covered read of an index that does not
// copy whole records, may be none beyond the entries' own.
func fieldsNeeded(q Query, ix *indexTable, counting bool) []string {
	if len(q.Fields) == 0 && !counting && !(q.Covered && ix.strategy != FullCopy) {
		return nil
	}
	out := slices.Clone(q.Fields)
	for name := range q.Where {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
