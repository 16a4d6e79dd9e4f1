package azstore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore"
	"github.com/indextable/indextable/storetest"
	"github.com/stretchr/testify/require"
)

// azurite returns the connection string of the Azurite that scripts/azurite
// started, or skips the test when there is none (and fails it when
// INDEXTABLE_REQUIRE_AZURITE is set, as in CI).
func azurite(t *testing.T) string {
	t.Helper()
	conn := os.Getenv("INDEXTABLE_AZURITE")
	if conn == "" {
		if os.Getenv("INDEXTABLE_REQUIRE_AZURITE") != "" {
			t.Fatal("INDEXTABLE_AZURITE is not set, and INDEXTABLE_REQUIRE_AZURITE is")
		}
		t.Skip("no Azurite: run `make azurite`, or `scripts/azurite go test ./azstore/...`")
	}
	return conn
}

// openFresh opens a store on a new table, which the test deletes at the end.
func openFresh(t *testing.T, conn string) *azstore.Store {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("t%016x", rand.Uint64())
	s, err := azstore.Open(ctx, conn, azstore.Options{Table: name})
	require.NoError(t, err)
	t.Cleanup(func() {
		svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
		if err == nil {
			_, err = svc.DeleteTable(ctx, name, nil)
		}
		if err != nil {
			t.Errorf("deleting table %s: %v", name, err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	conn := azurite(t)
	storetest.TestStore(t, func(t *testing.T) indextable.Store { return openFresh(t, conn) })
}

// TestLimits: a value longer than a property holds is split and read back
// whole; one longer than an entity holds, a key longer than Azure's, or a
// batch across partitions is refused, and nothing of the batch is written.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	s := openFresh(t, azurite(t))
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
