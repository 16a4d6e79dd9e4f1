package etcdtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Ports come from [portFirst, portFirst+portCount): below the ephemeral
// range of Linux (32768–60999) and of BSD and macOS (49152–65535), so
// neither a listener on port 0 nor an outgoing connection of any process
// takes one while a stopped member waits for Restart on it.
const (
	portFirst = 22000
	portCount = 4000
)

// ErrNoPort reports that no port of the range could be reserved.
var ErrNoPort = errors.New("etcdtest: no free loopback port")

// portDir holds one lock file per port; a process holds a port while it
// holds the flock of the port's file. The files are never removed: removing
// one while another process opens it would let two processes lock the same
// port through two files.
var portDir = filepath.Join(os.TempDir(), "indextable-etcdtest-ports")

var (
	portMu   sync.Mutex
	portHeld = map[int]bool{} // reserved in this process
)

// port is a loopback TCP port reserved for one cluster of this process
// until release: other clusters, in this process or in another that uses
// this package, do not take it, so a stopped member gets it back.
type port struct {
	n    int
	lock *os.File // nil where lock files are not supported
}

// reservePort reserves a port that was free when it was checked. Ports of
// processes that do not use this package may still take it before etcd
// binds it: Start retries on EADDRINUSE.
func reservePort() (*port, error) {
	if err := os.MkdirAll(portDir, 0o777); err != nil {
		return nil, fmt.Errorf("etcdtest: port lock directory: %w", err)
	}
	first := rand.IntN(portCount)
	for k := range portCount {
		p, err := tryPort(portFirst + (first+k)%portCount)
		if p != nil || err != nil {
			return p, err
		}
	}
	return nil, fmt.Errorf("%w in %d-%d", ErrNoPort, portFirst, portFirst+portCount-1)
}

// tryPort reserves port n, or returns nil if another holds it or it is
// bound.
func tryPort(n int) (*port, error) {
	portMu.Lock()
	defer portMu.Unlock()
	if portHeld[n] {
		return nil, nil
	}
	f, err := os.OpenFile(filepath.Join(portDir, strconv.Itoa(n)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: port lock file: %w", err)
	}
	locked, err := lockFile(f)
	if err != nil || !locked {
		f.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n)))
	if err != nil {
		f.Close() // bound by a process that does not use this package
		return nil, nil
	}
	l.Close()
	portHeld[n] = true
	return &port{n: n, lock: f}, nil
}

// release gives the port back; it may be reserved again at once.
func (p *port) release() {
	portMu.Lock()
	defer portMu.Unlock()
	delete(portHeld, p.n)
	p.lock.Close() // closing the file drops its flock
}

// host is the port's address on loopback.
func (p *port) host() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.n))
}
