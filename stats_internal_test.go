package indextable

import (
	"bytes"
	"context"
	"testing"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// TestIndexStatsRefusesMalformedKeys: an entry key that is no tuple stops
// the measure with ErrMalformedKey, naming the index, and panics nothing.
func TestIndexStatsRefusesMalformedKeys(t *testing.T) {
	ctx := context.Background()
	for _, tail := range [][]byte{{0x03}, {0x02, 'a'}, append(tuple.AppendString(nil, "ok"), 0x15)} {
		s := NewMemoryStore()
		ix := &indexTable{name: "u", unique: true}
		ix.place(tuple.AppendString(nil, "t"), 1)
		var b kv.Batch
		b.Put(append(tuple.AppendString(bytes.Clone(ix.prefix), "fine"), tuple.AppendString(nil, "x")...), []byte{0})
		b.Put(append(bytes.Clone(ix.prefix), tail...), []byte{0})
		require.NoError(t, s.Apply(ctx, &b))
		_, err := indexStats(ctx, s, ix, 1)
		require.ErrorIs(t, err, ErrMalformedKey, "%x", tail)
		require.ErrorContains(t, err, `index "u"`)
	}
}
