package indextable_test

import (
	"fmt"
	"testing"
	"time"

	it "github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

// TestTupleString: a Tuple prints as Go writes its components, quoted where
// Go quotes them, so an empty string key is visible.
func TestTupleString(t *testing.T) {
	type town string
	s, n, none := "Oslo", 7, (*int)(nil)
	for _, c := range []struct {
		tuple it.Tuple
		want  string
	}{
		{it.Tuple{}, "()"},
		{it.Tuple{""}, `("")`},
		{it.Tuple{"Redmond", "Smith"}, `("Redmond", "Smith")`},
		{it.Tuple{"a\"b\n"}, `("a\"b\n")`},
		{it.Tuple{nil, none, &s, &n}, `(nil, nil, "Oslo", 7)`},
		{it.Tuple{[]byte("x\x00"), town("Bergen")}, `([]byte("x\x00"), "Bergen")`},
		{it.Tuple{true, -3, uint64(1) << 63, 0.5, float32(1.25)}, "(true, -3, 9223372036854775808, 0.5, 1.25)"},
		{it.Tuple{time.Date(2026, 11, 24, 12, 0, 0, 5, time.UTC)}, "(2026-11-24T12:00:00.000000005Z)"},
		{it.Tuple{it.Tuple{"a", 1}}, `(("a", 1))`},
	} {
		require.Equal(t, c.want, c.tuple.String())
		require.Equal(t, c.want, fmt.Sprint(c.tuple), "fmt uses String")
	}
}
