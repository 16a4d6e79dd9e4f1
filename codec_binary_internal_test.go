package indextable

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinaryExact checks which types a write may compute its entries from
// without decoding the record back: those whose values all come back from
// the binary codec identical (==), and no other.
func TestBinaryExact(t *testing.T) {
	type strings struct{ A, B string }
	type nested struct {
		S   strings
		N   [2]int8
		F   float64
		U   uint16
		Yes bool
	}
	type withTime struct{ T time.Time }
	type withFloat32 struct{ F float32 }
	type withPointer struct{ P *int }
	type withSlice struct{ B []byte }
	type withUnexported struct {
		A string
		b string
	}
	one := 1
	nan := math.Float64frombits(0x7ff4000000000001) // a signalling NaN
	cases := []struct {
		name  string
		value any
		exact bool
	}{
		{"strings", strings{"a", "\x00\xff"}, true},
		{"nested", nested{strings{"x", ""}, [2]int8{-128, 127}, math.Inf(-1), 65535, true}, true},
		{"a NaN", nested{F: nan}, true},
		{"time", withTime{time.Now()}, false},                 // its monotonic reading is dropped
		{"float32", withFloat32{1.5}, false},                  // widened: a NaN's bits are not promised
		{"pointer", withPointer{&one}, false},                 // a new pointer
		{"slice", withSlice{[]byte{}}, false},                 // nil and empty are one encoding
		{"unexported field", withUnexported{"a", "b"}, false}, // b is not encoded
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := reflect.TypeOf(c.value)
			assert.Equal(t, c.exact, binaryExact(rt))
			codec := &BinaryCodec{}
			data, err := codec.Marshal(c.value)
			require.NoError(t, err)
			back := reflect.New(rt)
			require.NoError(t, codec.Unmarshal(data, back.Interface()))
			if c.exact {
				assert.True(t, identical(reflect.ValueOf(c.value), back.Elem()))
			}
		})
	}
}

// identical reports whether a and b are deeply equal with the same float
// bits (a NaN is not equal to itself).
func identical(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float()) &&
			(a.Kind() == reflect.Float64 || math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float())))
	case reflect.String:
		return a.String() == b.String()
	case reflect.Struct:
		if a.Type() == reflect.TypeOf(time.Time{}) {
			return a.Interface() == b.Interface()
		}
		for i := range a.NumField() {
			if !identical(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !identical(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
