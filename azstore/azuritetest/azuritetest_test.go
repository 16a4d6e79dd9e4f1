package azuritetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/stretchr/testify/require"
)

// TestFreshTableIsDeletedAtTheEnd: a table made under the name FreshTable
// gives is gone once the test that asked for it ends.
func TestFreshTableIsDeletedAtTheEnd(t *testing.T) {
	ctx := context.Background()
	conn := azuritetest.Connection(t)
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	require.NoError(t, err)
	exists := func(name string) bool {
		filter := fmt.Sprintf("TableName eq '%s'", name)
		pager := svc.NewListTablesPager(&aztables.ListTablesOptions{Filter: &filter})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			require.NoError(t, err)
			if len(page.Tables) > 0 {
				return true
			}
		}
		return false
	}
	var name string
	t.Run("use", func(t *testing.T) {
		name = azuritetest.FreshTable(t, conn, "fresh")
		require.True(t, strings.HasPrefix(name, "fresh"), name)
		_, err := svc.CreateTable(ctx, name, nil)
		require.NoError(t, err)
		require.True(t, exists(name))
	})
	require.False(t, exists(name), "table %s outlived its test", name)
}
