package etcdstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// prefixes numbers the stores of a test binary, so each has a key space
// of its own on a shared cluster.
var prefixes atomic.Int64

// openFresh opens a store under a new prefix of cluster c.
func openFresh(t testing.TB, c *etcdtest.Cluster, o etcdstore.Options) *etcdstore.Store {
	t.Helper()
	o.Prefix = fmt.Sprintf("test%d/", prefixes.Add(1))
	s, err := etcdstore.Open(context.Background(), c.Endpoints(), o)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	storetest.TestStore(t, func(t *testing.T) kv.Store { return openFresh(t, c, etcdstore.Options{}) })
}

// TestConformanceSmallServer: a server with smaller transactions and
// requests, declared in Options, passes too; the suite's large batches
// meet the declared bounds.
func TestConformanceSmallServer(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{MaxTxnOps: 16, MaxRequestBytes: 256 << 10})
	o := etcdstore.Options{MaxTxnOps: 16, MaxRequestBytes: 256 << 10}
	storetest.TestStore(t, func(t *testing.T) kv.Store { return openFresh(t, c, o) })
	t.Run("limits", func(t *testing.T) { storetest.TestLimits(t, openFresh(t, c, o), storetest.LimitsOptions{Steps: 100}) })
}

// TestLimits writes records whose keys and sizes straddle the store's
// declared limits (storetest.TestLimits) at etcd's default settings.
func TestLimits(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	storetest.TestLimits(t, openFresh(t, c, etcdstore.Options{}), storetest.LimitsOptions{Steps: 100})
}

// TestTransactions runs storetest's model of bank transfers on a
// 3-member cluster.
func TestTransactions(t *testing.T) {
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	storetest.TestTransactions(t, func(t *testing.T) kv.Store { return openFresh(t, c, etcdstore.Options{}) },
		storetest.TransactionsOptions{Ops: 150})
}

// TestOptions: bad arguments are refused with ErrInvalidArgument.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	var noContext context.Context
	_, err := etcdstore.Open(noContext, []string{"http://127.0.0.1:1"}, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.Open(ctx, nil, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.New(nil, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}})
	require.NoError(t, err)
	defer client.Close()
	_, err = etcdstore.New(client, etcdstore.Options{MaxTxnOps: 1})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.New(client, etcdstore.Options{MaxRequestBytes: 1 << 10})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	s, err := etcdstore.New(client, etcdstore.Options{})
	require.NoError(t, err)
	a := s.Atomicity()
	require.Equal(t, 127, a.MaxOps)
	require.Equal(t, etcdstore.MaxKeyBytes, a.MaxKeyBytes)
	require.Less(t, a.MaxBytes, etcdstore.DefaultMaxRequestBytes)
	require.NoError(t, s.Close())
}

// faultyClient returns a client of c whose transactions go through
// intercept.
func faultyClient(t testing.TB, c *etcdtest.Cluster, intercept grpc.UnaryClientInterceptor) *clientv3.Client {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(intercept)},
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}
