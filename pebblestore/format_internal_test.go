package pebblestore

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeKey: every key's Pebble key is non-empty, decodes to it, and
// sorts as it does; keys that start with a byte other than 0x00 are their
// own; the format marker decodes to no key, nor does the empty Pebble key.
func TestEncodeKey(t *testing.T) {
	keys := [][]byte{
		{}, {0x00}, {0x00, 0x00}, {0x00, 0x00, 0x00}, {0x00, 0x01}, {0x00, 0xff, 0x00},
		{0x01}, {0x01, 0x00}, {0x02, 't', 0x00}, {0x7f}, {0xff}, {0xff, 0x00}, {0xff, 0xff},
	}
	require.True(t, slices.IsSortedFunc(keys, bytes.Compare))
	var encoded [][]byte
	for _, k := range keys {
		p := encodeKey(k)
		require.NotEmpty(t, p, "%q", k)
		if len(k) > 0 && k[0] != 0x00 {
			assert.Equal(t, k, p, "%q is its own Pebble key", k)
		}
		got, ok := decodeKey(p)
		require.True(t, ok, "%q", k)
		require.NotNil(t, got, "%q", k)
		require.Equal(t, k, got, "%q", k)
		encoded = append(encoded, p)
	}
	assert.True(t, slices.IsSortedFunc(encoded, bytes.Compare), "%q", encoded)
	assert.Equal(t, len(encoded), len(slices.CompactFunc(slices.Clone(encoded), bytes.Equal)), "distinct")
	for _, p := range [][]byte{formatKey, {}, {0x00, 0x01}, {0x00, 0xff}} {
		_, ok := decodeKey(p)
		assert.False(t, ok, "%q", p)
	}
}

// TestFormatOfALaterVersion: a store whose format marker holds another
// format than this version's fails to open with ErrFormat, writable or
// read-only, and Open leaves it as it was.
func TestFormatOfALaterVersion(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Set(formatKey, []byte("pebblestore format 2"), pebble.Sync))
	require.NoError(t, db.Set([]byte{}, []byte("v"), pebble.Sync))
	require.NoError(t, db.Close())
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		_, err := Open(dir, opts)
		require.ErrorIs(t, err, ErrFormat)
		t.Log(err)
	}
	db, err = pebble.Open(dir, &pebble.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	v, closer, err := db.Get([]byte{})
	require.NoError(t, err, "Open upgraded nothing")
	assert.Equal(t, []byte("v"), v)
	closer.Close()
}

// TestUpgradeTooLarge: a store of v0.1.0 whose keys below 0x01 one batch
// cannot upgrade (under 4 GiB; here, a smaller limit) fails with ErrFormat
// and is left as it was, for an Open that can.
func TestUpgradeTooLarge(t *testing.T) {
	db, err := pebble.Open(t.TempDir(), &pebble.Options{})
	require.NoError(t, err)
	defer db.Close()
	for _, k := range []string{"", "\x00", "\x00\x00"} {
		require.NoError(t, db.Set([]byte(k), make([]byte, 100), nil))
	}
	err = prepareFormat(db, false, pebble.NoSync, 300)
	require.ErrorIs(t, err, ErrFormat)
	t.Log(err)
	v, err := get(db, formatKey, nil)
	require.NoError(t, err)
	require.Nil(t, v, "no marker")
	v, err = get(db, []byte{0x00, 0x00, 0x00}, nil)
	require.NoError(t, err)
	require.Nil(t, v, "nothing moved")

	require.NoError(t, prepareFormat(db, false, pebble.NoSync, maxBatchBytes))
	for _, k := range []string{"", "\x00", "\x00\x00"} {
		v, err := get(db, encodeKey([]byte(k)), nil)
		require.NoError(t, err, "%q", k)
		require.Len(t, v, 100, "%q", k)
	}
}
