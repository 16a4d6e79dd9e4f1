package indextable

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"unsafe"
)

// LoadPolicy says what Load does with a record it cannot insert.
type LoadPolicy uint8

const (
	// LoadStop ends the load at the first refused record, returning its
	// error; the other records of its batch may have been written.
	LoadStop LoadPolicy = iota
	// LoadSkip leaves refused records out, lists them in the report, and
	// goes on.
	LoadSkip
)

// LoadOptions configure Table.Load.
type LoadOptions struct {
	// OnRefused is what Load does with a record it cannot insert (see
	// LoadRefusal); by default it stops.
	OnRefused LoadPolicy
	// BatchRecords is the most records one batch holds; 0 means 1,000, or
	// as many as the store's atomicity scope allows (see kv.Atomicity):
	// Load halves a batch the store cannot apply.
	BatchRecords int
	// Progress, if not nil, is called after each batch with the counts so
	// far, on Load's goroutine, while the next batch may be applying; it
	// may call the table.
	Progress func(LoadProgress)
}

// LoadProgress counts the records of a load.
type LoadProgress struct {
	Read     int // taken from the sequence, up to a batch ahead of the rest
	Inserted int // written by this load
	Present  int // held by the table already as given: a load run again
	Refused  int // not inserted (see LoadRefusal)
}

// LoadReport is what Load did.
type LoadReport struct {
	LoadProgress
	// Refusals are the records refused, by position.
	Refusals []LoadRefusal
}

// LoadRefusal is a record that Load could not insert: the table holds
// another record with its primary key (or an earlier record of the load
// has it), another record holds one of its unique keys, or the record
// cannot be stored (its key or size).
type LoadRefusal struct {
	Position   int   // in the sequence, from 0
	PrimaryKey Tuple // its fields' values (nil for a field out of reach)
	// Err wraps ErrExists, ErrUniqueViolation, ErrInvalidKey,
	// ErrInvalidBatch, ErrCodec or ErrUnsupportedType, and says why.
	Err error
}

// Load inserts the records of seq, many to a batch: each batch is one
// transaction (see Tx), all or nothing, with the index maintenance of a
// single insert, but the load as a whole is not atomic. On a store whose
// atomicity scope is a partition (Azure Table storage), a batch holds
// records of one partition: Load groups them as they come, holding at
// most 16 batches' worth (or 4,096 records), so records that share
// partitions share requests. Load encodes and plans each batch while the
// store applies the one before, in a goroutine of its own, so a load
// keeps two cores busy; it returns when every batch it started has
// ended.
//
// A load is resumable: a record the table holds already, as given (the
// same encoded record), counts as Present and is not written again, so a
// load that stopped (a crash, an error, a canceled ctx) finishes when run
// again with the same records. A record Load cannot insert is refused
// (LoadRefusal) and, by LoadOptions.OnRefused, ends the load or is left
// out. Load returns the report with the error that ended it, if any.
func (t *Table[T]) Load(ctx context.Context, seq iter.Seq[T], opts LoadOptions) (LoadReport, error) {
	if err := checkContext(ctx); err != nil {
		return LoadReport{}, err
	}
	switch {
	case seq == nil:
		return LoadReport{}, fmt.Errorf("%w: Load: nil sequence", ErrInvalidArgument)
	case opts.BatchRecords < 0:
		return LoadReport{}, fmt.Errorf("%w: Load: BatchRecords %d is negative", ErrInvalidArgument, opts.BatchRecords)
	case opts.OnRefused > LoadSkip:
		return LoadReport{}, fmt.Errorf("%w: Load: unknown LoadPolicy %d", ErrInvalidArgument, opts.OnRefused)
	}
	l := newLoader(t, opts)
	defer l.wait() // a panic of seq or Progress: let the apply end
	err := l.run(ctx, seq)
	if serr := l.settle(ctx); err == nil {
		err = serr
	}
	l.progress()
	return l.rep, err
}

// run adds the records of seq and flushes what is left; the last batch
// may still be committing.
func (l *loader[T]) run(ctx context.Context, seq iter.Seq[T]) error {
	for rec := range seq {
		if err := l.add(ctx, rec); err != nil {
			return err
		}
	}
	for len(l.groups) > 0 {
		if err := l.flushLargest(ctx); err != nil {
			return err
		}
	}
	return nil
}

// loadBatch is the default of LoadOptions.BatchRecords. A load holds
// loadHeld batches' worth of records, or loadHeldRecords if more, before
// it flushes the largest partition's.
const (
	loadBatch       = 1000
	loadHeld        = 16
	loadHeldRecords = 4096
)

// loader is one run of Load.
type loader[T any] struct {
	t       *Table[T]
	opts    LoadOptions
	size    int                         // the most records a batch holds
	full    int                         // size at the start
	part    func(key []byte) []byte     // the store's partitions, or nil
	groups  map[string][]*loadRecord[T] // the records not yet written, by partition
	held    int
	pending *loadTx[T]      // the batch whose commit runs while the next is built
	ended   bool            // a batch ended since Progress was called
	recs    []loadRecord[T] // room for the next records (see newRecord)
	keys    []byte          // room for their keys
	rep     LoadReport
}

// loadRecord is a record of a load.
type loadRecord[T any] struct {
	pos int
	rec T
	key []byte // its fact key
}

func newLoader[T any](t *Table[T], opts LoadOptions) *loader[T] {
	atom := t.store.Atomicity()
	size := opts.BatchRecords
	if size == 0 {
		size = loadBatch
		if atom.MaxOps > 0 {
			// Each record takes at least its expectation and its put.
			size = max(1, min(size, atom.MaxOps/3))
		}
		if atom.MaxWrites > 0 {
			// Each record takes its put and, mostly, an entry or a change
			// record.
			size = max(1, min(size, atom.MaxWrites/2))
		}
	}
	return &loader[T]{t: t, opts: opts, size: size, full: size, part: atom.Partition, groups: map[string][]*loadRecord[T]{}}
}

// add takes rec, the next record of the sequence, and writes a batch when
// its partition's records fill one, or when the load holds too many.
func (l *loader[T]) add(ctx context.Context, rec T) error {
	r := l.newRecord(rec)
	key, err := l.t.factKey(l.keys, reflect.ValueOf(&r.rec).Elem())
	if err != nil {
		// Refusals come in the order of the records: the batch that is
		// committing first.
		if err := l.settle(ctx); err != nil {
			return err
		}
		l.progress()
		return l.refuse(r, fmt.Errorf("table %q: %w", l.t.name, err))
	}
	if unsafe.SliceData(key) == unsafe.SliceData(l.keys) { // it fit
		l.keys = key[len(key):]
	}
	r.key = key[:len(key):len(key)]
	var p string
	if l.part != nil {
		p = string(l.part(key))
	}
	l.groups[p] = append(l.groups[p], r)
	l.held++
	switch {
	case len(l.groups[p]) >= l.size:
		return l.flush(ctx, p)
	case l.held >= max(loadHeld*l.size, loadHeldRecords):
		return l.flushLargest(ctx)
	}
	return nil
}

// newRecord returns the loadRecord of rec, the next record of the
// sequence. Records, and the space their keys take (l.keys), are
// allocated many at a time.
func (l *loader[T]) newRecord(rec T) *loadRecord[T] {
	if len(l.recs) == 0 {
		l.recs = make([]loadRecord[T], loadAllocRecords)
	}
	if cap(l.keys) < loadKeyRoom {
		l.keys = make([]byte, 0, loadAllocRecords*loadKeyRoom)
	}
	r := &l.recs[0]
	l.recs = l.recs[1:]
	*r = loadRecord[T]{pos: l.rep.Read, rec: rec}
	l.rep.Read++
	return r
}

// loadAllocRecords is how many records a load allocates at a time, each
// with loadKeyRoom bytes for its key (a longer key takes its own).
const (
	loadAllocRecords = 256
	loadKeyRoom      = 64
)

// flushLargest writes the records of the partition that holds the most.
func (l *loader[T]) flushLargest(ctx context.Context) error {
	largest, n := "", -1
	for p, recs := range l.groups {
		if len(recs) > n || len(recs) == n && p < largest {
			largest, n = p, len(recs)
		}
	}
	return l.flush(ctx, largest)
}

// flush writes the records held for partition p, in batches of at most
// l.size.
func (l *loader[T]) flush(ctx context.Context, p string) error {
	recs := l.groups[p]
	delete(l.groups, p)
	l.held -= len(recs)
	for len(recs) > 0 {
		n := min(len(recs), l.size)
		if err := l.write(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// write writes recs in one batch, or in smaller ones when the store
// cannot apply them as one. It encodes and plans the batch while the
// previous one is applied, then settles that one and starts this one's
// apply, which the next write, or the end of the load, settles: a load
// keeps the store and the encoding busy at once.
func (l *loader[T]) write(ctx context.Context, recs []*loadRecord[T]) error {
	lt, err := l.build(ctx, recs)
	if err != nil {
		return cmp.Or(l.settle(ctx), err)
	}
	lt.prepare(ctx)
	if p := l.pending; p != nil {
		<-p.done
		if !p.clean() {
			// Settling p commits again, which must not wait behind lt's
			// hold on the tables.
			lt.discard()
			lt = nil
		}
	}
	if err := l.settle(ctx); err != nil {
		lt.discard()
		return err
	}
	if lt == nil {
		if lt, err = l.build(ctx, recs); err != nil {
			return err
		}
		lt.prepare(ctx)
	}
	l.start(ctx, lt)
	l.progress()
	return nil
}

// start applies lt's prepared commit, if any, in a goroutine of its own:
// lt is pending until settle.
func (l *loader[T]) start(ctx context.Context, lt *loadTx[T]) {
	l.pending = lt
	lt.done = make(chan struct{})
	if lt.pc == nil {
		close(lt.done)
		return
	}
	go func() {
		defer close(lt.done)
		defer func() { lt.panicked = recover() }()
		lt.apply(ctx)
	}()
}

// wait waits for the pending apply, if any, to end, leaving it pending.
func (l *loader[T]) wait() {
	if l.pending != nil {
		<-l.pending.done
	}
}

// progress reports the counts to LoadOptions.Progress, if a batch ended
// since it last did. Load calls it holding no prepared commit, so that
// Progress may call the table, a Build included.
func (l *loader[T]) progress() {
	if l.ended && l.opts.Progress != nil {
		l.ended = false
		l.opts.Progress(l.rep.LoadProgress)
	}
}

// settle waits for the apply that write started, if any, and finishes
// it (see finish).
func (l *loader[T]) settle(ctx context.Context) error {
	lt := l.pending
	if lt == nil {
		return nil
	}
	l.pending = nil
	<-lt.done
	if lt.panicked != nil {
		panic(lt.panicked)
	}
	return l.finish(ctx, lt)
}

// writeNow writes recs as write does, but commits them before it returns.
func (l *loader[T]) writeNow(ctx context.Context, recs []*loadRecord[T]) error {
	lt, err := l.build(ctx, recs)
	if err != nil {
		return err
	}
	lt.commit(ctx)
	if err := l.finish(ctx, lt); err != nil {
		return err
	}
	l.progress()
	return nil
}

// finish takes the outcome of lt's commit and writes again the records
// to write again. A batch that conflicts with other
// writes runs again, after a pause that grows.
func (l *loader[T]) finish(ctx context.Context, lt *loadTx[T]) error {
	pause, conflicts := txFirstPause, 0
	for {
		recs := lt.recs
		again, fit, err := l.outcome(ctx, lt)
		var stop *refusedError
		switch {
		case errors.Is(err, errOversized):
			return l.split(ctx, again, fit)
		case errors.As(err, &stop):
			return err
		case err != nil:
			return fmt.Errorf("table %q: Load: the batch from record %d: %w", l.t.name, recs[0].pos, err)
		case fit > 0:
			l.size = min(l.full, fit) // records of other sizes, up or down
		}
		switch {
		case len(again) == 0:
			l.ended = true
			return nil
		case len(again) < len(recs):
			conflicts = 0
		case conflicts+1 == maxAttempts:
			return fmt.Errorf("table %q: Load: the batch from record %d kept conflicting with other writes: %w", l.t.name, recs[0].pos, ErrConflict)
		default:
			conflicts++
			if err := backoff(ctx, &pause); err != nil {
				return err
			}
		}
		if lt, err = l.build(ctx, again); err != nil {
			return err
		}
		lt.commit(ctx)
	}
}

// errOversized reports a batch that the store cannot apply.
var errOversized = errors.New("the batch is too large for the store")

// split writes recs, whose batch the store cannot apply, in batches of
// fit records, or of half of them if that is fewer.
func (l *loader[T]) split(ctx context.Context, recs []*loadRecord[T], fit int) error {
	size := max(1, min(fit, len(recs)/2))
	for len(recs) > 0 {
		n := min(len(recs), size)
		if err := l.writeNow(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// fit returns how many records like the n of a batch of planSize (see
// Tx.planSize) one batch of the store holds, or 0 when its batches are
// unbounded.
func (l *loader[T]) fit(planSize [3]int, n int) int {
	atom := l.t.store.Atomicity()
	fit := 0
	for i, limit := range []int{atom.MaxOps, atom.MaxWrites, atom.MaxBytes} {
		if per := (planSize[i] + n - 1) / max(n, 1); limit > 0 && per > 0 {
			if fit == 0 || limit/per < fit {
				fit = limit / per
			}
		}
	}
	return fit
}

// primaryKey returns r's primary key, as its fields hold it.
func (l *loader[T]) primaryKey(r *loadRecord[T]) Tuple {
	rv := reflect.ValueOf(&r.rec).Elem()
	pk := make(Tuple, len(l.t.pk))
	for i := range l.t.pk {
		if fv := l.t.pk[i].get(rv); fv.IsValid() {
			pk[i] = fv.Interface()
		}
	}
	return pk
}

// refusedError is the error of a refused record that ends a load
// (LoadStop).
type refusedError struct {
	pos int
	err error
}

func (e *refusedError) Error() string { return fmt.Sprintf("Load: record %d: %v", e.pos, e.err) }
func (e *refusedError) Unwrap() error { return e.err }

// loadTx is one batch of a load: its records and their transaction.
type loadTx[T any] struct {
	recs     []*loadRecord[T]
	tx       *Tx
	in       []*loadRecord[T] // inserted into tx
	later    []*loadRecord[T] // left for after tx: an earlier record has its key
	refused  []loadRefused[T] // refused before tx commits
	stop     bool             // a refused record ends the load: no commit
	pc       *preparedCommit  // tx's commit, planned, until applied
	err      error            // tx's commit's
	done     chan struct{}    // closed when its commit has ended
	panicked any              // what an apply in its own goroutine panicked with
}

// loadRefused is a record that its batch refused, and why.
type loadRefused[T any] struct {
	r   *loadRecord[T]
	err error
}

// build inserts recs into a new transaction, which is not committed.
func (l *loader[T]) build(ctx context.Context, recs []*loadRecord[T]) (*loadTx[T], error) {
	lt := &loadTx[T]{recs: recs, tx: NewTx(l.t.store)}
	lt.tx.setAside = true
	tt := l.t.In(lt.tx)
	for _, r := range recs {
		_, err := tt.Insert(ctx, r.rec)
		switch {
		case err == nil:
			lt.in = append(lt.in, r)
		case errors.Is(err, ErrExists): // an earlier record of the batch has its key
			lt.later = append(lt.later, r)
		case refusable(err):
			lt.refused = append(lt.refused, loadRefused[T]{r, err})
			if l.opts.OnRefused == LoadStop {
				lt.stop = true // at this record, with the batch uncommitted
				return lt, nil
			}
		default:
			lt.discard()
			return nil, err
		}
	}
	return lt, nil
}

// prepare plans lt's commit (see Tx.prepare), unless a refused record
// stops the load.
func (lt *loadTx[T]) prepare(ctx context.Context) {
	if !lt.stop {
		lt.pc, lt.err = lt.tx.prepare(ctx)
	}
}

// apply applies lt's prepared commit, if any.
func (lt *loadTx[T]) apply(ctx context.Context) {
	if lt.pc != nil {
		lt.err = lt.pc.apply(ctx)
		lt.pc = nil
	}
}

// commit prepares and applies lt's commit.
func (lt *loadTx[T]) commit(ctx context.Context) {
	lt.prepare(ctx)
	lt.apply(ctx)
}

// clean reports whether lt, whose commit ended, committed with nothing
// left to write again.
func (lt *loadTx[T]) clean() bool {
	return lt.panicked == nil && lt.err == nil && !lt.stop && len(lt.later) == 0 && len(lt.tx.deferred) == 0
}

// discard ends lt, if not nil, uncommitted.
func (lt *loadTx[T]) discard() {
	switch {
	case lt == nil:
	case lt.pc != nil:
		lt.pc.abandon()
		lt.pc = nil
	default:
		lt.tx.discard()
	}
}

// outcome counts the records of lt, whose commit ended, and returns the
// records to try again: all of them when the commit conflicted with
// another write, those not in the table when some were, and those whose
// primary key or unique key an earlier record of the batch takes, which
// that record's fate decides. Records the table holds, as given or not,
// it counts as present or refuses. It also returns how many records like
// these fit one batch (see fit); when they do not fit one, errOversized.
func (l *loader[T]) outcome(ctx context.Context, lt *loadTx[T]) (again []*loadRecord[T], fit int, err error) {
	defer lt.discard()
	for _, f := range lt.refused {
		if err := l.refuse(f.r, f.err); err != nil {
			return nil, 0, err
		}
	}
	tx, in, later := lt.tx, lt.in, lt.later
	fit = l.fit(tx.planSize, len(in)-len(tx.refusals)-len(tx.deferred))
	switch err := lt.err; {
	case err == nil:
		deferred, err := l.committed(tx, in)
		return append(deferred, later...), fit, err
	case tx.oversized && len(in) > 1:
		return append(in, later...), fit, errOversized
	case tx.oversized:
		return later, 0, l.refuse(in[0], err)
	case errors.Is(err, ErrConflict), errors.Is(err, ErrExists):
		again, err = l.present(ctx, in)
		return append(again, later...), 0, err
	default:
		return nil, 0, err
	}
}

// committed counts the records of in, a committed batch, less those tx
// set aside: it refuses those refused, and returns those deferred.
func (l *loader[T]) committed(tx *Tx, in []*loadRecord[T]) ([]*loadRecord[T], error) {
	l.rep.Inserted += len(in) - len(tx.refusals) - len(tx.deferred)
	var first error
	for _, f := range tx.refusals {
		if err := l.refuse(find(in, f.key), f.err); err != nil && first == nil {
			first = err
		}
	}
	deferred := make([]*loadRecord[T], len(tx.deferred))
	for i, key := range tx.deferred {
		deferred[i] = find(in, key)
	}
	return deferred, first
}

// find returns the record of recs with fact key key.
func find[T any](recs []*loadRecord[T], key []byte) *loadRecord[T] {
	for _, r := range recs {
		if bytes.Equal(r.key, key) {
			return r
		}
	}
	return nil
}

// present reads the records of recs, a batch that conflicted: those the
// table holds it counts as present, or refuses, and it returns the
// others.
func (l *loader[T]) present(ctx context.Context, recs []*loadRecord[T]) ([]*loadRecord[T], error) {
	keys := make([][]byte, len(recs))
	for i, r := range recs {
		keys[i] = r.key
	}
	values, err := l.t.store.GetMany(ctx, keys, nil)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", l.t.name, err)
	}
	var again []*loadRecord[T]
	for i, r := range recs {
		if values[i] == nil {
			again = append(again, r)
			continue
		}
		_, payload, err := decodeFact(values[i])
		if err != nil {
			return nil, fmt.Errorf("table %q: record %v: %w", l.t.name, decodeForError(r.key[len(l.t.factSpace):]), err)
		}
		if err := l.sameAs(r, payload); err != nil {
			return nil, err
		}
	}
	return again, nil
}

// sameAs takes r, whose primary key a record of the table with payload
// holds: as present when r encodes to payload, else refused.
func (l *loader[T]) sameAs(r *loadRecord[T], payload []byte) error {
	mine, err := appendMarshal(l.t.codec, make([]byte, 0, len(payload)), &r.rec)
	if err != nil {
		return l.refuse(r, fmt.Errorf("table %q: encode record: %w", l.t.name, err))
	}
	if bytes.Equal(mine, payload) {
		l.rep.Present++
		return nil
	}
	return l.refuse(r, fmt.Errorf("%w: table %q, primary key %v: the table holds another record with it", ErrExists, l.t.name, decodeForError(r.key[len(l.t.factSpace):])))
}

// refuse reports r refused for err, and returns the error that ends the
// load, unless the load skips refused records.
func (l *loader[T]) refuse(r *loadRecord[T], err error) error {
	f := LoadRefusal{Position: r.pos, Err: err, PrimaryKey: l.primaryKey(r)}
	l.rep.Refused++
	l.rep.Refusals = append(l.rep.Refusals, f)
	if l.opts.OnRefused == LoadSkip {
		return nil
	}
	return &refusedError{r.pos, err}
}
