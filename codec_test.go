package indextable_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
)

// Compile-time checks of the interfaces the codecs are used through.
var (
	_ indextable.Codec           = indextable.JSONCodec{}
	_ indextable.Codec           = (*indextable.BinaryCodec)(nil)
	_ indextable.AppendMarshaler = (*indextable.BinaryCodec)(nil)
)

// jsonCycle contains itself through a pointer, which JSON cannot encode
// once the pointer makes a cycle.
type jsonCycle struct{ Next *jsonCycle }

// TestJSONCodecErrors: what encoding/json refuses fails with ErrCodec, and
// the error keeps encoding/json's, for errors.As.
func TestJSONCodecErrors(t *testing.T) {
	var c indextable.JSONCodec
	cycle := &jsonCycle{}
	cycle.Next = cycle
	var unsupportedValue *json.UnsupportedValueError
	var unsupportedType *json.UnsupportedTypeError
	var unmarshalType *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	var invalidUnmarshal *json.InvalidUnmarshalError
	encode := func(v any) func() error {
		return func() error { _, err := c.Marshal(v); return err }
	}
	for _, tc := range []struct {
		name string
		call func() error
		as   any // a pointer to the encoding/json error it keeps
	}{
		{"NaN", encode(math.NaN()), &unsupportedValue},
		{"+Inf", encode(struct{ F float64 }{math.Inf(1)}), &unsupportedValue},
		{"-Inf", encode(map[string]float32{"f": float32(math.Inf(-1))}), &unsupportedValue},
		{"cycle", encode(cycle), &unsupportedValue},
		{"chan field", encode(struct{ C chan int }{}), &unsupportedType},
		{"func field", encode(struct{ F func() }{}), &unsupportedType},
		{"type mismatch", func() error { return c.Unmarshal([]byte(`{"N":"one"}`), &struct{ N int }{}) }, &unmarshalType},
		{"not JSON", func() error { return c.Unmarshal([]byte(`{`), &struct{}{}) }, &syntax},
		{"not a pointer", func() error { return c.Unmarshal([]byte(`{}`), struct{}{}) }, &invalidUnmarshal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, indextable.ErrCodec)
			assert.ErrorAs(t, err, tc.as)
			assert.True(t, strings.HasPrefix(err.Error(), "indextable: codec: "), err.Error())
		})
	}
	var v struct{ N int }
	require.NoError(t, c.Unmarshal([]byte(`{"N":1}`), &v), "valid input still decodes")
	assert.Equal(t, 1, v.N)
}

// TestCodecRoundTripBothCodecs runs a plain record, valid UTF-8 only,
// through both codecs via the Codec interface.
func TestCodecRoundTripBothCodecs(t *testing.T) {
	type rec struct {
		ID   int64
		Name string
		Tags []string
		When time.Time
		Ptr  *codecInner
	}
	v := rec{ID: -5, Name: "héllo", Tags: []string{"a", "b"}, When: time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC), Ptr: &codecInner{Name: "x", Tags: []string{}}}
	for _, c := range []struct {
		name  string
		codec indextable.Codec
	}{{"json", indextable.JSONCodec{}}, {"binary", &indextable.BinaryCodec{}}} {
		t.Run(c.name, func(t *testing.T) {
			data, err := c.codec.Marshal(v)
			require.NoError(t, err)
			var got rec
			require.NoError(t, c.codec.Unmarshal(data, &got))
			require.True(t, v.When.Equal(got.When))
			got.When = v.When
			require.Equal(t, v, got)
		})
	}
}
