package etcdtest

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Client returns a client of the given endpoints, by default of every
// member, running or not; t.Cleanup closes it. It logs errors only, to t,
// and fails t if the client cannot be made.
func (c *Cluster) Client(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	log := &testLog{t: t}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: log.logger(nil)})
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() {
		cli.Close()
		log.close()
	})
	return cli
}
