package examplestore_test

import (
	"context"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/examples/internal/examplestore"
	"github.com/stretchr/testify/require"
)

// TestChoiceExclusive: choosing more than one store fails with
// ErrExclusive, naming the flags and their variables; none is the memory
// store.
func TestChoiceExclusive(t *testing.T) {
	etcd := []string{"http://127.0.0.1:1"}
	for _, tc := range []struct {
		name   string
		choice examplestore.Choice
		want   string
	}{
		{"pebble and azure", examplestore.Choice{Dir: "d", Azure: "c"},
			"-pebble and -azure exclude each other (mind $INDEXTABLE_PEBBLE_DIR and $INDEXTABLE_AZURE_CONNECTION)"},
		{"pebble and etcd", examplestore.Choice{Dir: "d", Etcd: etcd},
			"-pebble and -etcd exclude each other (mind $INDEXTABLE_PEBBLE_DIR and $INDEXTABLE_ETCD_ENDPOINTS)"},
		{"etcd and azure", examplestore.Choice{Etcd: etcd, Azure: "c"},
			"-etcd and -azure exclude each other (mind $INDEXTABLE_ETCD_ENDPOINTS and $INDEXTABLE_AZURE_CONNECTION)"},
		{"all three", examplestore.Choice{Dir: "d", Etcd: etcd, Azure: "c"},
			"-pebble, -etcd and -azure exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.choice.Open(context.Background())
			require.ErrorIs(t, err, examplestore.ErrExclusive)
			require.ErrorContains(t, err, tc.want)
		})
	}
	s, err := examplestore.Choice{EtcdPrefix: "unused/", AzureTable: "unused"}.Open(context.Background())
	require.NoError(t, err)
	require.IsType(t, indextable.NewMemoryStore(), s)
	require.NoError(t, s.Close())
}

func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
	}{
		{"", nil},
		{" , ", nil},
		{"http://a:2379", []string{"http://a:2379"}},
		{"http://a:2379, http://b:2379,,http://c:2379 ", []string{"http://a:2379", "http://b:2379", "http://c:2379"}},
	} {
		require.Equal(t, tc.want, examplestore.Endpoints(tc.list), "%q", tc.list)
	}
}

// TestDefaultEtcdPrefix: the prefix is named after the binary's main
// package, here the test's.
func TestDefaultEtcdPrefix(t *testing.T) {
	require.Equal(t, "examples/examplestore.test/", examplestore.DefaultEtcdPrefix())
}
