package kv_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The encoding itself is tested, and fuzzed, with its implementation in
// internal/tuple; these tests check what kv exports of it.

func TestTupleFunctions(t *testing.T) {
	enc, err := hex.DecodeString("025265646d6f6e6400152a00") // "Redmond", 42, nil
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		run  func() (any, error)
		want any
	}{
		{"EncodeTuple", func() (any, error) { return kv.EncodeTuple("Redmond", 42, nil) }, enc},
		{"AppendTuple", func() (any, error) { return kv.AppendTuple([]byte("p"), "Redmond", 42, nil) }, append([]byte("p"), enc...)},
		{"AppendElement", func() (any, error) { return kv.AppendElement([]byte("p"), 42) }, []byte("p\x15\x2a")},
		{"DecodeTuple", func() (any, error) { return kv.DecodeTuple(enc) }, []any{"Redmond", int64(42), nil}},
		{"DecodeElement", func() (any, error) {
			v, rest, err := kv.DecodeElement(enc)
			return []any{v, rest}, err
		}, []any{"Redmond", enc[9:]}},
		{"ElementLen", func() (any, error) { return kv.ElementLen(enc) }, 9},
		{"CompareTuples", func() (any, error) { return kv.CompareTuples([]any{"Redmond", 42}, []any{"Redmond", uint8(43)}), nil }, -1},
	} {
		got, err := tc.run()
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestTupleErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func() error
		want error
	}{
		{"EncodeTuple of a struct", func() error { _, err := kv.EncodeTuple(struct{}{}); return err }, kv.ErrUnsupportedType},
		{"AppendTuple of a map", func() error { _, err := kv.AppendTuple(nil, "a", map[int]int{}); return err }, kv.ErrUnsupportedType},
		{"AppendElement of a slice", func() error { _, err := kv.AppendElement(nil, []int{1}); return err }, kv.ErrUnsupportedType},
		{"DecodeTuple of an unknown code", func() error { _, err := kv.DecodeTuple([]byte{0x14, 0x03}); return err }, kv.ErrMalformedKey},
		{"DecodeElement of a truncated integer", func() error { _, _, err := kv.DecodeElement([]byte{0x15}); return err }, kv.ErrMalformedKey},
		{"ElementLen of nothing", func() error { _, err := kv.ElementLen(nil); return err }, kv.ErrMalformedKey},
	} {
		require.ErrorIs(t, tc.err(), tc.want, tc.name)
	}
}

// TestTuplesOfIndextable: an indextable.Tuple passes where kv takes a
// tuple, and a decoded tuple assigns to one, without conversion.
func TestTuplesOfIndextable(t *testing.T) {
	pk := indextable.Tuple{"eu", 7}
	b, err := kv.EncodeTuple(pk...)
	require.NoError(t, err)
	var back indextable.Tuple
	back, err = kv.DecodeTuple(b)
	require.NoError(t, err)
	assert.Zero(t, kv.CompareTuples(pk, back))
	assert.Equal(t, indextable.Tuple{"eu", int64(7)}, back)
}

// Encoded tuples sort as the tuples do: by town, then by number, a prefix
// before its extensions.
func ExampleEncodeTuple() {
	var keys [][]byte
	for _, t := range [][]any{{"Seattle", 2}, {"Redmond", 10}, {"Redmond", -1}, {"Redmond"}, {"Redmond", 9}} {
		k, err := kv.EncodeTuple(t...)
		if err != nil {
			panic(err)
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	for _, k := range keys {
		t, err := kv.DecodeTuple(k)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%v %x\n", t, k)
	}
	// Output:
	// [Redmond] 025265646d6f6e6400
	// [Redmond -1] 025265646d6f6e640013fe
	// [Redmond 9] 025265646d6f6e64001509
	// [Redmond 10] 025265646d6f6e6400150a
	// [Seattle 2] 0253656174746c65001502
}
