package etcdstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/etcdstore"
	"github.com/indextable/indextable/etcdstore/internal/etcdtest"
	"github.com/indextable/indextable/internal/fixture"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// BenchmarkEtcd measures tables on etcdstore against raw, plain clientv3
// calls, on one 3-member cluster of etcdtest (embedded in the benchmark's
// process, on loopback, without fsync) in the same run, so that the two
// compare on the same cluster and machine. A table is fixture.Schema of one
// strategy (customers keyed by ID, with a (Town, LastName) index and a
// LastName index), binary codec, loaded first with benchEtcdRecords
// customers of fixture.Bench, 200 a town. Every sub-benchmark reports
// round-trips/op: the unary gRPC calls its client sent, counted by an
// interceptor (retries included), over the operations. Names are
// BenchmarkEtcd/<op>/<raw or strategy>:
//
//   - range100: the first 100 customers of a town in LastName order, through
//     the (Town, LastName) index (a Find of the town, Limit 100), decoded.
//     Raw: a range Get, limit 100, of a town's keys in a copy of the same
//     records keyed by (Town, LastName, ID), each value a record as the
//     table stores it, decoded.
//   - insert: an Insert of a new customer. Raw: a Put of the new customer's
//     record as the table stores it (its version, then the codec's bytes)
//     under its key, encoded in the loop as Insert encodes.
//
// Each system is loaded once, on first use, and reused by its
// sub-benchmarks: -count repeats each in turn. Reads run before inserts.
//
//	go test -run='^$' -bench='^BenchmarkEtcd$' -benchmem -benchtime=500x -count=5 .
func BenchmarkEtcd(b *testing.B) {
	c := etcdtest.Start(b, 3, etcdtest.Options{})
	systems := []*benchEtcd{{name: "raw", records: benchEtcdRecords}}
	for _, st := range []struct {
		name string
		s    indextable.Strategy
	}{{"keys-only", indextable.KeysOnly}, {"full-copy", indextable.FullCopy}} {
		systems = append(systems, &benchEtcd{name: st.name, records: benchEtcdRecords, schema: fixture.Schema(st.s, nil, &indextable.BinaryCodec{})})
	}
	for _, s := range systems {
		s.open(b, c)
	}
	for _, op := range []struct {
		name string
		run  func(*testing.B, *benchEtcd)
	}{{"range100", benchEtcdRange}, {"insert", benchEtcdInsert}} {
		b.Run(op.name, func(b *testing.B) {
			for _, s := range systems {
				b.Run(s.name, func(b *testing.B) {
					s.load(b)
					op.run(b, s)
				})
			}
		})
	}
}

// benchEtcdRecords is how many customers a system holds before its
// sub-benchmarks run.
const benchEtcdRecords = 20_000

// benchEtcd is one system of BenchmarkEtcd: a table of one strategy on a
// store of its own prefix, or raw's keys under its prefix, and the client
// it calls the cluster through.
type benchEtcd struct {
	name    string
	records int                                 // loaded first
	schema  indextable.Schema[fixture.Customer] // of a table; none for raw
	client  *clientv3.Client
	calls   atomic.Int64 // unary calls client sent
	table   *indextable.Table[fixture.Customer]
	codec   indextable.BinaryCodec // raw's
	prefix  string                 // of raw's keys
	loaded  bool
	next    int // the number of the next customer to insert
	probe   int // the position of the next read in the read order
}

// open connects s to c through a client that counts its calls, and opens
// its table.
func (s *benchEtcd) open(tb testing.TB, c *etcdtest.Cluster) {
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		s.calls.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	var err error
	s.client, err = clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.client.Close() })
	s.prefix = "bench/" + s.name + "/"
	if s.schema.Name == "" {
		return
	}
	store, err := etcdstore.New(s.client, etcdstore.Options{Prefix: s.prefix})
	if err != nil {
		tb.Fatal(err)
	}
	if s.table, err = indextable.Open(context.Background(), store, s.schema); err != nil {
		tb.Fatal(err)
	}
}

// load loads s's customers on first use: a table with Load, raw with
// transactions of 100 puts of their (Town, LastName, ID) keys.
func (s *benchEtcd) load(tb testing.TB) {
	if s.loaded {
		return
	}
	s.loaded, s.next = true, s.records
	ctx := context.Background()
	recs := fixture.Bench.Customers(0, s.records)
	if s.table != nil {
		if _, err := s.table.Load(ctx, slices.Values(recs), indextable.LoadOptions{}); err != nil {
			tb.Fatal(err)
		}
		runtime.GC()
		return
	}
	for chunk := range slices.Chunk(recs, 100) {
		ops := make([]clientv3.Op, len(chunk))
		for i := range chunk {
			ops[i] = clientv3.OpPut(s.townKey(tb, &chunk[i]), string(s.record(tb, nil, &chunk[i])))
		}
		if _, err := s.client.Txn(ctx).Then(ops...).Commit(); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.GC()
}

// record appends to dst c's record as a table stores it: a version, as an
// insert makes it, then the codec's encoding.
func (s *benchEtcd) record(tb testing.TB, dst []byte, c *fixture.Customer) []byte {
	dst = binary.AppendUvarint(dst, uint64(rand.Uint32()|1)<<32|1)
	dst, err := s.codec.AppendMarshal(dst, c)
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

// rawKey returns raw's key of elems, a tuple, under s's prefix and space
// (r: records by ID, t: by town).
func (s *benchEtcd) rawKey(tb testing.TB, space string, elems ...any) string {
	k, err := kv.EncodeTuple(elems...)
	if err != nil {
		tb.Fatal(err)
	}
	return s.prefix + space + string(k)
}

func (s *benchEtcd) townKey(tb testing.TB, c *fixture.Customer) string {
	return s.rawKey(tb, "t", c.Town, c.LastName, c.ID)
}

// towns returns the towns of the next n reads, in a walk that spreads them
// over the towns.
func (s *benchEtcd) towns(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fixture.Bench.Town(s.probe * 37 % fixture.BenchTowns)
		s.probe++
	}
	return out
}

// fresh returns n customers not yet in s.
func (s *benchEtcd) fresh(n int) []fixture.Customer {
	s.next += n
	return fixture.Bench.Customers(s.next-n, n)
}

// reportTrips reports the calls s's client made since start over b.N.
func (s *benchEtcd) reportTrips(b *testing.B, start int64) {
	b.ReportMetric(float64(s.calls.Load()-start)/float64(b.N), "round-trips/op")
}

func benchEtcdRange(b *testing.B, s *benchEtcd) {
	ctx := context.Background()
	towns := s.towns(b.N)
	var rec fixture.Customer
	b.ReportAllocs()
	start := s.calls.Load()
	b.ResetTimer()
	for _, town := range towns {
		n := 0
		if s.table != nil {
			for _, err := range s.table.Find(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town}, Limit: 100}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
		} else {
			from := s.rawKey(b, "t", town)
			resp, err := s.client.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(from)), clientv3.WithLimit(100))
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range resp.Kvs {
				_, k := binary.Uvarint(e.Value)
				if err := s.codec.Unmarshal(e.Value[k:], &rec); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		if n != 100 {
			b.Fatalf("%s: a range of %s read %d records", s.name, town, n)
		}
	}
	b.StopTimer()
	s.reportTrips(b, start)
}

func benchEtcdInsert(b *testing.B, s *benchEtcd) {
	ctx := context.Background()
	recs := s.fresh(b.N)
	var val []byte
	runtime.GC()
	b.ReportAllocs()
	start := s.calls.Load()
	b.ResetTimer()
	for i := range recs {
		if s.table != nil {
			if _, err := s.table.Insert(ctx, recs[i]); err != nil {
				b.Fatal(err)
			}
			continue
		}
		val = s.record(b, val[:0], &recs[i])
		if _, err := s.client.Put(ctx, s.rawKey(b, "r", recs[i].ID), string(val)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	s.reportTrips(b, start)
}

// TestBenchEtcdRaw: raw's range of a town reads the records a table's
// Find reads, in its order, and raw's values are the records the table
// stores, but for their versions' random part.
func TestBenchEtcdRaw(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	raw := &benchEtcd{name: "raw", records: 400}
	tbl := &benchEtcd{name: "table", records: 400, schema: fixture.Schema(indextable.KeysOnly, nil, &indextable.BinaryCodec{})}
	for _, s := range []*benchEtcd{raw, tbl} {
		s.open(t, c)
		s.load(t)
	}
	town := fixture.Bench.Town(7)
	var want []string
	for rec, err := range tbl.table.Find(ctx, indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{town}}) {
		require.NoError(t, err)
		want = append(want, rec.ID)
	}
	require.Len(t, want, 4)
	from := raw.rawKey(t, "t", town)
	resp, err := raw.client.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(from)))
	require.NoError(t, err)
	var got []string
	for _, e := range resp.Kvs {
		var rec fixture.Customer
		_, k := binary.Uvarint(e.Value)
		require.NoError(t, raw.codec.Unmarshal(e.Value[k:], &rec))
		got = append(got, rec.ID)
	}
	require.Equal(t, want, got)

	store, err := etcdstore.New(tbl.client, etcdstore.Options{Prefix: tbl.prefix})
	require.NoError(t, err)
	for _, id := range want {
		key, err := kv.EncodeTuple(tbl.schema.Name, int64(kv.SpaceRecords), id)
		require.NoError(t, err)
		stored, err := store.Get(ctx, key)
		require.NoError(t, err)
		var n int
		_, err = fmt.Sscanf(id, "C%d", &n)
		require.NoError(t, err)
		rec := fixture.Bench.Customer(n)
		made := raw.record(t, nil, &rec)
		sv, sn := binary.Uvarint(stored)
		mv, mn := binary.Uvarint(made)
		require.Equal(t, stored[sn:], made[mn:], "%s: the record", id)
		require.Equal(t, uint32(sv), uint32(mv), "%s: the version's count", id)
	}
}
