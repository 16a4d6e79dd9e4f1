package tuple

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type (
	tupTown  string
	tupID    int64
	tupSmall uint16
	tupRaw   []byte
	tupFlag  bool
	tupRatio float32
)

func tupHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

func TestElementEncodings(t *testing.T) {
	seven := 7
	name := tupTown("x")
	tests := []struct {
		name string
		in   any
		hex  string
		want any // decoded value
	}{
		{"nil", nil, "00", nil},
		{"nil pointer", (*int)(nil), "00", nil},
		{"nil time pointer", (*time.Time)(nil), "00", nil},
		{"empty bytes", []byte{}, "0100", []byte{}},
		{"nil bytes", []byte(nil), "0100", []byte{}},
		{"bytes with 00 FF", []byte{0, 0xFF}, "01 00FF FF 00", []byte{0, 0xFF}},
		{"named bytes", tupRaw("k"), "01 6b 00", []byte("k")},
		{"empty string", "", "0200", ""},
		{"string with zero", "a\x00b", "02 61 00FF 62 00", "a\x00b"},
		{"string trailing zero", "a\x00", "02 61 00FF 00", "a\x00"},
		{"invalid utf8", "\xff\xfe", "02 FF FE 00", "\xff\xfe"},
		{"named string", tupTown("Redmond"), "02 5265646d6f6e64 00", "Redmond"},
		{"string pointer", &name, "02 78 00", "x"},
		{"zero", 0, "14", int64(0)},
		{"one", 1, "15 01", int64(1)},
		{"minus one", -1, "13 FE", int64(-1)},
		{"255", 255, "15 FF", int64(255)},
		{"256", 256, "16 0100", int64(256)},
		{"-255", -255, "13 00", int64(-255)},
		{"-256", -256, "12 FEFF", int64(-256)},
		{"uint8", uint8(5), "15 05", int64(5)},
		{"named int", tupID(-1), "13 FE", int64(-1)},
		{"named uint", tupSmall(0x1234), "16 1234", int64(0x1234)},
		{"int pointer", &seven, "15 07", int64(7)},
		{"max int64", int64(math.MaxInt64), "1C 7FFFFFFFFFFFFFFF", int64(math.MaxInt64)},
		{"min int64", int64(math.MinInt64), "0C 7FFFFFFFFFFFFFFF", int64(math.MinInt64)},
		{"max uint64", uint64(math.MaxUint64), "1C FFFFFFFFFFFFFFFF", uint64(math.MaxUint64)},
		{"above max int64", uint64(1 << 63), "1C 8000000000000000", uint64(1 << 63)},
		{"+0", 0.0, "21 8000000000000000", 0.0},
		{"-0, as +0", math.Copysign(0, -1), "21 8000000000000000", 0.0},
		{"1.0", 1.0, "21 BFF0000000000000", 1.0},
		{"-1.0", -1.0, "21 400FFFFFFFFFFFFF", -1.0},
		{"+Inf", math.Inf(1), "21 FFF0000000000000", math.Inf(1)},
		{"-Inf", math.Inf(-1), "21 000FFFFFFFFFFFFF", math.Inf(-1)},
		{"float32", float32(1.5), "21 BFF8000000000000", 1.5},
		{"named float32", tupRatio(-1), "21 400FFFFFFFFFFFFF", -1.0},
		{"false", false, "26", false},
		{"true", true, "27", true},
		{"named bool", tupFlag(true), "27", true},
		{"unix epoch", time.Unix(0, 0), "30 8000000000000000 00000000", time.Unix(0, 0).UTC()},
		{"before epoch", time.Unix(-1, 5), "30 7FFFFFFFFFFFFFFF 00000005", time.Unix(-1, 5).UTC()},
		{"zone dropped", time.Unix(1, 2).In(time.FixedZone("X", 3600)), "30 8000000000000001 00000002", time.Unix(1, 2).UTC()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tupHex(t, tc.hex)
			got, err := AppendElement([]byte("pre"), tc.in)
			require.NoError(t, err)
			assert.Equal(t, append([]byte("pre"), want...), got)

			v, rest, err := DecodeElement(append(want, 0x14))
			require.NoError(t, err)
			assert.Equal(t, []byte{0x14}, rest)
			assert.Equal(t, tc.want, v)
			if f, ok := tc.want.(float64); ok {
				assert.Equal(t, math.Float64bits(f), math.Float64bits(v.(float64)))
			}
		})
	}
}

func TestNaNCanonical(t *testing.T) {
	want := tupHex(t, "21 FFF8000000000000")
	for _, f := range []float64{
		math.NaN(),
		math.Float64frombits(0x7FF0000000000001),
		math.Float64frombits(0xFFF8000000000000),
		math.Float64frombits(0xFFFFFFFFFFFFFFFF),
		float64(float32(math.NaN())),
	} {
		got, err := Encode(f)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	got, err := Encode(float32(math.NaN()))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	v, err := Decode(want)
	require.NoError(t, err)
	assert.Equal(t, uint64(canonicalNaN), math.Float64bits(v[0].(float64)))
}

func TestTimeRoundTrip(t *testing.T) {
	now := time.Now() // carries a monotonic reading and the local zone
	enc, err := Encode(now)
	require.NoError(t, err)
	dec, err := Decode(enc)
	require.NoError(t, err)
	got := dec[0].(time.Time)
	assert.True(t, got.Equal(now))
	assert.Equal(t, time.UTC, got.Location())
	assert.Equal(t, got.Round(0), got, "no monotonic reading")
}

func TestTupleEncoding(t *testing.T) {
	enc, err := Encode("Redmond", "Smith", 42)
	require.NoError(t, err)
	assert.Equal(t, tupHex(t, "02 5265646d6f6e64 00 02 536d697468 00 15 2a"), enc)

	enc, err = Encode()
	require.NoError(t, err)
	assert.Empty(t, enc)
	dec, err := Decode(nil)
	require.NoError(t, err)
	assert.Empty(t, dec)

	// ("a", nil) and ("a\x00") share the bytes 02 61 00 but stay distinct.
	enc, err = Encode("a", nil)
	require.NoError(t, err)
	dec, err = Decode(enc)
	require.NoError(t, err)
	assert.Equal(t, []any{"a", nil}, dec)
}

// tupAscending lists elements in strictly increasing key order.
var tupAscending = []any{
	nil,
	[]byte{}, []byte{0}, []byte{0, 0}, []byte{0, 1}, []byte{1}, []byte{0xFF},
	"", "\x00", "\x00\x00", "\x00\xff", "a", "a\x00", "a\x00\x00", "a\x01", "b", "\xff",
	int64(math.MinInt64), int64(math.MinInt64 + 1), -1 << 32, -65536, -65535, -256, -255, -2, -1,
	0, 1, 2, 255, 256, 65535, 65536, 1 << 32, int64(math.MaxInt64), uint64(1 << 63), uint64(math.MaxUint64),
	math.Inf(-1), -math.MaxFloat64, -1.0, -math.SmallestNonzeroFloat64,
	0.0, math.SmallestNonzeroFloat64, 1.0, math.MaxFloat64, math.Inf(1), math.NaN(),
	false, true,
	time.Unix(math.MinInt64, 0), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(-1, 0), time.Unix(-1, 999999999),
	time.Unix(0, 0), time.Unix(0, 1), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Unix(math.MaxInt64, 999999999),
}

func TestKnownOrder(t *testing.T) {
	prev, err := Encode(tupAscending[0])
	require.NoError(t, err)
	for i := 1; i < len(tupAscending); i++ {
		a, b := tupAscending[i-1], tupAscending[i]
		enc, err := Encode(b)
		require.NoError(t, err)
		assert.Equal(t, -1, bytes.Compare(prev, enc), "%#v < %#v", a, b)
		assert.Equal(t, -1, Compare([]any{a}, []any{b}), "%#v < %#v", a, b)
		assert.Equal(t, 1, Compare([]any{b}, []any{a}), "%#v > %#v", b, a)
		prev = enc
	}
	assert.Equal(t, -1, Compare([]any{"a"}, []any{"a", nil}))
	assert.Zero(t, Compare([]any{int64(5), math.NaN()}, []any{uint8(5), math.NaN()}))
}

// End bounds exactly a tuple and its extensions: not "a\x00", whose
// encoding starts with that of "a".
func TestTupleEnd(t *testing.T) {
	p, err := Encode("a")
	require.NoError(t, err)
	ext, err := Encode("a", "z", 1)
	require.NoError(t, err)
	other, err := Encode("a\x00")
	require.NoError(t, err)
	in := bytes.Clone(p)
	end := End(in)
	assert.Equal(t, p, in, "input modified")
	assert.Equal(t, append(bytes.Clone(p), 0xFF), end)
	for _, k := range [][]byte{p, ext} {
		assert.True(t, bytes.Compare(k, p) >= 0 && bytes.Compare(k, end) < 0)
	}
	assert.Equal(t, 1, bytes.Compare(other, end))
}

func TestUnsupportedTypes(t *testing.T) {
	n := 1
	pn := &n
	for _, v := range []any{
		struct{}{}, map[string]int{}, make(chan int), []string{"a"}, []int{1},
		complex(1, 2), func() {}, &pn, (**int)(nil), &struct{}{}, (*struct{})(nil),
		uintptr(1), [2]byte{},
	} {
		_, err := AppendElement(nil, v)
		require.ErrorIs(t, err, ErrUnsupportedType, "%T", v)

		dst, err := Append([]byte("ab"), "ok", v)
		require.ErrorIs(t, err, ErrUnsupportedType, "%T", v)
		assert.Contains(t, err.Error(), "element 1")
		assert.Equal(t, []byte("ab"), dst)

		assert.Panics(t, func() { Compare([]any{v}, []any{1}) })
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct{ name, hex string }{
		{"empty element", ""},
		{"unknown code", "03"},
		{"code FF", "FF"},
		{"code between ints and float", "1D"},
		{"bytes unterminated", "01"},
		{"string unterminated", "02 61"},
		{"escaped zero then end", "02 00FF"},
		{"int truncated", "15"},
		{"int8 truncated", "1C 01020304050607"},
		{"int leading zero", "15 00"},
		{"int2 leading zero", "16 00 01"},
		{"negative zero", "13 FF"},
		{"negative leading FF", "12 FF 00"},
		{"below MinInt64", "0C 7FFFFFFFFFFFFFFE"},
		{"-MaxUint64", "0C 0000000000000000"},
		{"float truncated", "21 000000"},
		{"NaN payload", "21 FFF8000000000001"},
		{"negative NaN", "21 0007FFFFFFFFFFFF"},
		{"signalling NaN", "21 FFF0000000000001"},
		{"float negative zero", "21 7FFFFFFFFFFFFFFF"},
		{"time truncated", "30 8000000000000000 000000"},
		{"time nanos too big", "30 8000000000000000 3B9ACA00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tupHex(t, tc.hex)
			_, _, err := DecodeElement(b)
			require.ErrorIs(t, err, ErrMalformedKey)
			_, err = ElementLen(b)
			require.ErrorIs(t, err, ErrMalformedKey)
			if len(b) > 0 {
				_, err = Decode(append([]byte{0x14}, b...))
				require.ErrorIs(t, err, ErrMalformedKey)
				assert.Contains(t, err.Error(), "offset 1")
			}
		})
	}
}

// Random tuples.

var (
	tupInts = []int64{
		0, 1, -1, 2, -2, 127, -128, 255, -255, 256, -256, 65535, -65535, 65536, -65536,
		1<<31 - 1, -1 << 31, 1 << 32, -1 << 32, 1<<56 - 1, 1 << 56, -1 << 56, -1<<56 - 1,
		math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1,
	}
	tupUints  = []uint64{1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64}
	tupFloats = []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, math.Inf(1), math.Inf(-1), math.NaN(),
		math.Float64frombits(0x7FF0000000000001), math.Float64frombits(0xFFF8000000000000),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64,
		math.Float64frombits(0x000FFFFFFFFFFFFF), -math.Float64frombits(0x000FFFFFFFFFFFFF),
		math.Nextafter(1, 2), math.Nextafter(-1, -2), math.MaxInt64, math.MinInt64,
	}
	tupTimes = []time.Time{
		time.Unix(0, 0), time.Unix(0, 1), time.Unix(-1, 0), time.Unix(-1, 999999999),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(292277026596, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(math.MinInt64, 0), time.Unix(math.MaxInt64, 999999999),
	}
	tupZones     = []*time.Location{time.UTC, time.Local, time.FixedZone("E", 5*3600), time.FixedZone("W", -7*3600)}
	tupByteAlpha = []byte{0x00, 0x01, 'a', 'b', 0x7F, 0x80, 0xFE, 0xFF}
)

func tupRandBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(5))
	for i := range b {
		b[i] = tupByteAlpha[r.IntN(len(tupByteAlpha))]
	}
	return b
}

func tupRandInt(r *rand.Rand) int64 {
	if r.IntN(2) == 0 {
		return tupInts[r.IntN(len(tupInts))]
	}
	return r.Int64()>>r.IntN(64) - r.Int64()>>r.IntN(64)
}

func tupRandUint(r *rand.Rand) uint64 {
	if r.IntN(2) == 0 {
		return tupUints[r.IntN(len(tupUints))]
	}
	return r.Uint64() >> r.IntN(64)
}

func tupRandFloat(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return tupFloats[r.IntN(len(tupFloats))]
	case 1:
		return math.Float64frombits(r.Uint64()) // includes NaNs and subnormals
	case 2:
		return math.Float64frombits(r.Uint64() & 0x800FFFFFFFFFFFFF) // subnormal
	}
	return r.NormFloat64()
}

func tupRandTime(r *rand.Rand) time.Time {
	var t time.Time
	if r.IntN(2) == 0 {
		t = tupTimes[r.IntN(len(tupTimes))]
	} else {
		t = time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(3)*r.Int64N(1e9))
	}
	return t.In(tupZones[r.IntN(len(tupZones))])
}

func tupRandElem(r *rand.Rand) any {
	switch r.IntN(24) {
	case 0:
		return nil
	case 1:
		return tupRandBytes(r)
	case 2:
		return tupRaw(tupRandBytes(r))
	case 3, 4:
		return string(tupRandBytes(r))
	case 5:
		return tupTown(tupRandBytes(r))
	case 6, 7:
		return tupRandInt(r)
	case 8:
		return int(tupRandInt(r))
	case 9:
		return int8(tupRandInt(r))
	case 10:
		return int16(tupRandInt(r))
	case 11:
		return int32(tupRandInt(r))
	case 12:
		return tupID(tupRandInt(r))
	case 13:
		return tupRandUint(r)
	case 14:
		return uint8(tupRandUint(r))
	case 15:
		return uint32(tupRandUint(r))
	case 16:
		return uint(tupRandUint(r))
	case 17, 18:
		return tupRandFloat(r)
	case 19:
		return float32(tupRandFloat(r))
	case 20:
		return r.IntN(2) == 0
	case 21:
		return tupRandTime(r)
	case 22:
		s := string(tupRandBytes(r))
		return &s
	}
	return (*int64)(nil)
}

// tupRetype returns v as another Go type holding the same element, if any.
func tupRetype(r *rand.Rand, v any) any {
	c, _ := canonical(v)
	switch c := c.(type) {
	case []byte:
		return tupRaw(c)
	case string:
		if r.IntN(2) == 0 {
			return &c
		}
		return tupTown(c)
	case int64:
		switch {
		case c >= 0 && c <= math.MaxUint16:
			return tupSmall(c)
		case c >= math.MinInt8 && c <= math.MaxInt8:
			return int8(c)
		}
		return tupID(c)
	case uint64:
		if c <= math.MaxInt64 {
			return int64(c)
		}
		return uint(c)
	case float64:
		if float64(float32(c)) == c {
			return float32(c)
		}
		return &c
	case bool:
		return tupFlag(c)
	case time.Time:
		return c.In(tupZones[r.IntN(len(tupZones))])
	}
	return (*string)(nil)
}

func tupRandTuple(r *rand.Rand) []any {
	t := make([]any, 1+r.IntN(4))
	for i := range t {
		t[i] = tupRandElem(r)
	}
	return t
}

// tupRelated returns a tuple that often shares a prefix with t, with some
// shared elements given another Go type.
func tupRelated(r *rand.Rand, t []any) []any {
	if r.IntN(4) == 0 {
		return tupRandTuple(r)
	}
	u := make([]any, 0, 4)
	for _, v := range t[:r.IntN(len(t)+1)] {
		if r.IntN(3) == 0 {
			v = tupRetype(r, v)
		}
		u = append(u, v)
	}
	for len(u) == 0 || (len(u) < 4 && r.IntN(2) == 0) {
		u = append(u, tupRandElem(r))
	}
	return u
}

func tupSign(c int) int {
	return min(max(c, -1), 1)
}

// checkTuplePair checks order preservation, injectivity and round trips
// for a pair of tuples.
func checkTuplePair(t *testing.T, a, b []any) {
	t.Helper()
	ea, err := Encode(a...)
	require.NoError(t, err)
	eb, err := Encode(b...)
	require.NoError(t, err)
	c := Compare(a, b)
	require.Equal(t, -c, Compare(b, a), "antisymmetry: %#v vs %#v", a, b)
	require.Equal(t, tupSign(c), bytes.Compare(ea, eb), "order: %#v vs %#v\n%x\n%x", a, b, ea, eb)
	require.Equal(t, c == 0, bytes.Equal(ea, eb), "injectivity: %#v vs %#v", a, b)
	checkRoundTrip(t, a, ea)
	checkRoundTrip(t, b, eb)
}

func checkRoundTrip(t *testing.T, tup []any, enc []byte) {
	t.Helper()
	dec, err := Decode(enc)
	require.NoError(t, err, "%#v: %x", tup, enc)
	require.Len(t, dec, len(tup))
	require.Zero(t, Compare(tup, dec), "%#v decoded as %#v", tup, dec)
	again, err := Encode(dec...)
	require.NoError(t, err)
	require.Equal(t, enc, again)
	for i, v := range dec {
		want, _ := canonical(tup[i])
		switch w := want.(type) {
		case uint64:
			if w <= math.MaxInt64 {
				want = int64(w)
			}
		case float64:
			switch {
			case math.IsNaN(w):
				want = math.Float64frombits(canonicalNaN)
			case w == 0:
				want = 0.0 // -0 too
			}
			require.Equal(t, math.Float64bits(want.(float64)), math.Float64bits(v.(float64)))
			continue
		case time.Time:
			require.Equal(t, w.Unix(), v.(time.Time).Unix())
			require.Equal(t, w.Nanosecond(), v.(time.Time).Nanosecond())
			require.Equal(t, time.UTC, v.(time.Time).Location())
			continue
		}
		require.Equal(t, want, v)
	}
}

func TestTupleProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a := tupRandTuple(r)
		b := tupRelated(r, a)
		checkTuplePair(t, a, b)

		ea, err := Encode(a...)
		require.NoError(t, err)
		// Prefixes: enc(a[:k]) is a byte prefix of enc(a), and enc(a)
		// lies in [enc(a[:k]), End(enc(a[:k]))).
		for k := range len(a) + 1 {
			p, err := Encode(a[:k]...)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(ea, p))
			require.Equal(t, -1, bytes.Compare(ea, End(p)))
		}
		// Element by element: ElementLen agrees with DecodeElement and
		// with the element's own encoding.
		rest := ea
		for _, v := range a {
			n, err := ElementLen(rest)
			require.NoError(t, err)
			e, err := AppendElement(nil, v)
			require.NoError(t, err)
			require.Equal(t, e, rest[:n])
			_, after, err := DecodeElement(rest)
			require.NoError(t, err)
			require.Equal(t, rest[n:], after)
			rest = after
		}
		require.Empty(t, rest)
	}
}

func FuzzDecodeTuple(f *testing.F) {
	for _, v := range tupAscending {
		b, _ := Encode(v, "x\x00", -3)
		f.Add(b)
	}
	for _, s := range []string{"", "03", "0261", "1500", "13FF", "0C7FFFFFFFFFFFFFFE", "21FFF8000000000001", "217FFFFFFFFFFFFFFF", "3080000000000000003B9ACA00"} {
		b, err := hex.DecodeString(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, lenErr := ElementLen(data)
		_, rest, elemErr := DecodeElement(data)
		require.Equal(t, lenErr == nil, elemErr == nil)
		if lenErr == nil {
			require.Equal(t, len(data)-n, len(rest))
		} else {
			require.ErrorIs(t, lenErr, ErrMalformedKey)
		}
		dec, err := Decode(data)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformedKey)
			return
		}
		enc, err := Encode(dec...)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, enc), "%x re-encodes as %x", data, enc)
	})
}

// tupFromShape builds a tuple of 1 to 4 elements whose types and order
// come from the low nibble of shape.
func tupFromShape(shape byte, s string, i int64, f float64, b []byte) []any {
	cands := []any{s, i, f, b, uint64(i), i&1 == 0, time.Unix(i, int64(len(s))*1e8), tupTown(s), float32(f), nil}
	n := 1 + int(shape&3)
	start := 2 * int(shape>>2&3)
	t := make([]any, n)
	for k := range t {
		t[k] = cands[(start+k)%len(cands)]
	}
	return t
}

func FuzzTupleOrder(f *testing.F) {
	f.Add("a", int64(1), 1.0, []byte{0}, "a\x00", int64(-1), math.Copysign(0, -1), []byte{}, byte(0x33))
	f.Add("", int64(math.MinInt64), math.Inf(1), []byte{0xFF}, "", int64(math.MaxInt64), math.NaN(), []byte{0, 0xFF}, byte(0x00))
	f.Add("x", int64(256), 0.5, []byte("b"), "x", int64(255), 0.5, []byte("b\x00"), byte(0xFF))
	f.Add("\xff", int64(-256), -1.5, []byte(nil), "\xff\x00", int64(-255), math.Copysign(0, -1), []byte{1}, byte(0x5A))
	f.Fuzz(func(t *testing.T, s1 string, i1 int64, f1 float64, b1 []byte, s2 string, i2 int64, f2 float64, b2 []byte, shape byte) {
		a := tupFromShape(shape, s1, i1, f1, b1)
		b := tupFromShape(shape>>4, s2, i2, f2, b2)
		checkTuplePair(t, a, b)
		checkTuplePair(t, a, tupFromShape(shape, s1, i1, f1, b1)[:1])
	})
}

func TestNoAllocations(t *testing.T) {
	enc, err := Encode("Red\x00mond", []byte("x"), int64(-300), 2.5, true, time.Unix(5, 6), nil)
	require.NoError(t, err)
	buf := make([]byte, 0, 128)
	allocs := testing.AllocsPerRun(100, func() {
		for rest := enc; len(rest) > 0; {
			n, err := ElementLen(rest)
			if err != nil {
				panic(err)
			}
			rest = rest[n:]
		}
		b := AppendString(buf[:0], "Red\x00mond")
		b = appendBytes(b, []byte("x"))
		b = AppendInt(b, -300)
		b = appendFloat(b, 2.5)
		b = appendBool(b, true)
		b = appendTime(b, time.Unix(5, 6))
		b = appendNil(b)
		if !bytes.Equal(b, enc) {
			panic("mismatch")
		}
	})
	assert.Zero(t, allocs)
}

// TestTupleEndLeavesItsArgument: End returns a new key, and writes
// nothing into the spare capacity of the key it extends, which may be a
// prefix that concurrent scans share (two Verify runs raced there).
func TestTupleEndLeavesItsArgument(t *testing.T) {
	buf := []byte{1, 2, 3, 9, 9, 9, 9, 9, 9}
	k := buf[:3]
	end := End(k)
	require.Equal(t, []byte{1, 2, 3, 0xFF}, end)
	require.Equal(t, []byte{1, 2, 3, 9, 9, 9, 9, 9, 9}, buf, "End wrote past its argument")
}

// TestAppendElementKeepsNothing: AppendElement keeps nothing of its value,
// so a caller's value converted to any stays on the caller's stack: a
// Table.Get of a primary key allocates nothing for it. Named types and
// pointers, which take the reflect path, included.
func TestAppendElementKeepsNothing(t *testing.T) {
	when := time.Unix(1700000000, 5).UTC()
	town, id := "Redmond", int64(-7)
	buf := make([]byte, 0, 64)
	for _, tc := range []struct {
		name string
		enc  func() ([]byte, error) // converts its value to any itself
		want any                    // the value's canonical form
	}{
		{"string", func() ([]byte, error) { return AppendElement(buf[:0], town) }, town},
		{"named string", func() ([]byte, error) { return AppendElement(buf[:0], tupTown(town)) }, town},
		{"named int", func() ([]byte, error) { return AppendElement(buf[:0], tupID(id)) }, id},
		{"named float32", func() ([]byte, error) { return AppendElement(buf[:0], tupRatio(id)) }, float64(id)},
		{"string pointer", func() ([]byte, error) { return AppendElement(buf[:0], &town) }, town},
		{"time pointer", func() ([]byte, error) { return AppendElement(buf[:0], &when) }, when},
		{"time", func() ([]byte, error) { return AppendElement(buf[:0], when) }, when},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := AppendElement(nil, tc.want)
			require.NoError(t, err)
			got, err := tc.enc()
			require.NoError(t, err)
			assert.Equal(t, want, got)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := tc.enc(); err != nil {
					panic(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// TestAppendReflectedIsCanonical: appendReflected encodes a value of a
// named type, or a pointer, as its canonical form encodes (the canonical
// function is the reference), and refuses what canonical refuses.
func TestAppendReflectedIsCanonical(t *testing.T) {
	type (
		tupInt8  int8
		tupU64   uint64
		tupF64   float64
		tupBytes []uint8
		tupTime  time.Time
	)
	s, i, u, f, b := tupTown("a\x00b"), tupID(math.MinInt64), tupU64(math.MaxUint64), tupF64(math.Inf(-1)), tupFlag(false)
	when := time.Unix(-5, 7).UTC()
	values := []any{
		s, &s, i, &i, tupInt8(-3), u, &u, tupSmall(7), f, &f, tupRatio(0.1), b, &b,
		tupRaw(nil), tupRaw("x\x00"), tupBytes("y"), &when, tupTime(when), &[]byte{1},
		(*tupTown)(nil), (*tupID)(nil), (*time.Time)(nil), (*tupTime)(nil), (*[]string)(nil),
		[]string{"a"}, struct{}{}, &struct{}{}, uintptr(1), complex64(1),
	}
	for _, v := range values {
		c, wantOK := canonical(v)
		got, ok := appendReflected([]byte("p"), v)
		require.Equal(t, wantOK, ok, "%T", v)
		if !ok {
			assert.Equal(t, []byte("p"), got, "%T: nothing appended", v)
			continue
		}
		want, ok := appendAny([]byte("p"), c)
		require.True(t, ok, "%T", v)
		assert.Equal(t, want, got, "%T", v)
	}
}
