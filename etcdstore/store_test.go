package etcdstore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// prefixes numbers the stores of a test binary, so each has a key space
// of its own on a shared cluster.
var prefixes atomic.Int64

// openFresh opens a store under a new prefix of cluster c.
func openFresh(t testing.TB, c *etcdtest.Cluster, o etcdstore.Options) *etcdstore.Store {
	t.Helper()
	o.Prefix = fmt.Sprintf("test%d/", prefixes.Add(1))
	s, err := etcdstore.Open(context.Background(), c.Endpoints(), o)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	storetest.TestStore(t, func(t *testing.T) kv.Store { return openFresh(t, c, etcdstore.Options{}) })
}

// TestConformanceSmallServer: a server with smaller transactions and
// requests, declared in Options, passes too; the suite's large batches
// meet the declared bounds.
func TestConformanceSmallServer(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{MaxTxnOps: 16, MaxRequestBytes: 256 << 10})
	o := etcdstore.Options{MaxTxnOps: 16, MaxRequestBytes: 256 << 10}
	storetest.TestStore(t, func(t *testing.T) kv.Store { return openFresh(t, c, o) })
	t.Run("limits", func(t *testing.T) { storetest.TestLimits(t, openFresh(t, c, o), storetest.LimitsOptions{Steps: 100}) })
}

// TestLimits writes records whose keys and sizes straddle the store's
// declared limits (storetest.TestLimits) at etcd's default settings.
func TestLimits(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	storetest.TestLimits(t, openFresh(t, c, etcdstore.Options{}), storetest.LimitsOptions{Steps: 100})
}

// TestTransactions runs storetest's model of bank transfers on a
// 3-member cluster.
func TestTransactions(t *testing.T) {
	c := etcdtest.Start(t, 3, etcdtest.Options{})
	storetest.TestTransactions(t, func(t *testing.T) kv.Store { return openFresh(t, c, etcdstore.Options{}) },
		storetest.TransactionsOptions{Ops: 150})
}

// TestOptions: bad arguments are refused with ErrInvalidArgument.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	var noContext context.Context
	_, err := etcdstore.Open(noContext, []string{"http://127.0.0.1:1"}, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.Open(ctx, nil, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.New(nil, etcdstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:1"}})
	require.NoError(t, err)
	defer client.Close()
	_, err = etcdstore.New(client, etcdstore.Options{MaxTxnOps: 1})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = etcdstore.New(client, etcdstore.Options{MaxRequestBytes: 1 << 10})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	s, err := etcdstore.New(client, etcdstore.Options{})
	require.NoError(t, err)
	a := s.Atomicity()
	require.Equal(t, 127, a.MaxOps)
	require.Equal(t, etcdstore.MaxKeyBytes, a.MaxKeyBytes)
	require.Less(t, a.MaxBytes, etcdstore.DefaultMaxRequestBytes)
	require.NoError(t, s.Close())
}

// faultyClient returns a client of c whose transactions go through
// intercept.
func faultyClient(t testing.TB, c *etcdtest.Cluster, intercept grpc.UnaryClientInterceptor) *clientv3.Client {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(intercept)},
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// putKeys writes keys (value: the key) in batches the store allows.
func putKeys(t *testing.T, s kv.Store, keys [][]byte) {
	t.Helper()
	for chunk := range slices.Chunk(keys, 100) {
		b := &kv.Batch{}
		for _, k := range chunk {
			b.Put(k, k)
		}
		require.NoError(t, s.Apply(context.Background(), b))
	}
}

// numbered returns the keys k000 .. k<n-1>.
func numbered(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%03d", i)
	}
	return keys
}

// TestScanSnapshot: the pages after the first read the first page's
// revision, not the revision in a later response's header (the store's
// latest), so a write made while the first page is yielded, to keys of
// the third page, does not show.
func TestScanSnapshot(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprint("reverse=", reverse), func(t *testing.T) {
			s := openFresh(t, c, etcdstore.Options{})
			defer s.Close()
			keys := numbered(300)
			putKeys(t, s, keys)
			// Pages of 64, 128 and 256 keys: k250 and k050 are in the third,
			// from either end.
			added, deleted := "k250x", "k260"
			if reverse {
				added, deleted = "k050x", "k040"
			}
			var got []string
			for e, err := range s.Scan(ctx, kv.ScanRange{Reverse: reverse}) {
				require.NoError(t, err)
				got = append(got, string(e.Key))
				if len(got) == 10 {
					require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte(added), Value: []byte(added)},
						kv.Op{Kind: kv.OpDelete, Key: []byte(deleted)})))
				}
			}
			assert.False(t, slices.Contains(got, added), "the scan yields %s, written after it began", added)
			assert.True(t, slices.Contains(got, deleted), "the scan misses %s, deleted after it began", deleted)
			assert.Len(t, got, len(keys))
		})
	}
}

// TestScanCompaction: the cluster is compacted to its latest
// revision while every page is yielded (after a write outside the scan's
// range): the scan goes on, in order, without repeats, and yields every
// key (none is written meanwhile).
func TestScanCompaction(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	raw := c.Client(t)
	for _, reverse := range []bool{false, true} {
		for _, limit := range []int{0, 250} {
			t.Run(fmt.Sprintf("reverse=%v,limit=%d", reverse, limit), func(t *testing.T) {
				s := openFresh(t, c, etcdstore.Options{})
				defer s.Close()
				keys := numbered(600)
				putKeys(t, s, keys)
				var got [][]byte
				for e, err := range s.Scan(ctx, kv.ScanRange{Reverse: reverse, Limit: limit}) {
					require.NoError(t, err)
					require.Equal(t, e.Key, e.Value)
					got = append(got, bytes.Clone(e.Key))
					if n := len(got); n == 1 || n == 65 || n == 193 || n == 449 {
						resp, err := raw.Put(ctx, "elsewhere", fmt.Sprint(n))
						require.NoError(t, err)
						_, err = raw.Compact(ctx, resp.Header.Revision)
						require.NoError(t, err)
					}
				}
				if reverse {
					slices.Reverse(got)
				}
				want := keys
				if limit > 0 {
					want = keys[:limit]
					if reverse {
						want = keys[len(keys)-limit:]
					}
				}
				require.Equal(t, want, got)
			})
		}
	}
}

// extremeKeys returns keys at the ends of the key space and many short
// keys of extreme bytes: enough for several pages.
func extremeKeys() [][]byte {
	seen := map[string]bool{}
	var keys [][]byte
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, []byte(k))
		}
	}
	for _, k := range []string{"", "\x00", "\x00\x00", "\x00\xff", "\x01", "a", "\x7f", "\x80", "\xfe", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff"} {
		add(k)
	}
	alphabet := []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff}
	rng := rand.New(rand.NewPCG(23, 1))
	for len(keys) < 400 {
		k := make([]byte, 1+rng.IntN(4))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		add(string(k))
	}
	return keys
}

// TestScanExtremes compares scans of keys made of 0x00 and 0xFF
// bytes, the empty key among them, with the same scans of a MemoryStore:
// ranges whose Start, End and After are nil, empty or extreme, forward and
// reverse, with limits around the page sizes.
func TestScanExtremes(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	s := openFresh(t, c, etcdstore.Options{})
	defer s.Close()
	model := indextable.NewMemoryStore()
	keys := extremeKeys()
	putKeys(t, s, keys)
	putKeys(t, model, keys)
	bounds := [][]byte{nil, {}, {0x00}, {0x00, 0x00}, {0x00, 0xff}, {0x7f}, {0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0xff, 0xff}}
	limits := []int{0, -1, 1, 63, 64, 65, 192, 193, 1000}
	rng := rand.New(rand.NewPCG(23, 2))
	scan := func(st kv.Store, r kv.ScanRange) [][]byte {
		var got [][]byte
		for e, err := range st.Scan(ctx, r) {
			require.NoError(t, err, "%+v", r)
			got = append(got, bytes.Clone(e.Key))
		}
		return got
	}
	for range 300 {
		r := kv.ScanRange{Start: bounds[rng.IntN(len(bounds))], End: bounds[rng.IntN(len(bounds))],
			After: bounds[rng.IntN(len(bounds))], Reverse: rng.IntN(2) == 0, Limit: limits[rng.IntN(len(limits))]}
		require.Equal(t, scan(model, r), scan(s, r), "%+q", r)
	}
}

// TestScanWritesInBody: the loop body deletes each key it is given
// and writes a key just after it and one just before it; the scan stays
// in strict order, without repeats, and every entry holds a value stored
// under its key.
func TestScanWritesInBody(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprint("reverse=", reverse), func(t *testing.T) {
			s := openFresh(t, c, etcdstore.Options{})
			defer s.Close()
			putKeys(t, s, numbered(300))
			var last []byte
			n := 0
			for e, err := range s.Scan(ctx, kv.ScanRange{Reverse: reverse}) {
				require.NoError(t, err)
				if last != nil {
					order := bytes.Compare(last, e.Key)
					require.True(t, reverse && order > 0 || !reverse && order < 0, "%q after %q", e.Key, last)
				}
				require.True(t, bytes.HasPrefix(e.Value, e.Key[:4]), "%q holds %q", e.Key, e.Value)
				last = bytes.Clone(e.Key)
				k := bytes.Clone(e.Key)
				next := append(k[:len(k):len(k)], 0x00)                    // just after k
				prev := append(k[:len(k)-1:len(k)-1], k[len(k)-1]-1, 0xff) // just before k
				require.NoError(t, s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpDelete, Key: k},
					kv.Op{Kind: kv.OpPut, Key: next, Value: next}, kv.Op{Kind: kv.OpPut, Key: prev, Value: prev})))
				n++
			}
			require.GreaterOrEqual(t, n, 300)
		})
	}
}

// TestCloseEndsCallsInFlight: the cluster is down, so a Get and an
// Apply keep trying (the store's Timeout is 20 s); the store is closed
// while they do. Checks that both calls end with ErrClosed (not with the
// Timeout), for a store made by New (Close leaves the client open) as for
// one made by Open: Close ends every try in flight and every pause.
func TestCloseEndsCallsInFlight(t *testing.T) {
	for _, owned := range []bool{false, true} {
		t.Run(fmt.Sprint("owned=", owned), func(t *testing.T) {
			c := etcdtest.Start(t, 1, etcdtest.Options{})
			o := etcdstore.Options{Prefix: "close/", Timeout: 20 * time.Second}
			var s *etcdstore.Store
			var err error
			if owned {
				s, err = etcdstore.Open(context.Background(), c.Endpoints(), o)
			} else {
				cli, cerr := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
				require.NoError(t, cerr)
				t.Cleanup(func() { cli.Close() })
				s, err = etcdstore.New(cli, o)
			}
			require.NoError(t, err)
			require.NoError(t, c.Kill(0))
			ctx := context.Background()
			done := make(chan error, 2)
			go func() {
				_, err := s.Get(ctx, []byte("k"))
				done <- err
			}()
			go func() {
				done <- s.Apply(ctx, kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: []byte("v")}))
			}()
			time.Sleep(500 * time.Millisecond)
			require.NoError(t, s.Close())
			for range 2 {
				err := <-done
				t.Logf("a call ended: %v", err)
				require.ErrorIs(t, err, indextable.ErrClosed, "the call ended by its Timeout, not by Close")
			}
		})
	}
}

// TestLargeRequestBytes: a server with --max-request-bytes of 3 MiB
// and a store opened with the same MaxRequestBytes, as Options says to.
// Checks that a batch the store's Atomicity allows (one put whose value is
// MaxValueBytes long) applies: Open raises the client's send limit (2 MiB
// by default) to MaxRequestBytes.
func TestLargeRequestBytes(t *testing.T) {
	const limit = 3 << 20
	c := etcdtest.Start(t, 1, etcdtest.Options{MaxRequestBytes: limit})
	s, err := etcdstore.Open(context.Background(), c.Endpoints(), etcdstore.Options{Prefix: "big/", MaxRequestBytes: limit})
	require.NoError(t, err)
	defer s.Close()
	a := s.Atomicity()
	v := make([]byte, a.MaxValueBytes)
	b := kv.NewBatch(kv.Op{Kind: kv.OpPut, Key: []byte("k"), Value: v})
	require.NoError(t, a.Allows(b))
	require.NoError(t, s.Apply(context.Background(), b), "a batch of %d bytes, which Atomicity allows", b.Bytes())
	got, err := s.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	require.Len(t, got, len(v))
}
