package etcdtest

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// member is one embedded etcd server of a cluster, running or stopped.
type member struct {
	name         string
	dir          string
	client, peer *port
	etcd         *embed.Etcd // nil while stopped
	stopping     atomic.Bool // its log is dropped: a stop logs its closed listeners as errors
}

func (m *member) clientURL() url.URL { return url.URL{Scheme: "http", Host: m.client.host()} }
func (m *member) peerURL() url.URL   { return url.URL{Scheme: "http", Host: m.peer.host()} }

// config is the member's etcd configuration. initial (--initial-cluster)
// matters only on the first start: later ones read the data dir.
func (m *member) config(o Options, initial string, log *testLog) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.clientURL()}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL()}
	cfg.ListenPeerUrls = []url.URL{m.peerURL()}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL()}
	cfg.InitialCluster = initial
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.TickMs = uint(o.heartbeat().Milliseconds())
	cfg.ElectionMs = uint(o.electionTimeout().Milliseconds())
	cfg.UnsafeNoFsync = !o.Fsync
	cfg.EnableGRPCGateway = false
	if o.MaxTxnOps != 0 {
		cfg.MaxTxnOps = o.MaxTxnOps
	}
	if o.MaxRequestBytes != 0 {
		cfg.MaxRequestBytes = o.MaxRequestBytes
	}
	cfg.QuotaBackendBytes = o.QuotaBackendBytes
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(log.logger(&m.stopping))
	return cfg
}

// start starts the member's server without waiting for it to be ready.
func (m *member) start(cfg *embed.Config) error {
	m.stopping.Store(false)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("etcdtest: start %s: %w", m.name, err)
	}
	m.etcd = e
	return nil
}

// waitReady waits until the started member serves clients: it has
// published itself through raft, which needs a leader, and so applied the
// log up to there. It waits on progress, not on a clock: a member that
// never gets ready hangs until go test's -timeout.
func (m *member) waitReady() error {
	e := m.etcd
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcdtest: %s failed before ready: %w", m.name, err)
	case <-e.Server.StopNotify():
		return fmt.Errorf("etcdtest: %s stopped before ready", m.name)
	}
}

// stop closes the member's server; its data dir stays. A leader hands its
// leadership to a follower first.
func (m *member) stop() {
	m.stopping.Store(true)
	m.etcd.Close()
	m.etcd = nil
}

// kill stops the member's raft node at once, with no leadership transfer,
// then closes the server; its data dir stays. Requests waiting for raft
// fail with ErrStopped.
func (m *member) kill() {
	m.stopping.Store(true)
	m.etcd.Server.HardStop() // Close then finds no peer to hand over to
	m.etcd.Close()
	m.etcd = nil
}

// isLeader reports whether the running member sees itself as leader.
func (m *member) isLeader() bool {
	return m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID()
}

// testLog passes log lines to t.Log until closed: t.Log after the test has
// ended panics, and an etcd goroutine may log late.
type testLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
	fatal  io.Writer // also gets lines that panic or exit; nil: os.Stderr
}

func (l *testLog) log(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Log(string(bytes.TrimRight(p, "\n")))
	}
}

func (l *testLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// logger logs errors only, to l, and nothing while *mute is set (if mute
// is not nil): test output stays readable, and shows what went wrong when
// a test fails. Lines that panic or exit go to l.fatal too, as t.Log is
// lost when the process exits.
func (l *testLog) logger(mute *atomic.Bool) *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	fatal := l.fatal
	if fatal == nil {
		fatal = os.Stderr
	}
	return zap.New(zapcore.NewTee(
		zapcore.NewCore(enc, &logWriter{l, mute}, zapcore.ErrorLevel),
		zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(fatal)), zapcore.DPanicLevel),
	))
}

// logWriter writes a logger's lines to a testLog.
type logWriter struct {
	log  *testLog
	mute *atomic.Bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.mute == nil || !w.mute.Load() {
		w.log.log(p)
	}
	return len(p), nil
}

func (w *logWriter) Sync() error { return nil }
