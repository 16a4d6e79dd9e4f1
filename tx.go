package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
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
	// setAside, set by Load, makes the commit leave out a record that
	// cannot be written for a reason of its own (refusable), noting it in
	// refusals, rather than fail.
	setAside bool
	refusals []txRefusal
	deferred [][]byte // set aside: the fact keys of records whose unique key another record takes
	// With setAside, the operations and bytes of the batch planned, and
	// whether the store cannot apply it.
	planSize  [2]int
	oversized bool
	// Room for the tables of a small transaction, and for its records
	// (which come from txRecords).
	tableRoom  [2]txTable
	tablePtrs  [2]*txTable
	recordPtrs [4]*txRecord
}

// txRecords and txOpLists keep the records and the operation lists of
// transactions that are done, for the next: lists of up to txOpsKept
// operations, enough for a batch of Load.
const txOpsKept = 1 << 13

var (
	txRecords sync.Pool // *txRecord
	txOpLists sync.Pool // *[]kv.Op
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
		return rec, 0, fmt.Errorf("%w: table %q, primary key %v", ErrNotFound, t.name, Tuple(pk))
	case err == nil && r.written:
		err = t.decodeKept(payload, &rec) // the transaction's own buffer
	case err == nil:
		err = t.decodeStored(payload, &rec)
	}
	if err != nil {
		return rec, 0, fmt.Errorf("table %q: decode record %v: %w", t.name, Tuple(pk), err)
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
	factKey, fact, es, err := tt.t.encodeWrite(view, w, rec)
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
		tx.byKey = make(map[string]*txRecord, 2*len(tx.records))
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

// Commit applies the transaction's writes, and checks its reads, in one
// batch, all or nothing. It returns an error wrapping ErrConflict when a
// record it read or wrote changed since (or a unique key it takes was
// taken, or the table's indexes changed): nothing was applied, and the
// transaction may run again; ErrExists when a record it inserted without
// reading it exists; ErrUniqueViolation when its records take a unique
// key that another record holds, or that two of them take; and
// ErrInvalidBatch, saying why, when the store cannot apply the batch
// atomically (see kv.Atomicity). A store's error, or ctx's, may leave the
// transaction applied or not, all or nothing, as with a single write.
// Afterwards the transaction is done: a second Commit returns ErrTxDone.
func (tx *Tx) Commit(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	if tx == nil {
		return fmt.Errorf("%w: nil transaction", ErrInvalidArgument)
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	switch {
	case tx.done:
		return fmt.Errorf("%w: Commit called again", ErrTxDone)
	case tx.store == nil:
		return fmt.Errorf("%w: the transaction has no store", ErrInvalidArgument)
	}
	tx.done = true
	defer tx.release()
	if len(tx.records) == 0 {
		return nil
	}
	tx.lockTables(true)
	defer tx.lockTables(false)
	if err := tx.checkViews(ctx); err != nil {
		return err
	}
	b, planned, err := tx.plan(ctx)
	if errors.Is(err, ErrUniqueViolation) {
		// A record read before another changed it may seem to take a key
		// that its record holds now: a stale read conflicts first.
		if stale := tx.staleRead(ctx); stale != nil {
			err = stale
		}
	}
	if err != nil {
		return err
	}
	if b.Len() == 0 { // every record was set aside
		return nil
	}
	if tx.setAside {
		tx.planSize = [2]int{b.Len(), batchBytes(b)}
	}
	if err := tx.store.Atomicity().Allows(b); err != nil {
		tx.oversized = tx.setAside
		return wrapErrorf(ErrInvalidBatch, err, "a transaction of %s, which is never split", nRecords(len(tx.records)))
	}
	if err := tx.apply(ctx, b); err != nil {
		return tx.failed(ctx, err)
	}
	for _, r := range tx.records {
		if r.netWrite() {
			r.tbl.t.noteOps(r.tbl.view, planned[r.ops[0]:r.ops[1]], r.a.exists, r.a.queued)
		}
	}
	return nil
}

// apply applies b, after the hints of its change records when a table of
// the transaction hints them.
func (tx *Tx) apply(ctx context.Context, b *kv.Batch) error {
	for _, tbl := range tx.tables {
		if tbl.view != nil && tbl.t.hinted() {
			return applyHintedBy(ctx, tx.store, b, tx.hintFor)
		}
	}
	return tx.store.Apply(ctx, b)
}

// release returns to their pools the write buffers, the records and the
// operations of a transaction that is done, which holds none of them
// after.
func (tx *Tx) release() {
	for i, r := range tx.records {
		if r.bufs != nil {
			r.tbl.t.freeTxBuffers(r.bufs)
		}
		*r = txRecord{}
		txRecords.Put(r)
		tx.records[i] = nil
	}
	tx.records, tx.byKey = tx.records[:0], nil
	if ops := tx.batch.Ops(); tx.opList != nil && cap(ops) <= txOpsKept {
		clear(ops[:cap(ops)])
		*tx.opList = ops[:0]
		txOpLists.Put(tx.opList)
	}
	tx.batch, tx.scratch, tx.opList = kv.Batch{}, kv.Batch{}, nil
}

// lockTables takes (lock) or releases the drain lock of each table the
// transaction writes, shared, in name order.
func (tx *Tx) lockTables(lock bool) {
	for _, tbl := range tx.tables {
		switch {
		case tbl.view == nil:
		case lock:
			tbl.t.drainLock().RLock()
		default:
			tbl.t.drainLock().RUnlock()
		}
	}
}

// checkViews returns an error wrapping ErrConflict when the view of a
// table the transaction writes is no longer the one its writes planned
// against: its indexes changed.
func (tx *Tx) checkViews(ctx context.Context) error {
	for _, tbl := range tx.tables {
		if tbl.view == nil {
			continue
		}
		v, err := tbl.t.view(ctx, true)
		if err != nil {
			return err
		}
		if v != tbl.view {
			return fmt.Errorf("%w: table %q: its indexes changed during the transaction", ErrConflict, tbl.t.Name())
		}
	}
	return nil
}

// failed returns the error of a commit whose batch failed with err. When
// it conflicted, it says why: ErrExists for a record the transaction
// inserted without reading it that exists, a table whose schema changed
// (whose view it then renews), or a record that changed since the
// transaction read it.
func (tx *Tx) failed(ctx context.Context, err error) error {
	if !errors.Is(err, ErrConflict) {
		return fmt.Errorf("commit of a transaction over %s: %w", tx.tableNames(), err)
	}
	stale := tx.staleRead(ctx)
	if errors.Is(stale, ErrExists) {
		return stale
	}
	for _, tbl := range tx.tables {
		if tbl.view != nil && tbl.t.schemaMoved(ctx, tbl.view) {
			return fmt.Errorf("%w: table %q: its schema changed during the transaction", ErrConflict, tbl.t.Name())
		}
	}
	if stale != nil {
		return stale
	}
	return fmt.Errorf("commit of a transaction over %s: %w", tx.tableNames(), err)
}

// tableNames names the tables the transaction writes, for errors.
func (tx *Tx) tableNames() string {
	var names []string
	for _, tbl := range tx.tables {
		if tbl.view != nil {
			names = append(names, strconv.Quote(tbl.t.Name()))
		}
	}
	return "table " + strings.Join(names, ", ")
}

// staleRead returns an error wrapping ErrExists when a record that the
// transaction inserted without reading it exists, or ErrConflict when a
// record it read changed since, naming the record; else nil, also when
// it cannot read them.
func (tx *Tx) staleRead(ctx context.Context) error {
	keys := make([][]byte, len(tx.records))
	for i, r := range tx.records {
		keys[i] = r.a.factKey
	}
	now, err := tx.store.GetMany(ctx, keys, nil)
	if err != nil {
		return nil // a failed read tells nothing: the commit's own error stands
	}
	for i, r := range tx.records {
		if r.blind && now[i] != nil {
			return fmt.Errorf("%w: table %q, primary key %v", ErrExists, r.tbl.t.Name(), decodeForError(r.a.pk))
		}
		if (now[i] == nil) != (r.a.oldValue == nil) || !bytes.Equal(now[i], r.a.oldValue) {
			return fmt.Errorf("%w: table %q: record %v changed since the transaction read it", ErrConflict, r.tbl.t.Name(), decodeForError(r.a.pk))
		}
	}
	return nil
}

// hintFor returns the hint key of the change record at key, of whichever
// table of the transaction queued it.
func (tx *Tx) hintFor(key []byte) []byte {
	for _, tbl := range tx.tables {
		if k := tbl.t.hintFor(key); k != nil {
			return k
		}
	}
	return nil
}

// plan returns the commit's batch: each record written, planned as a
// single write plans it (planBatch), and the expectation that each record
// only read is as read. An expectation goes in once; a key that two
// records write (a unique key one frees and another takes) goes in once,
// as the put (mergeOps). It also returns the operations each record
// planned, at its ops.
func (tx *Tx) plan(ctx context.Context) (*kv.Batch, []kv.Op, error) {
	g, err := tx.uniqueKeys()
	if err == nil && g != nil {
		err = g.prefetch(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	n := 0
	for _, r := range tx.records {
		n += 3 + 2*len(r.entries) + len(r.a.oldEntries)
	}
	p := txOps{ops: tx.newOps(n)}
	if n > mergeScan {
		p.at = make(map[string]int, len(tx.records)+1)
	}
	for _, r := range tx.records {
		if r.refused {
			continue
		}
		start := len(p.ops)
		if err := tx.planOne(ctx, &p, r, g); err != nil {
			if err := tx.setAsideOr(r, err); err != nil {
				return nil, nil, err
			}
			p.truncate(start)
			g.forget(r)
		}
		r.ops = [2]int{start, len(p.ops)}
	}
	tx.batch = *kv.NewBatch(p.ops...) // released after the commit
	if g == nil {                     // then no two records write one key
		return &tx.batch, p.ops, nil
	}
	merged, err := mergeOps(p.ops)
	if err != nil {
		return nil, nil, err
	}
	return kv.NewBatch(merged...), p.ops, nil
}

// newOps returns an empty operation list with room for n, for the
// commit.
func (tx *Tx) newOps(n int) []kv.Op {
	list, ok := txOpLists.Get().(*[]kv.Op)
	if !ok {
		list = new([]kv.Op)
	}
	if cap(*list) < n {
		*list = make([]kv.Op, 0, max(n, 16))
	}
	tx.opList = list
	return *list
}

// txOps are the operations a commit plans.
type txOps struct {
	ops []kv.Op
	// When there may be many, the last expectation among ops of each key
	// (keyString): an expectation of a key expected otherwise in between
	// may go in twice, which is harmless.
	at map[string]int
}

// truncate drops the operations from n on.
func (p *txOps) truncate(n int) {
	p.ops = p.ops[:n]
	for k, i := range p.at {
		if i >= n {
			delete(p.at, k)
		}
	}
}

// add adds op, unless it is an expectation that ops hold already.
func (p *txOps) add(op kv.Op) {
	switch {
	case op.IsWrite():
	case p.at == nil:
		if mergesWith(p.ops, nil, op) >= 0 {
			return
		}
	default:
		k := keyString(op.Key)
		if i, ok := p.at[k]; ok && p.ops[i].Kind == op.Kind && bytes.Equal(p.ops[i].Value, op.Value) {
			return
		}
		p.at[k] = len(p.ops)
	}
	p.ops = append(p.ops, op)
}

// planOne adds to p the operations of record r: its change, planned by
// planBatch (in p's spare room) with g, if not nil, reading unique keys;
// or, if the transaction only read it, the expectation that it is as read.
func (tx *Tx) planOne(ctx context.Context, p *txOps, r *txRecord, g *txGetter) error {
	if !r.netWrite() {
		op := kv.Op{Kind: kv.OpExpectAbsent, Key: r.a.factKey}
		if r.a.exists {
			op = kv.Op{Kind: kv.OpExpectValue, Key: r.a.factKey, Value: r.a.oldValue}
		}
		p.add(op)
		return nil
	}
	var s entryGetter = tx.store
	if g != nil {
		g.plans(r)
		s = g
	}
	start := len(p.ops)
	tx.scratch = *kv.NewBatch(p.ops[start:start:cap(p.ops)]...)
	b := &tx.scratch
	r.a.b, r.a.schema = b, r.tbl.view.version
	err := r.tbl.t.planBatch(ctx, r.tbl.view, &r.a, r.entries, s)
	r.a.b = nil
	if err != nil {
		return fmt.Errorf("table %q: %w", r.tbl.t.Name(), err)
	}
	// b's operations lie where p adds them, or further: p overwrites
	// none before it reads it.
	for _, op := range b.Ops() {
		if op.IsWrite() || g == nil || !g.covers(op.Key) {
			p.add(op)
		}
	}
	return nil
}

// mergeScan is how many operations mergeOps compares pairwise before it
// indexes them by key.
const mergeScan = 32

// mergeOps returns ops, the operations the records of a transaction
// planned, as one batch's: an expectation that another record planned
// too goes once, and of two writes of one key (a unique key one record
// frees and another takes) the put stays. Two puts of one key are refused.
func mergeOps(ops []kv.Op) ([]kv.Op, error) {
	out := make([]kv.Op, 0, len(ops))
	var at map[string][]int // ops on each key, by index in out, when there are many
	if len(ops) > mergeScan {
		at = make(map[string][]int, len(ops))
	}
	for _, op := range ops {
		i := mergesWith(out, at, op)
		switch {
		case i < 0:
			if at != nil {
				at[string(op.Key)] = append(at[string(op.Key)], len(out))
			}
			out = append(out, op)
		case !op.IsWrite(): // the same expectation
		case out[i].Kind == kv.OpDelete:
			out[i] = op
		case op.Kind != kv.OpDelete:
			return nil, fmt.Errorf("%w: key %q is written by two records of the transaction", ErrInvalidBatch, op.Key)
		}
	}
	return out, nil
}

// mergesWith returns the index in out of the operation that op merges
// with (a write of its key, for a write; the same expectation, for an
// expectation), or -1. at, if not nil, indexes out by key.
func mergesWith(out []kv.Op, at map[string][]int, op kv.Op) int {
	same := func(o kv.Op) bool {
		if op.IsWrite() {
			return o.IsWrite()
		}
		return o.Kind == op.Kind && bytes.Equal(o.Value, op.Value)
	}
	if at != nil {
		for _, i := range at[string(op.Key)] {
			if same(out[i]) {
				return i
			}
		}
		return -1
	}
	for i, o := range out {
		if bytes.Equal(o.Key, op.Key) && same(o) {
			return i
		}
	}
	return -1
}

// txEntry is a unique entry of a record of a transaction.
type txEntry struct {
	r *txRecord
	e entry
}

// txGetter reads unique keys for the plan of one record of a transaction
// (the planner) as the transaction leaves them: a key that another of its
// records takes reads as that record's entry, and one that another frees,
// and holds as read, as absent. The planner's expectations of those keys,
// which hold of the transaction's state and not of the store's, are
// dropped (covers): the records that take or free them guard them.
type txGetter struct {
	store        kv.Store
	taken, freed map[string]txEntry
	read         map[string][]byte // keys read ahead (prefetch): their values, nil if absent
	planner      *txRecord
	covered      [][]byte
}

// uniqueKeys returns the getter of the transaction's unique keys, or nil
// when its records have none, after checking that no two of its records
// take one key.
func (tx *Tx) uniqueKeys() (*txGetter, error) {
	var g *txGetter
	for _, r := range tx.records {
		if !r.netWrite() {
			continue
		}
		if g != nil {
			if err := g.takenByAnother(r); err != nil {
				if !tx.setAside {
					return nil, err
				}
				// Whether the key is free for r depends on whether the
				// other record commits: r waits for the next transaction.
				r.refused = true
				tx.deferred = append(tx.deferred, bytes.Clone(r.a.factKey))
				continue
			}
		}
		for _, e := range r.entries {
			if !e.ix.unique {
				continue
			}
			if g == nil {
				g = &txGetter{store: tx.store, taken: map[string]txEntry{}, freed: map[string]txEntry{}}
			}
			g.taken[string(e.key)] = txEntry{r, e}
		}
	}
	if g == nil {
		return nil, nil
	}
	for _, r := range tx.records {
		if !r.netWrite() {
			continue
		}
		for _, e := range r.a.oldEntries {
			if e.ix.unique && findEntry(r.entries, e.key) < 0 {
				g.freed[string(e.key)] = txEntry{r, e}
			}
		}
	}
	return g, nil
}

// takenByAnother returns the violation when r takes a unique key that
// another record of the transaction takes.
func (g *txGetter) takenByAnother(r *txRecord) error {
	for _, e := range r.entries {
		if q, ok := g.taken[string(e.key)]; ok && e.ix.unique {
			k, _ := decodeTuple(e.key[len(e.ix.prefix):])
			return fmt.Errorf("%w: table %q, index %q: records %v and %v of the transaction both take key %v",
				ErrUniqueViolation, r.tbl.t.Name(), e.ix.name, decodeForError(q.r.a.pk), decodeForError(r.a.pk), k)
		}
	}
	return nil
}

// forget drops the unique keys that r, set aside, took.
func (g *txGetter) forget(r *txRecord) {
	if g == nil {
		return
	}
	for _, e := range r.entries {
		if q, ok := g.taken[string(e.key)]; ok && q.r == r {
			delete(g.taken, string(e.key))
		}
	}
}

// prefetch reads, in one call, the unique keys that the records' plans
// check: those they take anew (or take while their index is built). A
// store that answers each call with a request (Azure) so answers a
// transaction, or a batch of Load, with one, not one a record.
func (g *txGetter) prefetch(ctx context.Context) error {
	var keys [][]byte
	for _, q := range g.taken {
		if findEntry(q.r.a.oldEntries, q.e.key) < 0 || q.e.ix.state != IndexReadable {
			keys = append(keys, q.e.key)
		}
	}
	if len(keys) < 2 {
		return nil
	}
	values, err := g.store.GetMany(ctx, keys, nil)
	if err != nil {
		return err
	}
	g.read = make(map[string][]byte, len(keys))
	for i, k := range keys {
		g.read[string(k)] = values[i]
	}
	return nil
}

// plans starts the plan of record r.
func (g *txGetter) plans(r *txRecord) {
	g.planner, g.covered = r, g.covered[:0]
}

// Get reads key for the planner.
func (g *txGetter) Get(ctx context.Context, key []byte) ([]byte, error) {
	if t, ok := g.taken[string(key)]; ok && t.r != g.planner {
		g.covered = append(g.covered, key)
		return t.e.value, nil
	}
	v, ok := g.read[string(key)]
	switch {
	case ok && v == nil:
		return nil, fmt.Errorf("%w: key %q", ErrNotFound, key)
	case !ok:
		var err error
		if v, err = g.store.Get(ctx, key); err != nil {
			return nil, err
		}
	}
	if f, ok := g.freed[string(key)]; ok && f.r != g.planner && sameOwner(f.e.ix, key, v, f.e.value) {
		g.covered = append(g.covered, key)
		return nil, fmt.Errorf("%w: key %q: the transaction frees it", ErrNotFound, key)
	}
	return v, nil
}

// covers reports whether the planner read key as the transaction leaves
// it.
func (g *txGetter) covers(key []byte) bool { return containsKey(g.covered, key) }

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

// nRecords says "1 record" or "n records".
func nRecords(n int) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}

// batchBytes returns the bytes of b's keys and values.
func batchBytes(b *kv.Batch) int {
	n := 0
	for _, op := range b.Ops() {
		n += len(op.Key) + len(op.Value)
	}
	return n
}
