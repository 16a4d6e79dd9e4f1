// Package azstore is an indextable.Store on Azure Table storage (and its
// emulator, Azurite), through the official SDK.
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
// A batch is one entity group transaction: one partition, at most 99
// operations (the hundredth is the partition's guard, below) and 2 MiB of
// keys and values, which is the store's Atomicity. Expectations are checked
// optimistically: every batch reads its partition's guard entity, reads the
// keys it expects, and commits together with an update of the guard made
// conditional on the guard's ETag, so that a batch that another one
// overtook in its partition fails and is tried again.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable"
)

const (
	// guardRow is the RowKey of a partition's guard entity; '!' is not in
	// the key alphabet, so no key encodes to it.
	guardRow = "!guard"
	// maxOps is the most operations of a batch: a transaction holds 100
	// actions, one of them the guard's.
	maxOps = 99
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

// Store is an indextable.Store on one Azure table. It is safe for
// concurrent use.
type Store struct {
	client *aztables.Client
	mu     sync.RWMutex
	closed bool
}

var _ indextable.Store = (*Store)(nil)

// Open connects to the account of connectionString and opens the store in
// its table opts.Table, creating the table if needed. A connection string
// holds an account key, which opens the whole account: where that is not
// allowed, open the store with OpenClient.
func Open(ctx context.Context, connectionString string, opts Options) (*Store, error) {
	if ctx == nil {
		return nil, fmt.Errorf("azstore: %w: nil context", indextable.ErrInvalidArgument)
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
		return nil, fmt.Errorf("azstore: %w: nil context", indextable.ErrInvalidArgument)
	case client == nil:
		return nil, fmt.Errorf("azstore: %w: nil client", indextable.ErrInvalidArgument)
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
		return fmt.Errorf("azstore: %w: nil context", indextable.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("azstore: %w", indextable.ErrClosed)
	}
	return nil
}

// entity is the JSON of a stored entity: the value is V, then V1, V2, ...
// when it is longer than a property holds.
type entity map[string]any

func newEntity(key, value []byte) (entity, error) {
	if len(value) > maxValueBytes {
		return nil, fmt.Errorf("%w: the value of key %q has %d bytes; an entity holds %d", indextable.ErrInvalidBatch, key, len(value), maxValueBytes)
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
	resp, err := s.client.GetEntity(ctx, partitionKey(Partition(key)), rowKey(key), nil)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("azstore: get: %w", err)
	}
	_, v, err := parseEntity(resp.Value)
	return v, err
}

// Get returns the value stored under key, or an error wrapping
// indextable.ErrNotFound.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	v, err := s.get(ctx, key)
	if err == nil && v == nil {
		return nil, fmt.Errorf("azstore: %w", indextable.ErrNotFound)
	}
	return v, err
}

// GetMany reads keys, up to 8 at a time, and appends their values to dst in
// the order of keys, with nil for each absent key.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if err := s.begin(ctx); err != nil {
		return dst, err
	}
	vals := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := ctx.Err(); err != nil {
				errs[i] = fmt.Errorf("azstore: %w", err)
				return
			}
			vals[i], errs[i] = s.get(ctx, k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return dst, err
		}
	}
	return append(dst, vals...), nil
}

// Scan yields the entries of r, following the service's continuation
// tokens page by page. Azure reads forward only: a reverse scan reads its
// range forward, keeping the last Limit entries (all of them without a
// limit), and yields them backwards.
func (s *Store) Scan(ctx context.Context, r indextable.ScanRange) iter.Seq2[indextable.Entry, error] {
	return func(yield func(indextable.Entry, error) bool) {
		if err := s.begin(ctx); err != nil {
			yield(indextable.Entry{}, err)
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
			kept []indextable.Entry // a reverse scan's last entries, a ring when limited
			head int                // of the ring: its oldest entry
			n    int
			top  int // entries a page, when a forward scan needs fewer than a page
		)
		if !r.Reverse && r.Limit > 0 {
			top = min(r.Limit, 1000)
		}
		for e, err := range s.scanForward(ctx, lo, hi, top) {
			if err != nil {
				yield(indextable.Entry{}, err)
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
func (s *Store) scanForward(ctx context.Context, lo, hi []byte, top int) iter.Seq2[indextable.Entry, error] {
	return func(yield func(indextable.Entry, error) bool) {
		var conds []string
		// The keys that extend p as a tuple lie below p+0xFF: a byte 0xFF
		// after a whole element only escapes a NUL inside a string.
		if p, prefix := partition(lo); prefix != nil && bytes.HasPrefix(lo, prefix) && hi != nil && bytes.Compare(hi, append(slices.Clip(prefix), 0xff)) <= 0 {
			conds = append(conds, "PartitionKey eq '"+partitionKey(p)+"'")
		}
		if lo != nil {
			conds = append(conds, "RowKey ge '"+rowKey(lo)+"'")
		}
		if hi != nil {
			conds = append(conds, "RowKey lt '"+rowKey(hi)+"'")
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
				yield(indextable.Entry{}, fmt.Errorf("azstore: scan: %w", err))
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
					yield(indextable.Entry{}, err)
					return
				}
				last = k
				if !yield(indextable.Entry{Key: k, Value: v}, nil) {
					return
				}
			}
			if err := s.begin(ctx); err != nil {
				yield(indextable.Entry{}, err)
				return
			}
		}
	}
}

// Apply applies b as one entity group transaction with the partition's
// guard. It reads the guard, then every key b expects or deletes, checks the
// expectations, and submits the writes with an update of the guard
// conditional on the ETag read: when another batch in the partition
// committed in between, it starts again. A batch of puts alone needs no
// reads: it overwrites the guard unconditionally, which still makes any
// batch that read the guard before it start again. Nor does one whose only
// expectations are that keys it puts are absent: those puts are inserts,
// which fail the transaction (ErrConflict) when a key exists.
//
// A batch that Atomicity does not allow is refused with
// indextable.ErrInvalidBatch before it is sent: Azurite would apply some,
// across partitions, that Azure refuses. The guard names the attempt that
// wrote it, so a transaction whose answer was lost, and which the SDK sent
// again, is known to have committed. A batch that others overtake in its
// partition starts again after a jittered back-off, up to 32 times. The
// ETag guards a partition, where Azure's transactions stop; records carry
// the table's own versions (indextable.IfVersion).
func (s *Store) Apply(ctx context.Context, b *indextable.Batch) error {
	if err := indextable.CheckBatch(b); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	if err := s.Atomicity().Allows(b); err != nil {
		return fmt.Errorf("azstore: %w", err)
	}
	// A key too long to be stored is absent (Allows refused putting it):
	// expecting it absent or deleting it is nothing to do, and expecting
	// a value of it fails.
	ops := make([]indextable.Op, 0, b.Len())
	for _, op := range b.Ops() {
		if len(op.Key) <= maxKeyBytes {
			ops = append(ops, op)
		} else if op.Kind == indextable.OpExpectValue {
			return fmt.Errorf("azstore: %w", indextable.CheckExpectation(op, nil))
		}
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.apply(ctx, ops)
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

var errOvertaken = fmt.Errorf("azstore: %w: other batches kept committing in the partition", indextable.ErrConflict)

// guardEntity is the JSON of a partition's guard: the attempt that last
// committed a batch in the partition.
type guardEntity struct {
	PartitionKey, RowKey, Attempt string
}

func (s *Store) apply(ctx context.Context, ops []indextable.Op) error {
	pk := partitionKey(Partition(ops[0].Key))
	attempt := strconv.FormatUint(rand.Uint64(), 36)
	ge, err := json.Marshal(guardEntity{pk, guardRow, attempt})
	if err != nil {
		return err
	}
	adds, blind := inserts(ops)
	actions := make([]aztables.TransactionAction, 0, len(ops)+1)
	var g *guard
	if !blind {
		if g, err = s.readGuard(ctx, pk); err != nil {
			return err
		}
	}
	switch {
	case blind:
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: ge})
	case g == nil:
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: ge})
	default:
		actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeUpdateReplace, Entity: ge, IfMatch: &g.ETag})
	}
	for _, op := range ops {
		var v []byte
		if op.Kind != indextable.OpPut {
			if blind {
				continue // an Add below checks it
			}
			if v, err = s.get(ctx, op.Key); err != nil {
				return err
			}
		}
		switch op.Kind {
		case indextable.OpExpectAbsent, indextable.OpExpectValue:
			if err := indextable.CheckExpectation(op, v); err != nil {
				return fmt.Errorf("azstore: %w", err)
			}
		case indextable.OpPut:
			e, err := newEntity(op.Key, op.Value)
			if err != nil {
				return err
			}
			data, err := json.Marshal(e)
			if err != nil {
				return err
			}
			action := aztables.TransactionTypeInsertReplace
			if adds[string(op.Key)] {
				action = aztables.TransactionTypeAdd
			}
			actions = append(actions, aztables.TransactionAction{ActionType: action, Entity: data})
		case indextable.OpDelete:
			if v == nil {
				continue // Azure fails a transaction that deletes a missing entity
			}
			data, err := json.Marshal(entity{"PartitionKey": pk, "RowKey": rowKey(op.Key)})
			if err != nil {
				return err
			}
			actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeDelete, Entity: data})
		}
	}
	_, err = s.client.SubmitTransaction(ctx, actions, nil)
	if err == nil {
		return nil
	}
	if !hasCode(err, "UpdateConditionNotSatisfied") && !hasCode(err, "EntityAlreadyExists") {
		return fmt.Errorf("azstore: transaction: %w", err)
	}
	// The SDK resends a transaction whose answer it lost, and the resent
	// one finds the guard changed, by the first: then this attempt's ID
	// is in the guard, and the batch committed.
	switch g, err := s.readGuard(ctx, pk); {
	case err != nil:
		return err
	case g != nil && g.attempt == attempt:
		return nil
	case len(adds) > 0:
		return fmt.Errorf("azstore: %w: a key the batch expects absent exists", indextable.ErrConflict)
	}
	return errOvertaken
}

// inserts reports whether ops is blind, a batch whose only expectations
// are that keys it puts are absent, which needs no reads: those puts
// become inserts (Add), which fail the transaction when a key exists. It
// returns their keys (none when ops is not blind).
func inserts(ops []indextable.Op) (adds map[string]bool, blind bool) {
	puts := map[string]bool{}
	for _, op := range ops {
		if op.Kind == indextable.OpPut {
			puts[string(op.Key)] = true
		}
	}
	adds = map[string]bool{}
	for _, op := range ops {
		switch op.Kind {
		case indextable.OpPut:
		case indextable.OpExpectAbsent:
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

// guard is a partition's guard as read.
type guard struct {
	ETag    azcore.ETag
	attempt string
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

// Atomicity is one partition (see Partition), at most 99 operations and
// 2 MiB of keys and values; a key holds at most 383 bytes (its RowKey,
// 512 characters), and a value 704 KiB. A put of a key or value over
// these limits is refused with indextable.ErrInvalidBatch, never
// truncated.
func (s *Store) Atomicity() indextable.Atomicity {
	return indextable.Atomicity{Partition: Partition, MaxOps: maxOps, MaxBytes: maxBatchBytes,
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
