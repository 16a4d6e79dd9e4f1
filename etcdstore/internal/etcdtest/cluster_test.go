package etcdtest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
)

// putN puts n keys prefix0..prefix<n-1> through cli.
func putN(t *testing.T, cli *clientv3.Client, prefix string, n int) {
	t.Helper()
	for i := range n {
		_, err := cli.Put(t.Context(), fmt.Sprintf("%s%d", prefix, i), "v")
		require.NoError(t, err)
	}
}

// count counts the keys under prefix that member i serves: a linearizable
// read, or a serializable one, which the member answers from its own data.
func count(t *testing.T, c *etcdtest.Cluster, i int, prefix string, serializable bool) int64 {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := c.Client(t, c.MemberEndpoint(i)).Get(t.Context(), prefix, opts...)
	require.NoError(t, err)
	return resp.Count
}

func TestStartServesEveryMember(t *testing.T) {
	t.Parallel()
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprint(members), func(t *testing.T) {
			t.Parallel()
			c := etcdtest.Start(t, members, etcdtest.Options{})
			require.Len(t, c.Endpoints(), members)
			require.Equal(t, c.Endpoints(), c.RunningEndpoints())
			putN(t, c.Client(t), "k", 3)
			for i := range members {
				require.True(t, c.Running(i))
				require.Equal(t, int64(3), count(t, c, i, "k", false), "member %d", i)
			}
			leader, err := c.Leader(t.Context())
			require.NoError(t, err)
			require.True(t, leader >= 0 && leader < members, "leader %d", leader)
		})
	}
}

func TestStopRestart(t *testing.T) {
	t.Parallel()
	leader := func(leader int) int { return leader }
	follower := func(leader int) int { return (leader + 1) % 3 }
	tests := []struct {
		name string
		pick func(leader int) int
		stop func(c *etcdtest.Cluster, i int) error
	}{
		{"stop leader", leader, (*etcdtest.Cluster).Stop},
		{"stop follower", follower, (*etcdtest.Cluster).Stop},
		{"kill leader", leader, (*etcdtest.Cluster).Kill},
		{"kill follower", follower, (*etcdtest.Cluster).Kill},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := etcdtest.Start(t, 3, etcdtest.Options{})
			leader, err := c.Leader(t.Context())
			require.NoError(t, err)
			stopped := tt.pick(leader)
			endpoint := c.MemberEndpoint(stopped)

			require.NoError(t, tt.stop(c, stopped))
			require.False(t, c.Running(stopped))
			require.Len(t, c.RunningEndpoints(), 2)
			require.NotContains(t, c.RunningEndpoints(), endpoint)
			now, err := c.Leader(t.Context()) // a follower without leader drops writes
			require.NoError(t, err)
			require.NotEqual(t, stopped, now)
			putN(t, c.Client(t, c.RunningEndpoints()...), "down", 10)

			require.NoError(t, c.Restart(stopped))
			require.True(t, c.Running(stopped))
			require.Equal(t, endpoint, c.MemberEndpoint(stopped))
			require.Equal(t, int64(10), count(t, c, stopped, "down", true))

			// It votes again: with another member down, writes still commit.
			other := (stopped + 1) % 3
			require.NoError(t, c.Stop(other))
			_, err = c.Leader(t.Context()) // a follower without leader drops writes
			require.NoError(t, err)
			putN(t, c.Client(t, c.RunningEndpoints()...), "again", 3)
			require.Equal(t, int64(3), count(t, c, stopped, "again", false))
		})
	}
}

func TestStopRestartSingleMember(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	putN(t, c.Client(t), "k", 3)
	require.NoError(t, c.Stop(0))
	require.False(t, c.Running(0))
	require.Empty(t, c.RunningEndpoints())
	require.NoError(t, c.Restart(0))
	require.Equal(t, int64(3), count(t, c, 0, "k", true))
	leader, err := c.Leader(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, leader)
}

func TestLeaderWithoutQuorum(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	require.NoError(t, c.Stop(0))
	require.NoError(t, c.Stop(1))
	_, err := c.Leader(t.Context())
	require.ErrorIs(t, err, etcdtest.ErrNoQuorum)

	require.NoError(t, c.Restart(1))
	leader, err := c.Leader(t.Context())
	require.NoError(t, err)
	require.Contains(t, []int{1, 2}, leader)
}

func TestMemberErrors(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	require.ErrorIs(t, c.Restart(0), etcdtest.ErrRunning)
	require.NoError(t, c.Stop(0))
	require.ErrorIs(t, c.Stop(0), etcdtest.ErrNotRunning)
	require.ErrorIs(t, c.Kill(0), etcdtest.ErrNotRunning)
	_, err := c.Leader(t.Context())
	require.ErrorIs(t, err, etcdtest.ErrNoQuorum)
	for _, i := range []int{-1, 1} {
		require.ErrorIs(t, c.Stop(i), etcdtest.ErrNoMember, "Stop(%d)", i)
		require.ErrorIs(t, c.Kill(i), etcdtest.ErrNoMember, "Kill(%d)", i)
		require.ErrorIs(t, c.Restart(i), etcdtest.ErrNoMember, "Restart(%d)", i)
		require.False(t, c.Running(i))
		require.Empty(t, c.MemberEndpoint(i))
	}
}

func TestClustersAreSeparate(t *testing.T) {
	t.Parallel()
	a := etcdtest.Start(t, 1, etcdtest.Options{})
	b := etcdtest.Start(t, 1, etcdtest.Options{})
	require.NotEqual(t, a.MemberEndpoint(0), b.MemberEndpoint(0))
	putN(t, a.Client(t), "a", 2)
	putN(t, b.Client(t), "b", 1)
	require.Equal(t, int64(0), count(t, a, 0, "b", false))
	require.Equal(t, int64(2), count(t, a, 0, "a", false))
	require.Equal(t, int64(0), count(t, b, 0, "a", false))
}
