// Package azstore is a store for indextable tables, a kv.Store, on Azure
// Table storage (and its emulator, Azurite), through the official SDK.
//
// All of a store's keys live in one Azure table. A key becomes an entity
// whose RowKey is the key, encoded order-preservingly into characters Azure
// allows, and whose PartitionKey is the encoded partition of the key (see
// Partition). The value is a binary property, spread over several when it
// is longer than one property holds.
//
// The encoding takes six bits to a character, one of "-", 0-9, A-Z, "_"
// and a-z: characters allowed in keys, which sort alike in Azure's byte
// order and Azurite's UTF-16 order. Encoded keys compare as the keys do,
// prefixes included (a fuzz test checks it).
//
// A batch is one entity group transaction: one partition, at most 99 puts
// and deletes (a transaction holds 100 actions, the hundredth the
// partition's guard, below) with any number of expectations, which are no
// actions, and 2 MiB of keys and values, which is the store's Atomicity.
// Expectations are checked optimistically: a batch reads its partition's
// guard entity and the keys it expects or deletes, with one partition
// query for up to 13 keys and one more for each 14 more, and commits
// together with an update of the guard made conditional on the guard's
// ETag, so that a batch that another one overtook in its partition fails
// and is tried again. A batch of puts and deletes reads nothing: it is one
// request; so is one whose expectations are that keys it puts are absent.
package azstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable/kv"
)

const (
	// guardRow is the RowKey of a partition's guard entity; '!' is not in
	// the key alphabet, so no key encodes to it.
	guardRow = "!guard"
	// maxWrites is the most puts and deletes of a batch: a transaction
	// holds 100 actions, one of them the guard's. Expectations are no
	// actions: the blind way makes a put expected absent an insert (Add),
	// the reading way checks them against its reads.
	maxWrites = 99
	// maxBatchBytes bounds a batch's keys and values, well inside a
	// transaction's 4 MiB of base64 JSON.
	maxBatchBytes = 2 << 20
	// propertyBytes is the most bytes one binary property holds, and
	// maxValueBytes the longest value an entity (1 MiB of JSON) holds.
	propertyBytes = 64 << 10
	maxValueBytes = 11 * propertyBytes // 704 KiB, 939 KiB as base64
	// attempts bounds the tries of a batch that other batches in its
	// partition keep overtaking.
	attempts = 32
)

// Options configures Open.
type Options struct {
	// Table names the Azure table that holds the store; the default is
	// "indextable". Open creates it when it does not exist.
	Table string
	// Client configures the SDK's pipeline: retries of throttled (429, 503)
	// and timed-out requests with exponential back-off, by default.
	Client *aztables.ClientOptions
}

// Store is a kv.Store on one Azure table. It is safe for
// concurrent use.
type Store struct {
	client *aztables.Client
	mu     sync.RWMutex
	closed bool
}

var _ kv.Store = (*Store)(nil)

// Open connects to the account of connectionString and opens the store in
// its table opts.Table, creating the table if needed. A connection string
// holds an account key, which opens the whole account: where that is not
// allowed, open the store with OpenClient.
func Open(ctx context.Context, connectionString string, opts Options) (*Store, error) {
	if ctx == nil {
		return nil, fmt.Errorf("azstore: %w: nil context", kv.ErrInvalidArgument)
	}
	if opts.Table == "" {
		opts.Table = "indextable"
	}
	co := opts.Client
	if co == nil {
		co = &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 5}}}
	}
	svc, err := aztables.NewServiceClientFromConnectionString(connectionString, co)
	if err != nil {
		return nil, fmt.Errorf("azstore: %w", err)
	}
	if _, err := svc.CreateTable(ctx, opts.Table, nil); err != nil && !hasCode(err, "TableAlreadyExists") {
		return nil, fmt.Errorf("azstore: creating table %s: %w", opts.Table, err)
	}
	return &Store{client: svc.NewClient(opts.Table)}, nil
}

// OpenClient opens the store in the Azure table that client addresses,
// which must exist: client may be built with a token credential
// (aztables.NewClient with an azidentity credential), a SAS URL
// (aztables.NewClientWithNoCredential) or a shared key. The store needs
// these rights on its table, and no other: Read (queries and point
// reads), Add, Update and Delete; a table-scoped SAS with permissions
// "raud" grants exactly them. Creating the table is the caller's (Open
// does it with the account key). OpenClient reads one entity to check that
// the table exists and the client may read it.
func OpenClient(ctx context.Context, client *aztables.Client) (*Store, error) {
	switch {
	case ctx == nil:
		return nil, fmt.Errorf("azstore: %w: nil context", kv.ErrInvalidArgument)
	case client == nil:
		return nil, fmt.Errorf("azstore: %w: nil client", kv.ErrInvalidArgument)
	}
	_, err := client.GetEntity(ctx, partitionKey(nil), rowKey(nil), nil)
	switch {
	case err == nil || hasCode(err, "ResourceNotFound"):
		return &Store{client: client}, nil
	case hasCode(err, "TableNotFound"):
		return nil, fmt.Errorf("azstore: the table does not exist (OpenClient does not create it): %w", err)
	}
	return nil, fmt.Errorf("azstore: reading the table: %w", err)
}

// hasCode reports whether err is the service's answer with that error code.
func hasCode(err error, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && (re.ErrorCode == code || strings.Contains(re.Error(), code))
}

func notFound(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// begin returns an error for a nil or done context or a closed store.
func (s *Store) begin(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("azstore: %w: nil context", kv.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("azstore: %w", kv.ErrClosed)
	}
	return nil
}

// entity is the JSON of a stored entity: the value is V, then V1, V2, ...
// when it is longer than a property holds.
type entity map[string]any

func newEntity(key, value []byte) (entity, error) {
	if len(value) > maxValueBytes {
		return nil, fmt.Errorf("%w: the value of key %q has %d bytes; an entity holds %d", kv.ErrInvalidBatch, key, len(value), maxValueBytes)
	}
	e := entity{"PartitionKey": partitionKey(Partition(key)), "RowKey": rowKey(key)}
	for i := 0; i == 0 || i*propertyBytes < len(value); i++ {
		name := "V"
		if i > 0 {
			name += strconv.Itoa(i)
		}
		part := value[i*propertyBytes : min(len(value), (i+1)*propertyBytes)]
		e[name] = base64.StdEncoding.EncodeToString(part)
		e[name+"@odata.type"] = "Edm.Binary"
	}
	return e, nil
}

// parseEntity returns the RowKey and value of a stored entity's JSON.
func parseEntity(data []byte) (rowKey string, value []byte, err error) {
	var e map[string]any
	if err := json.Unmarshal(data, &e); err != nil {
		return "", nil, fmt.Errorf("azstore: entity: %w", err)
	}
	rowKey, _ = e["RowKey"].(string)
	value = []byte{}
	for i := 0; ; i++ {
		name := "V"
		if i > 0 {
			name += strconv.Itoa(i)
		}
		p, ok := e[name].(string)
		if !ok {
			if i == 0 && rowKey != guardRow {
				return "", nil, fmt.Errorf("azstore: entity %q has no value", rowKey)
			}
			return rowKey, value, nil
		}
		part, err := base64.StdEncoding.DecodeString(p)
		if err != nil {
			return "", nil, fmt.Errorf("azstore: entity %q: %w", rowKey, err)
		}
		value = append(value, part...)
	}
}

// get reads key, returning its value, or nil when it is absent.
func (s *Store) get(ctx context.Context, key []byte) ([]byte, error) {
	if len(key) > maxKeyBytes {
		return nil, nil // too long to be stored
	}
	return s.getRow(ctx, partitionKey(Partition(key)), rowKey(key))
}

// Get returns the value stored under key, or an error wrapping
// kv.ErrNotFound.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	v, err := s.get(ctx, key)
	if err == nil && v == nil {
		return nil, fmt.Errorf("azstore: %w", kv.ErrNotFound)
	}
	return v, err
}

// Scan yields the entries of r, following the service's continuation
// tokens page by page. Azure reads forward only: a reverse scan reads its
// range forward, keeping the last Limit entries (all of them without a
// limit), and yields them backwards.
func (s *Store) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		if err := s.begin(ctx); err != nil {
			yield(kv.Entry{}, err)
			return
		}
		lo, hi := r.Start, r.End
		if r.After != nil {
			if r.Reverse && (hi == nil || bytes.Compare(r.After, hi) < 0) {
				hi = r.After
			}
			if !r.Reverse && (lo == nil || bytes.Compare(r.After, lo) >= 0) {
				lo = append(slices.Clip(r.After), 0) // the first key after it
			}
		}
		if hi != nil && (len(hi) == 0 || lo != nil && bytes.Compare(lo, hi) >= 0) {
			return
		}
		var (
			kept []kv.Entry // a reverse scan's last entries, a ring when limited
			head int        // of the ring: its oldest entry
			n    int
			top  int // entries a page, when a forward scan needs fewer than a page
		)
		if !r.Reverse && r.Limit > 0 {
			top = min(r.Limit, 1000)
		}
		for e, err := range s.scanForward(ctx, lo, hi, top) {
			if err != nil {
				yield(kv.Entry{}, err)
				return
			}
			if !r.Reverse {
				if !yield(e, nil) {
					return
				}
				if n++; r.Limit > 0 && n == r.Limit {
					return
				}
				continue
			}
			if r.Limit > 0 && len(kept) == r.Limit {
				kept[head] = e
				head = (head + 1) % len(kept)
				continue
			}
			kept = append(kept, e)
		}
		for i := range kept {
			if !yield(kept[(head-1-i+2*len(kept))%len(kept)], nil) {
				return
			}
		}
	}
}

// scanForward yields the entries with lo <= key < hi in key order, top a
// page when top is set. A range
// within one partition is one partition's query; any other reads the table
// by RowKey, in (PartitionKey, RowKey) order, which Partition makes key
// order within each space of a table; an entry out of order is an error.
func (s *Store) scanForward(ctx context.Context, lo, hi []byte, top int) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		var conds []string
		// The keys that extend p as a tuple lie below p+0xFF: a byte 0xFF
		// after a whole element only escapes a NUL inside a string.
		if p, prefix := partition(lo); prefix != nil && bytes.HasPrefix(lo, prefix) && hi != nil && bytes.Compare(hi, append(slices.Clip(prefix), 0xff)) <= 0 {
			conds = append(conds, "PartitionKey eq "+quote(partitionKey(p)))
		}
		if lo != nil {
			conds = append(conds, "RowKey ge "+quote(rowKey(lo)))
		}
		if hi != nil {
			conds = append(conds, "RowKey lt "+quote(rowKey(hi)))
		}
		opts := &aztables.ListEntitiesOptions{Format: to.Ptr(aztables.MetadataFormatNone)}
		if top > 0 {
			opts.Top = to.Ptr(int32(top))
		}
		if len(conds) > 0 {
			opts.Filter = to.Ptr(strings.Join(conds, " and "))
		}
		var last []byte
		pager := s.client.NewListEntitiesPager(opts)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(kv.Entry{}, fmt.Errorf("azstore: scan: %w", err))
				return
			}
			for _, data := range page.Entities {
				rk, v, err := parseEntity(data)
				if rk == guardRow {
					continue
				}
				var k []byte
				if err == nil {
					k, err = keyOf(rk)
				}
				if err == nil && last != nil && bytes.Compare(k, last) <= 0 {
					err = fmt.Errorf("azstore: scan: key %q follows %q: the range spans partitions out of key order", k, last)
				}
				if err != nil {
					yield(kv.Entry{}, err)
					return
				}
				last = k
				if !yield(kv.Entry{Key: k, Value: v}, nil) {
					return
				}
			}
			if err := s.begin(ctx); err != nil {
				yield(kv.Entry{}, err)
				return
			}
		}
	}
}

// Apply applies b as one entity group transaction with the partition's
// guard. A blind batch, of puts and deletes whose only expectations are
// that keys it puts are absent, is sent at once, without reads: it
// overwrites the guard unconditionally, which still makes any batch that
// read the guard before it start again; the puts of keys expected absent
// are inserts, which fail the transaction (ErrConflict) when a key exists;
// the deletes are unconditional, which fail it when a key is absent, and
// then the batch goes the reading way. Any other batch reads the guard
// and every key it expects or deletes with partition queries (see
// readGuarded), checks the expectations, and submits the writes with an
// update of the guard conditional on the ETag read: when another batch in
// the partition committed in between, it starts again. A blind batch
// costs one request, and one that reads at most 13 keys two; each 14 keys
// more it reads cost one query more.
//
// A batch that Atomicity does not allow is refused with
// kv.ErrInvalidBatch before it is sent: Azurite would apply some,
// across partitions, that Azure refuses. The guard names the attempt that
// wrote it, so a transaction whose answer was lost, and which the SDK sent
// again, is known to have committed. A batch that others overtake in its
// partition starts again after a jittered back-off, up to 32 times. The
// ETag guards a partition, where Azure's transactions stop; records carry
// the table's own versions (indextable.IfVersion).
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	if err := kv.CheckBatch(b); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	if err := s.Atomicity().Allows(b); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	// A key too long to be stored is absent (Allows refused putting it):
	// expecting it absent or deleting it is nothing to do, and expecting
	// a value of it fails.
	ops := make([]kv.Op, 0, b.Len())
	for _, op := range b.Ops() {
		if len(op.Key) <= maxKeyBytes {
			ops = append(ops, op)
		} else if op.Kind == kv.OpExpectValue {
			return fmt.Errorf("azstore: %w", kv.CheckExpectation(op, nil))
		}
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	w := newWrite(ops)
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.apply(ctx, w)
		if !errors.Is(err, errOvertaken) || attempt == attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("azstore: %w", ctx.Err())
		case <-time.After(backoff/2 + rand.N(backoff)):
		}
		backoff = min(2*backoff, time.Second)
		if err := s.begin(ctx); err != nil {
			return err
		}
	}
}

// errOvertaken reports a batch that other batches in its partition kept
// overtaking, between its reads and its commit, as many times as it tried.
var errOvertaken = fmt.Errorf("azstore: %w: other batches kept committing in the partition", kv.ErrConflict)

// errAbsentDelete reports that a blind batch deletes a key that is absent,
// which failed its transaction: it must go the reading way.
var errAbsentDelete = errors.New("azstore: a blind batch deletes an absent key")

// write is a batch on its way: its operations, in partition pk, and
// whether it is still to be tried blind.
type write struct {
	pk    string
	ops   []kv.Op
	adds  map[string]bool // keys put and expected absent, when blind
	blind bool
}

// newWrite returns the write of ops, which are in one partition.
func newWrite(ops []kv.Op) *write {
	adds, blind := blindWrites(ops)
	return &write{pk: partitionKey(Partition(ops[0].Key)), ops: ops, adds: adds, blind: blind}
}

// blindWrites reports whether ops is blind: puts and deletes whose only
// expectations are that keys it puts are absent, which need no reads:
// those puts become inserts (Add), which fail the transaction when a key
// exists. It returns their keys (none when ops is not blind).
func blindWrites(ops []kv.Op) (adds map[string]bool, blind bool) {
	puts := map[string]bool{}
	for _, op := range ops {
		if op.Kind == kv.OpPut {
			puts[string(op.Key)] = true
		}
	}
	adds = map[string]bool{}
	for _, op := range ops {
		switch op.Kind {
		case kv.OpPut, kv.OpDelete:
		case kv.OpExpectAbsent:
			if !puts[string(op.Key)] {
				return map[string]bool{}, false
			}
			adds[string(op.Key)] = true
		default:
			return map[string]bool{}, false
		}
	}
	return adds, true
}

// guardEntity is the JSON of a partition's guard: the attempt that last
// committed a batch in the partition.
type guardEntity struct {
	PartitionKey, RowKey, Attempt string
}

// guard is a partition's guard as read.
type guard struct {
	ETag    azcore.ETag
	attempt string
}

// newAttempt returns a fresh name of an attempt, for the guard.
func newAttempt() string { return strconv.FormatUint(rand.Uint64(), 36) }

// apply tries w once: blind while it may be, and the reading way
// otherwise, or when the blind way finds a key to delete absent.
func (s *Store) apply(ctx context.Context, w *write) error {
	prior := ""
	if w.blind {
		prior = newAttempt()
		err := s.applyBlind(ctx, w, prior)
		if !errors.Is(err, errAbsentDelete) {
			return err
		}
		if len(w.adds) == 0 {
			return s.applyBlindAgain(ctx, w, prior)
		}
		w.blind = false // the key stays absent, most likely
	}
	return s.applyRead(ctx, w, prior)
}

// applyBlindAgain applies w, a blind batch that expects nothing, after a
// blind attempt named prior failed on a delete of an absent key: it reads
// the guard and the keys w deletes, and sends w blind again without the
// deletes of absent keys, until one goes through. The reading way would
// commit on condition of the guard's ETag, which every blind batch in the
// partition rewrites: in a partition of blind writes (the hints of a
// table's queue, say) it would be overtaken again and again.
func (s *Store) applyBlindAgain(ctx context.Context, w *write, prior string) error {
	for range attempts {
		g, found, err := s.readGuarded(ctx, w.pk, readRows(w.ops))
		switch {
		case err != nil:
			return err
		case g != nil && g.attempt == prior:
			return nil // a resend of the transaction, which committed
		}
		kept := make([]kv.Op, 0, len(w.ops))
		for _, op := range w.ops {
			if op.Kind != kv.OpDelete || found[rowKey(op.Key)] != nil {
				kept = append(kept, op)
			}
		}
		if w.ops = kept; len(kept) == 0 {
			return nil
		}
		prior = newAttempt()
		if err := s.applyBlind(ctx, w, prior); !errors.Is(err, errAbsentDelete) {
			return err
		}
	}
	return errOvertaken
}

// guardAction returns the action of kind that writes partition pk's guard,
// naming attempt, if the guard's ETag is etag when that is not nil.
func guardAction(pk, attempt string, kind aztables.TransactionType, etag *azcore.ETag) (aztables.TransactionAction, error) {
	data, err := json.Marshal(guardEntity{pk, guardRow, attempt})
	return aztables.TransactionAction{ActionType: kind, Entity: data, IfMatch: etag}, err
}

// putAction returns the action of put op: an insert (Add), which fails
// the transaction when the key exists, if add; an upsert otherwise.
func putAction(op kv.Op, add bool) (aztables.TransactionAction, error) {
	e, err := newEntity(op.Key, op.Value)
	if err != nil {
		return aztables.TransactionAction{}, err
	}
	data, err := json.Marshal(e)
	kind := aztables.TransactionTypeInsertReplace
	if add {
		kind = aztables.TransactionTypeAdd
	}
	return aztables.TransactionAction{ActionType: kind, Entity: data}, err
}

// deleteAction returns the delete of key in partition pk, unconditional
// (If-Match "*"): it fails the transaction when the key is absent.
func deleteAction(pk string, key []byte) (aztables.TransactionAction, error) {
	data, err := json.Marshal(entity{"PartitionKey": pk, "RowKey": rowKey(key)})
	return aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: data}, err
}

// applyBlind sends the blind batch w without reading: the guard
// overwritten, naming attempt, then the puts and deletes. It returns
// errAbsentDelete when the transaction failed on a delete of an absent
// key (or on one it cannot place), and ErrConflict when a key put and
// expected absent exists; both mean nothing was written, unless the SDK
// resent the transaction after it committed, which the guard tells.
func (s *Store) applyBlind(ctx context.Context, w *write, attempt string) error {
	ga, err := guardAction(w.pk, attempt, aztables.TransactionTypeInsertReplace, nil)
	if err != nil {
		return err
	}
	actions := []aztables.TransactionAction{ga}
	for _, op := range w.ops {
		var a aztables.TransactionAction
		switch op.Kind {
		case kv.OpPut:
			a, err = putAction(op, w.adds[string(op.Key)])
		case kv.OpDelete:
			a, err = deleteAction(w.pk, op.Key)
		default:
			continue // a key put expected absent: its Add checks it
		}
		if err != nil {
			return err
		}
		actions = append(actions, a)
	}
	_, err = s.client.SubmitTransaction(ctx, actions, nil)
	switch i, known := failedAction(err, len(actions)); {
	case err == nil:
		return nil
	case hasCode(err, "ResourceNotFound") && (!known || actions[i].ActionType == aztables.TransactionTypeDelete):
		return errAbsentDelete // the reading way tells a resend by attempt
	case !hasCode(err, "EntityAlreadyExists"):
		return fmt.Errorf("azstore: transaction: %w", err)
	}
	switch g, err := s.readGuard(ctx, w.pk); {
	case err != nil:
		return err
	case g != nil && g.attempt == attempt:
		return nil // a resend of the transaction, which committed
	}
	return fmt.Errorf("azstore: %w: a key the batch expects absent exists", kv.ErrConflict)
}

// failedActionIndex finds the index of the action that failed a
// transaction in Azure's message, which starts with it:
// "value":"2:The specified resource does not exist.
var failedActionIndex = regexp.MustCompile(`"value"\s*:\s*"(\d+):`)

// failedAction returns the zero-based index of the action that failed a
// transaction of n actions with err, and whether err names one. The SDK
// keeps it in the error's text alone: the *azcore.ResponseError of a
// failed transaction has StatusCode 202 and no ErrorCode.
func failedAction(err error, n int) (int, bool) {
	if err == nil {
		return 0, false
	}
	m := failedActionIndex.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	return i, err == nil && i < n
}

// applyRead tries w the reading way: it reads the guard and every key w
// expects or deletes (readGuarded), checks the expectations, and commits
// the writes with the guard updated on condition of its ETag, or added if
// there was none. When the guard names prior, a blind attempt of w that
// committed (the SDK resent it, and the resend found a key it deletes
// gone), w is applied.
func (s *Store) applyRead(ctx context.Context, w *write, prior string) error {
	g, found, err := s.readGuarded(ctx, w.pk, readRows(w.ops))
	switch {
	case err != nil:
		return err
	case g != nil && prior != "" && g.attempt == prior:
		return nil
	}
	attempt := newAttempt()
	var ga aztables.TransactionAction
	if g == nil {
		ga, err = guardAction(w.pk, attempt, aztables.TransactionTypeAdd, nil)
	} else {
		ga, err = guardAction(w.pk, attempt, aztables.TransactionTypeUpdateReplace, &g.ETag)
	}
	if err != nil {
		return err
	}
	actions := []aztables.TransactionAction{ga}
	for _, op := range w.ops {
		v := found[rowKey(op.Key)]
		var a aztables.TransactionAction
		switch op.Kind {
		case kv.OpPut:
			a, err = putAction(op, false)
		case kv.OpDelete:
			if v == nil {
				continue // Azure fails a transaction that deletes a missing entity
			}
			a, err = deleteAction(w.pk, op.Key)
		default:
			if err := kv.CheckExpectation(op, v); err != nil {
				return fmt.Errorf("azstore: %w", err)
			}
			continue
		}
		if err != nil {
			return err
		}
		actions = append(actions, a)
	}
	return s.commit(ctx, w.pk, attempt, actions)
}

// readRows returns the distinct RowKeys of the keys ops expect or delete.
func readRows(ops []kv.Op) []string {
	var rows []string
	seen := map[string]bool{}
	for _, op := range ops {
		if rk := rowKey(op.Key); op.Kind != kv.OpPut && !seen[rk] {
			seen[rk] = true
			rows = append(rows, rk)
		}
	}
	return rows
}

// readGuarded reads the guard of partition pk (nil when there is none) and
// the entities of rows, and returns the values it found by RowKey. It
// sends partition queries one after the other: the guard and the first 13
// rows, then 14 rows a query, as Azure allows 15 comparisons in a filter
// and each query spends one on the PartitionKey. One batch of at most 13
// keys to read so costs one query, not a read a key and one of the guard.
// Rows have no bound, as a batch's expectations have none (Atomicity): a
// batch of 99 deletes and 50 expectations reads 149 rows, 11 queries.
// Each query sent widens the time between the guard's read and the
// commit, in which another batch of the partition may overtake this one.
//
// Why the values read so are those the batch's commit overwrites: every
// batch that commits in a partition rewrites its guard, and the commit
// that follows these reads is conditional on the guard's ETag as read
// here, so it fails if any batch committed in the partition after the
// guard was read; Azure runs an entity group transaction with snapshot
// isolation, all of it against one state of the partition. A partition
// query returns its rows in RowKey order, and "!guard" sorts before every
// encoded key (they start with 'k'), so the guard is read no later than
// the rows of its query; the guard's query is sent first, and the others
// after it has answered. So every row is read at or after the moment the
// guard was: if a batch changed the row after the guard was read, before
// or after the row was read, the commit fails and the batch reads again;
// if the commit succeeds, nothing in the partition changed between the
// guard's read and the commit, and each row still held what was read.
func (s *Store) readGuarded(ctx context.Context, pk string, rows []string) (*guard, map[string][]byte, error) {
	var g *guard
	found := make(map[string][]byte, len(rows))
	read := func(data []byte) error {
		rk, v, err := parseEntity(data)
		switch {
		case err != nil:
			return err
		case rk == guardRow:
			g, err = parseGuard(data)
			return err
		}
		found[rk] = v
		return nil
	}
	for chunk := range slices.Chunk(append([]string{guardRow}, rows...), rowsPerQuery) {
		if err := s.queryRows(ctx, pk, chunk, aztables.MetadataFormatMinimal, read); err != nil {
			return nil, nil, err
		}
	}
	return g, found, nil
}

// parseGuard returns the guard of its JSON as a query with minimal
// metadata returns it, which carries its ETag as "odata.etag" (a query
// with no metadata does not).
func parseGuard(data []byte) (*guard, error) {
	var g struct {
		Attempt string
		ETag    string `json:"odata.etag"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("azstore: guard: %w", err)
	}
	if g.ETag == "" {
		return nil, errors.New("azstore: guard: the query returned no ETag")
	}
	return &guard{ETag: azcore.ETag(g.ETag), attempt: g.Attempt}, nil
}

// commit submits the actions of a batch read first, whose first action
// updates or adds the guard of partition pk naming attempt. When the
// transaction fails on the guard's condition, another batch overtook
// this one (errOvertaken), or the SDK resent it after it committed, and
// the resend found the guard changed by the first: then attempt is in the
// guard, and the batch is applied.
func (s *Store) commit(ctx context.Context, pk, attempt string, actions []aztables.TransactionAction) error {
	_, err := s.client.SubmitTransaction(ctx, actions, nil)
	if err == nil {
		return nil
	}
	// A key deleted that another writer deleted first, which changed the
	// guard too, is the same as the guard's condition.
	if !hasCode(err, "UpdateConditionNotSatisfied") && !hasCode(err, "EntityAlreadyExists") && !hasCode(err, "ResourceNotFound") {
		return fmt.Errorf("azstore: transaction: %w", err)
	}
	switch g, err := s.readGuard(ctx, pk); {
	case err != nil:
		return err
	case g != nil && g.attempt == attempt:
		return nil
	}
	return errOvertaken
}

// readGuard reads the guard of partition pk, nil when there is none.
func (s *Store) readGuard(ctx context.Context, pk string) (*guard, error) {
	resp, err := s.client.GetEntity(ctx, pk, guardRow, nil)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("azstore: guard: %w", err)
	}
	var g guardEntity
	if err := json.Unmarshal(resp.Value, &g); err != nil {
		return nil, fmt.Errorf("azstore: guard: %w", err)
	}
	return &guard{ETag: resp.ETag, attempt: g.Attempt}, nil
}

// Atomicity is one partition (see Partition), at most 99 puts and deletes
// (MaxWrites) with any number of expectations, and 2 MiB of keys and
// values, expectations' included; a key holds at most 383 bytes (its
// RowKey, 512 characters), and a value 704 KiB. A put of a key or value
// over these limits is refused with kv.ErrInvalidBatch, never truncated.
// Expectations cost no action of the transaction, but they may cost
// reads: a batch that expects anything but the absence of keys it puts
// reads the k keys it expects or deletes, with ⌈(k+1)/14⌉ queries before
// its transaction (see Apply).
func (s *Store) Atomicity() kv.Atomicity {
	return kv.Atomicity{Partition: Partition, MaxWrites: maxWrites, MaxBytes: maxBatchBytes,
		MaxKeyBytes: maxKeyBytes, MaxValueBytes: maxValueBytes}
}

// Close marks the store closed; the SDK's client holds no resources that
// need releasing. A second Close returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
