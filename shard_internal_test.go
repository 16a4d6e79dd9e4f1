package indextable

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShardHashes checks the two halves of ShardFor against independent
// implementations: FNV-1a against hash/fnv, Jump Consistent Hash against
// published vectors and its defining property, that growing n to n+1 moves
// keys only to the new bucket.
func TestShardHashes(t *testing.T) {
	for _, s := range []string{"", "a", "C01", "\x02Redmond\x00"} {
		h := fnv.New64a()
		h.Write([]byte(s))
		require.Equal(t, h.Sum64(), fnv1a([]byte(s)), "%q", s)
	}
	require.Equal(t, 3, jumpHash(2016238256797177309, 11))
	require.Equal(t, 6, jumpHash(10863919174838991, 11))
	counts := make([]int, 9)
	for k := range uint64(9000) {
		key := fnv1a([]byte{byte(k), byte(k >> 8)})
		prev := jumpHash(key, 1)
		require.Zero(t, prev)
		for n := 2; n <= 9; n++ {
			b := jumpHash(key, n)
			require.True(t, b == prev || b == n-1, "key %d moved from %d to %d at %d buckets", k, prev, b, n)
			prev = b
		}
		counts[prev]++
	}
	for b, c := range counts {
		require.InDelta(t, 1000, c, 150, "bucket %d", b)
	}
}
