package azstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// dropTransport drops the transactions of one partition, as a network
// that loses a request would: they never reach the service.
type dropTransport struct {
	mu        sync.Mutex
	partition string // the PartitionKey whose transactions are dropped; "" none
	dropped   int
}

var errDropped = errors.New("dropTransport: request dropped")

func (d *dropTransport) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && strings.HasSuffix(req.URL.Path, "$batch") {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		d.mu.Lock()
		drop := d.partition != "" && bytes.Contains(body, []byte(`"PartitionKey":"`+d.partition+`"`))
		if drop {
			d.dropped++
		}
		d.mu.Unlock()
		if drop {
			return nil, errDropped
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (d *dropTransport) drop(partition string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.partition, d.dropped = partition, 0
}

type hintMovie struct {
	Genre, Title string
	Actors       []string
}

// keysOf returns the keys of store s in space.
func keysOf(t *testing.T, s kv.Store, space kv.KeySpace) [][]byte {
	t.Helper()
	var keys [][]byte
	for e, err := range s.Scan(context.Background(), kv.ScanRange{}) {
		require.NoError(t, err)
		if k, ok := kv.ParseKey(e.Key); ok && k.Space == space {
			keys = append(keys, e.Key)
		}
	}
	return keys
}

// TestHintCrashWindowOnAzure: on Azure, a write hints its change in the
// hint partition before its transaction. A dropped hint fails the write,
// which wrote nothing; a dropped transaction after the hint leaves a hint
// without a change, which changes no read, Lag or WaitIndexed, and which a
// maintainer removes once it is old.
func TestHintCrashWindowOnAzure(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	name := azuritetest.FreshTable(t, conn, "hints")
	dt := &dropTransport{}
	faulty, err := Open(ctx, conn, Options{Table: name, Client: &aztables.ClientOptions{
		ClientOptions: policy.ClientOptions{Transport: dt, Retry: policy.RetryOptions{MaxRetries: -1}}}})
	require.NoError(t, err)
	raw, err := Open(ctx, conn, Options{Table: name})
	require.NoError(t, err)
	schema := indextable.Schema[hintMovie]{Name: "m", PrimaryKey: []string{"Genre", "Title"},
		Indexes: []indextable.Index[hintMovie]{{Name: "actor", Fields: []string{"Actors"}, MultiValued: true, Strategy: indextable.FullCopy}}}
	tbl, err := indextable.Open(ctx, faulty, schema)
	require.NoError(t, err)
	m := hintMovie{Genre: "drama", Title: "Heat", Actors: []string{"Pacino"}}
	hintPrefix, err := kv.EncodeTuple("m", int64(kv.SpaceHints))
	require.NoError(t, err)
	recordPrefix, err := kv.EncodeTuple("m", int64(kv.SpaceRecords), "drama")
	require.NoError(t, err)

	dt.drop(partitionKey(Partition(hintPrefix)))
	_, err = tbl.Insert(ctx, m)
	require.ErrorIs(t, err, errDropped)
	require.Equal(t, 1, dt.dropped)
	for _, space := range []kv.KeySpace{kv.SpaceHints, kv.SpaceQueue, kv.SpaceRecords} {
		require.Empty(t, keysOf(t, raw, space), "space %d after the hint was dropped", space)
	}

	dt.drop(partitionKey(Partition(recordPrefix)))
	_, err = tbl.Insert(ctx, m)
	require.ErrorIs(t, err, errDropped)
	dt.drop("")
	hints := keysOf(t, raw, kv.SpaceHints)
	require.Len(t, hints, 1, "the hint of the transaction dropped")
	require.Empty(t, keysOf(t, raw, kv.SpaceQueue))

	after, err := indextable.Open(ctx, raw, schema)
	require.NoError(t, err)
	lag, err := after.Lag(ctx)
	require.NoError(t, err)
	require.Equal(t, indextable.Lag{}, lag)
	require.NoError(t, after.WaitIndexed(ctx))
	for r, err := range after.Find(ctx, indextable.Query{Index: "actor", Eq: indextable.Tuple{"Pacino"}}) {
		require.NoError(t, err)
		t.Fatalf("found %v, which was never written", r)
	}
	_, err = after.ApplyPending(ctx, indextable.MaintainerOptions{})
	require.NoError(t, err)
	require.Len(t, keysOf(t, raw, kv.SpaceHints), 1, "a young hint: its writer may still commit")
	var b kv.Batch
	b.Put(hints[0], binary.AppendUvarint([]byte{1, 0}, uint64(time.Now().Add(-2*time.Minute).UnixNano())))
	require.NoError(t, raw.Apply(ctx, &b))
	_, err = after.ApplyPending(ctx, indextable.MaintainerOptions{})
	require.NoError(t, err)
	require.Empty(t, keysOf(t, raw, kv.SpaceHints), "an old hint without its change")

	_, err = after.Insert(ctx, m)
	require.NoError(t, err)
	_, err = after.ApplyPending(ctx, indextable.MaintainerOptions{})
	require.NoError(t, err)
	require.NoError(t, after.WaitIndexed(ctx))
	var found []hintMovie
	for r, err := range after.Find(ctx, indextable.Query{Index: "actor", Eq: indextable.Tuple{"Pacino"}}) {
		require.NoError(t, err)
		found = append(found, r)
	}
	require.Equal(t, []hintMovie{m}, found)
	require.Empty(t, keysOf(t, raw, kv.SpaceHints))
}
