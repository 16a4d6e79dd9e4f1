// Package etcdtest runs real etcd clusters inside a test process: n
// embedded members (go.etcd.io/etcd/server/v3/embed) on loopback, which a
// test can stop and restart one by one.
//
//	c := etcdtest.Start(t, 3, etcdtest.Options{})
//	cli := c.Client(t)
//	leader, err := c.Leader(ctx)
//	err = c.Stop(leader) // it hands its leadership to another member
//	err = c.Restart(leader) // it rejoins and catches up
//	err = c.Kill(leader) // as a crash: the others elect a new leader
//
// Members run with a 200ms heartbeat and a 2s election timeout, twice
// etcd's defaults, and without fsync: every member shares the test's CPUs,
// under -race, with other tests, so a slow tick must not start an
// election; durability across a crash of the machine is not what these
// clusters test. Start and Restart wait for readiness by progress, never by
// a clock.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Errors of the cluster's methods, wrapped with the member.
var (
	// ErrNoMember reports a member index out of range.
	ErrNoMember = errors.New("etcdtest: no such member")
	// ErrNotRunning reports a Stop or Kill of a stopped member.
	ErrNotRunning = errors.New("etcdtest: member not running")
	// ErrRunning reports a Restart of a running member.
	ErrRunning = errors.New("etcdtest: member running")
	// ErrNoQuorum reports a Leader asked of a cluster with fewer than a
	// majority of its members running.
	ErrNoQuorum = errors.New("etcdtest: no quorum running")
)

// startAttempts bounds how often Start picks new ports when one turns out
// taken by a process that does not use this package.
const startAttempts = 5

// Cluster is a cluster of embedded etcd members on loopback.
type Cluster struct {
	opts    Options
	dir     string
	log     *testLog
	initial string // --initial-cluster

	mu      sync.Mutex
	members []*member

	// beforeLaunch, if set, runs between reserving the ports and starting
	// the members: tests take a port there.
	beforeLaunch func()
}

// Start starts a cluster of members members and waits until every one
// serves clients. It fails t if the cluster cannot start; t.Cleanup stops
// every member and removes their data.
func Start(t testing.TB, members int, o Options) *Cluster {
	t.Helper()
	if members < 1 {
		t.Fatalf("etcdtest: Start: %d members, want at least 1", members)
	}
	c := newCluster(t, o)
	if err := c.start(members); err != nil {
		t.Fatalf("etcdtest: Start %d members: %v", members, err)
	}
	return c
}

// newCluster returns a cluster of no members, which t.Cleanup closes.
func newCluster(t testing.TB, o Options) *Cluster {
	log := &testLog{t: t}
	c := &Cluster{opts: o, dir: t.TempDir(), log: log}
	t.Cleanup(c.close) // registered after TempDir: runs before its removal
	return c
}

// start starts members members, on new ports while a port turns out taken.
func (c *Cluster) start(members int) error {
	var err error
	for range startAttempts {
		if err = c.reserve(members); err == nil {
			if c.beforeLaunch != nil {
				c.beforeLaunch()
			}
			err = c.launch()
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		c.reset()
	}
	return err
}

// reserve reserves the ports of members members and sets --initial-cluster.
func (c *Cluster) reserve(members int) error {
	var initial []string
	for i := range members {
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(c.dir, fmt.Sprintf("m%d", i))}
		c.members = append(c.members, m)
		var err error
		if m.client, err = reservePort(); err != nil {
			return err
		}
		if m.peer, err = reservePort(); err != nil {
			return err
		}
		u := m.peerURL()
		initial = append(initial, m.name+"="+u.String())
	}
	c.initial = strings.Join(initial, ",")
	return nil
}

// launch starts all members, then waits for each: none is ready before a
// quorum has started.
func (c *Cluster) launch() error {
	for _, m := range c.members {
		if err := m.start(m.config(c.opts, c.initial, c.log)); err != nil {
			return err
		}
	}
	for _, m := range c.members {
		if err := m.waitReady(); err != nil {
			return err
		}
	}
	return nil
}

// reset undoes a failed start: it stops the members, removes their data
// and releases their ports.
func (c *Cluster) reset() {
	c.stopAll()
	for _, m := range c.members {
		os.RemoveAll(m.dir)
		for _, p := range []*port{m.client, m.peer} {
			if p != nil {
				p.release()
			}
		}
	}
	c.members = nil
}

// close stops every member and releases the ports; t's TempDir cleanup
// removes the data after it.
func (c *Cluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
	c.log.close()
}

// stopAll kills the running members together: a stop would have a leader
// hand its leadership to a member that stops too, and wait for it up to
// 5s plus two election timeouts.
func (c *Cluster) stopAll() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		if m.etcd != nil {
			wg.Go(m.kill)
		}
	}
	wg.Wait()
}

// Endpoints returns the client URLs of all members, running or not.
func (c *Cluster) Endpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var eps []string
	for _, m := range c.members {
		u := m.clientURL()
		eps = append(eps, u.String())
	}
	return eps
}

// RunningEndpoints returns the client URLs of the running members.
func (c *Cluster) RunningEndpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var eps []string
	for _, m := range c.members {
		if m.etcd != nil {
			u := m.clientURL()
			eps = append(eps, u.String())
		}
	}
	return eps
}

// MemberEndpoint returns member i's client URL, or "" if there is no
// member i.
func (c *Cluster) MemberEndpoint(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.members) {
		return ""
	}
	u := c.members[i].clientURL()
	return u.String()
}

// Running reports whether member i runs.
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i >= 0 && i < len(c.members) && c.members[i].etcd != nil
}

// member returns member i; c.mu is held.
func (c *Cluster) member(i int) (*member, error) {
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("member %d of %d: %w", i, len(c.members), ErrNoMember)
	}
	return c.members[i], nil
}

// Stop stops member i gracefully; its data dir stays for Restart. A leader
// hands its leadership to another member first, as etcd does on shutdown.
func (c *Cluster) Stop(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.member(i)
	if err != nil {
		return fmt.Errorf("etcdtest: Stop: %w", err)
	}
	if m.etcd == nil {
		return fmt.Errorf("etcdtest: Stop member %d: %w", i, ErrNotRunning)
	}
	m.stop()
	return nil
}

// Kill stops member i at once, as a crash of its process would: a leader
// does not hand its leadership over, so the others elect a new one after
// an election timeout, and requests in flight on it fail or time out.
// Its data dir stays for Restart.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.member(i)
	if err != nil {
		return fmt.Errorf("etcdtest: Kill: %w", err)
	}
	if m.etcd == nil {
		return fmt.Errorf("etcdtest: Kill member %d: %w", i, ErrNotRunning)
	}
	m.kill()
	return nil
}

// Restart starts the stopped member i again, on its ports and data dir,
// and waits until it has rejoined the cluster and caught up with the log
// up to its rejoining.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.member(i)
	if err != nil {
		return fmt.Errorf("etcdtest: Restart: %w", err)
	}
	if m.etcd != nil {
		return fmt.Errorf("etcdtest: Restart member %d: %w", i, ErrRunning)
	}
	if err := m.start(m.config(c.opts, c.initial, c.log)); err != nil {
		return err
	}
	if err := m.waitReady(); err != nil {
		m.stop()
		return err
	}
	return nil
}

// Leader returns the index of the leader: the running member that every
// running member follows. It waits, by polling once a heartbeat, until
// they agree on one or ctx is done. It fails with ErrNoQuorum at once if
// fewer than a majority of the members run: a leader cut off from the
// others keeps its role for up to an election timeout.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	tick := time.NewTicker(c.opts.heartbeat())
	defer tick.Stop()
	for {
		i, err := c.agreedLeader()
		if i >= 0 || err != nil {
			return i, err
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("etcdtest: Leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// agreedLeader returns the index of the leader if every running member
// follows it, or -1.
func (c *Cluster) agreedLeader() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	leader, running := -1, 0
	for i, m := range c.members {
		if m.etcd == nil {
			continue
		}
		running++
		if m.isLeader() {
			leader = i
		}
	}
	if running <= len(c.members)/2 {
		return -1, fmt.Errorf("etcdtest: Leader: %d of %d members running: %w", running, len(c.members), ErrNoQuorum)
	}
	if leader < 0 {
		return -1, nil
	}
	id := c.members[leader].etcd.Server.MemberID()
	for _, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() != id {
			return -1, nil
		}
	}
	return leader, nil
}
