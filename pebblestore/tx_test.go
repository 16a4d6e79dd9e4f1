package pebblestore_test

import (
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/storetest"
)

// TestTransactions runs storetest's model of concurrent transactions
// between accounts on a Pebble store that syncs each commit.
func TestTransactions(t *testing.T) {
	storetest.TestTransactions(t, func(t *testing.T) kv.Store {
		s := open(t, t.TempDir(), pebblestore.Options{})
		t.Cleanup(func() { s.Close() })
		return s
	}, storetest.TransactionsOptions{})
}
