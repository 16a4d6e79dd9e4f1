// Package tuple implements the order-preserving tuple encoding of every
// stored key: package kv exports it to stores (kv.AppendTuple documents the
// format), and the core uses the rest, which works on key fields through
// reflection and on the encoding's parts, without allocating.
package tuple

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"time"
)

// The type codes, an element's first byte; Append gives the format.
const (
	codeNil     = 0x00
	codeBytes   = 0x01
	codeString  = 0x02
	codeIntMin  = 0x0C
	codeIntZero = 0x14
	codeIntMax  = 0x1C
	codeFloat   = 0x21
	codeFalse   = 0x26
	codeTrue    = 0x27
	codeTime    = 0x30
)

// CodeString is the first byte of a string element.
const CodeString = codeString

const (
	signBit      = 1 << 63
	canonicalNaN = 0x7FF8000000000000 // the quiet NaN every NaN encodes as
)

var timeType = reflect.TypeFor[time.Time]()

// ErrUnsupportedType reports a key component of a type that has no encoding.
var ErrUnsupportedType = errors.New("indextable: unsupported key type")

// ErrMalformedKey reports bytes that are not a canonical tuple encoding.
var ErrMalformedKey = errors.New("indextable: malformed key")

// Append appends the encoding of each element to dst: kv.AppendTuple,
// whose documentation gives the format and why it sorts as Compare does.
// On error dst is returned with its original length.
func Append(dst []byte, elems ...any) ([]byte, error) {
	n := len(dst)
	for i, v := range elems {
		var ok bool
		if dst, ok = appendAny(dst, v); !ok {
			return dst[:n], fmt.Errorf("%w: element %d has type %v", ErrUnsupportedType, i, reflect.TypeOf(v))
		}
	}
	return dst, nil
}

// Encode implements kv.EncodeTuple.
func Encode(elems ...any) ([]byte, error) {
	return Append(nil, elems...)
}

// AppendElement implements kv.AppendElement.
func AppendElement(dst []byte, v any) ([]byte, error) {
	if out, ok := appendAny(dst, v); ok {
		return out, nil
	}
	// The type, not v: an error that kept v would make every caller's
	// value escape to the heap.
	return dst, fmt.Errorf("%w: %v", ErrUnsupportedType, reflect.TypeOf(v))
}

func appendAny(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return appendNil(dst), true
	case string:
		return AppendString(dst, v), true
	case []byte:
		return appendBytes(dst, v), true
	case int:
		return AppendInt(dst, int64(v)), true
	case int64:
		return AppendInt(dst, v), true
	case int32:
		return AppendInt(dst, int64(v)), true
	case int16:
		return AppendInt(dst, int64(v)), true
	case int8:
		return AppendInt(dst, int64(v)), true
	case uint:
		return appendUint(dst, uint64(v)), true
	case uint64:
		return appendUint(dst, v), true
	case uint32:
		return appendUint(dst, uint64(v)), true
	case uint16:
		return appendUint(dst, uint64(v)), true
	case uint8:
		return appendUint(dst, uint64(v)), true
	case float64:
		return appendFloat(dst, v), true
	case float32:
		return appendFloat(dst, float64(v)), true
	case bool:
		return appendBool(dst, v), true
	case time.Time:
		return appendTime(dst, v), true
	}
	return appendReflected(dst, v)
}

// appendReflected is appendAny for a value of a type its type switch does
// not name (a named type, or a pointer): by its kind, through reflect. It
// keeps nothing of v, unlike canonical, so that the values a caller
// encodes need not escape to the heap.
func appendReflected(dst []byte, v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		switch {
		case rv.IsNil():
			if _, ok := canonicalValue(reflect.Zero(rv.Type().Elem())); !ok {
				return dst, false
			}
			return appendNil(dst), true
		case rv.Type().Elem() == timeType:
			return appendTime(dst, *(*time.Time)(rv.UnsafePointer())), true
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		return AppendString(dst, rv.String()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return AppendInt(dst, rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return appendUint(dst, rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return appendFloat(dst, rv.Float()), true
	case reflect.Bool:
		return appendBool(dst, rv.Bool()), true
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return appendBytes(dst, rv.Bytes()), true
		}
	}
	return dst, false
}

// canonical converts a value of a supported type to the type decoding
// yields for it (except that unsigned integers stay uint64): nil, []byte,
// string, int64, uint64, float64, bool or time.Time.
func canonical(v any) (any, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			_, ok := canonicalValue(reflect.Zero(rv.Type().Elem()))
			return nil, ok
		}
		rv = rv.Elem()
	}
	return canonicalValue(rv)
}

func canonicalValue(rv reflect.Value) (any, bool) {
	switch rv.Kind() {
	case reflect.Invalid:
		return nil, true
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.Bool:
		return rv.Bool(), true
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return rv.Bytes(), true
		}
	case reflect.Struct:
		if t, ok := rv.Interface().(time.Time); ok {
			return t, true
		}
	}
	return nil, false
}

func appendNil(dst []byte) []byte {
	return append(dst, codeNil)
}

func appendBytes(dst, b []byte) []byte {
	dst = append(dst, codeBytes)
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return append(append(dst, b...), 0)
		}
		dst = append(append(dst, b[:i+1]...), 0xFF)
		b = b[i+1:]
	}
}

// AppendString appends the encoding of s, as AppendElement does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, codeString)
	for {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			return append(append(dst, s...), 0)
		}
		dst = append(append(dst, s[:i+1]...), 0xFF)
		s = s[i+1:]
	}
}

// AppendInt appends the encoding of v, as AppendElement does.
func AppendInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendUint(dst, uint64(v))
	}
	mag := uint64(-v) // 1<<63 for math.MinInt64
	k := byteLen(mag)
	return appendLow(append(dst, codeIntZero-byte(k)), ^mag, k)
}

func appendUint(dst []byte, v uint64) []byte {
	k := byteLen(v)
	return appendLow(append(dst, codeIntZero+byte(k)), v, k)
}

// byteLen is the number of bytes needed to hold v: 0 for 0.
func byteLen(v uint64) int {
	return (bits.Len64(v) + 7) / 8
}

// appendLow appends the low k bytes of v, big-endian.
func appendLow(dst []byte, v uint64, k int) []byte {
	for i := k - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// appendFloat encodes f in an order-preserving form. Every NaN encodes as
// one quiet NaN, after +Inf, and -0 as +0, which Go holds equal.
func appendFloat(dst []byte, f float64) []byte {
	u := uint64(canonicalNaN)
	switch {
	case f == 0:
		u = 0 // -0 too
	case !math.IsNaN(f):
		u = math.Float64bits(f)
	}
	if u&signBit != 0 {
		u = ^u
	} else {
		u ^= signBit
	}
	return binary.BigEndian.AppendUint64(append(dst, codeFloat), u)
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, codeTrue)
	}
	return append(dst, codeFalse)
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = binary.BigEndian.AppendUint64(append(dst, codeTime), uint64(t.Unix())^signBit)
	return binary.BigEndian.AppendUint32(dst, uint32(t.Nanosecond()))
}

// AppendValue appends the element encoding of v, a value of a type that
// AppendElement supports, other than an interface: the core's key fields.
func AppendValue(dst []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return AppendString(dst, v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return AppendInt(dst, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return appendUint(dst, v.Uint())
	case reflect.Float32, reflect.Float64:
		return appendFloat(dst, v.Float())
	case reflect.Bool:
		return appendBool(dst, v.Bool())
	case reflect.Slice:
		return appendBytes(dst, v.Bytes())
	case reflect.Pointer:
		if v.IsNil() {
			return appendNil(dst)
		}
		return AppendValue(dst, v.Elem())
	case reflect.Struct:
		if v.CanAddr() {
			return appendTime(dst, *(*time.Time)(v.Addr().UnsafePointer()))
		}
		return appendTime(dst, v.Interface().(time.Time))
	}
	return appendNil(dst) // unreachable for a supported type
}

// Decode implements kv.DecodeTuple.
func Decode(b []byte) ([]any, error) {
	t := []any{}
	for off := 0; off < len(b); {
		v, n, err := decodeAt(b, off)
		if err != nil {
			return nil, err
		}
		t = append(t, v)
		off += n
	}
	return t, nil
}

// DecodeElement implements kv.DecodeElement.
func DecodeElement(b []byte) (v any, rest []byte, err error) {
	v, n, err := decodeAt(b, 0)
	if err != nil {
		return nil, nil, err
	}
	return v, b[n:], nil
}

// ElementLen implements kv.ElementLen.
func ElementLen(b []byte) (int, error) {
	return ElementLenAt(b, 0)
}

func decodeAt(b []byte, off int) (any, int, error) {
	n, err := ElementLenAt(b, off)
	if err != nil {
		return nil, 0, err
	}
	c, body := b[off], b[off+1:off+n]
	switch c {
	case codeNil:
		return nil, n, nil
	case codeBytes:
		return unescape(body[:len(body)-1]), n, nil
	case codeString:
		s := body[:len(body)-1]
		if bytes.IndexByte(s, 0) < 0 {
			return string(s), n, nil
		}
		return string(unescape(s)), n, nil
	case codeFloat:
		return floatFromKey(binary.BigEndian.Uint64(body)), n, nil
	case codeFalse, codeTrue:
		return c == codeTrue, n, nil
	case codeTime:
		sec := int64(binary.BigEndian.Uint64(body) ^ signBit)
		return time.Unix(sec, int64(binary.BigEndian.Uint32(body[8:]))).UTC(), n, nil
	}
	neg, mag := intValue(c, body)
	switch {
	case neg:
		return int64(-mag), n, nil
	case mag <= math.MaxInt64:
		return int64(mag), n, nil
	}
	return mag, n, nil
}

// ElementLenAt returns the length of the element starting at b[off] after
// checking that it is canonical; an error gives offsets in b.
func ElementLenAt(b []byte, off int) (int, error) {
	if off >= len(b) {
		return 0, malformed(off, "missing element")
	}
	switch c := b[off]; {
	case c == codeNil || c == codeFalse || c == codeTrue || c == codeIntZero:
		return 1, nil
	case c == codeBytes || c == codeString:
		for i := off + 1; ; i++ {
			j := bytes.IndexByte(b[i:], 0)
			if j < 0 {
				return 0, malformed(off, "unterminated byte string")
			}
			i += j + 1
			if i == len(b) || b[i] != 0xFF {
				return i - off, nil
			}
		}
	case c >= codeIntMin && c <= codeIntMax:
		k := int(c) - codeIntZero
		if k < 0 {
			k = -k
		}
		body, err := fixedBody(b, off, k)
		if err != nil {
			return 0, err
		}
		neg, mag := intValue(c, body)
		switch {
		case body[0] == 0 && !neg, body[0] == 0xFF && neg:
			return 0, malformed(off, "integer not in its shortest form")
		case neg && mag > signBit:
			return 0, malformed(off, "integer below math.MinInt64")
		}
		return 1 + k, nil
	case c == codeFloat:
		body, err := fixedBody(b, off, 8)
		if err != nil {
			return 0, err
		}
		if why := nonCanonicalFloat(binary.BigEndian.Uint64(body)); why != "" {
			return 0, malformed(off, "%s", why)
		}
		return 9, nil
	case c == codeTime:
		body, err := fixedBody(b, off, 12)
		if err != nil {
			return 0, err
		}
		if binary.BigEndian.Uint32(body[8:]) >= 1e9 {
			return 0, malformed(off, "nanoseconds out of range")
		}
		return 13, nil
	default:
		return 0, malformed(off, "unknown type code 0x%02x", c)
	}
}

// nonCanonicalFloat says why u, the body of a float element, is not one
// appendFloat writes, or returns "" if it is.
func nonCanonicalFloat(u uint64) string {
	switch f := floatFromKey(u); {
	case math.IsNaN(f) && math.Float64bits(f) != canonicalNaN:
		return "non-canonical NaN"
	case f == 0 && math.Signbit(f):
		return "negative zero, which encodes as zero"
	}
	return ""
}

func malformed(off int, format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrMalformedKey, off, fmt.Sprintf(format, args...))
}

// fixedBody returns the n bytes following the type code at b[off].
func fixedBody(b []byte, off, n int) ([]byte, error) {
	if len(b)-off-1 < n {
		return nil, malformed(off, "truncated: type code 0x%02x needs %d bytes, %d left", b[off], n, len(b)-off-1)
	}
	return b[off+1 : off+1+n], nil
}

// intValue returns the sign and magnitude of the integer with type code c
// and big-endian body.
func intValue(c byte, body []byte) (neg bool, mag uint64) {
	for _, x := range body {
		mag = mag<<8 | uint64(x)
	}
	if c < codeIntZero {
		return true, (1<<(8*len(body)) - 1) - mag
	}
	return false, mag
}

func floatFromKey(u uint64) float64 {
	if u&signBit != 0 {
		return math.Float64frombits(u ^ signBit)
	}
	return math.Float64frombits(^u)
}

// unescape returns a copy of an encoded byte string body with each
// 0x00 0xFF turned back into 0x00.
func unescape(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for {
		i := bytes.IndexByte(body, 0)
		if i < 0 {
			return append(out, body...)
		}
		out = append(out, body[:i+1]...)
		body = body[i+2:]
	}
}

// DecodeValueAt decodes the tuple element at b[off:] into dst, a settable
// value of a type AppendValue supports, and returns the element's length. b is a read-only
// view of s: a string element without escapes is cut from s rather than
// copied.
func DecodeValueAt(s string, b []byte, off int, dst reflect.Value) (int, error) {
	n, err := ElementLenAt(b, off)
	if err != nil {
		return 0, err
	}
	c, body := b[off], b[off+1:off+n]
	if dst.Kind() == reflect.Pointer {
		if c == codeNil {
			dst.SetZero()
			return n, nil
		}
		p := reflect.New(dst.Type().Elem())
		if _, err := DecodeValueAt(s, b, off, p.Elem()); err != nil {
			return 0, err
		}
		dst.Set(p)
		return n, nil
	}
	ok := true
	switch k := dst.Kind(); {
	case c == codeString && k == reflect.String:
		str := s[off+1 : off+n-1]
		if strings.IndexByte(str, 0) >= 0 {
			str = string(unescape(body[:len(body)-1]))
		}
		dst.SetString(str)
	case c == codeBytes && k == reflect.Slice:
		dst.SetBytes(unescape(body[:len(body)-1]))
	case c >= codeIntMin && c <= codeIntMax:
		ok = setKeyInt(dst, c, body)
	case c == codeFloat && dst.CanFloat():
		dst.SetFloat(floatFromKey(binary.BigEndian.Uint64(body)))
	case (c == codeFalse || c == codeTrue) && k == reflect.Bool:
		dst.SetBool(c == codeTrue)
	case c == codeTime && dst.Type() == timeType && dst.CanAddr():
		sec := int64(binary.BigEndian.Uint64(body) ^ signBit)
		*(*time.Time)(dst.Addr().UnsafePointer()) = time.Unix(sec, int64(binary.BigEndian.Uint32(body[8:]))).UTC()
	case c == codeNil:
		dst.SetZero()
	default:
		ok = false
	}
	if !ok {
		return 0, fmt.Errorf("%w: at offset %d: element cannot be stored in a field of type %s", ErrMalformedKey, off, dst.Type())
	}
	return n, nil
}

// setKeyInt stores in dst, a settable value, the integer of type code c
// and body, and reports whether dst's type holds it: a negative integer
// needs a signed one.
func setKeyInt(dst reflect.Value, c byte, body []byte) bool {
	neg, mag := intValue(c, body)
	switch {
	case dst.CanInt() && (neg && mag <= signBit || !neg && mag < signBit):
		x := int64(mag)
		if neg {
			x = -x
		}
		if dst.OverflowInt(x) {
			return false
		}
		dst.SetInt(x)
		return true
	case dst.CanUint() && !neg:
		if dst.OverflowUint(mag) {
			return false
		}
		dst.SetUint(mag)
		return true
	}
	return false
}

// Compare implements kv.CompareTuples.
func Compare(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareElements(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareElements(a, b any) int {
	x, y := mustCanonical(a), mustCanonical(b)
	if c := cmp.Compare(typeRank(x), typeRank(y)); c != 0 {
		return c
	}
	switch x := x.(type) {
	case []byte:
		return bytes.Compare(x, y.([]byte))
	case string:
		return strings.Compare(x, y.(string))
	case int64, uint64:
		xn, xu := intKey(x)
		yn, yu := intKey(y)
		if xn != yn {
			return cmp.Compare(b2i(yn), b2i(xn))
		}
		return cmp.Compare(xu, yu)
	case float64:
		return compareFloats(x, y.(float64))
	case bool:
		return cmp.Compare(b2i(x), b2i(y.(bool)))
	case time.Time:
		y := y.(time.Time)
		return cmp.Or(cmp.Compare(x.Unix(), y.Unix()), cmp.Compare(x.Nanosecond(), y.Nanosecond()))
	}
	return 0 // both nil
}

func mustCanonical(v any) any {
	c, ok := canonical(v)
	if !ok {
		panic(fmt.Errorf("%w: %T", ErrUnsupportedType, v))
	}
	return c
}

func typeRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case []byte:
		return 1
	case string:
		return 2
	case int64, uint64:
		return 3
	case float64:
		return 4
	case bool:
		return 5
	}
	return 6 // time.Time
}

// intKey maps an int64 or uint64 to a sign and a uint64 that orders
// integers of the same sign (two's complement for negatives).
func intKey(v any) (neg bool, u uint64) {
	if i, ok := v.(int64); ok {
		return i < 0, uint64(i)
	}
	return false, v.(uint64)
}

func compareFloats(x, y float64) int {
	xNaN, yNaN := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xNaN || yNaN:
		return cmp.Compare(b2i(xNaN), b2i(yNaN))
	}
	return cmp.Compare(x, y) // -0 == +0, as in Go
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// End returns, in a new slice, the first key after every key that
// extends the tuple encoded as k (k itself included): k+0xFF, as no element
// encoding starts with 0xFF. It never writes into k's array, which may be
// a prefix that goroutines share.
// (Incrementing k's last byte would be wrong: the encoding of "a" is a byte
// prefix of that of "a\x00", which is not an extension of "a".)
func End(k []byte) []byte { return AppendEnd(make([]byte, 0, len(k)+1), k) }

// AppendEnd appends End(k) to dst, which must not overlap k.
func AppendEnd(dst, k []byte) []byte { return append(append(dst, k...), 0xFF) }
