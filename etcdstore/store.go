// Package etcdstore is a store for indextable tables, a kv.Store, on etcd
// (https://etcd.io), the Raft-replicated key/value store, through the
// official client, go.etcd.io/etcd/client/v3.
//
// A store keeps its keys under a prefix of the cluster's key space
// (Options.Prefix): a key k is the etcd key prefix+"d"+k, so the empty key,
// which etcd refuses, is stored too, and several stores share a cluster.
// Reads are linearizable. A scan reads pages of up to 1,024 keys, each a
// range request; the pages after the first read the first page's revision,
// so a scan is a snapshot unless compaction removes that revision first.
//
// A batch is one etcd transaction: its expectations are the transaction's
// compares (a value compare; an absence is a compare of the key's create
// revision with 0) and its puts and deletes the operations it runs if they
// all hold. The server bounds a transaction (--max-txn-ops, 128 by default,
// and --max-request-bytes, 1.5 MiB), which is the store's Atomicity: see
// Options.
//
// A transaction whose answer is lost (a timeout, a leader lost mid-request)
// may have committed. So every batch that writes also writes a key of its
// own, its guard, expecting it absent; when the answer is lost, the store
// writes the guard itself, on the same condition: if that succeeds the
// batch can no longer commit and is sent again as a new attempt, and if it
// fails the guard was written by the batch, which so committed. A batch's
// transaction reads its guard when it fails, and fences it off when it is
// absent: etcd's client resends a transaction after some errors, so a
// copy that committed before is known to have applied, not taken for a
// conflict, and one still in flight can no longer apply after a conflict.
// An error that neither refuses the request nor ends the call (a member
// stopping, its leader lost) leaves the outcome to the fence too. A guard
// lives under a lease of ten minutes, granted once a minute, so guards
// expire on their own.
package etcdstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/indextable/indextable/kv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Options configures a store. The zero value is etcd's default server
// settings and the prefix "indextable/".
type Options struct {
	// Prefix is the part of the cluster's key space the store keeps its
	// keys under; the default is "indextable/". Two stores on one cluster
	// need prefixes neither of which starts the other.
	Prefix string
	// MaxTxnOps is the server's --max-txn-ops: the most operations of a
	// transaction, 128 by default. A batch holds one fewer, the guard's.
	MaxTxnOps int
	// MaxRequestBytes is the server's --max-request-bytes, 1.5 MiB by
	// default. A batch's keys and values take that less what their
	// encoding adds (see Store.Atomicity).
	MaxRequestBytes int
	// Timeout bounds how long a call keeps trying while the cluster cannot
	// answer (no leader, a member unreachable): one minute by default. Each
	// try waits at most 5 seconds, or Timeout if it is shorter.
	Timeout time.Duration
}

// Defaults of Options.
const (
	DefaultPrefix          = "indextable/"
	DefaultMaxTxnOps       = 128
	DefaultMaxRequestBytes = 3 << 19 // 1.5 MiB
	DefaultTimeout         = time.Minute

	// MaxKeyBytes is the longest key the store holds. etcd bounds keys only
	// by the request size, but it keeps every key in memory, in its index.
	MaxKeyBytes = 32 << 10

	tryTimeout = 5 * time.Second
	// sendSlack is what Open lets the client send past MaxRequestBytes:
	// gRPC's framing of the request, which the server allows for too.
	sendSlack = 64 << 10
	// opBytes is what a transaction's encoding adds to each operation's key
	// and value, besides the prefix, with room to spare: tags, lengths and
	// the compare's or request's framing.
	opBytes = 32
)

// ErrUnknownOutcome reports a batch that may or may not have been applied:
// its answer was lost, and the store could not find out before its Timeout
// (or the context) ended, or the guard's lease expired first.
var ErrUnknownOutcome = errors.New("etcdstore: outcome unknown")

// Store is a kv.Store on an etcd cluster. It is safe for concurrent use.
type Store struct {
	client  *clientv3.Client
	owned   bool   // Close closes client
	data    string // the prefix of the keys of data
	guards  string // the prefix of guard keys
	timeout time.Duration
	atom    kv.Atomicity
	closed  atomic.Bool
	life    context.Context // ends when the store closes, and the tries with it
	end     context.CancelFunc

	id       [8]byte // names this store's attempts, with seq
	seq      atomic.Uint64
	leaseMu  sync.Mutex
	lease    clientv3.LeaseID // the guards' lease; 0: none yet
	leaseAt  time.Time        // when lease was granted
	granting chan struct{}    // held by the call granting a lease
}

var _ kv.Store = (*Store)(nil)

// Open connects to the cluster at endpoints (client URLs such as
// "http://127.0.0.1:2379") and returns a store on it; Close closes the
// connection.
func Open(ctx context.Context, endpoints []string, o Options) (*Store, error) {
	if ctx == nil {
		return nil, fmt.Errorf("etcdstore: %w: nil context", kv.ErrInvalidArgument)
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("etcdstore: %w: no endpoints", kv.ErrInvalidArgument)
	}
	maxRequest := cmp.Or(o.MaxRequestBytes, DefaultMaxRequestBytes)
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: tryTimeout, Context: context.WithoutCancel(ctx),
		MaxCallSendMsgSize: maxRequest + sendSlack,
		Logger:             zap.NewNop()}) // the store reports what fails; the client's retries are its own

	if err != nil {
		return nil, fmt.Errorf("etcdstore: connecting to %v: %w", endpoints, err)
	}
	s, err := New(c, o)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a store on the cluster client is connected to. Close leaves
// client open. The client must send requests of MaxRequestBytes: etcd's
// sends at most 2 MiB unless its Config.MaxCallSendMsgSize says more.
func New(client *clientv3.Client, o Options) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("etcdstore: %w: nil client", kv.ErrInvalidArgument)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxTxnOps == 0 {
		o.MaxTxnOps = DefaultMaxTxnOps
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	s := &Store{client: client, data: o.Prefix + "d", guards: o.Prefix + "g", timeout: o.Timeout, granting: make(chan struct{}, 1)}
	// A batch of n operations takes n compares and writes, and the guard's
	// one more of each, and in its Else branch a read and a fence of the
	// guard; its request holds each key with the prefix.
	ops := o.MaxTxnOps - 1
	maxBytes := o.MaxRequestBytes - (ops+3)*(len(s.data)+opBytes) - len(s.guards) - 64
	if ops < 1 || maxBytes < MaxKeyBytes {
		return nil, fmt.Errorf("etcdstore: %w: MaxTxnOps %d and MaxRequestBytes %d leave no room for a batch", kv.ErrInvalidArgument, o.MaxTxnOps, o.MaxRequestBytes)
	}
	s.atom = kv.Atomicity{MaxOps: ops, MaxBytes: maxBytes, MaxKeyBytes: MaxKeyBytes, MaxValueBytes: maxBytes - MaxKeyBytes}
	rand.Read(s.id[:])
	s.life, s.end = context.WithCancel(context.Background())
	return s, nil
}

// Client returns the client the store uses.
func (s *Store) Client() *clientv3.Client { return s.client }

// Atomicity returns the store's bounds: one fewer operation than
// MaxTxnOps, and MaxRequestBytes less the bytes each operation's encoding
// adds, for keys and values; keys of at most MaxKeyBytes.
func (s *Store) Atomicity() kv.Atomicity { return s.atom }

// Close closes the store, and its connection if Open made it. Calls in
// flight end at once with an error wrapping kv.ErrClosed (and
// ErrUnknownOutcome for a batch that may have been sent).
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.end()
	if !s.owned {
		return nil
	}
	if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdstore: %w", err)
	}
	return nil
}

// key returns the etcd key of key.
func (s *Store) key(key []byte) string { return s.data + string(key) }

// Get returns the value stored under key, or an error wrapping
// kv.ErrNotFound.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Get(ctx, s.key(key))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: get %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("etcdstore: %q: %w", key, kv.ErrNotFound)
	}
	return present(resp.Kvs[0].Value), nil
}

// present returns v, a present key's value, non-nil.
func present(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// GetMany appends the values under keys to dst, nil for each absent key.
// The keys of one transaction (up to MaxTxnOps) are read at one revision.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if err := s.check(ctx); err != nil {
		return dst, err
	}
	for len(keys) > 0 {
		n := min(len(keys), s.atom.MaxOps+1)
		ops := make([]clientv3.Op, n)
		for i, k := range keys[:n] {
			ops[i] = clientv3.OpGet(s.key(k))
		}
		var resp *clientv3.TxnResponse
		err := s.read(ctx, func(ctx context.Context) (err error) {
			resp, err = s.client.Txn(ctx).Then(ops...).Commit()
			return err
		})
		if err != nil {
			return dst, fmt.Errorf("etcdstore: reading %d keys: %w", n, err)
		}
		for _, r := range resp.Responses {
			var v []byte
			if kvs := r.GetResponseRange().GetKvs(); len(kvs) > 0 {
				v = present(kvs[0].Value)
			}
			dst = append(dst, v)
		}
		keys = keys[n:]
	}
	return dst, nil
}

// Scan yields the entries of r, reading pages of keys (see the package
// documentation).
func (s *Store) Scan(ctx context.Context, r kv.ScanRange) iter.Seq2[kv.Entry, error] {
	return func(yield func(kv.Entry, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(kv.Entry{}, err)
			return
		}
		start, end := s.bounds(r)
		rev, left, page := int64(0), r.Limit, min(max(r.Limit, 64), 1024)
		for start < end {
			if r.Limit > 0 {
				page = min(page, left)
			}
			resp, at, err := s.page(ctx, start, end, page, rev, r.Reverse)
			if err != nil {
				yield(kv.Entry{}, fmt.Errorf("etcdstore: scanning [%q, %q): %w", start[len(s.data):], end, err))
				return
			}
			rev = at
			for _, e := range resp.Kvs {
				if !yield(kv.Entry{Key: e.Key[len(s.data):], Value: present(e.Value)}, nil) {
					return
				}
			}
			left -= len(resp.Kvs)
			if !resp.More || len(resp.Kvs) == 0 || r.Limit > 0 && left <= 0 {
				return
			}
			last := string(resp.Kvs[len(resp.Kvs)-1].Key)
			if r.Reverse {
				end = last
			} else {
				start = last + "\x00"
			}
			page = min(2*page, 1024)
		}
	}
}

// bounds returns the etcd keys that r's keys lie within: start included,
// end excluded.
func (s *Store) bounds(r kv.ScanRange) (start, end string) {
	start, end = s.key(r.Start), clientv3.GetPrefixRangeEnd(s.data)
	if r.End != nil {
		end = s.key(r.End)
	}
	if r.After != nil {
		if a := s.key(r.After); r.Reverse {
			end = min(end, a)
		} else {
			start = max(start, a+"\x00")
		}
	}
	return start, end
}

// page reads up to n keys of [start, end) at revision rev (0: the latest),
// the last ones first when reverse, and returns the revision it read at. A
// revision compaction removed is read at the latest instead: a scan need
// not be a snapshot.
func (s *Store) page(ctx context.Context, start, end string, n int, rev int64, reverse bool) (*clientv3.GetResponse, int64, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(n))}
		if reverse {
			opts = append(opts, clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
		}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err = s.client.Get(ctx, start, opts...)
		if err != nil && rev > 0 && isCompacted(err) {
			rev = 0
			return errRetryNow
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if rev == 0 { // a response's header holds the latest revision, not the one read
		rev = resp.Header.Revision
	}
	return resp, rev, nil
}
