package azstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncodeKey(t *testing.T) {
	for _, tc := range []struct {
		key  []byte
		want string
	}{
		{nil, ""},
		{[]byte{0}, "--"},
		{[]byte{0xff}, "zk"},
		{[]byte{0, 0}, "---"},
		{[]byte("abc"), "NL8Y"},
		{[]byte{0xff, 0xff, 0xff}, "zzzz"},
	} {
		got := encodeKey(tc.key)
		assert.Equal(t, tc.want, got, "%x", tc.key)
		back, err := decodeKey(got)
		require.NoError(t, err)
		assert.Equal(t, string(tc.key), string(back))
	}
	for _, bad := range []string{"/", "a#", "-", "-0", "zl"} {
		_, err := decodeKey(bad)
		assert.ErrorIs(t, err, errBadKey, "%q", bad)
	}
}

// FuzzEncodeKey: encoding preserves order, prefixes included, keeps to the
// alphabet, and decodes back.
func FuzzEncodeKey(f *testing.F) {
	f.Add([]byte("a"), []byte("a\x00"))
	f.Add([]byte{}, []byte{0})
	f.Add([]byte{0xff}, []byte{0xff, 0})
	f.Add([]byte("abc"), []byte("abd"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ea, eb := encodeKey(a), encodeKey(b)
		assert.Equal(t, bytes.Compare(a, b), strings.Compare(ea, eb), "%x %x: %q %q", a, b, ea, eb)
		assert.Equal(t, -1, strings.IndexFunc(ea, func(r rune) bool { return !strings.ContainsRune(alphabet, r) }))
		back, err := decodeKey(ea)
		require.NoError(t, err)
		assert.Equal(t, a, append([]byte{}, back...))
		if _, err := decodeKey(string(b)); err == nil {
			assert.Equal(t, string(b), encodeKey(mustDecode(t, string(b))), "decoding is one to one")
		}
	})
}

func mustDecode(t *testing.T, s string) []byte {
	b, err := decodeKey(s)
	require.NoError(t, err)
	return b
}

func TestPartition(t *testing.T) {
	key := func(elems ...any) []byte {
		k, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		return k
	}
	for _, tc := range []struct {
		name   string
		key    []byte
		want   []byte
		prefix []byte // of the keys a one-partition query reads
	}{
		{"record", key("movies", int64(0), "Sci-Fi", "Red Dust"), key("movies", int64(0), "Sci-Fi"), key("movies", int64(0), "Sci-Fi")},
		{"its change", key("movies", int64(3), "Sci-Fi", "Red Dust", []byte{1}), key("movies", int64(0), "Sci-Fi"), key("movies", int64(3), "Sci-Fi")},
		{"index entry", key("movies", int64(1), "actor", int64(1), "Ava Stone", "Sci-Fi", "Red Dust"), key("movies", int64(1), "actor", int64(1), "Ava Stone"), key("movies", int64(1), "actor", int64(1), "Ava Stone")},
		{"intra-partition entry", key("movies", int64(5), "year", int64(2), "Sci-Fi", int64(2019), "Sci-Fi", "Red Dust"), key("movies", int64(0), "Sci-Fi"), key("movies", int64(5), "year", int64(2), "Sci-Fi")},
		{"intra-partition index", key("movies", int64(5), "year", int64(2)), key("movies", int64(5)), nil},
		{"catalog", key("movies", int64(2), "actor"), key("movies", int64(2)), key("movies", int64(2))},
		{"short record space", key("movies", int64(0)), key("movies", int64(0)), nil},
		{"raw", []byte("w000123"), []byte("w0"), nil},
		{"empty", []byte{}, []byte{}, nil},
	} {
		p, prefix := partition(tc.key)
		assert.Equal(t, tc.want, p, tc.name)
		assert.Equal(t, tc.prefix, prefix, tc.name)
		if prefix != nil {
			assert.True(t, bytes.HasPrefix(tc.key, prefix), "%s: the prefix is the key's", tc.name)
		}
	}
}

// TestPartitionAgreesWithParseKey: on every key a table writes (random ones
// of each space, cut at each length), the store's partitions follow the key
// form that kv.ParseKey reads: a record, its changes and its
// intra-partition entries in the partition of its first primary key
// component; an index entry in that of its first key component; anything
// else of a table in its space's.
func TestPartitionAgreesWithParseKey(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	elem := func() any {
		switch r.IntN(4) {
		case 0:
			return r.Int64N(1000) - 500
		case 1:
			return fmt.Sprint("s", r.IntN(100))
		case 2:
			return []byte{byte(r.IntN(256)), 0, 0xff}
		}
		return r.Float64()
	}
	for range 5000 {
		elems := []any{fmt.Sprint("t", r.IntN(3)), int64(r.IntN(10))}
		for range r.IntN(6) {
			elems = append(elems, elem())
		}
		key, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		k, ok := kv.ParseKey(key)
		require.True(t, ok)
		through := key[:len(key)-len(k.Rest)]
		records, err := kv.AppendTuple(bytes.Clone(k.Table), int64(kv.SpaceRecords))
		require.NoError(t, err)
		p, prefix := partition(key)
		switch {
		case k.Lead != nil && k.Space == kv.SpaceIndex:
			assert.Equal(t, through, p, "%v", elems)
			assert.Equal(t, through, prefix, "%v", elems)
		case k.Lead != nil:
			assert.Equal(t, append(records, k.Lead...), p, "%v", elems)
			assert.Equal(t, through, prefix, "%v", elems)
		case k.Space == kv.SpaceRecords || k.Space == kv.SpaceIndex ||
			k.Space == kv.SpaceQueue || k.Space == kv.SpaceIntra:
			assert.Equal(t, through, p, "%v: the table's space", elems)
			assert.Nil(t, prefix, "%v: a key cut short has no one-partition prefix", elems)
		default:
			assert.Equal(t, through, p, "%v", elems)
			assert.Equal(t, through, prefix, "%v", elems)
		}
	}
}
