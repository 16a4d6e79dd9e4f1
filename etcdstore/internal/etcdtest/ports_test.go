package etcdtest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReservePort(t *testing.T) {
	t.Parallel()
	p, err := reservePort()
	require.NoError(t, err)
	q, err := reservePort()
	require.NoError(t, err)
	defer q.release()
	require.NotEqual(t, p.n, q.n)
	for _, r := range []*port{p, q} {
		require.True(t, r.n >= portFirst && r.n < portFirst+portCount, "port %d", r.n)
	}

	held, err := tryPort(p.n)
	require.NoError(t, err)
	require.Nil(t, held, "reserved twice in one process")
	// Another open of the lock file, as another process makes, cannot lock.
	f, err := os.OpenFile(filepath.Join(portDir, strconv.Itoa(p.n)), os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	locked, err := lockFile(f)
	require.NoError(t, err)
	require.False(t, locked, "locked by another open file")

	p.release()
	locked, err = lockFile(f)
	require.NoError(t, err)
	require.True(t, locked, "lock released")
}

func TestTryPortSkipsBoundPort(t *testing.T) {
	t.Parallel()
	var l net.Listener
	n := portFirst
	for ; l == nil && n < portFirst+portCount; n++ {
		l, _ = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n)))
	}
	require.NotNil(t, l, "no port of the range free")
	defer l.Close()
	p, err := tryPort(n - 1)
	require.NoError(t, err)
	require.Nil(t, p)
}
