package kv_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKey(t *testing.T) {
	enc := func(elems ...any) []byte {
		b, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name            string
		key             []byte
		ok              bool
		space           kv.KeySpace
		index, lead     any // decoded; nil: none
		rest            []byte
		throughLeadElem int // elements before Rest
	}{
		{"record", enc("t", int64(0), "a", int64(2)), true, kv.SpaceRecords, nil, "a", enc(int64(2)), 3},
		{"record cut short", enc("t", int64(0)), true, kv.SpaceRecords, nil, nil, nil, 2},
		{"change", enc("t", int64(3), "a", int64(9)), true, kv.SpaceQueue, nil, "a", enc(int64(9)), 3},
		{"entry", enc("t", int64(1), "town", int64(1), "R", "a"), true, kv.SpaceIndex, "town", "R", enc("a"), 5},
		{"entry cut at the generation", enc("t", int64(1), "town", int64(1)), true, kv.SpaceIndex, "town", nil, enc("town", int64(1)), 2},
		{"intra entry", enc("t", int64(5), "by", int64(2), "a", "x"), true, kv.SpaceIntra, "by", "a", enc("x"), 5},
		{"catalog", enc("t", int64(2), "town"), true, kv.SpaceCatalog, nil, nil, enc("town"), 2},
		{"lease", enc("t", int64(4), int64(2), int64(0)), true, kv.SpaceLeases, nil, nil, enc(int64(2), int64(0)), 2},
		{"usage", enc("t", int64(6)), true, kv.SpaceUsage, nil, nil, nil, 2},
		{"record type", enc("t", int64(7)), true, kv.SpaceRecordType, nil, nil, nil, 2},
		{"hints", enc("t", int64(8), "a", int64(1)), true, kv.SpaceHints, nil, nil, enc("a", int64(1)), 2},
		{"unknown space", enc("t", int64(9), "a"), true, kv.SpaceOther, nil, nil, enc("a"), 2},
		{"space not an int", enc("t", "x", "a"), true, kv.SpaceOther, nil, nil, enc("a"), 2},
		{"no table", enc(int64(0), int64(0)), false, 0, nil, nil, nil, 0},
		{"one element", enc("t"), false, 0, nil, nil, nil, 0},
		{"not a tuple", []byte("\xff\xffx"), false, 0, nil, nil, nil, 0},
		{"empty", nil, false, 0, nil, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := kv.ParseKey(tt.key)
			require.Equal(t, tt.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.space, k.Space)
			assert.Equal(t, enc("t"), k.Table)
			assert.Equal(t, tt.index, decoded(t, k.Index))
			assert.Equal(t, tt.lead, decoded(t, k.Lead))
			assert.Equal(t, string(tt.rest), string(k.Rest))
			through, err := kv.DecodeTuple(tt.key[:len(tt.key)-len(k.Rest)])
			require.NoError(t, err)
			assert.Len(t, through, tt.throughLeadElem)
		})
	}
}

func decoded(t *testing.T, elem []byte) any {
	if elem == nil {
		return nil
	}
	v, rest, err := kv.DecodeElement(elem)
	require.NoError(t, err)
	require.Empty(t, rest)
	return v
}

// FuzzParseKey: ParseKey never panics, and what it returns are pieces of
// the key, in order.
func FuzzParseKey(f *testing.F) {
	for _, k := range [][]byte{
		[]byte("\x02t\x00\x15\x00\x02a\x00"), []byte("\x02t\x00\x15\x01\x02i\x00\x15\x01\x02R\x00\x02a\x00"), {0x02}, {},
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		k, ok := kv.ParseKey(key)
		if !ok {
			return
		}
		require.True(t, bytes.HasPrefix(key, k.Table))
		require.True(t, bytes.HasSuffix(key, k.Rest))
		if k.Lead != nil {
			through := key[:len(key)-len(k.Rest)]
			require.True(t, bytes.HasSuffix(through, k.Lead))
			_, rest, err := kv.DecodeElement(k.Lead)
			require.NoError(t, err)
			require.Empty(t, rest)
		}
	})
}

// A store that partitions keys reads where one belongs: a record's key,
// after the table's name and space, starts with its first primary key
// component, its Lead.
func ExampleParseKey() {
	key, err := kv.EncodeTuple("customers", int64(kv.SpaceRecords), "eu", 42)
	if err != nil {
		panic(err)
	}
	k, ok := kv.ParseKey(key)
	lead, _, _ := kv.DecodeElement(k.Lead)
	table, _, _ := kv.DecodeElement(k.Table)
	fmt.Println(ok, table, k.Space == kv.SpaceRecords, lead)
	// Output: true customers true eu
}
