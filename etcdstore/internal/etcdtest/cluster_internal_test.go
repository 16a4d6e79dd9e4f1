package etcdtest

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartRetriesTakenPort takes the first member's client port after its
// reservation, as a process that does not use this package could.
func TestStartRetriesTakenPort(t *testing.T) {
	t.Parallel()
	bad := Options{Heartbeat: time.Second, ElectionTimeout: time.Second}
	tests := []struct {
		name     string
		o        Options
		take     int // launches whose port is taken
		launches int
		wantErr  error
	}{
		{"taken once", Options{}, 1, 2, nil},
		{"always taken", Options{}, startAttempts, startAttempts, syscall.EADDRINUSE},
		{"other error", bad, 0, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, tt.o)
			var taken []string
			launches := 0
			c.beforeLaunch = func() {
				launches++
				if launches > tt.take {
					return
				}
				l, err := net.Listen("tcp", c.members[0].client.host())
				require.NoError(t, err)
				t.Cleanup(func() { l.Close() })
				taken = append(taken, l.Addr().String())
			}
			err := c.start(1)
			require.Equal(t, tt.launches, launches)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.o == bad:
				require.Error(t, err)
				require.NotErrorIs(t, err, syscall.EADDRINUSE)
			default:
				require.NoError(t, err)
				require.True(t, c.Running(0))
				require.NotContains(t, taken, c.members[0].client.host())
			}
		})
	}
}

// TestLeaderWaitsForAgreement makes a cluster of two single-member
// clusters' members: each follows itself, so they never agree on a leader.
func TestLeaderWaitsForAgreement(t *testing.T) {
	t.Parallel()
	a, b := Start(t, 1, Options{}), Start(t, 1, Options{})
	split := &Cluster{members: []*member{a.members[0], b.members[0], b.members[0]}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := split.Leader(ctx)
	require.ErrorIs(t, err, context.Canceled)
	for _, c := range []*Cluster{a, b} {
		leader, err := c.Leader(ctx) // found at the first look
		require.NoError(t, err)
		require.Equal(t, 0, leader)
	}
}
