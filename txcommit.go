package indextable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/indextable/indextable/kv"
)

// This file holds a transaction's commit: it checks its views, plans one
// batch of its records' writes (each as a single write plans it, unique
// keys read as the transaction leaves them) and applies it.

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
	pc, err := tx.prepare(ctx)
	if err != nil || pc == nil {
		return err
	}
	return pc.apply(ctx)
}

// preparedCommit is a transaction's commit planned and checked, its batch
// not yet applied: it holds the transaction's lock and the drain locks of
// the tables it writes until apply or abandon, one of which must follow.
type preparedCommit struct {
	tx      *Tx
	b       *kv.Batch
	planned []kv.Op
}

// prepare does a commit up to its batch's apply: it returns the commit
// to apply, or nil when there is nothing to apply, with the transaction
// then done.
func (tx *Tx) prepare(ctx context.Context) (*preparedCommit, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, fmt.Errorf("%w: nil transaction", ErrInvalidArgument)
	}
	tx.mu.Lock()
	switch {
	case tx.done:
		tx.mu.Unlock()
		return nil, fmt.Errorf("%w: Commit called again", ErrTxDone)
	case tx.store == nil:
		tx.mu.Unlock()
		return nil, fmt.Errorf("%w: the transaction has no store", ErrInvalidArgument)
	}
	tx.done = true
	if len(tx.records) == 0 {
		tx.release()
		tx.mu.Unlock()
		return nil, nil
	}
	tx.lockTables(true)
	pc, err := tx.planChecked(ctx)
	if err != nil || pc == nil {
		tx.end()
		return nil, err
	}
	return pc, nil
}

// planChecked checks the transaction's views and plans its batch, which
// its store's atomicity must allow; nil when every record was set aside.
func (tx *Tx) planChecked(ctx context.Context) (*preparedCommit, error) {
	if err := tx.checkViews(ctx); err != nil {
		return nil, err
	}
	b, planned, err := tx.plan(ctx)
	if errors.Is(err, ErrUniqueViolation) {
		// A record read before another changed it may seem to take a key
		// that its record holds now: a stale read conflicts first.
		if stale := tx.staleRead(ctx); stale != nil {
			err = stale
		}
	}
	if err != nil || b.Len() == 0 { // every record was set aside
		return nil, err
	}
	atom := tx.store.Atomicity()
	if tx.setAside && bounded(atom) {
		tx.planSize = [3]int{b.Len(), b.Writes(), b.Bytes()}
	}
	if err := atom.Allows(b); err != nil {
		tx.oversized = tx.setAside
		return nil, wrapErrorf(ErrInvalidBatch, err, "a transaction of %s, which is never split", nRecords(len(tx.records)))
	}
	return &preparedCommit{tx: tx, b: b, planned: planned}, nil
}

// end releases what a prepared commit holds.
func (tx *Tx) end() {
	tx.lockTables(false)
	tx.release()
	tx.mu.Unlock()
}

// apply applies the prepared commit and ends it.
func (pc *preparedCommit) apply(ctx context.Context) error {
	tx := pc.tx
	defer tx.end()
	if err := tx.apply(ctx, pc.b); err != nil {
		return tx.failed(ctx, err)
	}
	for _, r := range tx.records {
		if r.netWrite() {
			r.tbl.t.noteOps(r.tbl.view, pc.planned[r.ops[0]:r.ops[1]], r.a.exists, r.a.queued)
		}
	}
	return nil
}

// abandon ends the prepared commit without applying it.
func (pc *preparedCommit) abandon() { pc.tx.end() }

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
	if tx.byKey != nil {
		clear(tx.byKey)
		txKeyMaps.Put(tx.byKey)
	}
	tx.records, tx.byKey = tx.records[:0], nil
	if ops := tx.batch.Ops(); tx.opList != nil && cap(ops) <= txOpsKept {
		clear(ops[:cap(ops)])
		*tx.opList = ops[:0]
		txOpLists.Put(tx.opList)
	}
	tx.arena.release()
	tx.batch, tx.scratch, tx.opList, tx.arena = kv.Batch{}, kv.Batch{}, nil, nil
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

// nRecords says "1 record" or "n records".
func nRecords(n int) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}
