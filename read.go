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
	"unsafe"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// read yields the records of plan p, or an error as the last call; when
// onKey is not nil it is called with the key of each record's entry before
// the record is yielded.
//
// A FullCopy index, the fact table and covered reads decode each entry as
// it comes. Other reads, and reads whose entries must be checked against
// the fact table, gather up to fetchChunk entries and fetch their records
// with one GetMany (a checked covered read keeps the record's covered
// fields). Buffers live for the whole scan, so a read allocates per record
// only what the codec does. A read with a Limit scans
// in rounds sized to what it needs (see scanRounds).
//
// A read that overlapped a DisableIndex (or EnableIndex) of its index in
// this table may have missed the entries the disabling deleted: unless the
// caller stopped it, it ends with an error wrapping ErrIndexNotReadable.
func (t *Table[T]) read(ctx context.Context, rd *reader[T], q Query, onKey func([]byte), yield func(T, error) bool) {
	t.readEntries(ctx, rd, q, onKey, yield)
	if !rd.ended {
		if err := t.stillReadable(ctx, rd.plan.ix); err != nil {
			rd.fail(err)
		}
	}
}

// shortKey reports whether entry e has fewer key components than plan p
// fixes. A Key func may return tuples of different lengths, and a
// non-unique entry's key is followed by its primary key: the entry of key
// ("a") of record 5 reads as key ("a", 5), and lies in the range of a
// query for it.
func (t *Table[T]) shortKey(p *scanPlan, e kv.Entry) (bool, error) {
	if p.fixed == 0 {
		return false, nil
	}
	n := 0
	for off := len(p.ix.prefix); off < len(e.Key); n++ {
		l, err := kv.ElementLen(e.Key[off:])
		if err != nil {
			return false, err
		}
		off += l
	}
	return n-len(t.pk) < p.fixed, nil
}

// stillReadable returns an error wrapping ErrIndexNotReadable when ix (nil:
// the fact table) is no longer readable in this generation. The entries of
// an index that stopped being readable are deleted two schema leases after
// the change (see collectGarbage), so a read that finds, at its end, a view
// still within its lease, and the index readable there, read them all; a
// read that outlasted the lease reads the catalog again to know.
func (t *Table[T]) stillReadable(ctx context.Context, ix *indexTable) error {
	if ix == nil {
		return nil
	}
	if t.clock()-t.indexes.readAt.Load() > int64(t.lease) {
		if err := t.renew(ctx, true); err != nil {
			return err
		}
	}
	if now := t.indexes.load().lookup(ix.name); now != nil && now.gen == ix.gen && now.state == IndexReadable {
		return nil
	}
	return fmt.Errorf("%w: table %q, index %q was disabled or dropped during the read", ErrIndexNotReadable, t.name, ix.name)
}

// readEntries is read without the check that its index stayed readable.
// Its loop bodies are the reader's directEntry and fetchEntry, bound once
// for the pooled reader, so that a read allocates no closure for them.
func (t *Table[T]) readEntries(ctx context.Context, rd *reader[T], q Query, onKey func([]byte), yield func(T, error) bool) {
	rd.limit, rd.onKey, rd.yield, rd.ctx, rd.done = q.Limit, onKey, yield, ctx, false
	if rd.direct == nil {
		rd.t, rd.direct, rd.fetch = t, rd.directEntry, rd.fetchEntry
	}
	p := &rd.plan
	if p.ix == nil || (p.ix.strategy == FullCopy || q.Covered) && !rd.check {
		// Each entry yields a record unless it may be stale, filtered out or
		// short; then one scan of what the read needs is enough.
		exact := len(rd.pending) == 0 && len(p.where) == 0 && p.fixed == 0
		// A whole record that the codec decodes exactly has every field
		// written: the last one's need not be cleared first.
		rd.whole = t.exact && (p.ix == nil || p.ix.strategy == FullCopy) && len(rd.pending) == 0
		t.scanRounds(ctx, rd, p.r, exact)(rd.direct)
		return
	}
	rd.f.t, rd.f.ix, rd.f.covered = t, p.ix, q.Covered
	t.scanRounds(ctx, rd, p.r, false)(rd.fetch)
	if !rd.done && len(rd.f.pending) > 0 {
		rd.flush(ctx)
	}
}

// directEntry decodes the record of entry e and yields it; false means
// stop. It is the loop body of a read of the fact table, of a FullCopy
// index, and of a covered read.
func (rd *reader[T]) directEntry(e kv.Entry, err error) bool {
	if rd.done {
		return false
	}
	t, p := rd.t, &rd.plan
	short := false
	if err == nil {
		short, err = t.shortKey(p, e)
	}
	owned := !short
	if err == nil && owned {
		if !rd.whole {
			rd.rec = rd.zero
		}
		if len(rd.pending) > 0 {
			owned, err = t.decodeIfPending(rd.ctx, rd, e)
		} else {
			err = t.decodeDirect(p.ix, e, &rd.rec)
		}
	}
	if err != nil {
		rd.fail(err)
		rd.done = true
		return false
	}
	rd.done = owned && !rd.emit(e.Key)
	return !rd.done
}

// fetchEntry gathers entry e, and fetches and yields the records gathered
// once they are a chunk or what the read still needs; false means stop. It
// is the loop body of the other reads.
func (rd *reader[T]) fetchEntry(e kv.Entry, err error) bool {
	if rd.done {
		return false
	}
	short := false
	if err == nil {
		short, err = rd.t.shortKey(&rd.plan, e)
	}
	if err == nil && short {
		return true
	}
	if err == nil {
		err = rd.f.add(e)
	}
	if err != nil {
		rd.fail(err)
		rd.done = true
		return false
	}
	want := fetchChunk
	if rd.limit > 0 {
		want = min(want, rd.limit-rd.n)
	}
	rd.done = len(rd.f.pending) == want && !rd.flush(rd.ctx)
	return !rd.done
}

// scanRounds yields the entries of r for read rd: with no Limit, those of
// one scan; with one, in rounds, so that the store is asked for about what
// the read needs rather than for its own page size (Azure Table storage
// reads up to 1,000 entities a page) while entries may be skipped. The
// first round asks for what the read needs and the entries it may skip
// (see firstRound); a round that ends at its limit is followed by one twice
// as large, after the last key read (in scan order, so below it in
// Reverse), until the read stops, having its Limit, or a round ends short:
// the range is done.
//
// A read whose every entry yields a record (exact) needs no second round:
// it asks for what it needs in one scan.
//
// Rounds change nothing a read promises: the records with queued changes
// are collected before the first round, and an entry read in a later round
// is checked as in the first; a store's own scan already resumes after a
// key between pages (the memory store's chunks, Azure's continuation
// tokens), so rounds are no less consistent than one scan.
func (t *Table[T]) scanRounds(ctx context.Context, rd *reader[T], r kv.ScanRange, exact bool) iter.Seq2[kv.Entry, error] {
	first := rd.firstRound()
	switch {
	case first == 0:
		return t.store.Scan(ctx, r)
	case exact:
		r.Limit = first
		return t.store.Scan(ctx, r)
	}
	s := &rd.rounds
	if s.all == nil { // bound once for the pooled reader
		s.all, s.entry = s.scan, s.next
	}
	s.store, s.ctx, s.r = t.store, ctx, r
	s.r.Limit = first
	return s.all
}

// rounds is the state of a scan in rounds (see scanRounds), kept in the
// pooled reader with the functions bound to it, so that a read allocates
// nothing for it.
type rounds struct {
	store kv.Store
	ctx   context.Context
	r     kv.ScanRange // of the round being read
	n     int          // entries it yielded so far
	yield func(kv.Entry, error) bool
	ended bool // yield returned false
	// after holds the last key of a round (after[1]) and of the one before
	// it, which the round being read may still be using as r.After.
	after [2][]byte
	all   iter.Seq2[kv.Entry, error] // scan
	entry func(kv.Entry, error) bool // next
}

func (s *rounds) scan(yield func(kv.Entry, error) bool) {
	s.yield, s.ended = yield, false
	for {
		s.n = 0
		s.store.Scan(s.ctx, s.r)(s.entry)
		if s.ended || s.n < s.r.Limit {
			break
		}
		s.r.After = s.after[1]
		if s.r.Limit > math.MaxInt/2 {
			s.r.Limit = 0 // the rest of the range
		} else {
			s.r.Limit *= 2
		}
	}
	s.yield = nil
}

func (s *rounds) next(e kv.Entry, err error) bool {
	if s.ended {
		return false
	}
	if err == nil {
		if s.n++; s.n == s.r.Limit {
			// The round's last entry: the next round resumes after it.
			// Copied before the read's loop body may let the store reuse
			// its memory, into the buffer this round's r.After is not.
			s.after[0] = append(s.after[0][:0], e.Key...)
			s.after[0], s.after[1] = s.after[1], s.after[0]
		}
	}
	if !s.yield(e, err) {
		s.ended = true
	}
	return !s.ended
}

// kept returns what a pooled reader keeps of s: its buffers and its bound
// functions, not the read's context, store, range or loop body.
func (s *rounds) kept() rounds {
	return rounds{after: [2][]byte{s.after[0][:0], s.after[1][:0]}, all: s.all, entry: s.entry}
}

// firstRound returns the limit of the first scan of rd, or 0 for one scan
// without a limit. It is the results the read still needs and the entries
// it expects to skip: one for each record with queued changes (an entry of
// such a record may be left behind, moved or gone; most records have one
// entry in range), or maxPendingChecked when the read checks every record
// (more changes than that are queued, so as many entries may be stale);
// and, under a Where, as many again as the results needed, a guess at a
// filter that keeps half. A wrong guess costs a few more rounds (doubling
// keeps them logarithmic in the entries skipped) or a few more entries in
// the first, never a wrong result. Short keys (a Key func's tuples of
// another length) are rare and left to the rounds; so is a normalized
// read of a stale index, which learns nothing of its queue.
func (rd *reader[T]) firstRound() int {
	need := rd.limit - rd.n
	if rd.limit <= 0 || need <= 0 {
		return 0
	}
	extra := len(rd.pending)
	if rd.check {
		extra = maxPendingChecked
	}
	if len(rd.plan.where) > 0 {
		extra += need
	}
	if need > math.MaxInt-extra {
		return 0
	}
	return need + extra
}

// reader is the state of one read, kept in the table's pool with its
// buffers for the next read.
type reader[T any] struct {
	plan scanPlan
	// check: check each entry against its fact record; or pending: those
	// of these records (encoded primary keys).
	check    bool
	pending  [][]byte
	limit    int
	onKey    func([]byte)
	yield    func(T, error) bool
	ended    bool   // the read failed, or its caller stopped it: yield no more
	rec      T      // decoded into, then yielded by value
	whereBuf []byte // a field's encoding, to compare with Where
	rounds   rounds
	zero     T
	n        int  // records yielded
	counting bool // a Count, which needs no record
	f        fetcher[T]
	// The read's table and context, and its loop bodies, bound once; done:
	// a loop body returned false, and returns false if called again; whole:
	// directEntry decodes whole records that the codec writes every field of.
	done, whole   bool
	t             *Table[T]
	ctx           context.Context
	direct, fetch func(kv.Entry, error) bool
}

func (t *Table[T]) newReader() *reader[T] {
	if rd, ok := t.readers.Get().(*reader[T]); ok {
		return rd
	}
	return new(reader[T])
}

// freeReader returns rd to the pool, keeping its buffers unless they grew
// large, and nothing that refers to the caller or to the store's memory.
func (t *Table[T]) freeReader(rd *reader[T]) {
	if ix := rd.plan.ix; ix != nil {
		ix.use.returned.Add(int64(rd.n))
	}
	f := &rd.f
	// Each of these is cleared whenever it is cut to length 0 again, so
	// beyond its length it holds nothing.
	clear(f.keys)
	clear(f.values)
	clear(f.ownKeys)
	f.reset()
	if cap(f.buf) > 1<<16 || cap(rd.plan.buf) > 1<<12 || cap(rd.rounds.after[0])+cap(rd.rounds.after[1]) > 1<<12 {
		return
	}
	*rd = reader[T]{plan: scanPlan{buf: rd.plan.buf[:0]}, rounds: rd.rounds.kept(), f: fetcher[T]{
		buf: f.buf, pending: f.pending, keys: f.keys[:0], values: f.values[:0], scratch: f.scratch[:0], ownKeys: f.ownKeys[:0],
	}, t: rd.t, direct: rd.direct, fetch: rd.fetch}
	t.readers.Put(rd)
}

func (rd *reader[T]) fail(err error) {
	rd.ended = true
	rd.yield(rd.zero, err)
}

// matches reports whether rd.rec holds the values of the query's Where.
func (rd *reader[T]) matches() bool {
	rv := reflect.ValueOf(&rd.rec).Elem()
	for _, c := range rd.plan.where {
		var ok bool
		if rd.whereBuf, ok = c.f.appendKey(rd.whereBuf[:0], rv, false); !ok || !bytes.Equal(rd.whereBuf, c.want) {
			return false
		}
	}
	return true
}

func (rd *reader[T]) emit(key []byte) bool {
	if len(rd.plan.where) > 0 && !rd.matches() {
		return true
	}
	if rd.onKey != nil {
		rd.onKey(key)
	}
	rd.n++
	if !rd.yield(rd.rec, nil) {
		rd.ended = true
		return false
	}
	return rd.n != rd.limit
}

// flush fetches and yields the pending records; false means stop.
func (rd *reader[T]) flush(ctx context.Context) bool {
	defer rd.f.reset()
	if err := rd.f.fetch(ctx); err != nil {
		rd.fail(err)
		return false
	}
	for i := range rd.f.pending {
		rd.rec = rd.zero
		ok, err := rd.f.decode(i, &rd.rec)
		if err != nil {
			rd.fail(err)
			return false
		}
		if ok && !rd.emit(rd.f.entryKey(i)) {
			return false
		}
	}
	return true
}

// fetcher gathers the entries of a normalized or partial index and fetches
// their records from the fact table in one GetMany. Keys are kept in one
// buffer, reused from chunk to chunk.
type fetcher[T any] struct {
	t       *Table[T]
	ix      *indexTable
	covered bool          // keep only the fields the entries hold
	buf     []byte        // fact keys and entry keys
	pending []pendingFact // offsets into buf
	keys    [][]byte      // fact keys, for GetMany
	values  [][]byte      // their records
	scratch []byte        // key encoding scratch
	ownKeys [][]byte
}

// pendingFact is an entry whose record is still to be fetched: its fact key
// is buf[start:mid] and its entry key buf[mid:end].
type pendingFact struct{ start, mid, end int }

func (f *fetcher[T]) add(e kv.Entry) error {
	pk, _, err := f.ix.decodeEntry(e.Key, e.Value, len(f.t.pk))
	if err != nil {
		return err
	}
	start := len(f.buf)
	f.buf = append(append(f.buf, f.t.factSpace...), pk...)
	mid := len(f.buf)
	f.buf = append(f.buf, e.Key...)
	f.pending = append(f.pending, pendingFact{start, mid, len(f.buf)})
	return nil
}

func (f *fetcher[T]) entryKey(i int) []byte {
	p := f.pending[i]
	return f.buf[p.mid:p.end]
}

func (f *fetcher[T]) reset() {
	f.buf, f.pending = f.buf[:0], f.pending[:0]
}

func (f *fetcher[T]) fetch(ctx context.Context) error {
	clear(f.keys)
	f.keys = f.keys[:0]
	for _, p := range f.pending {
		f.keys = append(f.keys, f.buf[p.start:p.mid])
	}
	var err error
	clear(f.values)
	f.values, err = f.t.store.GetMany(ctx, f.keys, f.values[:0])
	if err == nil && len(f.values) != len(f.keys) {
		err = fmt.Errorf("table %q: GetMany of %d keys returned %d values", f.t.name, len(f.keys), len(f.values))
	}
	return err
}

// decode decodes the record of pending entry i into rec, and reports
// whether it still owns the entry: a record that is gone, or that changed
// after the entry was read, is left out.
func (f *fetcher[T]) decode(i int, rec *T) (bool, error) {
	p := f.pending[i]
	return f.decodeOwner(f.values[i], f.buf[p.mid:p.end], f.buf[p.start+len(f.t.factSpace):p.mid], rec)
}

// decodeOwner decodes into rec the fact record fact (nil: gone), with
// encoded primary key pk, and reports whether it still has the entry
// entryKey.
func (f *fetcher[T]) decodeOwner(fact, entryKey, pk []byte, rec *T) (bool, error) {
	if fact == nil {
		return false, nil
	}
	_, payload, err := decodeFact(fact)
	if err == nil {
		err = f.t.decodeStored(payload, rec)
	}
	if err != nil {
		return false, fmt.Errorf("table %q: decode record: %w", f.t.name, err)
	}
	clear(f.ownKeys)
	f.ownKeys, err = f.ix.keys(f.ownKeys[:0], reflect.ValueOf(rec).Elem(), f.scratch[:0])
	if err != nil {
		return false, err
	}
	if len(f.ownKeys) == 1 {
		f.scratch = f.ownKeys[0]
	}
	owns := ownsEntry(f.ix, f.ownKeys, entryKey, pk)
	if owns && f.covered && f.ix.strategy != FullCopy {
		f.t.cover(f.ix, rec)
	}
	return owns, nil
}

// cover keeps in *rec only the fields an entry of ix holds, those a
// covered read returns: the primary key, the single-valued key fields and,
// for a Partial index, the projection. A covered read that checks an
// entry against its record so returns what the entry holds when exact.
func (t *Table[T]) cover(ix *indexTable, rec *T) {
	full := *rec
	var zero T
	*rec = zero
	src, dst := reflect.ValueOf(&full).Elem(), reflect.ValueOf(rec).Elem()
	keep := func(fs []field) {
		for i := range fs {
			if f := &fs[i]; !f.multi {
				if v := f.get(src); v.IsValid() {
					f.settable(dst).Set(v)
				}
			}
		}
	}
	keep(t.pk)
	keep(ix.fields)
	if ix.strategy == Partial {
		keep(ix.proj.fields)
	}
}

// ownsEntry reports whether the record with encoded primary key pk, whose
// keys in ix are keys, has the entry entryKey.
func ownsEntry(ix *indexTable, keys [][]byte, entryKey, pk []byte) bool {
	rest := entryKey[len(ix.prefix):]
	if !ix.unique {
		if !bytes.HasSuffix(rest, pk) {
			return false
		}
		rest = rest[:len(rest)-len(pk)]
	}
	for _, k := range keys {
		if bytes.Equal(rest, k) {
			return true
		}
	}
	return false
}

// decodeIfPending decodes entry e of rd's index into rd.rec: from the entry
// itself, unless its record is one of rd.pending, whose record is then read
// and decoded whole, and reported as not owning e if its keys moved on.
func (t *Table[T]) decodeIfPending(ctx context.Context, rd *reader[T], e kv.Entry) (bool, error) {
	ix := rd.plan.ix
	if !rd.mayBePending(e) {
		return true, t.decodeDirect(ix, e, &rd.rec)
	}
	pk, _, err := ix.decodeEntry(e.Key, e.Value, len(t.pk))
	if err != nil {
		return false, err
	}
	f := &rd.f
	f.t, f.ix, f.covered = t, ix, true // the direct path reads FullCopy entries or covered ones
	f.scratch = append(append(f.scratch[:0], t.factSpace...), pk...)
	fact, err := t.store.Get(ctx, f.scratch)
	switch {
	case errors.Is(err, ErrNotFound):
		fact = nil
	case err != nil:
		return false, err
	}
	return f.decodeOwner(fact, e.Key, pk, &rd.rec)
}

// mayBePending reports whether entry e may belong to a record of
// rd.pending: cheaply, by the bytes its key ends with (a false match only
// costs a check), or, in a unique entry, by the primary key in its value.
func (rd *reader[T]) mayBePending(e kv.Entry) bool {
	if ix := rd.plan.ix; ix.unique {
		own, _, err := ix.decodeUnique(e.Value)
		return err != nil || slices.ContainsFunc(rd.pending, func(pk []byte) bool { return bytes.Equal(pk, own) })
	}
	for _, pk := range rd.pending {
		if bytes.HasSuffix(e.Key, pk) {
			return true
		}
	}
	return false
}

// decodeDirect decodes into rec a record from a fact table entry (ix nil)
// or a full-copy entry, or the covered fields of any index entry.
func (t *Table[T]) decodeDirect(ix *indexTable, e kv.Entry, rec *T) error {
	var payload []byte
	var err error
	switch {
	case ix == nil:
		_, payload, err = decodeFact(e.Value)
	case ix.strategy == FullCopy && !ix.unique:
		payload = e.Value
	default:
		if ix.strategy != FullCopy {
			return t.decodeCovered(ix, e.Key, e.Value, reflect.ValueOf(rec).Elem())
		}
		_, payload, err = ix.decodeEntry(e.Key, e.Value, len(t.pk))
	}
	if err == nil {
		err = t.decodeStored(payload, rec)
	}
	if err != nil {
		return fmt.Errorf("table %q: decode record: %w", t.name, err)
	}
	return nil
}

// decodeCovered fills rv with what an index entry holds: the primary key,
// the single-valued key fields and the projection. Decoded strings are cut
// from the entry: from the store's own memory when it may be kept, else from
// one copy of it.
func (t *Table[T]) decodeCovered(ix *indexTable, key, value []byte, rv reflect.Value) error {
	if !t.stable {
		buf := make([]byte, len(key)+len(value))
		copy(buf[copy(buf, key):], value)
		key, value = buf[:len(key):len(key)], buf[len(key):]
	}
	// The primary key is in a unique entry's value, before the payload;
	// otherwise at the end of the key, after the key fields. Each part is
	// decoded within its own bounds: a string element ends with 0x00, and a
	// 0xFF after it would read as an escaped zero.
	pkIn, pkOff, payload := key, 0, value
	if ix.unique {
		pk, rest, err := ix.decodeUnique(value)
		if err != nil {
			return err
		}
		pkIn, payload = value[:len(value)-len(rest)], rest
		pkOff = len(pkIn) - len(pk)
	}
	if ix.fields != nil {
		end, err := decodeFields(bytesString(key), key, len(ix.prefix), rv, ix.fields)
		if err != nil {
			return err
		}
		if !ix.unique {
			pkOff = end
		}
	} else if !ix.unique {
		// A computed key has no fields to decode; find where its primary
		// key starts.
		pk, _, err := ix.decodeEntry(key, value, len(t.pk))
		if err != nil {
			return err
		}
		pkOff = len(key) - len(pk)
	}
	end, err := decodeFields(bytesString(pkIn), pkIn, pkOff, rv, t.pk)
	if err != nil {
		return err
	}
	if end != len(pkIn) {
		return fmt.Errorf("%w: index %q: %d bytes after the primary key", ErrMalformedKey, ix.name, len(pkIn)-end)
	}
	if ix.strategy == Partial {
		return ix.proj.decodePayload(bytesString(payload), rv, t.codec)
	}
	return nil
}

// bytesString returns b as a string that shares its memory; b must never be
// written again.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// decodeFields decodes consecutive tuple elements from b[off:] into the
// fields of rv, setting the nil embedded pointers on their way (a record
// has an entry only with its key fields reachable), and returns the offset
// after them. Multi-valued fields are skipped.
func decodeFields(s string, b []byte, off int, rv reflect.Value, fields []field) (int, error) {
	for i := range fields {
		f := &fields[i]
		var n int
		var err error
		if f.multi {
			n, err = tuple.ElementLenAt(b, off)
		} else {
			n, err = tuple.DecodeValueAt(s, b, off, f.settable(rv))
		}
		if err != nil {
			return 0, err
		}
		off += n
	}
	return off, nil
}
