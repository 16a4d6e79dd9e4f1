package etcdtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

func TestOptionsConfigure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Options
		want func(*embed.Config)
	}{
		{"zero", Options{}, func(c *embed.Config) {
			c.TickMs, c.ElectionMs, c.UnsafeNoFsync = 200, 2000, true
		}},
		{"set", Options{
			MaxTxnOps: 7, MaxRequestBytes: 4096, QuotaBackendBytes: 1 << 20,
			Heartbeat: 50 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, Fsync: true,
		}, func(c *embed.Config) {
			c.MaxTxnOps, c.MaxRequestBytes, c.QuotaBackendBytes = 7, 4096, 1<<20
			c.TickMs, c.ElectionMs, c.UnsafeNoFsync = 50, 500, false
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &member{name: "m0", client: &port{n: 1}, peer: &port{n: 2}}
			got := m.config(tt.o, "m0=http://127.0.0.1:2", &testLog{t: t})
			want := embed.NewConfig()
			tt.want(want)
			require.Equal(t, want.MaxTxnOps, got.MaxTxnOps)
			require.Equal(t, want.MaxRequestBytes, got.MaxRequestBytes)
			require.Equal(t, want.QuotaBackendBytes, got.QuotaBackendBytes)
			require.Equal(t, want.TickMs, got.TickMs)
			require.Equal(t, want.ElectionMs, got.ElectionMs)
			require.Equal(t, want.UnsafeNoFsync, got.UnsafeNoFsync)
			require.False(t, got.EnableGRPCGateway)
			require.Equal(t, "error", got.LogLevel)
		})
	}
}

// TestOptionsLimit runs each operation on a cluster with the limits set
// and on one with etcd's defaults.
func TestOptionsLimit(t *testing.T) {
	t.Parallel()
	const quota = 256 << 10
	limited := Start(t, 1, Options{MaxTxnOps: 2, MaxRequestBytes: 4096, QuotaBackendBytes: quota})
	unlimited := Start(t, 1, Options{})
	put := func(key string, size int) clientv3.Op {
		return clientv3.OpPut(key, strings.Repeat("v", size))
	}
	tests := []struct {
		name string
		op   func(ctx context.Context, cli *clientv3.Client) error
		want error // on the limited cluster; nil on the other
	}{
		{"max txn ops", func(ctx context.Context, cli *clientv3.Client) error {
			_, err := cli.Txn(ctx).Then(put("a", 1), put("b", 1), put("c", 1)).Commit()
			return err
		}, rpctypes.ErrTooManyOps},
		{"max txn ops counts each list alone", func(ctx context.Context, cli *clientv3.Client) error {
			missing := clientv3.Compare(clientv3.Version("none"), "=", 0)
			_, err := cli.Txn(ctx).If(missing, missing).Then(put("a", 1), put("b", 1)).Else(put("a", 1), put("b", 1)).Commit()
			return err
		}, nil},
		{"max request bytes", func(ctx context.Context, cli *clientv3.Client) error {
			_, err := cli.Do(ctx, put("big", 8<<10))
			return err
		}, rpctypes.ErrRequestTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.op(t.Context(), limited.Client(t)), tt.want)
			require.NoError(t, tt.op(t.Context(), unlimited.Client(t)))
		})
	}
	// Last, as its NOSPACE alarm refuses every later write. The database's
	// size grows once a batch commits (every 100ms), by steps: the puts go
	// on until it is past the quota, and as many then pass on the other
	// cluster.
	t.Run("quota backend bytes", func(t *testing.T) {
		cli, n, size := limited.Client(t), 0, int64(0)
		for ; ; n++ {
			if _, err := cli.Do(t.Context(), put("fill", 3<<10)); err != nil {
				require.ErrorIs(t, err, rpctypes.ErrNoSpace)
				break
			}
			require.Less(t, size, int64(quota), "a put passed on a database past its quota")
			st, err := cli.Status(t.Context(), limited.MemberEndpoint(0))
			require.NoError(t, err)
			size = st.DbSize
		}
		cli = unlimited.Client(t)
		for range n {
			_, err := cli.Do(t.Context(), put("fill", 3<<10))
			require.NoError(t, err)
		}
	})
}
