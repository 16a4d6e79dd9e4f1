package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/indextable/indextable/kv"
)

// ErrTxDone reports a call on a transaction that has committed, or tried
// to: a Tx is used once.
var ErrTxDone = errors.New("indextable: transaction done")

// Tx is a transaction over one store: writes to records of any of its
// tables (Table.In), committed together by Commit as one Store.Apply, all
// or nothing, or not at all. It is optimistic: nothing is written or
// locked before Commit, and the commit expects every record the
// transaction read or wrote to be as it read it (absent ones still
// absent); when one changed meanwhile it fails with ErrConflict, and the
// caller runs the transaction again (Transact does so). Reads see the
// transaction's own writes.
//
// Each record's write follows the rules of a single write: its entries in
// synchronous indexes change in the commit's batch, eventual indexes get
// its change through the queue, and its unique keys are checked against
// the store and guarded by expectations; the fallback rule moves its
// entries outside its partition to the queue. A transaction whose batch
// the store cannot make atomic (see kv.Atomicity) is refused whole with
// ErrInvalidBatch, never split. A Tx
// is safe for concurrent use; after Commit, whatever it returned, every
// call returns ErrTxDone. See Transactions in the package documentation.
type Tx struct {
	mu      sync.Mutex
	store   kv.Store
	tables  []*txTable  // in name order, the order their drain locks are taken
	records []*txRecord // in the order first read or written
	byKey   map[string]*txRecord
	done    bool
	batch   kv.Batch // the commit's
	scratch kv.Batch // where the commit plans a record
	opList  *[]kv.Op // holds the commit's operation list for txOpLists
	arena   *arena   // holds its records' encodings and entries
	// setAside, set by Load, makes the commit leave out a record that
	// cannot be written for a reason of its own (refusable), noting it in
	// refusals, rather than fail.
	setAside bool
	refusals []txRefusal
	deferred [][]byte // set aside: the fact keys of records whose unique key another record takes
	// With setAside, on a bounded store, the size of the batch planned
	// (its operations, writes and bytes, as kv.Atomicity bounds them), and
	// whether the store cannot apply it.
	planSize  [3]int
	oversized bool
	// Room for the tables of a small transaction, and for its records
	// (which come from txRecords).
	tableRoom  [2]txTable
	tablePtrs  [2]*txTable
	recordPtrs [4]*txRecord
}

// txRecords, txOpLists and txKeyMaps keep the records, the operation
// lists (of up to txOpsKept operations, enough for a batch of Load) and
// the maps of records by key of transactions that are done, for the next.
const txOpsKept = 1 << 13

var (
	txRecords sync.Pool // *txRecord
	txOpLists sync.Pool // *[]kv.Op
	txKeyMaps sync.Pool // map[string]*txRecord, empty: Tx.byKey
)

// NewTx returns a new transaction over store.
func NewTx(store kv.Store) *Tx {
	tx := &Tx{store: store}
	tx.tables, tx.records = tx.tablePtrs[:0], tx.recordPtrs[:0]
	return tx
}

// txTable is a table of a transaction, and the view that the writes of its
// records plan against, taken at the table's first write.
type txTable struct {
	t    txTableOps
	view *indexView // nil: the transaction writes none of its records
}

// txTableOps is what a transaction needs of a Table, whatever its record
// type.
type txTableOps interface {
	Name() string
	txStore() kv.Store
	hinted() bool
	freeTxBuffers(bufs any)
	view(ctx context.Context, write bool) (*indexView, error)
	drainLock() *sync.RWMutex
	planBatch(ctx context.Context, view *indexView, a *writeAttempt, newEntries []entry, s entryGetter) error
	hintFor(key []byte) []byte
	noteOps(view *indexView, ops []kv.Op, existed, queued bool)
	schemaMoved(ctx context.Context, view *indexView) bool
}

// txRecord is a record that a transaction read or wrote. a holds it as
// read from the store (oldValue and exists; oldVersion and oldEntries
// once written) and, once written, as the transaction leaves it: fact (nil
// for a delete) and version, with entries.
type txRecord struct {
	tbl     *txTable
	a       writeAttempt
	entries []entry // once written: its entries in the view's synchronous indexes
	written bool
	known   bool   // a's version and entries as read are set
	refused bool   // set aside by the commit (see Tx.setAside)
	blind   bool   // inserted without a read: taken to be absent
	ops     [2]int // its operations among those the commit planned
	bufs    any    // the write buffers that hold a.factKey, until the commit
}

// current returns the record as the transaction has it: its fact value's
// payload and version, or false when it is absent.
func (r *txRecord) current() (payload []byte, v Version, ok bool, err error) {
	switch {
	case r.written && r.a.fact == nil, !r.written && !r.a.exists:
		return nil, 0, false, nil
	case r.written:
		return r.a.fact[binary.MaxVarintLen64:], r.a.version, true, nil
	}
	v, payload, err = decodeFact(r.a.oldValue)
	return payload, v, err == nil, err
}

// netWrite reports whether the record's commit writes it: it was written,
// and not only inserted and deleted again.
func (r *txRecord) netWrite() bool {
	return r.written && !r.refused && (r.a.exists || r.a.fact != nil)
}

// txRefusal is a record that a commit set aside, by its fact key, and
// why.
type txRefusal struct {
	key []byte
	err error
}

// refusable reports whether err, of planning a record, is the record's
// own: a key it takes is taken, or it cannot be written to the store.
func refusable(err error) bool {
	for _, e := range []error{ErrExists, ErrUniqueViolation, ErrInvalidKey, ErrInvalidBatch, ErrCodec, ErrUnsupportedType} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// discard ends a transaction that is not to commit, if it has not.
func (tx *Tx) discard() {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if !tx.done {
		tx.done = true
		tx.release()
	}
}

// setAsideOr returns err, or nil after setting r aside when the
// transaction does so and err is r's own.
func (tx *Tx) setAsideOr(r *txRecord, err error) error {
	if !tx.setAside || !refusable(err) {
		return err
	}
	r.refused = true
	tx.refusals = append(tx.refusals, txRefusal{bytes.Clone(r.a.factKey), err})
	return nil
}

// TableTx is a Table in a transaction (see Table.In): its reads and
// writes are those of the table, made in the transaction.
type TableTx[T any] struct {
	tx *Tx
	t  *Table[T]
}

// In returns the table in transaction tx. A table of another store than
// tx's (one that is not == to it), or a second handle of a table that tx
// holds, is refused with ErrInvalidArgument by the calls of what In
// returns.
func (t *Table[T]) In(tx *Tx) TableTx[T] { return TableTx[T]{tx: tx, t: t} }

// Get returns the record with primary key pk as the transaction has it:
// as written by it, else as read from the store, which the commit expects
// to be unchanged. It returns an error wrapping ErrNotFound if there is
// none; the commit then expects it still absent.
func (tt TableTx[T]) Get(ctx context.Context, pk ...any) (T, error) {
	rec, _, err := tt.GetVersioned(ctx, pk...)
	return rec, err
}

// GetVersioned is Get that also returns the record's version.
func (tt TableTx[T]) GetVersioned(ctx context.Context, pk ...any) (T, Version, error) {
	var rec T
	tbl, err := tt.enter(ctx)
	if err != nil {
		return rec, 0, err
	}
	defer tt.tx.mu.Unlock()
	t := tt.t
	pk = primaryKeyValues(pk)
	key, err := t.factKeyOf(nil, pk)
	if err != nil {
		return rec, 0, err
	}
	r, err := tt.record(ctx, tbl, key)
	if err != nil {
		return rec, 0, err
	}
	payload, v, ok, err := r.current()
	switch {
	case err == nil && !ok:
		return rec, 0, fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, t.keyForError(key))
	case err == nil && r.written:
		// The transaction's own encoding, whose memory a later
		// transaction reuses (see arena): the record must not share it.
		err = t.decodeInto(payload, reflect.ValueOf(&rec), false)
	case err == nil:
		err = t.decodeStored(payload, &rec)
	}
	if err != nil {
		return rec, 0, fmt.Errorf("table %q: decode record %v: %w", t.name, t.keyForError(key), err)
	}
	return rec, v, nil
}

// Insert adds rec in the transaction, as Table.Insert does: its primary
// key must be free (as the transaction has it), else ErrExists. It
// returns the version the record has once the transaction commits.
func (tt TableTx[T]) Insert(ctx context.Context, rec T) (Version, error) {
	return tt.write(ctx, writeInsert, rec, nil)
}

// Upsert adds rec or replaces the record with its primary key in the
// transaction, as Table.Upsert does, and returns its version once the
// transaction commits.
func (tt TableTx[T]) Upsert(ctx context.Context, rec T) (Version, error) {
	return tt.write(ctx, writeUpsert, rec, nil)
}

// Update replaces the record with rec's primary key in the transaction,
// as Table.Update does (ErrNotFound if the transaction has none; with
// IfVersion, ErrConflict unless it has that version), and returns its
// version once the transaction commits.
func (tt TableTx[T]) Update(ctx context.Context, rec T, opts ...WriteOption) (Version, error) {
	return tt.write(ctx, writeUpdate, rec, opts)
}

// Delete removes the record with primary key pk in the transaction, as
// Table.Delete does: pk's values, then any WriteOptions.
func (tt TableTx[T]) Delete(ctx context.Context, pk ...any) error {
	pk, opts, err := splitWriteOptions(pk)
	var o writeOptions
	if err == nil {
		o, err = parseWriteOptions(opts)
	}
	if err != nil {
		return err
	}
	tbl, err := tt.enter(ctx)
	if err != nil {
		return err
	}
	defer tt.tx.mu.Unlock()
	key, err := tt.t.factKeyOf(nil, primaryKeyValues(pk))
	if err == nil {
		_, err = tt.change(ctx, tbl, writeDelete, key, nil, nil, o, nil)
	}
	return err
}

// write makes a write of kind of rec in the transaction.
func (tt TableTx[T]) write(ctx context.Context, kind writeKind, rec T, opts []WriteOption) (Version, error) {
	o, err := parseWriteOptions(opts)
	if err != nil {
		return 0, err
	}
	tbl, err := tt.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer tt.tx.mu.Unlock()
	view, err := tbl.writeView(ctx)
	if err != nil {
		return 0, err
	}
	w := tt.t.newWriteBuffers()
	if tt.tx.arena == nil {
		tt.tx.arena = newArena()
	}
	factKey, fact, es, err := tt.t.encodeWrite(view, w, tt.tx.arena, rec)
	if err != nil {
		tt.t.freeWriteBuffers(w)
		return 0, err
	}
	return tt.change(ctx, tbl, kind, factKey, fact, es, o, w)
}

// change makes the write of kind of the record at factKey in the
// transaction, checked against the record as the transaction has it: fact
// and entries es (nil for a delete) replace it at the commit. w, if not
// nil, holds factKey: the record keeps it until the commit.
func (tt TableTx[T]) change(ctx context.Context, tbl *txTable, kind writeKind, factKey, fact []byte, es []entry, o writeOptions, w *writeBuffers[T]) (Version, error) {
	view, err := tbl.writeView(ctx)
	if err != nil {
		return 0, err
	}
	r := tt.tx.lookup(factKey)
	switch {
	case r != nil:
		if w != nil {
			tt.t.freeWriteBuffers(w) // the record has its key
		}
	case kind == writeInsert:
		// As a single insert, it takes the record to be absent, unread:
		// the commit expects it so, and reports ErrExists if it is not.
		r = tt.tx.newRecord(tbl, factKey, factKey[len(tt.t.factSpace):], nil)
		r.blind, r.known, r.bufs = true, true, w
	default:
		if r, err = tt.record(ctx, tbl, factKey); err != nil {
			if w != nil {
				tt.t.freeWriteBuffers(w)
			}
			return 0, err
		}
		if w != nil {
			r.bufs = w
		}
	}
	if !r.known {
		if r.a.exists {
			if err := tt.t.asRead(view, &r.a, r.a.oldValue); err != nil {
				return 0, err
			}
		}
		r.known = true
	}
	now := writeAttempt{factKey: r.a.factKey, pk: r.a.pk, fact: fact, exists: r.a.exists, oldVersion: r.a.oldVersion}
	if r.written {
		now.exists, now.oldVersion = r.a.fact != nil, r.a.version
	}
	if err := tt.t.checkCurrent(kind, o, &now); err != nil {
		if o.ifVersion != 0 && errors.Is(err, ErrConflict) {
			err = versionMismatch{err}
		}
		return 0, err
	}
	r.a.fact, r.a.version, r.entries, r.written = fact, now.version, es, true
	return now.version, nil
}

// versionMismatch is the error of an IfVersion in a transaction that the
// record, as the transaction has it, does not meet. The version came from
// outside the transaction (its reads see its own writes), so running it
// again would meet the same mismatch: Transact does not.
type versionMismatch struct{ error }

func (e versionMismatch) Unwrap() error { return e.error }

// record returns the transaction's record at factKey of tbl, reading it
// from the store the first time.
func (tt TableTx[T]) record(ctx context.Context, tbl *txTable, factKey []byte) (*txRecord, error) {
	tx := tt.tx
	if r := tx.lookup(factKey); r != nil {
		return r, nil
	}
	value, err := tt.t.store.Get(ctx, factKey)
	switch {
	case errors.Is(err, ErrNotFound):
		value = nil
	case err != nil:
		return nil, fmt.Errorf("table %q: %w", tt.t.name, err)
	}
	return tx.newRecord(tbl, factKey, factKey[len(tt.t.factSpace):], value), nil
}

// newRecord adds to the transaction the record of tbl at factKey, with
// encoded primary key pk, read as value (nil: absent).
func (tx *Tx) newRecord(tbl *txTable, factKey, pk, value []byte) *txRecord {
	r, ok := txRecords.Get().(*txRecord)
	if !ok {
		r = new(txRecord)
	}
	*r = txRecord{tbl: tbl, a: writeAttempt{factKey: factKey, pk: pk, oldValue: value, exists: value != nil}}
	tx.add(r)
	return r
}

// keyString returns key as a string, without copying it, to index a map
// for as long as key is not modified: a transaction's records' fact keys,
// held until the transaction is done, or the keys of the operations it
// plans.
func keyString(key []byte) string { return unsafe.String(unsafe.SliceData(key), len(key)) }

// txIndexAt is how many records a transaction looks through before it
// indexes them by key.
const txIndexAt = 16

func (tx *Tx) lookup(key []byte) *txRecord {
	if tx.byKey != nil {
		return tx.byKey[keyString(key)]
	}
	for _, r := range tx.records {
		if bytes.Equal(r.a.factKey, key) {
			return r
		}
	}
	return nil
}

func (tx *Tx) add(r *txRecord) {
	tx.records = append(tx.records, r)
	switch {
	case tx.byKey != nil:
		tx.byKey[keyString(r.a.factKey)] = r
	case len(tx.records) > txIndexAt:
		tx.byKey, _ = txKeyMaps.Get().(map[string]*txRecord)
		if tx.byKey == nil {
			tx.byKey = make(map[string]*txRecord, 2*len(tx.records))
		}
		for _, r := range tx.records {
			tx.byKey[keyString(r.a.factKey)] = r
		}
	}
}

// enter locks the transaction for a call of ctx on the table, and returns
// the table as the transaction holds it; the caller unlocks the
// transaction. It refuses a nil context, transaction or table, a
// transaction that is done, and a table of another store or one that the
// transaction holds through another handle.
func (tt TableTx[T]) enter(ctx context.Context) (*txTable, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if tt.tx == nil || tt.t == nil {
		return nil, fmt.Errorf("%w: nil transaction or table", ErrInvalidArgument)
	}
	tt.tx.mu.Lock()
	tbl, err := tt.tx.join(tt.t)
	if err != nil {
		tt.tx.mu.Unlock()
		return nil, err
	}
	return tbl, nil
}

// join returns t as the transaction holds it, adding it the first time.
func (tx *Tx) join(t txTableOps) (*txTable, error) {
	if tx.done {
		return nil, fmt.Errorf("%w: table %q", ErrTxDone, t.Name())
	}
	at := len(tx.tables)
	for i, tbl := range tx.tables {
		switch {
		case tbl.t == t:
			return tbl, nil
		case tbl.t.Name() == t.Name():
			return nil, fmt.Errorf("%w: table %q is in the transaction through another handle", ErrInvalidArgument, t.Name())
		case tbl.t.Name() > t.Name() && at == len(tx.tables):
			at = i
		}
	}
	if tx.store == nil {
		return nil, fmt.Errorf("%w: the transaction has no store", ErrInvalidArgument)
	}
	switch same, err := sameStore(t.txStore(), tx.store); {
	case err != nil:
		return nil, fmt.Errorf("table %q: %w", t.Name(), err)
	case !same:
		return nil, fmt.Errorf("%w: table %q is over another store than the transaction", ErrInvalidArgument, t.Name())
	}
	var tbl *txTable
	if n := len(tx.tables); n < len(tx.tableRoom) {
		tbl = &tx.tableRoom[n]
	} else {
		tbl = new(txTable)
	}
	tbl.t = t
	tx.tables = append(tx.tables, nil)
	copy(tx.tables[at+1:], tx.tables[at:])
	tx.tables[at] = tbl
	return tbl, nil
}

// sameStore reports whether a and b are one store: equal, as == tells.
// Stores of a type that == cannot compare (a struct with a func field,
// say) cannot be told apart, and are refused.
func sameStore(a, b kv.Store) (bool, error) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.Comparable() || !vb.Comparable() {
		return false, fmt.Errorf("%w: a store of type %T cannot be compared, so a transaction cannot tell its tables' stores apart: use a pointer to it", ErrInvalidArgument, a)
	}
	return va.Type() == vb.Type() && va.Equal(vb), nil
}

// writeView returns the view the writes of tbl's records plan against.
func (tbl *txTable) writeView(ctx context.Context) (*indexView, error) {
	if tbl.view == nil {
		v, err := tbl.t.view(ctx, true)
		if err != nil {
			return nil, err
		}
		tbl.view = v
	}
	return tbl.view, nil
}

func (t *Table[T]) txStore() kv.Store        { return t.store }
func (t *Table[T]) drainLock() *sync.RWMutex { return &t.indexes.drain }

// freeTxBuffers returns to the pool the write buffers of a transaction
// that is done.
func (t *Table[T]) freeTxBuffers(bufs any) {
	if w, ok := bufs.(*writeBuffers[T]); ok {
		t.freeWriteBuffers(w)
	}
}

// schemaMoved reports whether the table's schema version is no longer
// view's, after a commit that conflicted; it then reads the catalog, so
// that the transaction's next run plans against the new view.
func (t *Table[T]) schemaMoved(ctx context.Context, view *indexView) bool {
	if !t.versioned {
		return false
	}
	now, err := t.readVersion(ctx)
	if err != nil || bytes.Equal(now, view.version) {
		return false
	}
	_ = t.refreshView(ctx) // else the lease renews it
	return true
}

// Transact runs fn in a new transaction over store and commits it, when fn
// returns nil; when fn or the commit fails with an error wrapping
// ErrConflict (a record changed meanwhile), it runs fn again in a new
// transaction, after a short random pause that grows, up to 16 times in
// all. A mismatch of IfVersion in fn is not run again: the version came
// from outside the transaction, so fn would meet it again. fn must not
// commit the transaction, and should have no effects other than its
// writes in it: it may run several times. Any other error of fn or of the
// commit is returned as it is, and ends the runs. A commit that conflicts
// applied nothing (kv.Store.Apply promises it), so the records fn writes
// are written once.
func Transact(ctx context.Context, store kv.Store, fn func(tx *Tx) error) error {
	if err := checkArguments(ctx, store); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("%w: nil transaction function", ErrInvalidArgument)
	}
	pause := txFirstPause
	for attempt := 1; ; attempt++ {
		tx := NewTx(store)
		err := fn(tx)
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			tx.discard()
		}
		if !errors.Is(err, ErrConflict) || errors.As(err, new(versionMismatch)) {
			return err
		}
		if attempt == txAttempts {
			return fmt.Errorf("the transaction conflicted %d times, the last: %w", attempt, err)
		}
		if berr := backoff(ctx, &pause); berr != nil {
			return fmt.Errorf("%w (after a conflict: %v)", berr, err)
		}
	}
}

// backoff waits a random time around *pause, and doubles *pause up to
// txMaxPause; it returns ctx's error if ctx ends first.
func backoff(ctx context.Context, pause *time.Duration) error {
	timer := time.NewTimer(*pause/2 + rand.N(*pause))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	}
	*pause = min(2**pause, txMaxPause)
	return nil
}

// Transact's retries.
const (
	txAttempts   = 16
	txFirstPause = time.Millisecond
	txMaxPause   = 100 * time.Millisecond
)
