package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/txn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// txnFaults loses the answers of transactions, or does not send them, as
// a timeout or a leader lost mid-request would, and counts them: batches
// (with their guard) and fences (the store writing a guard itself).
type txnFaults struct {
	loseAnswer, failSend, loseFence atomic.Int32 // how many more to hit
	batches, fences                 atomic.Int32
}

func take(n *atomic.Int32) bool { return n.Add(-1) >= 0 }

func (f *txnFaults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !isBatch(req) && !isFence(req) {
		return invoker(ctx, method, req, reply, cc, opts...) // a read
	}
	lost := status.Error(codes.Unavailable, "injected: the answer was lost")
	if isFence(req) {
		f.fences.Add(1)
		if take(&f.loseFence) {
			invoker(ctx, method, req, reply, cc, opts...)
			return lost
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	f.batches.Add(1)
	switch {
	case take(&f.failSend):
		return status.Error(codes.Unavailable, "injected: not sent")
	case take(&f.loseAnswer):
		invoker(ctx, method, req, reply, cc, opts...)
		return lost
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestApplyResolvesLostAnswers: a batch whose answer is lost is applied
// exactly once, and Apply says so; an insert sent again blindly would
// fail its own expectation. A batch not sent, or not applied, is sent
// again; a failed expectation is still reported as a conflict.
func TestApplyResolvesLostAnswers(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	insert := func(k, v string) *kv.Batch {
		return kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: []byte(k)}, kv.Op{Kind: kv.OpPut, Key: []byte(k), Value: []byte(v)})
	}
	for _, tc := range []struct {
		name                            string
		loseAnswer, failSend, loseFence int32
		taken                           bool // the key is there before
		wantErr                         error
		batches, fences                 int32
	}{
		{name: "answer lost", loseAnswer: 1, batches: 1, fences: 1},
		{name: "answer lost, the fence's too", loseAnswer: 1, loseFence: 2, batches: 1, fences: 3},
		{name: "not sent", failSend: 1, batches: 2, fences: 1},
		{name: "not sent twice", failSend: 2, batches: 3, fences: 2},
		{name: "expectation failed, answer lost", loseAnswer: 1, taken: true, wantErr: indextable.ErrConflict, batches: 2, fences: 1},
		{name: "no fault", batches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &txnFaults{}
			s, err := etcdstore.New(faultyClient(t, c, f.intercept), etcdstore.Options{Prefix: t.Name() + "/"})
			require.NoError(t, err)
			if tc.taken {
				require.NoError(t, s.Apply(ctx, insert("k", "before")))
				f.batches.Store(0)
			}
			f.loseAnswer.Store(tc.loseAnswer)
			f.failSend.Store(tc.failSend)
			f.loseFence.Store(tc.loseFence)
			err = s.Apply(ctx, insert("k", "v"))
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				require.ErrorContains(t, err, `"k"`)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.batches, f.batches.Load(), "batches sent")
			require.Equal(t, tc.fences, f.fences.Load(), "fences sent")
			want := "v"
			if tc.taken {
				want = "before"
			}
			v, err := s.Get(ctx, []byte("k"))
			require.NoError(t, err)
			require.Equal(t, want, string(v))
			require.ErrorIs(t, s.Apply(ctx, insert("k", "again")), indextable.ErrConflict)
		})
	}
}

// TestApplyAfterLeaseExpired: when the guards' lease is gone (revoked
// here, as expiry would), a batch is refused by the server unapplied, and
// the store takes a new lease and applies it.
func TestApplyAfterLeaseExpired(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	s := openFresh(t, c, etcdstore.Options{})
	defer s.Close()
	put := func(k string) error {
		return s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte(k), Value: []byte("v")}))
	}
	require.NoError(t, put("a"))
	leases, err := s.Client().Leases(ctx)
	require.NoError(t, err)
	require.Len(t, leases.Leases, 1)
	old := leases.Leases[0].ID
	_, err = s.Client().Revoke(ctx, old)
	require.NoError(t, err)
	require.NoError(t, put("b"))
	leases, err = s.Client().Leases(ctx)
	require.NoError(t, err)
	require.Len(t, leases.Leases, 1)
	require.NotEqual(t, old, leases.Leases[0].ID, "a new lease")
	v, err := s.Get(ctx, []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
}

// TestExpectationsReadLinearizably: a batch of expectations alone is a
// read-only transaction, which etcd serves from the member's own state,
// possibly behind the leader, unless it holds a linearizable range: it
// must, in either branch, as etcd's own rule (txn.IsTxnSerializable)
// decides.
func TestExpectationsReadLinearizably(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	var sent []*etcdserverpb.TxnRequest
	var mu sync.Mutex
	record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*etcdserverpb.TxnRequest); ok {
			mu.Lock()
			sent = append(sent, r)
			mu.Unlock()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, record), etcdstore.Options{Prefix: "lin/"})
	require.NoError(t, err)
	require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")})))
	for _, b := range []*kv.Batch{
		kv.NewBatch(kv.Op{Kind: kv.OpExpectValue, Key: []byte("k"), Value: []byte("v")}, kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("k2")}),
		kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("k")}),
	} {
		mu.Lock()
		sent = nil
		mu.Unlock()
		err := s.Apply(ctx, b)
		if b.Len() == 1 {
			require.ErrorIs(t, err, indextable.ErrConflict)
		} else {
			require.NoError(t, err)
		}
		mu.Lock()
		require.NotEmpty(t, sent)
		require.True(t, txn.IsTxnReadonly(sent[0]))
		require.False(t, txn.IsTxnSerializable(sent[0]), "expectations read from a member's own state")
		mu.Unlock()
	}
}

// isFence reports whether req is a fence: a transaction that writes a
// guard fenced off; isBatch whether it is a batch's transaction: one that
// puts and is no fence.
func isFence(req any) bool {
	txn, ok := req.(*etcdserverpb.TxnRequest)
	return ok && slices.ContainsFunc(txn.Success, func(op *etcdserverpb.RequestOp) bool {
		return string(op.GetRequestPut().GetValue()) == "f"
	})
}

func isBatch(req any) bool {
	txn, ok := req.(*etcdserverpb.TxnRequest)
	return ok && !isFence(req) &&
		slices.ContainsFunc(txn.Success, func(op *etcdserverpb.RequestOp) bool { return op.GetRequestPut() != nil })
}

// lateCopy holds the first batch transaction it sees: the caller gets its
// error (by default at once, as when a connection breaks after sending),
// while the request itself waits in the interceptor until release, and
// only then reaches the server: a copy that arrives late.
type lateCopy struct {
	armed    atomic.Bool
	stall    bool // the caller waits until its try's context ends
	fences   atomic.Int32
	batches  atomic.Int32
	release  chan struct{}
	answered chan struct{} // closed once the held copy got its answer
	resp     *etcdserverpb.TxnResponse
	err      error
}

func newLateCopy() *lateCopy {
	l := &lateCopy{release: make(chan struct{}), answered: make(chan struct{})}
	l.armed.Store(true)
	return l
}

func (l *lateCopy) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if isFence(req) {
		l.fences.Add(1)
	}
	if !isBatch(req) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	l.batches.Add(1)
	if !l.armed.Swap(false) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	go func() {
		defer close(l.answered)
		<-l.release
		resp := &etcdserverpb.TxnResponse{}
		l.err = invoker(context.Background(), method, req, resp, cc, opts...)
		l.resp = resp
	}()
	if l.stall {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Error(codes.Unavailable, "injected: the connection broke after sending")
}

// deliver lets the held copy reach the server and reports whether it
// applied.
func (l *lateCopy) deliver(t *testing.T) bool {
	close(l.release)
	<-l.answered
	if l.err != nil {
		t.Logf("the late copy failed: %v", l.err)
		return false
	}
	return l.resp.Succeeded
}

// rawVersion returns the number of times etcd key k was written since it
// was created (0: absent).
func rawVersion(t *testing.T, cli *clientv3.Client, k string) int64 {
	resp, err := cli.Get(context.Background(), k)
	require.NoError(t, err)
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Version
}

// TestApplyLateCopyAfterFence: a batch's first try is sent but its answer
// lost, and the copy reaches the server only after the store fenced it
// and applied the batch in a second attempt: the late copy must not apply
// (a put applied twice, a delete undoing a later write). It must not
// either when the guards' lease was revoked (as expiry would) between the
// fence and the late copy: the guard is gone then, but so is the lease
// the copy writes it under.
func TestApplyLateCopyAfterFence(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	for _, tc := range []struct {
		name   string
		delete bool // the batch deletes only
		revoke bool
	}{
		{name: "put"},
		{name: "delete only", delete: true},
		{name: "put, lease revoked before the late copy", revoke: true},
		{name: "delete only, lease revoked before the late copy", delete: true, revoke: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLateCopy()
			l.armed.Store(false)
			prefix := t.Name() + "/"
			s, err := etcdstore.New(faultyClient(t, c, l.intercept), etcdstore.Options{Prefix: prefix})
			require.NoError(t, err)
			raw := c.Client(t)
			k := []byte("k")
			b := kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: k, Value: []byte("v")})
			if tc.delete {
				require.NoError(t, s.Apply(ctx, b))
				b = kv.NewBatch(kv.Op{Kind: kv.OpDelete, Key: k})
			}
			l.armed.Store(true)
			require.NoError(t, s.Apply(ctx, b))
			require.EqualValues(t, 1, l.fences.Load(), "fences")
			if tc.delete {
				// A later write the late delete would undo.
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: k, Value: []byte("later")})))
			}
			if tc.revoke {
				leases, err := raw.Leases(ctx)
				require.NoError(t, err)
				for _, l := range leases.Leases {
					_, err := raw.Revoke(ctx, l.ID)
					require.NoError(t, err)
				}
			}
			require.False(t, l.deliver(t), "the late copy applied")
			if tc.delete {
				v, err := s.Get(ctx, k)
				require.NoError(t, err)
				require.Equal(t, "later", string(v))
			} else {
				require.EqualValues(t, 1, rawVersion(t, raw, prefix+"d"+string(k)), "writes of the key")
			}
		})
	}
}

// TestApplyShortTimeoutFences: with an Options.Timeout shorter than a
// try, a try that times out uses up the whole Timeout; the store still
// sends one fence, so the copy still in flight can never apply after
// Apply returned, and Apply reports the batch as not applied.
func TestApplyShortTimeoutFences(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	l := newLateCopy()
	l.stall = true
	s, err := etcdstore.New(faultyClient(t, c, l.intercept), etcdstore.Options{Prefix: t.Name() + "/", Timeout: time.Second})
	require.NoError(t, err)
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	t.Logf("Apply: %v; fences sent: %d", err, l.fences.Load())
	if err != nil { // the fence applied after the Timeout: b did not apply
		require.NotErrorIs(t, err, etcdstore.ErrUnknownOutcome)
		require.NotErrorIs(t, err, indextable.ErrConflict)
	}
	assert.Positive(t, l.fences.Load(), "a fence was tried")
	require.False(t, l.deliver(t), "the copy in flight applied after Apply returned")
}

// TestApplyKnownUnappliedAfterTimeout: the first try is not sent, the
// fence applies (so the batch cannot apply any more), but the fence's
// answer comes after the Timeout. Apply must not report ErrUnknownOutcome
// for a batch known not to have applied.
func TestApplyKnownUnappliedAfterTimeout(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	const timeout = time.Second
	var batches, sentBatches atomic.Int32
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case isFence(req):
			err := invoker(ctx, method, req, reply, cc, opts...)
			time.Sleep(timeout) // the answer comes back after the call's deadline
			return err
		case isBatch(req) && batches.Add(1) == 1:
			return status.Error(codes.Unavailable, "injected: not sent")
		case isBatch(req) && ctx.Err() == nil:
			sentBatches.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: t.Name() + "/", Timeout: timeout})
	require.NoError(t, err)
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	t.Logf("Apply: %v; batches %d, of which sent with time left: %d", err, batches.Load(), sentBatches.Load())
	_, gerr := s.Get(ctx, []byte("k"))
	if errors.Is(gerr, indextable.ErrNotFound) && sentBatches.Load() == 0 {
		require.NotErrorIs(t, err, etcdstore.ErrUnknownOutcome, "no copy of the batch can apply")
	}
}

// TestApplyCancelledWhileResolving: the batch's answer is lost (it applied),
// and the caller's context is cancelled while the fence waits: Apply
// returns an error wrapping both ErrUnknownOutcome and context.Canceled.
func TestApplyCancelledWhileResolving(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	intercept := func(ictx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case isBatch(req):
			if err := invoker(ictx, method, req, reply, cc, opts...); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "injected: the answer was lost")
		case isFence(req):
			cancel()
			<-ictx.Done()
			return status.FromContextError(ictx.Err()).Err()
		}
		return invoker(ictx, method, req, reply, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: t.Name() + "/"})
	require.NoError(t, err)
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	require.ErrorIs(t, err, etcdstore.ErrUnknownOutcome)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, indextable.ErrConflict)
}

// TestApplyClosedMidRequest: the store is closed while a batch's request is
// at the server (it applies), so the call meets the closing connection
// (codes.Canceled, no context's error). The batch applied, so Apply
// reports ErrUnknownOutcome, not a plain error.
func TestApplyClosedMidRequest(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	var s *etcdstore.Store
	var closed sync.Once
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !isBatch(req) {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		closedNow := false
		closed.Do(func() { // as Close of a store Open made does
			require.NoError(t, s.Close())
			require.NoError(t, s.Client().Close())
			closedNow = true
		})
		if err != nil || !closedNow {
			return err
		}
		// What the connection answers a call once it closes.
		return invoker(ctx, method, req, &etcdserverpb.TxnResponse{}, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: t.Name() + "/"})
	require.NoError(t, err)
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	t.Logf("Apply: %v", err)
	raw := c.Client(t)
	require.EqualValues(t, 1, rawVersion(t, raw, t.Name()+"/dk"), "the batch applied")
	require.Error(t, err)
	require.ErrorIs(t, err, etcdstore.ErrUnknownOutcome)
}

// TestApplyResolvesMemberErrors: the errors a member answers when it
// stops or loses its leader, whether the batch reached the cluster or
// not, leave the outcome to the fence, which finds it: the batch applies
// exactly once and Apply succeeds.
func TestApplyResolvesMemberErrors(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	raw := c.Client(t)
	for _, injected := range []error{
		status.Error(codes.Unknown, "raft: stopped"),
		status.Error(codes.Unknown, "raft proposal dropped"),
		rpctypes.ErrGRPCCanceled,
		rpctypes.ErrGRPCDeadlineExceeded,
		rpctypes.ErrGRPCStopped,
		rpctypes.ErrGRPCLeaderChanged,
		rpctypes.ErrGRPCTimeoutDueToLeaderFail,
	} {
		for _, sent := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v,sent=%v", injected, sent), func(t *testing.T) {
				var hit atomic.Bool
				var fences atomic.Int32
				intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					if isFence(req) {
						fences.Add(1)
					}
					if !isBatch(req) || hit.Swap(true) {
						return invoker(ctx, method, req, reply, cc, opts...)
					}
					if sent {
						require.NoError(t, invoker(ctx, method, req, reply, cc, opts...))
					}
					return injected
				}
				prefix := fmt.Sprintf("%s/", t.Name())
				s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: prefix})
				require.NoError(t, err)
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")})))
				require.LessOrEqual(t, fences.Load(), int32(1), "fences")
				require.EqualValues(t, 1, rawVersion(t, raw, prefix+"dk"), "writes of the key")
			})
		}
	}
}

// TestApplyEndsWhenFencedEveryTime: while every try of a batch fails
// before reaching the cluster and every fence applies, Apply makes new
// attempts only until its Timeout, then reports the batch as not applied:
// an error that is neither a conflict nor ErrUnknownOutcome.
func TestApplyEndsWhenFencedEveryTime(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	const giveUp = 30 // batches: then they reach the cluster
	var batches atomic.Int32
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if isBatch(req) && batches.Add(1) <= giveUp {
			return status.Error(codes.Unavailable, "injected: not sent")
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: t.Name() + "/", Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	require.Error(t, err, "Apply tried %d times", batches.Load())
	require.NotErrorIs(t, err, etcdstore.ErrUnknownOutcome)
	require.NotErrorIs(t, err, indextable.ErrConflict)
	require.Less(t, batches.Load(), int32(giveUp))
	_, err = s.Get(ctx, []byte("k"))
	require.ErrorIs(t, err, indextable.ErrNotFound)
}

// TestApplyResentCopyStillInFlight: the member answers a batch's first
// copy with etcd's own Canceled (rpctypes.ErrGRPCCanceled: the proposal's
// context ended, but the proposal is in raft and may still commit), so
// etcd's retry interceptor resends the transaction inside the same try.
// The first copy is held back (it commits late, as a proposal forwarded to
// a new leader may), and:
//
//   - conflict: between the two copies another writer writes the key the
//     batch expects absent, so the resend fails its expectation and finds
//     its guard absent; then the other writer deletes the key again, and
//     the first copy arrives.
//   - refused: the resend is refused ("too many requests"), and the first
//     copy arrives after Apply returned.
//
// Checks that a copy of the try still in flight never applies after Apply
// reported ErrConflict, or an error that is not ErrUnknownOutcome (which
// says nothing applied). A guard found absent (or a refusal) says only
// that no copy had applied yet, not that none will: the Else branch, and
// resolve after a refusal, fence the guard so none can.
func TestApplyResentCopyStillInFlight(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	raw := c.Client(t)
	for _, tc := range []struct {
		name   string
		resend error // what the resend gets; nil: it reaches the server
	}{
		{name: "conflict"},
		{name: "refused", resend: rpctypes.ErrGRPCRequestTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "resend-" + tc.name + "/"
			key := prefix + "dk"
			var batches atomic.Int32
			release, answered := make(chan struct{}), make(chan struct{})
			var held etcdserverpb.TxnResponse
			var heldErr error
			intercept := func(ictx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				if !isBatch(req) {
					return invoker(ictx, method, req, reply, cc, opts...)
				}
				switch batches.Add(1) {
				case 1: // sent, proposed, answered Canceled; commits late
					go func() {
						defer close(answered)
						<-release
						heldErr = invoker(context.Background(), method, req, &held, cc, opts...)
					}()
					if tc.resend == nil { // another writer, between the copies
						_, err := raw.Put(context.Background(), key, "other")
						require.NoError(t, err)
					}
					return rpctypes.ErrGRPCCanceled
				case 2:
					if tc.resend != nil {
						return tc.resend
					}
				}
				return invoker(ictx, method, req, reply, cc, opts...)
			}
			s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: prefix})
			require.NoError(t, err)
			err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpExpectAbsent, Key: []byte("k")},
				kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
			t.Logf("Apply: %v (batch copies sent: %d)", err, batches.Load())
			require.GreaterOrEqual(t, batches.Load(), int32(2), "the client did not resend")
			if tc.resend == nil {
				_, derr := raw.Delete(ctx, key) // the other writer deletes its key again
				require.NoError(t, derr)
			}
			close(release)
			<-answered
			applied := heldErr == nil && held.Succeeded
			t.Logf("the first copy, arriving late: applied %v, err %v", applied, heldErr)
			if err != nil && !errors.Is(err, etcdstore.ErrUnknownOutcome) {
				require.False(t, applied, "Apply returned %v, yet its first copy applied afterwards", err)
			}
		})
	}
}

// TestApplyLeaseWaitHonoursContext: the cluster is down and the store has
// no guards' lease yet; a first Apply (no deadline) keeps trying to grant
// one, and a second Apply is made with a context of 300 ms. Checks that
// the second returns with its context's error before the first's
// Timeout (here 30 s), as kv.Store requires: a call that waits for
// another's grant watches its own ctx.
func TestApplyLeaseWaitHonoursContext(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	s, err := etcdstore.Open(context.Background(), c.Endpoints(), etcdstore.Options{Prefix: "lease/", Timeout: 30 * time.Second})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, c.Kill(0))
	put := kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")})
	first := make(chan error, 1)
	go func() { first <- s.Apply(context.Background(), put) }()
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Apply(ctx, put)
	took := time.Since(start)
	t.Logf("second Apply: %v after %v; first Apply: %v", err, took, <-first)
	require.Error(t, err)
	require.Less(t, took, 15*time.Second, "the second Apply waited for the first's Timeout (30s)")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestApplyLeaseNotFoundBounded: every try of a batch is refused with
// "requested lease not found" (the guards' lease keeps disappearing: an
// operator revoking leases, a lease lost with a restored cluster), with a
// Timeout of 500 ms. Checks that Apply ends by its Timeout, reporting the
// batch not applied, as every call must, rather than granting lease after
// lease for as long as the refusals last.
func TestApplyLeaseNotFoundBounded(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	var batches atomic.Int32
	intercept := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if isBatch(req) {
			batches.Add(1)
			return rpctypes.ErrGRPCLeaseNotFound
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	s, err := etcdstore.New(faultyClient(t, c, intercept), etcdstore.Options{Prefix: "nolease/", Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	// A safety net only: Apply must end by its own Timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
	t.Logf("Apply: %v after %d tries", err, batches.Load())
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "Apply ran past its Timeout")
	require.NotErrorIs(t, err, etcdstore.ErrUnknownOutcome)
}

// TestApplyExactlyOnceUnderKill: eight writers on a 3-member cluster each
// apply compare-and-set batches on a counter of their own, each batch also
// writing a key of its own (u<w>.<i>), and one in five expecting a wrong
// value; the leader is killed (a crash) mid-way and later restarted.
// Checks, from etcd's own record of each key's writes (its version): an
// acknowledged batch wrote its key exactly once; a conflict or a batch
// reported not applied (an error without ErrUnknownOutcome) never;
// one whose outcome is unknown at most once; a batch with a wrong
// expectation never applies; a right one never conflicts (each counter has
// one writer, which reads it back after an unknown outcome); and each
// counter equals the number of its batches that applied.
func TestApplyExactlyOnceUnderKill(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	const prefix = "eo/"
	var fences, txnErrs atomic.Int32
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if isFence(req) {
			fences.Add(1)
		}
		if isBatch(req) && err != nil {
			txnErrs.Add(1)
		}
		return err
	}
	s, err := etcdstore.New(faultyClient(t, c, count), etcdstore.Options{Prefix: prefix, Timeout: 20 * time.Second})
	require.NoError(t, err)
	raw := c.Client(t)

	const writers = 8
	type result int
	const (
		acked result = iota
		notApplied
		unknown
	)
	results := make([][]result, writers)
	var acks atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			ctr := []byte(fmt.Sprintf("ctr%d", w))
			n := 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				wrong := i%5 == 4
				expect := kv.Op{Kind: kv.OpExpectValue, Key: ctr, Value: []byte(strconv.Itoa(n))}
				if n == 0 {
					expect = kv.Op{Kind: kv.OpExpectAbsent, Key: ctr}
				}
				if wrong {
					expect = kv.Op{Kind: kv.OpExpectValue, Key: ctr, Value: []byte(strconv.Itoa(n + 1000))}
				}
				b := kv.NewBatch(expect, kv.Op{Kind: kv.OpPut, Key: ctr, Value: []byte(strconv.Itoa(n + 1))},
					kv.Op{Kind: kv.OpPut, Key: []byte(fmt.Sprintf("u%d.%d", w, i)), Value: []byte("x")})
				err := s.Apply(ctx, b)
				switch {
				case err == nil:
					results[w] = append(results[w], acked)
					acks.Add(1)
					if wrong {
						t.Errorf("writer %d batch %d: applied, though its expectation failed", w, i)
					}
					n++
				case errors.Is(err, indextable.ErrConflict):
					results[w] = append(results[w], notApplied)
					if !wrong {
						t.Errorf("writer %d batch %d: %v, though its expectation held", w, i, err)
					}
				default:
					if errors.Is(err, etcdstore.ErrUnknownOutcome) {
						results[w] = append(results[w], unknown)
					} else {
						results[w] = append(results[w], notApplied)
					}
					t.Logf("writer %d batch %d: %v", w, i, err)
					for { // read the counter back
						v, err := s.Get(ctx, ctr)
						if err == nil {
							n, _ = strconv.Atoi(string(v))
							break
						}
						if errors.Is(err, indextable.ErrNotFound) {
							n = 0
							break
						}
						time.Sleep(100 * time.Millisecond)
					}
				}
			}
		})
	}
	waitAcks := func(more int64) {
		want := acks.Load() + more
		deadline := time.Now().Add(2 * time.Minute)
		for acks.Load() < want {
			if time.Now().After(deadline) {
				t.Errorf("no progress: %d acknowledged writes, waiting for %d", acks.Load(), want)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcks(80)
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Kill(leader))
	waitAcks(80)
	require.NoError(t, c.Restart(leader))
	waitAcks(80)
	close(stop)
	wg.Wait()
	t.Logf("%d acknowledged; batch copies that failed: %d; fences: %d", acks.Load(), txnErrs.Load(), fences.Load())

	for w := range writers {
		applied := 0
		for i, r := range results[w] {
			v := rawVersion(t, raw, fmt.Sprintf("%sdu%d.%d", prefix, w, i))
			switch r {
			case acked:
				require.EqualValues(t, 1, v, "writer %d batch %d: acknowledged, written %d times", w, i, v)
			case notApplied:
				require.EqualValues(t, 0, v, "writer %d batch %d: reported not applied, written %d times", w, i, v)
			case unknown:
				require.LessOrEqual(t, v, int64(1), "writer %d batch %d: written %d times", w, i, v)
			}
			applied += int(v)
		}
		got, err := s.Get(ctx, []byte(fmt.Sprintf("ctr%d", w)))
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(applied), string(got), "writer %d: counter against batches applied", w)
	}
}
