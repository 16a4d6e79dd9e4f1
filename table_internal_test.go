package indextable

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSharedPrefixesAreClipped: the key prefixes a table and its indexes
// share between goroutines have no spare capacity, so an append to one
// copies it instead of writing where another goroutine may be appending.
func TestSharedPrefixesAreClipped(t *testing.T) {
	for _, name := range []string{"t", "people", strings.Repeat("x", 13)} {
		tb := newTable[struct{ ID string }](NewMemoryStore(), name, JSONCodec{}, reflect.TypeFor[struct{ ID string }]())
		ix := &indexTable{name: "i"}
		ix.place(tb.prefix, 1)
		for what, b := range map[string][]byte{"prefix": tb.prefix, "fact space": tb.factSpace, "queue space": tb.queueSpace,
			"queue end": tb.queueEnd, "index prefix": ix.prefix} {
			require.Equal(t, len(b), cap(b), "table %q: %s", name, what)
		}
	}
}
