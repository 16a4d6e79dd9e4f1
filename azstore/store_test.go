package azstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// openFresh opens a store on a new table, which the test deletes at the end.
func openFresh(t testing.TB, conn string) *azstore.Store {
	t.Helper()
	return openTable(t, conn, azuritetest.FreshTable(t, conn, "t"), nil)
}

func openTable(t testing.TB, conn, name string, client *aztables.ClientOptions) *azstore.Store {
	t.Helper()
	s, err := azstore.Open(context.Background(), conn, azstore.Options{Table: name, Client: client})
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	conn := azuritetest.Connection(t)
	storetest.TestStore(t, func(t *testing.T) kv.Store { return openFresh(t, conn) })
}

// TestOpenClient: a store opened on a client the caller built passes the
// conformance suite; OpenClient refuses a nil client and a table that does
// not exist, which it does not create.
func TestOpenClient(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	require.NoError(t, err)
	storetest.TestStore(t, func(t *testing.T) kv.Store {
		name := azuritetest.FreshTable(t, conn, "client")
		_, err := svc.CreateTable(ctx, name, nil)
		require.NoError(t, err)
		s, err := azstore.OpenClient(ctx, svc.NewClient(name))
		require.NoError(t, err)
		return s
	})
	_, err = azstore.OpenClient(ctx, svc.NewClient(azuritetest.FreshTable(t, conn, "client")))
	require.ErrorContains(t, err, "does not exist")
	_, err = azstore.OpenClient(ctx, nil)
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	var noContext context.Context
	_, err = azstore.OpenClient(noContext, svc.NewClient("any"))
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
	_, err = azstore.Open(noContext, conn, azstore.Options{})
	require.ErrorIs(t, err, indextable.ErrInvalidArgument)
}

// TestTableScopedSAS: through a SAS that grants only read, add, update and
// delete on one table, a store opens and reads and writes single keys; the
// same SAS opens no other table and creates none. (Azurite, 3.35 to 3.37,
// refuses an entity group transaction under a table SAS, which Azure
// takes: so the conformance suite cannot run through one here.)
func TestTableScopedSAS(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	require.NoError(t, err)
	mine, other := azuritetest.FreshTable(t, conn, "sas"), azuritetest.FreshTable(t, conn, "sas")
	for _, name := range []string{mine, other} {
		_, err := svc.CreateTable(ctx, name, nil)
		require.NoError(t, err)
	}
	url := azuritetest.TableSAS(t, conn, mine, aztables.SASPermissions{Read: true, Add: true, Update: true, Delete: true})
	client, err := aztables.NewClientWithNoCredential(url, nil)
	require.NoError(t, err)
	s, err := azstore.OpenClient(ctx, client)
	require.NoError(t, err)
	_, err = s.Get(ctx, []byte("absent"))
	require.ErrorIs(t, err, kv.ErrNotFound)
	_, err = client.CreateTable(ctx, nil)
	require.ErrorContains(t, err, "AuthorizationFailure", "the SAS creates no table")

	elsewhere, err := aztables.NewClientWithNoCredential(strings.Replace(url, "/"+mine+"?", "/"+other+"?", 1), nil)
	require.NoError(t, err)
	_, err = azstore.OpenClient(ctx, elsewhere)
	require.ErrorContains(t, err, "AuthorizationFailure", "the SAS of one table opens no other")
}

// TestLimits: a value longer than a property holds is spread over several and read back
// whole; one longer than an entity holds, a key longer than Azure's, or a
// batch across partitions is refused, and nothing of the batch is written.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // 200 KiB: four properties
	var b kv.Batch
	b.Put([]byte("k1"), big)
	require.NoError(t, s.Apply(ctx, &b))
	v, err := s.Get(ctx, []byte("k1"))
	require.NoError(t, err)
	require.Equal(t, big, v)
	largest := bytes.Repeat([]byte{0xa5}, 704<<10) // what an entity holds
	b.Reset()
	b.Put([]byte("k1"), largest)
	require.NoError(t, s.Apply(ctx, &b))
	v, err = s.Get(ctx, []byte("k1"))
	require.NoError(t, err)
	require.Equal(t, largest, v)

	for name, b := range map[string]func(*kv.Batch){
		"value":      func(b *kv.Batch) { b.Put([]byte("k3"), make([]byte, 704<<10+1)) },
		"key":        func(b *kv.Batch) { b.Put(bytes.Repeat([]byte("k"), 400), []byte("v")) },
		"partitions": func(b *kv.Batch) { b.Put([]byte("a1"), []byte("v")) },
	} {
		var batch kv.Batch
		batch.Put([]byte("k2"), []byte("v"))
		b(&batch)
		require.ErrorIs(t, s.Apply(ctx, &batch), kv.ErrInvalidBatch, name)
		_, err := s.Get(ctx, []byte("k2"))
		require.ErrorIs(t, err, kv.ErrNotFound, name)
	}
}

// transport lets a test delay every request and lose the answer to the
// first transaction after it committed, as a network may.
type transport struct {
	delay    time.Duration
	loseOnce atomic.Bool
	requests atomic.Int64
}

func (tr *transport) Do(req *http.Request) (*http.Response, error) {
	tr.requests.Add(1)
	time.Sleep(tr.delay)
	if req.Body != nil {
		// net/http may still read a request's body after RoundTrip
		// returns, while the SDK rewinds it to send again once this
		// transport has lost an answer: give net/http its own copy.
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "$batch") && tr.loseOnce.CompareAndSwap(true, false) {
		resp.Body.Close()
		return nil, io.ErrUnexpectedEOF
	}
	return resp, err
}

func openWith(t *testing.T, tr *transport) *azstore.Store {
	t.Helper()
	conn := azuritetest.Connection(t)
	return openTable(t, conn, azuritetest.FreshTable(t, conn, "t"), &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: tr}})
}

// TestOpenSendsOneRequest: Open creates its table and reads nothing: the
// table exists once created.
func TestOpenSendsOneRequest(t *testing.T) {
	tr := &transport{}
	openWith(t, tr)
	require.Equal(t, int64(1), tr.requests.Load())
}

// TestLostAnswer: a transaction that committed, whose answer was lost and
// which the SDK sent again, is reported as applied, not as a conflict:
// for a batch that inserts (no reads), one that reads first, and a blind
// one that deletes (whose resend finds the key it deletes gone, and which
// the reading way then finds committed by its guard). Each costs the
// transaction, its resend and the reads that tell it committed.
func TestLostAnswer(t *testing.T) {
	ctx := context.Background()
	tr := &transport{}
	s := openWith(t, tr)
	k, k2 := []byte("ka"), []byte("ka2") // one partition
	for _, tc := range []struct {
		name     string
		batch    func(*kv.Batch)
		requests int64
		want     map[string]string // key: value, "" for absent
	}{
		{"insert", func(b *kv.Batch) { b.ExpectAbsent(k); b.Put(k, []byte("v0")) }, 3, map[string]string{"ka": "v0"}},
		{"read first", func(b *kv.Batch) { b.ExpectValue(k, []byte("v0")); b.Put(k, []byte("v1")) }, 4, map[string]string{"ka": "v1"}},
		{"blind delete", func(b *kv.Batch) { b.Delete(k); b.Put(k2, []byte("v2")) }, 3, map[string]string{"ka": "", "ka2": "v2"}},
	} {
		tr.loseOnce.Store(true)
		before := tr.requests.Load()
		var b kv.Batch
		tc.batch(&b)
		require.NoError(t, s.Apply(ctx, &b), tc.name)
		require.False(t, tr.loseOnce.Load(), "%s: the answer was lost", tc.name)
		require.Equal(t, tc.requests, tr.requests.Load()-before, tc.name)
		for key, want := range tc.want {
			v, err := s.Get(ctx, []byte(key))
			if want == "" {
				require.ErrorIs(t, err, kv.ErrNotFound, "%s: %s", tc.name, key)
				continue
			}
			require.NoError(t, err, tc.name)
			require.Equal(t, want, string(v), "%s: %s", tc.name, key)
		}
	}
}

// TestInsertIsOneRoundTrip: a batch whose only expectations are that keys
// it puts are absent is one request: those puts are inserts, and an insert
// of a key that exists fails the whole batch with ErrConflict.
func TestInsertIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	tr := &transport{}
	s := openWith(t, tr)
	insert := func(v string) error {
		var b kv.Batch
		b.ExpectAbsent([]byte("rec"))
		b.Put([]byte("rec"), []byte(v))
		b.Put([]byte("rec-entry"), []byte(v))
		return s.Apply(ctx, &b)
	}
	before := tr.requests.Load()
	require.NoError(t, insert("1"))
	require.EqualValues(t, 1, tr.requests.Load()-before)
	require.ErrorIs(t, insert("2"), kv.ErrConflict)
	for _, k := range []string{"rec", "rec-entry"} {
		v, err := s.Get(ctx, []byte(k))
		require.NoError(t, err)
		require.Equal(t, []byte("1"), v, "%s: the failed batch wrote nothing", k)
	}
}

// TestHotPartition: many writers of one partition, on a slow network, all
// get their puts in.
func TestHotPartition(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, &transport{delay: 25 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for w := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				var b kv.Batch
				b.Put(fmt.Appendf(nil, "hot%03d-%d", w, i), []byte("v"))
				if err := s.Apply(ctx, &b); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestKeysBeyondTuples: keys that extend a tuple with bytes that are not an
// element, or that hold a NUL inside a string, scan in order and whole.
func TestKeysBeyondTuples(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	tuple := func(elems ...any) []byte {
		k, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		return k
	}
	ab := tuple("t", int64(0), "ab")
	keys := [][]byte{
		{0x00, 0x14, 0x00}, {0x00, 0x14, 0x00, 0xff},
		ab, tuple("t", int64(0), "ab", "x"), tuple("t", int64(0), "ab\x00c"),
	}
	for _, k := range keys {
		var b kv.Batch
		b.Put(k, k)
		require.NoError(t, s.Apply(ctx, &b))
	}
	scan := func(r kv.ScanRange) [][]byte {
		var got [][]byte
		for e, err := range s.Scan(ctx, r) {
			require.NoError(t, err)
			got = append(got, bytes.Clone(e.Key))
		}
		return got
	}
	slices.SortFunc(keys, bytes.Compare)
	require.Equal(t, keys, scan(kv.ScanRange{}))
	end := append(slices.Clone(ab[:len(ab)-1]), 0x01) // every key that starts with "ab"
	require.Equal(t, keys[2:], scan(kv.ScanRange{Start: ab, End: end}))
	require.Equal(t, keys[:2], scan(kv.ScanRange{Start: []byte{0x00, 0x14, 0x00}, End: []byte{0x00, 0x14, 0x01}}))
}

// TestLongKeys: a key too long to store is absent: expecting so, or
// deleting it, succeeds; expecting a value of it is a conflict.
func TestLongKeys(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	long, err := kv.EncodeTuple("t", int64(0), strings.Repeat("x", 600))
	require.NoError(t, err)
	var b kv.Batch
	b.ExpectAbsent(long)
	b.Delete(long)
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.ExpectValue(long, []byte("v"))
	require.ErrorIs(t, s.Apply(ctx, &b), kv.ErrConflict)
}

// hookedTransport counts requests as countingTransport does, and, when
// afterQuery is set, calls it with the number of queries answered so far
// once each query's answer is in, before the store reads it: a write
// there lands between the store's reads, or its reads and its commit.
type hookedTransport struct {
	countingTransport
	queries    atomic.Int64
	afterQuery func(n int64)
}

// Do sends req, counting it, and calls afterQuery after a query.
func (h *hookedTransport) Do(req *http.Request) (*http.Response, error) {
	resp, err := h.countingTransport.Do(req)
	if _, query := req.URL.Query()["$filter"]; err == nil && query {
		if n := h.queries.Add(1); h.afterQuery != nil {
			h.afterQuery(n)
		}
	}
	return resp, err
}

// openCounting opens a store on the Azure table name through a
// hookedTransport, with azstore.Open's retries.
func openCounting(t *testing.T, conn, name string) (*azstore.Store, *hookedTransport) {
	t.Helper()
	tr := &hookedTransport{}
	return openTable(t, conn, name, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: tr,
		Retry:     policy.RetryOptions{MaxRetries: 5},
	}}), tr
}

// pkeys returns n keys of the partition p (two bytes): p00, p01, ...
func pkeys(p string, from, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%s%02d", p, from+i)
	}
	return keys
}

// putKeys stores each of keys with itself as its value.
func putKeys(t *testing.T, s *azstore.Store, keys [][]byte) {
	t.Helper()
	for _, k := range keys {
		var b kv.Batch
		b.Put(k, k)
		require.NoError(t, s.Apply(context.Background(), &b))
	}
}

// requireValues checks the values of keys in s: want[i] for keys[i],
// nil for absent.
func requireValues(t *testing.T, s *azstore.Store, keys, want [][]byte) {
	t.Helper()
	for i, k := range keys {
		v, err := s.Get(context.Background(), k)
		if want[i] == nil {
			require.ErrorIs(t, err, kv.ErrNotFound, "%s", k)
			continue
		}
		require.NoError(t, err, "%s", k)
		require.Equal(t, want[i], v, "%s", k)
	}
}

// expectAll returns a batch that expects each of keys to hold itself, and
// puts put.
func expectAll(keys [][]byte, put []byte) *kv.Batch {
	var b kv.Batch
	for _, k := range keys {
		b.ExpectValue(k, k)
	}
	b.Put(put, []byte("new"))
	return &b
}

// TestApplyRequests counts the requests of Apply: a batch that reads k
// keys sends one query for the guard and up to 13 keys, then one a 14
// more, and its transaction; a batch of puts and deletes sends its
// transaction alone, and one more query and transaction when it deletes
// an absent key.
func TestApplyRequests(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	pa := pkeys("pa", 0, 30)
	newKey := []byte("pa99")
	for _, tc := range []struct {
		name     string
		stored   [][]byte
		batch    *kv.Batch
		err      error
		requests int64
		keys     [][]byte // and what they hold after
		want     [][]byte
	}{
		{"13 keys read", pa[:13], expectAll(pa[:13], newKey), nil, 2, [][]byte{pa[12], newKey}, [][]byte{pa[12], []byte("new")}},
		{"14 keys read", pa[:14], expectAll(pa[:14], newKey), nil, 3, [][]byte{newKey}, [][]byte{[]byte("new")}},
		{"30 keys read", pa, expectAll(pa, newKey), nil, 1 + 3, [][]byte{newKey}, [][]byte{[]byte("new")}},
		{"an expectation fails", pa[:12], expectAll(pa[:13], newKey), kv.ErrConflict, 1, [][]byte{newKey}, [][]byte{nil}},
		{"blind puts and deletes", pa[:6], func() *kv.Batch {
			var b kv.Batch
			b.Delete(pa[0])
			b.Delete(pa[1])
			b.Put(pa[2], []byte("new"))
			b.ExpectAbsent(newKey)
			b.Put(newKey, []byte("new"))
			return &b
		}(), nil, 1, [][]byte{pa[0], pa[1], pa[2], pa[3], newKey}, [][]byte{nil, nil, []byte("new"), pa[3], []byte("new")}},
		{"blind delete of an absent key", pa[:3], func() *kv.Batch {
			var b kv.Batch
			b.Delete(pa[0])
			b.Delete(pa[20]) // absent
			b.Put(pa[1], []byte("new"))
			b.Put(newKey, []byte("new"))
			return &b
		}(), nil, 1 + 1 + 1, [][]byte{pa[0], pa[1], pa[2], pa[20], newKey}, [][]byte{nil, []byte("new"), pa[2], nil, []byte("new")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tr := openCounting(t, conn, azuritetest.FreshTable(t, conn, "req"))
			putKeys(t, s, tc.stored)
			tr.reset()
			err := s.Apply(ctx, tc.batch)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
			require.Equal(t, tc.requests, tr.n.Load())
			requireValues(t, s, tc.keys, tc.want)
		})
	}
}

// TestGetManyRequests counts the requests of GetMany: one query a
// partition and 14 keys (a point read for a single key), none for a key
// too long to be stored; the values come in the order of the keys, nil
// for absent ones, and a key asked twice gets a copy of its own.
func TestGetManyRequests(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	long := bytes.Repeat([]byte("pa"), 300)
	pa, pb, pc := pkeys("pa", 0, 20), pkeys("pb", 0, 5), pkeys("pc", 0, 5)
	stored := slices.Concat(pa[:16], pb[:3], pc[:4])
	present := func(keys [][]byte) [][]byte {
		want := make([][]byte, len(keys))
		for i, k := range keys {
			if slices.ContainsFunc(stored, func(s []byte) bool { return bytes.Equal(s, k) }) {
				want[i] = k
			}
		}
		return want
	}
	backward := slices.Clone(pa)
	slices.Reverse(backward)
	var mixed [][]byte // the three partitions in turn
	for i := range 5 {
		mixed = append(mixed, pc[i], pa[i+14], pb[i])
	}
	s, tr := openCounting(t, conn, azuritetest.FreshTable(t, conn, "req"))
	putKeys(t, s, stored)
	for _, tc := range []struct {
		name     string
		keys     [][]byte
		requests int64
	}{
		{"20 keys of one partition", backward, 2},
		{"15 keys of 3 partitions", mixed, 3},
		{"one key", pa[3:4], 1},
		{"one absent key", pa[19:], 1},
		{"repeated and too long keys", [][]byte{pa[0], long, pa[0], pa[17], pa[1]}, 1},
		{"only a key too long", [][]byte{long}, 0},
		{"no keys", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.reset()
			got, err := s.GetMany(ctx, tc.keys, [][]byte{[]byte("kept")})
			require.NoError(t, err)
			require.Equal(t, tc.requests, tr.n.Load())
			require.Equal(t, append([][]byte{[]byte("kept")}, present(tc.keys)...), got)
			for i := range got {
				for j := range i {
					if len(got[i]) > 0 && len(got[j]) > 0 {
						require.NotSame(t, &got[i][0], &got[j][0], "values %d and %d share memory", i, j)
					}
				}
			}
		})
	}
}

// TestOvertakenBetweenReadAndCommit: a batch that reads keys and that
// another writer overtakes, after one of its queries and before its
// commit, fails its commit on the guard, reads again and then commits
// or conflicts on what it reads: also when the write falls between two
// of its queries, on a key the first one read. The requests are exact:
// the reads, the failed transaction, the guard's read that tells it was
// not a resend, the reads again and the transaction.
func TestOvertakenBetweenReadAndCommit(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	pa := pkeys("pa", 0, 30)
	other, mine := []byte("pa98"), []byte("pa99")
	for _, tc := range []struct {
		name     string
		read     int   // keys the batch expects to hold themselves
		after    int64 // the writer writes after this query
		written  []byte
		err      error
		requests int64
	}{
		{"a key not read", 5, 1, other, nil, 1 + 1 + 1 + 1 + 1},
		{"a key read", 5, 1, pa[2], kv.ErrConflict, 1 + 1 + 1 + 1},
		{"a key read, the first query's, after the second", 30, 2, pa[0], kv.ErrConflict, 3 + 1 + 1 + 3},
		{"a key not read, between queries", 30, 2, other, nil, 3 + 1 + 1 + 3 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := azuritetest.FreshTable(t, conn, "race")
			s, tr := openCounting(t, conn, name)
			writer := openTable(t, conn, name, nil)
			putKeys(t, s, pa[:tc.read])
			tr.reset()
			tr.queries.Store(0)
			tr.afterQuery = func(n int64) {
				if n == tc.after {
					var b kv.Batch
					b.Put(tc.written, []byte("theirs"))
					require.NoError(t, writer.Apply(ctx, &b))
				}
			}
			err := s.Apply(ctx, expectAll(pa[:tc.read], mine))
			tr.afterQuery = nil
			require.Equal(t, tc.requests, tr.n.Load())
			if tc.err == nil {
				require.NoError(t, err)
				requireValues(t, s, [][]byte{mine}, [][]byte{[]byte("new")})
			} else {
				require.ErrorIs(t, err, tc.err)
				require.ErrorContains(t, err, "does not hold the expected value")
				requireValues(t, s, [][]byte{mine}, [][]byte{nil})
			}
			requireValues(t, s, [][]byte{tc.written}, [][]byte{[]byte("theirs")})
		})
	}
}

// TestNinetyNineWrites: a batch holds 99 puts and deletes, its
// transaction's 100th action being the guard's, and any number of
// expectations, which are no actions. 99 puts each expected absent go
// blind, as one request; writes with other keys' values expected go the
// reading way: a query for the guard and 13 keys, one more for each 14
// keys more (reads have no bound, but a cost), then the transaction. Each
// batch applies whole, or, when an expectation fails, not at all; one of
// 100 writes is refused before any request.
func TestNinetyNineWrites(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	keys := make([][]byte, 150) // of partition "pa"
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "pa%03d", i)
	}
	puts, others := keys[:100], keys[100:]
	// batch deletes dels, puts puts (each expected absent if absent) and
	// expects each of expect to hold itself, the last one something else
	// if wrong.
	batch := func(dels, puts [][]byte, absent bool, expect [][]byte, wrong bool) *kv.Batch {
		var b kv.Batch
		for _, k := range dels {
			b.Delete(k)
		}
		for _, k := range puts {
			if absent {
				b.ExpectAbsent(k)
			}
			b.Put(k, []byte("new"))
		}
		for i, k := range expect {
			if wrong && i == len(expect)-1 {
				b.ExpectValue(k, []byte("not its value"))
			} else {
				b.ExpectValue(k, k)
			}
		}
		return &b
	}
	repeat := func(n int, v []byte) [][]byte { return slices.Repeat([][]byte{v}, n) }
	newValue := []byte("new")
	for _, tc := range []struct {
		name     string
		stored   [][]byte // keys stored with themselves first
		batch    *kv.Batch
		err      error
		requests int64
		want     [][]byte // what keys hold after, nil for absent
	}{
		{"99 puts each expected absent", nil, batch(nil, puts[:99], true, nil, false), nil, 1,
			slices.Concat(repeat(99, newValue), repeat(51, nil))},
		{"99 puts each expected absent, the last present", puts[98:99], batch(nil, puts[:99], true, nil, false), kv.ErrConflict, 1 + 1,
			slices.Concat(repeat(98, nil), puts[98:99], repeat(51, nil))},
		{"99 puts and 50 values expected", others, batch(nil, puts[:99], false, others, false), nil, 4 + 1,
			slices.Concat(repeat(99, newValue), repeat(1, nil), others)},
		{"99 puts and 50 values expected, the last wrongly", others, batch(nil, puts[:99], false, others, true), kv.ErrConflict, 4,
			slices.Concat(repeat(100, nil), others)},
		{"99 deletes and 50 values expected", keys[:99], batch(puts[:99], nil, false, others, false), kv.ErrConflict, 11,
			slices.Concat(puts[:99], repeat(51, nil))},
		{"99 deletes and 50 values expected, all present", slices.Concat(puts[:99], others), batch(puts[:99], nil, false, others, false), nil, 11 + 1,
			slices.Concat(repeat(100, nil), others)},
		{"100 puts", nil, batch(nil, puts, true, nil, false), kv.ErrInvalidBatch, 0,
			repeat(150, nil)},
		{"99 puts and a delete", others[:1], batch(others[:1], puts[:99], false, others[1:], false), kv.ErrInvalidBatch, 0,
			slices.Concat(repeat(100, nil), others[:1], repeat(49, nil))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tr := openCounting(t, conn, azuritetest.FreshTable(t, conn, "writes"))
			for chunk := range slices.Chunk(tc.stored, 99) {
				var b kv.Batch
				for _, k := range chunk {
					b.Put(k, k)
				}
				require.NoError(t, s.Apply(ctx, &b))
			}
			tr.reset()
			err := s.Apply(ctx, tc.batch)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
			require.Equal(t, tc.requests, tr.n.Load(), "requests")
			requireValues(t, s, keys, tc.want)
		})
	}
}
