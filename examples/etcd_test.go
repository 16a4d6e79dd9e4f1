package examples_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// TestCustomersOnEtcd runs the customers example twice on one etcd
// cluster, given by the -etcd flag, then by the environment, and twice on
// one Pebble directory: each run on etcd prints what the same run on
// Pebble prints, but for the store and the figures of what reads and
// inserts cost and of the record versions, which differ from run to run,
// and the second
// finds the first run's customers under the example's prefix. Another
// prefix of the same cluster starts afresh.
func TestCustomersOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the customers example")
	}
	endpoint := startEtcd(t)
	bin := build(t, "customers")
	dir := t.TempDir()
	noEtcd := []string{"INDEXTABLE_ETCD_ENDPOINTS="}

	first := run(t, bin, noEtcd, "-etcd", endpoint)
	containsLines(t, first, []string{"Store: etcd at " + endpoint + ", prefix examples/customers/"})
	assert.Equal(t, runNeutral(run(t, bin, noEtcd, "-pebble", dir)), runNeutral(first), "first run")

	second := run(t, bin, []string{"INDEXTABLE_ETCD_ENDPOINTS=" + endpoint})
	containsLines(t, second, []string{"Found 10 customers from an earlier run, and their index tables."})
	assert.Equal(t, runNeutral(run(t, bin, noEtcd, "-pebble", dir)), runNeutral(second), "second run")

	other := run(t, bin, noEtcd, "-etcd", endpoint, "-etcd-prefix", "other/")
	containsLines(t, other, []string{"Store: etcd at " + endpoint + ", prefix other/"})
	assert.Equal(t, runNeutral(first), runNeutral(other), "a run under another prefix")
}

// runFigures are the figures of the customers example's output that
// depend on the store (what its inserts cost) or on the run (the random
// part of a record's version).
var runFigures = regexp.MustCompile(`(batches of |at version |, not )[0-9.]+`)

// runNeutral is storeNeutral with runFigures left out.
func runNeutral(out string) []string {
	lines := storeNeutral(out)
	for i, l := range lines {
		lines[i] = runFigures.ReplaceAllString(l, "${1}N")
	}
	return lines
}

// startEtcd starts a one-member etcd cluster, embedded in the test's
// process, on loopback ports the system picks as etcd listens (port 0), and
// returns its client URL; t.Cleanup stops it. etcdstore's etcdtest is an
// internal package of etcdstore, which the examples may not import.
func startEtcd(t *testing.T) string {
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	port0 := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{port0}, []url.URL{port0}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{port0}, []url.URL{port0}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true // the data lives as long as the test
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	t.Cleanup(e.Close) // registered after TempDir: runs before its removal
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed before ready: %v", err)
	}
	return (&url.URL{Scheme: "http", Host: e.Clients[0].Addr().String()}).String()
}
