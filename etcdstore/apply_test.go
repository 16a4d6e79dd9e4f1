package etcdstore_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/txn"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// txnFaults loses the answers of transactions, or does not send them, as
// a timeout or a leader lost mid-request would, and counts them: batches
// (with their guard) and fences (the store writing a guard itself, the one
// kind of transaction with an Else).
type txnFaults struct {
	loseAnswer, failSend, loseFence atomic.Int32 // how many more to hit
	batches, fences                 atomic.Int32
}

func take(n *atomic.Int32) bool { return n.Add(-1) >= 0 }

func (f *txnFaults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	txn, ok := req.(*etcdserverpb.TxnRequest)
	if !ok || !slices.ContainsFunc(txn.Success, func(op *etcdserverpb.RequestOp) bool { return op.GetRequestPut() != nil }) {
		return invoker(ctx, method, req, reply, cc, opts...) // a read
	}
	lost := status.Error(codes.Unavailable, "injected: the answer was lost")
	if len(txn.Failure) > 0 {
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
