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
	storetest.TestStore(t, func(t *testing.T) indextable.Store { return openFresh(t, conn) })
}

// TestOpenClient: a store opened on a client the caller built passes the
// conformance suite; OpenClient refuses a nil client and a table that does
// not exist, which it does not create.
func TestOpenClient(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	require.NoError(t, err)
	storetest.TestStore(t, func(t *testing.T) indextable.Store {
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
	require.ErrorIs(t, err, indextable.ErrNotFound)
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
	var b indextable.Batch
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

	for name, b := range map[string]func(*indextable.Batch){
		"value":      func(b *indextable.Batch) { b.Put([]byte("k3"), make([]byte, 704<<10+1)) },
		"key":        func(b *indextable.Batch) { b.Put(bytes.Repeat([]byte("k"), 400), []byte("v")) },
		"partitions": func(b *indextable.Batch) { b.Put([]byte("a1"), []byte("v")) },
	} {
		var batch indextable.Batch
		batch.Put([]byte("k2"), []byte("v"))
		b(&batch)
		require.ErrorIs(t, s.Apply(ctx, &batch), indextable.ErrInvalidBatch, name)
		_, err := s.Get(ctx, []byte("k2"))
		require.ErrorIs(t, err, indextable.ErrNotFound, name)
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
// which the SDK sent again, is reported as applied, not as a conflict.
// Both for a batch that inserts (no reads) and one that reads first.
func TestLostAnswer(t *testing.T) {
	ctx := context.Background()
	tr := &transport{}
	s := openWith(t, tr)
	for _, expect := range []func(*indextable.Batch){
		func(b *indextable.Batch) { b.ExpectAbsent([]byte("k")) },
		func(b *indextable.Batch) { b.ExpectValue([]byte("k"), []byte("v0")) },
	} {
		tr.loseOnce.Store(true)
		var b indextable.Batch
		expect(&b)
		b.Put([]byte("k"), []byte("v0"))
		require.NoError(t, s.Apply(ctx, &b))
		require.False(t, tr.loseOnce.Load(), "the answer was lost")
		v, err := s.Get(ctx, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, []byte("v0"), v)
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
		var b indextable.Batch
		b.ExpectAbsent([]byte("rec"))
		b.Put([]byte("rec"), []byte(v))
		b.Put([]byte("rec-entry"), []byte(v))
		return s.Apply(ctx, &b)
	}
	before := tr.requests.Load()
	require.NoError(t, insert("1"))
	require.EqualValues(t, 1, tr.requests.Load()-before)
	require.ErrorIs(t, insert("2"), indextable.ErrConflict)
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
				var b indextable.Batch
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
		k, err := indextable.EncodeTuple(elems...)
		require.NoError(t, err)
		return k
	}
	ab := tuple("t", int64(0), "ab")
	keys := [][]byte{
		{0x00, 0x14, 0x00}, {0x00, 0x14, 0x00, 0xff},
		ab, tuple("t", int64(0), "ab", "x"), tuple("t", int64(0), "ab\x00c"),
	}
	for _, k := range keys {
		var b indextable.Batch
		b.Put(k, k)
		require.NoError(t, s.Apply(ctx, &b))
	}
	scan := func(r indextable.ScanRange) [][]byte {
		var got [][]byte
		for e, err := range s.Scan(ctx, r) {
			require.NoError(t, err)
			got = append(got, bytes.Clone(e.Key))
		}
		return got
	}
	slices.SortFunc(keys, bytes.Compare)
	require.Equal(t, keys, scan(indextable.ScanRange{}))
	end := append(slices.Clone(ab[:len(ab)-1]), 0x01) // every key that starts with "ab"
	require.Equal(t, keys[2:], scan(indextable.ScanRange{Start: ab, End: end}))
	require.Equal(t, keys[:2], scan(indextable.ScanRange{Start: []byte{0x00, 0x14, 0x00}, End: []byte{0x00, 0x14, 0x01}}))
}

// TestLongKeys: a key too long to store is absent: expecting so, or
// deleting it, succeeds; expecting a value of it is a conflict.
func TestLongKeys(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azuritetest.Connection(t))
	long, err := indextable.EncodeTuple("t", int64(0), strings.Repeat("x", 600))
	require.NoError(t, err)
	var b indextable.Batch
	b.ExpectAbsent(long)
	b.Delete(long)
	require.NoError(t, s.Apply(ctx, &b))
	b.Reset()
	b.ExpectValue(long, []byte("v"))
	require.ErrorIs(t, s.Apply(ctx, &b), indextable.ErrConflict)
}
