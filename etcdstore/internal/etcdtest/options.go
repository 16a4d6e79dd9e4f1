package etcdtest

import "time"

// Options configure a cluster's members; the zero value keeps etcd's
// defaults except where told.
type Options struct {
	// MaxTxnOps is --max-txn-ops: most operations in one transaction
	// (etcd: 128).
	MaxTxnOps uint
	// MaxRequestBytes is --max-request-bytes: largest request the server
	// accepts (etcd: 1.5 MiB). A client sends at most 2 MiB unless its
	// MaxCallSendMsgSize says more.
	MaxRequestBytes uint
	// QuotaBackendBytes is --quota-backend-bytes: size of the database past
	// which writes fail with NOSPACE (etcd: 2 GiB).
	QuotaBackendBytes int64
	// Heartbeat is --heartbeat-interval (here: 200ms; etcd: 100ms).
	Heartbeat time.Duration
	// ElectionTimeout is --election-timeout (here: 2s; etcd: 1s).
	ElectionTimeout time.Duration
	// Fsync makes members fsync their log as etcd does; by default they
	// do not (--unsafe-no-fsync).
	Fsync bool
}

func (o Options) heartbeat() time.Duration {
	if o.Heartbeat == 0 {
		return 200 * time.Millisecond
	}
	return o.Heartbeat
}

func (o Options) electionTimeout() time.Duration {
	if o.ElectionTimeout == 0 {
		return 2 * time.Second
	}
	return o.ElectionTimeout
}
