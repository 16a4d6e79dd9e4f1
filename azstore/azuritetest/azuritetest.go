// Package azuritetest helps tests run against Azurite, the Azure Storage
// emulator, as the repository's scripts/azurite starts it: it sets
// INDEXTABLE_AZURITE to the connection string of a fresh, private
// Azurite, for the command it runs.
package azuritetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Connection returns the connection string of the Azurite that
// scripts/azurite started, or skips t when there is none. When
// INDEXTABLE_REQUIRE_AZURITE is set, as in CI, it fails t instead.
func Connection(t testing.TB) string {
	t.Helper()
	conn := os.Getenv("INDEXTABLE_AZURITE")
	if conn == "" {
		if os.Getenv("INDEXTABLE_REQUIRE_AZURITE") != "" {
			t.Fatal("INDEXTABLE_AZURITE is not set, and INDEXTABLE_REQUIRE_AZURITE is")
		}
		t.Skip("no Azurite: run the tests under scripts/azurite (make azurite does)")
	}
	return conn
}

// FreshTable returns the name of a new table, prefix then 16 random hex
// digits, and deletes the table when t ends, if it was made.
func FreshTable(t testing.TB, conn, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s%016x", prefix, rand.Uint64())
	t.Cleanup(func() {
		svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
		if err == nil {
			_, err = svc.DeleteTable(context.Background(), name, nil)
		}
		if err != nil && !strings.Contains(err.Error(), "TableNotFound") && !strings.Contains(err.Error(), "ResourceNotFound") {
			t.Errorf("deleting table %s: %v", name, err)
		}
	})
	return name
}

// TableSAS returns the URL of table with a SAS, valid for an hour, that
// grants perms on that table alone, signed with the account key of conn.
// The SDK's Client.GetTableSASURL joins a path-style endpoint (Azurite's,
// which ends with the account name) and the table name without a slash;
// TableSAS builds the URL from the endpoint itself.
func TableSAS(t testing.TB, conn, table string, perms aztables.SASPermissions) string {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := svc.NewClient(table).GetTableSASURL(perms, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, query, ok := strings.Cut(signed, "?")
	_, endpoint, found := strings.Cut(conn, "TableEndpoint=")
	if !ok || !found {
		t.Fatalf("no SAS in %q, or no TableEndpoint in the connection string", signed)
	}
	endpoint, _, _ = strings.Cut(endpoint, ";")
	return strings.TrimSuffix(endpoint, "/") + "/" + table + "?" + query
}
