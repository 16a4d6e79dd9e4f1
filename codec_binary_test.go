package indextable_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
)

// codecTown is a named string type.
type codecTown string

// codecInner is a nested record; note is unexported and must be skipped.
type codecInner struct {
	Name string
	N    int
	Tags []string
	note string
}

// codecRich has a field of (almost) every kind BinaryCodec supports.
type codecRich struct {
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	UP  uintptr

	F32 float32
	F64 float64

	B     bool
	S     string
	Bytes []byte
	PInt  *int
	PStr  *string
	Strs  []string
	Arr   [3]int16
	ArrS  [2]string
	M     map[string]int

	Inner    codecInner
	PInner   *codecInner
	Inners   []codecInner
	T        time.Time
	PT       *time.Time
	Town     codecTown
	Towns    []codecTown
	ByTown   map[codecTown][]int8
	hidden   string
	hiddenN  int
	hiddenIn *codecInner
}

func codecPtr[T any](v T) *T { return &v }

func codecNegZero() float64 { return math.Copysign(0, -1) }

// codecRichCases are the values of the round-trip table.
func codecRichCases() []struct {
	name string
	v    codecRich
} {
	ist := time.FixedZone("IST", 5*3600+1800)
	pst := time.FixedZone("PST", -8*3600)
	odd := time.FixedZone("LMT", -(3*3600 + 1800 + 17))
	return []struct {
		name string
		v    codecRich
	}{
		{"zero", codecRich{}},
		{"max", codecRich{
			I: math.MaxInt, I8: math.MaxInt8, I16: math.MaxInt16, I32: math.MaxInt32, I64: math.MaxInt64,
			U: math.MaxUint, U8: math.MaxUint8, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxUint64,
			UP:  ^uintptr(0),
			F32: float32(math.Inf(1)), F64: math.NaN(),
			B:      true,
			S:      "\xff\xfe\x00a\x00\xc3",
			Bytes:  []byte{0, 1, 0xff, 0},
			PInt:   codecPtr(math.MaxInt),
			PStr:   codecPtr(""), // non-nil pointer to an empty string
			Strs:   []string{},   // empty, not nil
			Arr:    [3]int16{math.MaxInt16, math.MinInt16, 0},
			ArrS:   [2]string{"\x00", "\xff"},
			M:      map[string]int{}, // empty, not nil
			Inner:  codecInner{Name: "inner", N: -1, Tags: []string{"a", ""}, note: "secret"},
			PInner: &codecInner{Name: "pinner", Tags: []string{}, note: "secret"},
			Inners: []codecInner{{Name: "x", note: "secret"}, {}},
			T:      time.Date(2024, 2, 29, 23, 59, 59, 123456789, ist),
			PT:     codecPtr(time.Date(2000, 1, 1, 0, 0, 0, 1, time.UTC)),
			Town:   "Zürich",
			Towns:  []codecTown{},
			ByTown: map[codecTown][]int8{"a": {math.MinInt8, math.MaxInt8}, "": nil, "b": {}},
			hidden: "hidden", hiddenN: 7, hiddenIn: &codecInner{Name: "h"},
		}},
		{"min", codecRich{
			I: math.MinInt, I8: math.MinInt8, I16: math.MinInt16, I32: math.MinInt32, I64: math.MinInt64,
			U: 1, U8: 1, U16: 1, U32: 1, U64: 1, UP: 1,
			F32:    float32(math.Inf(-1)),
			F64:    codecNegZero(),
			S:      "",
			Bytes:  []byte{}, // empty, not nil
			PInt:   codecPtr(math.MinInt),
			Strs:   nil,
			M:      nil,
			Arr:    [3]int16{-1, -2, -3},
			T:      time.Date(1900, 6, 15, 1, 2, 3, 999999999, pst),
			Town:   "",
			Towns:  []codecTown{""},
			hidden: "x",
		}},
		{"mixed", codecRich{
			I: -1, I8: -1, I16: -1, I32: -1, I64: -1,
			U: 1 << 63, U8: 1 << 7, U16: 1 << 15, U32: 1 << 31, U64: 1 << 63, UP: 1 << 40,
			F32:    float32(codecNegZero()),
			F64:    math.Inf(1),
			B:      false,
			S:      strings.Repeat("é", 200) + "\x80",
			Bytes:  nil,
			PStr:   codecPtr("\x00\xff"),
			Strs:   []string{"", "\xff", "ok", strings.Repeat("x", 300)},
			M:      map[string]int{"": math.MinInt, "\xff": math.MaxInt, "a": 0},
			PInner: &codecInner{},
			T:      time.Date(2023, 7, 4, 12, 0, 0, 999999999, time.UTC),
			PT:     codecPtr(time.Date(1969, 12, 31, 23, 59, 59, 5, odd)),
			Towns:  nil,
			ByTown: map[codecTown][]int8{},
		}},
		{"nan32 and tiny floats", codecRich{
			F32: float32(math.NaN()),
			F64: math.SmallestNonzeroFloat64,
			T:   time.Date(2023, 7, 4, 12, 0, 0, 0, time.FixedZone("UTC+14", 14*3600)),
			PT:  codecPtr(time.Date(2023, 7, 4, 12, 0, 0, 0, time.FixedZone("UTC-12", -12*3600))),
		}},
		{"float extremes", codecRich{
			F32: math.MaxFloat32,
			F64: -math.MaxFloat64,
			T:   time.Now(), // Local, with a monotonic reading
			PT:  codecPtr(time.Now().UTC()),
		}},
		{"float32 denormal", codecRich{
			F32: math.SmallestNonzeroFloat32,
			F64: math.Float64frombits(0x7ff8_0000_dead_beef), // NaN with a payload
		}},
	}
}

// codecStripUnexported zeroes the unexported fields a decode must leave
// zero.
func codecStripUnexported(r *codecRich) {
	r.hidden, r.hiddenN, r.hiddenIn = "", 0, nil
	r.Inner.note = ""
	if r.PInner != nil {
		in := *r.PInner
		in.note = ""
		r.PInner = &in
	}
	if r.Inners != nil {
		r.Inners = append([]codecInner(nil), r.Inners...)
		for i := range r.Inners {
			r.Inners[i].note = ""
		}
	}
}

func codecRequireFloat32Same(t *testing.T, want, got float32, field string) {
	t.Helper()
	if math.IsNaN(float64(want)) {
		require.Truef(t, math.IsNaN(float64(got)), "%s: want NaN, got %v", field, got)
		return
	}
	require.Equalf(t, math.Float32bits(want), math.Float32bits(got), "%s: want %v, got %v (bits differ: sign of zero?)", field, want, got)
}

func codecRequireFloat64Same(t *testing.T, want, got float64, field string) {
	t.Helper()
	if math.IsNaN(want) {
		require.Truef(t, math.IsNaN(got), "%s: want NaN, got %v", field, got)
		return
	}
	require.Equalf(t, math.Float64bits(want), math.Float64bits(got), "%s: want %v, got %v (bits differ: sign of zero?)", field, want, got)
}

// codecRequireTimeSame checks a decoded time: the same instant, the same
// zone offset, and UTC still UTC.
func codecRequireTimeSame(t *testing.T, want, got time.Time, field string) {
	t.Helper()
	require.Truef(t, want.Equal(got), "%s: want %v, got %v", field, want, got)
	_, wantOff := want.Zone()
	_, gotOff := got.Zone()
	require.Equalf(t, wantOff, gotOff, "%s: zone offset of %v", field, got)
	if want.Location() == time.UTC || wantOff == 0 {
		require.Equalf(t, time.UTC, got.Location(), "%s: want UTC, got %v", field, got.Location())
	}
	require.Equal(t, want.IsZero(), got.IsZero(), field)
}

func codecRequireRichEqual(t *testing.T, want, got codecRich) {
	t.Helper()
	codecRequireFloat32Same(t, want.F32, got.F32, "F32")
	codecRequireFloat64Same(t, want.F64, got.F64, "F64")
	codecRequireTimeSame(t, want.T, got.T, "T")
	require.Equal(t, want.PT == nil, got.PT == nil, "PT nil-ness")
	if want.PT != nil {
		codecRequireTimeSame(t, *want.PT, *got.PT, "*PT")
	}

	// Nil-ness, explicitly (DeepEqual below checks it too).
	require.Equal(t, want.Bytes == nil, got.Bytes == nil, "Bytes nil-ness")
	require.Equal(t, want.Strs == nil, got.Strs == nil, "Strs nil-ness")
	require.Equal(t, want.M == nil, got.M == nil, "M nil-ness")
	require.Equal(t, want.PInt == nil, got.PInt == nil, "PInt nil-ness")
	require.Equal(t, want.PStr == nil, got.PStr == nil, "PStr nil-ness")
	require.Equal(t, want.PInner == nil, got.PInner == nil, "PInner nil-ness")
	require.Equal(t, want.Towns == nil, got.Towns == nil, "Towns nil-ness")
	require.Equal(t, want.ByTown == nil, got.ByTown == nil, "ByTown nil-ness")

	// Unexported fields are skipped: they stay zero.
	require.Empty(t, got.hidden)
	require.Zero(t, got.hiddenN)
	require.Nil(t, got.hiddenIn)
	require.Empty(t, got.Inner.note)
	if got.PInner != nil {
		require.Empty(t, got.PInner.note)
	}
	for _, in := range got.Inners {
		require.Empty(t, in.note)
	}

	codecStripUnexported(&want)
	want.F32, got.F32, want.F64, got.F64 = 0, 0, 0, 0
	want.T, got.T, want.PT, got.PT = time.Time{}, time.Time{}, nil, nil
	require.True(t, reflect.DeepEqual(want, got), "want %#v\ngot  %#v", want, got)
}

func TestBinaryCodecRoundTripRich(t *testing.T) {
	c := &indextable.BinaryCodec{}
	for _, tc := range codecRichCases() {
		t.Run(tc.name, func(t *testing.T) {
			data, err := c.Marshal(&tc.v)
			require.NoError(t, err)

			// Marshal(v) and Marshal(&v) encode the same (the addressable
			// and the non-addressable paths of the struct encoder).
			byValue, err := c.Marshal(tc.v)
			require.NoError(t, err)
			if len(tc.v.M) <= 1 && len(tc.v.ByTown) <= 1 {
				require.Equal(t, data, byValue, "Marshal(v) and Marshal(&v) differ")
			} else { // map order varies
				require.Equal(t, len(data), len(byValue))
			}

			var got codecRich
			require.NoError(t, c.Unmarshal(data, &got))
			codecRequireRichEqual(t, tc.v, got)

			// A fresh codec (plans compiled anew) decodes it too.
			var got2 codecRich
			require.NoError(t, (&indextable.BinaryCodec{}).Unmarshal(data, &got2))
			codecRequireRichEqual(t, tc.v, got2)

			// Re-encoding the decoded value decodes to the same again.
			again, err := c.Marshal(&got)
			require.NoError(t, err)
			var got3 codecRich
			require.NoError(t, c.Unmarshal(again, &got3))
			codecRequireRichEqual(t, tc.v, got3)
		})
	}
}

func TestBinaryCodecAppendMarshal(t *testing.T) {
	c := &indextable.BinaryCodec{}
	v := codecInner{Name: "n", N: 3, Tags: []string{"t"}}
	want, err := c.Marshal(v)
	require.NoError(t, err)

	prefix := []byte("prefix")
	dst := make([]byte, len(prefix), 100)
	copy(dst, prefix)
	got, err := c.AppendMarshal(dst, &v)
	require.NoError(t, err)
	require.Equal(t, prefix, got[:len(prefix)])
	require.Equal(t, want, got[len(prefix):])
}

// TestBinaryCodecSingleValues covers non-struct values: projections encode
// single field values.
func TestBinaryCodecSingleValues(t *testing.T) {
	c := &indextable.BinaryCodec{}
	cases := []struct {
		name string
		v    any
	}{
		{"string", "héllo"},
		{"empty string", ""},
		{"invalid utf8 string", "\xff\x00\xfe"},
		{"named string", codecTown("Zürich")},
		{"int", -42},
		{"int max", math.MaxInt},
		{"int min", math.MinInt},
		{"int8 min", int8(math.MinInt8)},
		{"int16 max", int16(math.MaxInt16)},
		{"uint64 max", uint64(math.MaxUint64)},
		{"uint8 max", uint8(math.MaxUint8)},
		{"bool true", true},
		{"bool false", false},
		{"float64", 3.5},
		{"float32", float32(-1.25)},
		{"strings", []string{"a", "", "\xff"}},
		{"strings empty", []string{}},
		{"strings nil", []string(nil)},
		{"bytes", []byte{0, 1, 2}},
		{"bytes empty", []byte{}},
		{"bytes nil", []byte(nil)},
		{"ints", []int64{math.MinInt64, 0, math.MaxInt64}},
		{"array", [3]string{"a", "", "c"}},
		{"map", map[string]int{"a": 1}},
		{"map nil", map[string]int(nil)},
		{"nested slices", [][]string{nil, {}, {"x"}}},
		{"time utc", time.Date(2020, 5, 6, 7, 8, 9, 10, time.UTC)},
		{"time zoned", time.Date(2020, 5, 6, 7, 8, 9, 10, time.FixedZone("", -3600))},
	}
	t.Run("pointers", func(t *testing.T) {
		// Marshal strips one level of pointer: Marshal(p) encodes *p.
		p := &codecInner{Name: "p", Tags: []string{}}
		data, err := c.Marshal(p)
		require.NoError(t, err)
		var got codecInner
		require.NoError(t, c.Unmarshal(data, &got))
		require.Equal(t, *p, got)

		// Marshal(&p) encodes the pointer itself, nil or not.
		for _, want := range []*codecInner{p, nil} {
			data, err := c.Marshal(&want)
			require.NoError(t, err)
			var got *codecInner
			require.NoError(t, c.Unmarshal(data, &got))
			require.Equal(t, want, got)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := c.Marshal(tc.v)
			require.NoError(t, err)

			// Marshal(&v) encodes what Marshal(v) does, unless v is a
			// pointer already.
			rv := reflect.ValueOf(tc.v)
			if rv.Kind() != reflect.Pointer {
				p := reflect.New(rv.Type())
				p.Elem().Set(rv)
				viaPtr, err := c.Marshal(p.Interface())
				require.NoError(t, err)
				require.Equal(t, data, viaPtr)
			}

			target := reflect.New(rv.Type())
			require.NoError(t, c.Unmarshal(data, target.Interface()))
			got := target.Elem().Interface()
			if want, ok := tc.v.(time.Time); ok {
				codecRequireTimeSame(t, want, got.(time.Time), "time")
				return
			}
			require.Truef(t, reflect.DeepEqual(tc.v, got), "want %#v, got %#v", tc.v, got)
		})
	}
}

// Types the codec must reject.
type (
	codecNode  struct{ Next *codecNode }
	codecMutA  struct{ B *codecMutB }
	codecMutB  struct{ A *codecMutA }
	codecDeep  struct{ L []map[string]*codecDeep }
	codecTwice struct {
		A, B *codecInner // the same pointer type twice is not recursion
		C    struct{ D *codecInner }
	}
)

func TestBinaryCodecUnsupportedTypes(t *testing.T) {
	c := &indextable.BinaryCodec{}
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"nil pointer", (*codecRich)(nil)},
		{"chan", make(chan int)},
		{"func", func() {}},
		{"complex128", complex(1, 2)},
		{"complex64 field", struct{ Z complex64 }{}},
		{"chan field", struct{ C chan int }{}},
		{"func field", struct{ F func() }{}},
		{"any field", struct{ A any }{A: 1}},
		{"any field nil", struct{ A any }{}},
		{"error field", struct{ E error }{}},
		{"nested any", struct{ In struct{ X []any } }{}},
		{"map of any", map[string]any{"a": 1}},
		{"slice of chan", []chan int{}},
		{"map with func value", map[string]func(){}},
		{"pointer to chan", codecPtr(make(chan int))},
		{"recursive pointer", codecNode{}},
		{"recursive pointer via pointer", &codecNode{Next: &codecNode{}}},
		{"mutually recursive", codecMutA{}},
		{"recursive through slice of maps of pointers", codecDeep{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = c.Marshal(tc.v) })
			require.ErrorIs(t, err, indextable.ErrCodec)
			// The sentinel first, then where, however deep the field.
			assert.True(t, strings.HasPrefix(err.Error(), "indextable: codec: "), err.Error())
			assert.Equal(t, 1, strings.Count(err.Error(), "indextable:"), err.Error())
			require.NotPanics(t, func() { _, err = c.AppendMarshal([]byte("x"), tc.v) })
			require.ErrorIs(t, err, indextable.ErrCodec)
		})
	}

	// Decoding into the same types fails the same way.
	for _, target := range []any{new(chan int), new(func()), new(complex128), new(struct{ A any }), new(codecNode), new(codecMutB)} {
		t.Run(fmt.Sprintf("decode into %T", target), func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = c.Unmarshal([]byte{0, 0, 0, 0, 0}, target) })
			require.ErrorIs(t, err, indextable.ErrCodec)
		})
	}

	t.Run("repeated pointer type is not recursion", func(t *testing.T) {
		v := codecTwice{A: &codecInner{Name: "a"}, C: struct{ D *codecInner }{&codecInner{Name: "d"}}}
		data, err := c.Marshal(v)
		require.NoError(t, err)
		var got codecTwice
		require.NoError(t, c.Unmarshal(data, &got))
		require.Equal(t, v, got)
	})
}

// Value-recursive types: recursion through a slice or a map, not a pointer.
type (
	codecTree  struct{ Kids []codecTree }
	codecGraph struct{ Edges map[string]codecGraph }
	codecNest  []codecNest
)

// TestBinaryCodecRecursiveThroughSliceOrMap checks that types recursive
// through a slice or map (not a pointer) are rejected with ErrCodec like
// pointer-recursive ones. Each case runs in a child process with a small
// stack limit, since a compiler that recurses forever dies of a fatal,
// unrecoverable stack overflow.
func TestBinaryCodecRecursiveThroughSliceOrMap(t *testing.T) {
	const env = "CODEC_TEST_RECURSION_CHILD"
	if which := os.Getenv(env); which != "" {
		debug.SetMaxStack(64 << 20)
		c := &indextable.BinaryCodec{}
		var err error
		switch which {
		case "slice":
			_, err = c.Marshal(codecTree{Kids: []codecTree{{}}})
		case "map":
			_, err = c.Marshal(codecGraph{})
		case "self slice":
			_, err = c.Marshal(codecNest{nil})
		case "slice decode":
			err = c.Unmarshal([]byte{0, 0, 0, 0, 0}, &codecTree{})
		}
		if errors.Is(err, indextable.ErrCodec) {
			fmt.Println("CODEC-CHILD-OK")
		} else {
			fmt.Println("CODEC-CHILD-NOT-ErrCodec:", err)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for _, which := range []string{"slice", "map", "self slice", "slice decode"} {
		t.Run(which, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBinaryCodecRecursiveThroughSliceOrMap$", "-test.count=1")
			cmd.Env = append(os.Environ(), env+"="+which)
			out, _ := cmd.CombinedOutput()
			s := string(out)
			if !strings.Contains(s, "CODEC-CHILD-OK") {
				if len(s) > 600 {
					s = s[:600] + "…"
				}
				t.Errorf("BUG in codec_binary.go: %s of a type recursive through a slice or map (case %q) should fail with ErrCodec, not recurse forever; the child process printed:\n%s", map[bool]string{true: "decoding", false: "encoding"}[which == "slice decode"], which, s)
			}
		})
	}
}

func TestBinaryCodecUnmarshalTargets(t *testing.T) {
	c := &indextable.BinaryCodec{}
	data, err := c.Marshal(codecInner{Name: "x"})
	require.NoError(t, err)
	for _, target := range []any{nil, codecInner{}, (*codecInner)(nil), "x", 3, []byte{}} {
		t.Run(fmt.Sprintf("%T", target), func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = c.Unmarshal(data, target) })
			require.ErrorIs(t, err, indextable.ErrCodec)
		})
	}
}

// Layouts for the fingerprint tests.
type (
	codecLayout struct {
		Name string
		Age  int
	}
	codecLayoutRenamed struct {
		Nom string
		Age int
	}
	codecLayoutCase struct {
		NAME string
		Age  int
	}
	codecLayoutKind struct {
		Name string
		Age  uint
	}
	codecLayoutSize struct {
		Name string
		Age  int32
	}
	codecLayoutOrder struct {
		Age  int
		Name string
	}
	codecLayoutExtra struct {
		Name string
		Age  int
		More bool
	}
	codecLayoutFewer struct{ Name string }
	codecLayoutSlice struct {
		Name []string
		Age  int
	}
	codecLayoutBytes struct {
		Name []byte
		Age  int
	}
	codecLayoutPtr struct {
		Name *string
		Age  int
	}
	codecLayoutNested struct {
		Name struct{ S string }
		Age  int
	}
	// Compatible: same field names and kinds.
	codecLayoutSame struct {
		Name    codecTown
		Age     int
		private float64
	}
)

func TestBinaryCodecFingerprint(t *testing.T) {
	c := &indextable.BinaryCodec{}
	data, err := c.Marshal(codecLayout{Name: "ann", Age: 3})
	require.NoError(t, err)

	for _, target := range []any{
		new(codecLayoutRenamed), new(codecLayoutCase), new(codecLayoutKind), new(codecLayoutSize), new(codecLayoutOrder),
		new(codecLayoutExtra), new(codecLayoutFewer), new(codecLayoutSlice), new(codecLayoutBytes),
		new(codecLayoutPtr), new(codecLayoutNested), new(string), new(int), new([]string),
		new(struct{ Name, Age string }), new(struct{}),
	} {
		t.Run(fmt.Sprintf("%T", target), func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = c.Unmarshal(data, target) })
			require.ErrorIs(t, err, indextable.ErrCodec)
			require.True(t, reflect.ValueOf(target).Elem().IsZero(), "a failed decode wrote %+v", target)
		})
	}

	t.Run("single values of other types", func(t *testing.T) {
		s, err := c.Marshal("x")
		require.NoError(t, err)
		require.ErrorIs(t, c.Unmarshal(s, new(int)), indextable.ErrCodec)
		require.ErrorIs(t, c.Unmarshal(s, new([]byte)), indextable.ErrCodec)
		i, err := c.Marshal(int64(1))
		require.NoError(t, err)
		require.ErrorIs(t, c.Unmarshal(i, new(uint64)), indextable.ErrCodec)
		require.ErrorIs(t, c.Unmarshal(i, new(int32)), indextable.ErrCodec)
	})

	t.Run("compatible shape decodes", func(t *testing.T) {
		var got codecLayoutSame
		require.NoError(t, c.Unmarshal(data, &got))
		require.Equal(t, codecLayoutSame{Name: "ann", Age: 3}, got)
	})
}

func TestBinaryCodecTruncatedAndTrailing(t *testing.T) {
	c := &indextable.BinaryCodec{}
	type enc struct {
		name string
		data []byte
		into func() any
	}
	var encs []enc
	for _, tc := range codecRichCases() {
		data, err := c.Marshal(&tc.v)
		require.NoError(t, err)
		encs = append(encs, enc{"rich " + tc.name, data, func() any { return new(codecRich) }})
	}
	for _, v := range []any{"héllo", int64(math.MinInt64), []string{"a", "bc"}, []byte{1, 2}, map[string]int{"k": 1}, codecInner{Name: "n", Tags: []string{"t"}}} {
		data, err := c.Marshal(v)
		require.NoError(t, err)
		typ := reflect.TypeOf(v)
		encs = append(encs, enc{fmt.Sprintf("%T", v), data, func() any { return reflect.New(typ).Interface() }})
	}

	for _, e := range encs {
		t.Run(e.name, func(t *testing.T) {
			require.NoError(t, c.Unmarshal(e.data, e.into()))
			for n := 0; n < len(e.data); n++ {
				prefix := bytes.Clone(e.data[:n])
				var err error
				require.NotPanicsf(t, func() { err = c.Unmarshal(prefix, e.into()) }, "prefix of %d bytes", n)
				require.ErrorIsf(t, err, indextable.ErrCodec, "prefix of %d of %d bytes decoded", n, len(e.data))
			}
			for _, tail := range [][]byte{{0}, {1}, {0xff}, []byte("garbage"), e.data} {
				data := append(bytes.Clone(e.data), tail...)
				var err error
				require.NotPanics(t, func() { err = c.Unmarshal(data, e.into()) })
				require.ErrorIsf(t, err, indextable.ErrCodec, "trailing %q accepted", tail)
			}
		})
	}
}

// codecSmallInts is the target of hand-made encodings.
type codecSmallInts struct {
	I8  int8
	U8  uint8
	I16 int16
	U16 uint16
	I32 int32
	U32 uint32
}

// codecHand builds an encoding: the fingerprint of the type of zero
// followed by parts.
func codecHand(t *testing.T, c *indextable.BinaryCodec, zero any, parts ...[]byte) []byte {
	t.Helper()
	b, err := c.Marshal(zero)
	require.NoError(t, err)
	out := bytes.Clone(b[:4])
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func codecVarint(x int64) []byte   { return binary.AppendVarint(nil, x) }
func codecUvarint(x uint64) []byte { return binary.AppendUvarint(nil, x) }

func TestBinaryCodecHandMadeInput(t *testing.T) {
	c := &indextable.BinaryCodec{}
	ints := func(i8 int64, u8 uint64, i16 int64, u16 uint64, i32 int64, u32 uint64) []byte {
		return codecHand(t, c, codecSmallInts{}, codecVarint(i8), codecUvarint(u8), codecVarint(i16), codecUvarint(u16), codecVarint(i32), codecUvarint(u32))
	}

	t.Run("in range", func(t *testing.T) {
		var got codecSmallInts
		require.NoError(t, c.Unmarshal(ints(-128, 255, -32768, 65535, math.MinInt32, math.MaxUint32), &got))
		require.Equal(t, codecSmallInts{-128, 255, -32768, 65535, math.MinInt32, math.MaxUint32}, got)
		// And it is what Marshal makes.
		data, err := c.Marshal(got)
		require.NoError(t, err)
		require.Equal(t, ints(-128, 255, -32768, 65535, math.MinInt32, math.MaxUint32), data)
	})

	bad := []struct {
		name string
		data func() []byte
	}{
		{"int8 128", func() []byte { return ints(128, 0, 0, 0, 0, 0) }},
		{"int8 -129", func() []byte { return ints(-129, 0, 0, 0, 0, 0) }},
		{"uint8 256", func() []byte { return ints(0, 256, 0, 0, 0, 0) }},
		{"int16 32768", func() []byte { return ints(0, 0, 32768, 0, 0, 0) }},
		{"uint16 65536", func() []byte { return ints(0, 0, 0, 65536, 0, 0) }},
		{"int32 max+1", func() []byte { return ints(0, 0, 0, 0, math.MaxInt32+1, 0) }},
		{"int32 min-1", func() []byte { return ints(0, 0, 0, 0, math.MinInt32-1, 0) }},
		{"uint32 max+1", func() []byte { return ints(0, 0, 0, 0, 0, math.MaxUint32+1) }},
		{"single int8", func() []byte { return codecHand(t, c, int8(0), codecVarint(1000)) }},
		{"single uint8", func() []byte { return codecHand(t, c, uint8(0), codecUvarint(math.MaxUint64)) }},
		{"varint of 11 bytes", func() []byte {
			return codecHand(t, c, uint64(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
		}},
		{"varint overflowing 64 bits", func() []byte {
			return codecHand(t, c, uint64(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
		}},
		{"varint unterminated", func() []byte { return codecHand(t, c, int64(0), []byte{0x80, 0x80}) }},
		{"string longer than input", func() []byte { return codecHand(t, c, "", codecUvarint(1<<62), []byte("abc")) }},
		{"string length max uint64", func() []byte { return codecHand(t, c, "", codecUvarint(math.MaxUint64)) }},
		{"bytes longer than input", func() []byte { return codecHand(t, c, []byte(nil), codecUvarint(1<<62)) }},
		{"bytes length max uint64", func() []byte { return codecHand(t, c, []byte(nil), codecUvarint(math.MaxUint64)) }},
		{"slice count huge", func() []byte { return codecHand(t, c, []string(nil), codecUvarint(1<<62)) }},
		{"slice of empty structs count huge", func() []byte { return codecHand(t, c, []struct{}(nil), codecUvarint(1<<40)) }},
		{"map count huge", func() []byte { return codecHand(t, c, map[string]int(nil), codecUvarint(1<<62)) }},
		{"map count max uint64", func() []byte { return codecHand(t, c, map[string]int(nil), codecUvarint(math.MaxUint64)) }},
		{"time nanoseconds 1e9", func() []byte {
			return codecHand(t, c, time.Time{}, codecVarint(0), codecUvarint(1e9), codecVarint(0))
		}},
		{"time offset over a day", func() []byte {
			return codecHand(t, c, time.Time{}, codecVarint(0), codecUvarint(0), codecVarint(24*3600+1))
		}},
		{"time offset under minus a day", func() []byte {
			return codecHand(t, c, time.Time{}, codecVarint(0), codecUvarint(0), codecVarint(-24*3600-1))
		}},
		{"pointer marker then nothing", func() []byte { return codecHand(t, c, codecPtr((*int)(nil)), []byte{1}) }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			var (
				target any
				err    error
			)
			switch {
			case strings.HasPrefix(tc.name, "single int8"):
				target = new(int8)
			case strings.HasPrefix(tc.name, "single uint8"):
				target = new(uint8)
			case strings.HasPrefix(tc.name, "varint of"), strings.HasPrefix(tc.name, "varint overflowing"):
				target = new(uint64)
			case strings.HasPrefix(tc.name, "varint unterminated"):
				target = new(int64)
			case strings.HasPrefix(tc.name, "string"):
				target = new(string)
			case strings.HasPrefix(tc.name, "bytes"):
				target = new([]byte)
			case strings.HasPrefix(tc.name, "slice of empty"):
				target = new([]struct{})
			case strings.HasPrefix(tc.name, "slice"):
				target = new([]string)
			case strings.HasPrefix(tc.name, "map"):
				target = new(map[string]int)
			case strings.HasPrefix(tc.name, "time"):
				target = new(time.Time)
			case strings.HasPrefix(tc.name, "pointer"):
				target = new(*int)
			default:
				target = new(codecSmallInts)
			}
			require.NotPanics(t, func() { err = c.Unmarshal(data, target) })
			require.ErrorIs(t, err, indextable.ErrCodec)
		})
	}

	t.Run("offset at the bounds decodes", func(t *testing.T) {
		for _, off := range []int64{24 * 3600, -24 * 3600} {
			var got time.Time
			require.NoError(t, c.Unmarshal(codecHand(t, c, time.Time{}, codecVarint(0), codecUvarint(5), codecVarint(off)), &got))
			require.True(t, got.Equal(time.Unix(0, 5)))
			_, o := got.Zone()
			require.Equal(t, int(off), o)
		}
	})
}

// codecOwned is the record of the ownership test.
type codecOwned struct {
	S     string
	B     []byte
	Strs  []string
	M     map[string]string
	P     *string
	Inner codecInner
	Arr   [2]string
	Bs    [][]byte
}

func codecOwnedValue() codecOwned {
	return codecOwned{
		S:     "hello",
		B:     []byte("bytes"),
		Strs:  []string{"a", "bc", "def"},
		M:     map[string]string{"key": "value"},
		P:     codecPtr("pointed"),
		Inner: codecInner{Name: "inner", Tags: []string{"tag"}},
		Arr:   [2]string{"x", "yy"},
		Bs:    [][]byte{[]byte("one"), {}, nil},
	}
}

func TestBinaryCodecDecodedValuesOwnNoInput(t *testing.T) {
	c := &indextable.BinaryCodec{}
	data, err := c.Marshal(codecOwnedValue())
	require.NoError(t, err)

	var got codecOwned
	require.NoError(t, c.Unmarshal(data, &got))
	for i := range data {
		data[i] = 0xEE
	}
	require.Equal(t, codecOwnedValue(), got, "mutating the input changed the decoded value")

	// Decoded byte slices are the caller's: writing to them changes no
	// decoded string, and no other slice.
	for i := range got.B {
		got.B[i] = 'X'
	}
	for i := range got.Bs[0] {
		got.Bs[0][i] = 'Y'
	}
	got.B = append(got.B, "more"...)
	want := codecOwnedValue()
	want.B = []byte("XXXXXmore")
	want.Bs[0] = []byte("YYY")
	require.Equal(t, want, got)

	// A decoded []byte is not cut from the buffer decoded strings share
	// (writing to it would change immutable string memory).
	var sb codecStrBytes
	data, err = c.Marshal(codecStrBytes{S1: "before", B: []byte("bytes"), S2: "after"})
	require.NoError(t, err)
	require.NoError(t, c.Unmarshal(data, &sb))
	p1, p2 := uintptr(unsafe.Pointer(unsafe.StringData(sb.S1))), uintptr(unsafe.Pointer(unsafe.StringData(sb.S2)))
	if p2-p1 == uintptr(len(sb.S1)+1+len(sb.B)+1) { // the strings share one buffer
		pb := uintptr(unsafe.Pointer(unsafe.SliceData(sb.B)))
		require.False(t, pb >= p1 && pb < p2, "decoded []byte aliases the string buffer")
	}

	// Nor does the encoder keep the value: mutating the source after
	// Marshal leaves the bytes as they were.
	src := codecOwnedValue()
	enc, err := c.Marshal(&src)
	require.NoError(t, err)
	encCopy := bytes.Clone(enc)
	src.B[0] = 'Z'
	src.Strs[0] = "changed"
	require.Equal(t, encCopy, enc)
}

// codecStrBytes has a []byte between two strings.
type codecStrBytes struct {
	S1 string
	B  []byte
	S2 string
}

// codecSix is the record of the allocation test.
type codecSix struct{ A, B, C, D, E, F string }

func TestBinaryCodecDecodeAllocations(t *testing.T) {
	c := &indextable.BinaryCodec{}
	data, err := c.Marshal(codecSix{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"})
	require.NoError(t, err)

	var v codecSix
	allocs := testing.AllocsPerRun(1000, func() {
		v = codecSix{}
		if err := c.Unmarshal(data, &v); err != nil {
			panic(err)
		}
	})
	require.Equal(t, codecSix{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}, v)
	t.Logf("decoding a struct of 6 strings: %v allocations per run (target variable preallocated)", allocs)
	assert.LessOrEqual(t, allocs, 2.0)

	// With the target declared inside the run, as a caller typically does.
	allocsFresh := testing.AllocsPerRun(1000, func() {
		var w codecSix
		if err := c.Unmarshal(data, &w); err != nil || w.F != "zeta" {
			panic(err)
		}
	})
	t.Logf("decoding a struct of 6 strings: %v allocations per run (fresh target each run)", allocsFresh)
	assert.LessOrEqual(t, allocsFresh, 2.0)
}

// TestBinaryCodecConcurrentUse shares one codec, plans not yet compiled,
// between goroutines (run with -race).
func TestBinaryCodecConcurrentUse(t *testing.T) {
	c := &indextable.BinaryCodec{}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				var err error
				switch (g + i) % 3 {
				case 0:
					v := codecOwnedValue()
					var data []byte
					if data, err = c.Marshal(&v); err == nil {
						var got codecOwned
						if err = c.Unmarshal(data, &got); err == nil && !reflect.DeepEqual(v, got) {
							err = fmt.Errorf("codecOwned: got %+v", got)
						}
					}
				case 1:
					v := codecSix{A: fmt.Sprint(i)}
					var data []byte
					if data, err = c.Marshal(v); err == nil {
						var got codecSix
						if err = c.Unmarshal(data, &got); err == nil && got != v {
							err = fmt.Errorf("codecSix: got %+v", got)
						}
					}
				case 2:
					var data []byte
					if data, err = c.Marshal([]string{"x", fmt.Sprint(i)}); err == nil {
						var got []string
						if err = c.Unmarshal(data, &got); err == nil && got[1] != fmt.Sprint(i) {
							err = fmt.Errorf("[]string: got %q", got)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// codecFuzzInner and codecFuzzRecord mix field kinds, without floats (NaN
// is not DeepEqual to itself).
type codecFuzzInner struct {
	Name string
	Tags []codecTown
	When time.Time
}

type codecFuzzRecord struct {
	S      string
	B      []byte
	I      int64
	I8     int8
	U      uint64
	U16    uint16
	OK     bool
	P      *string
	Strs   []string
	M      map[string]int32
	Arr    [2]uint8
	Inner  codecFuzzInner
	PInner *codecFuzzInner
	Ins    []codecFuzzInner
	T      time.Time
	Town   codecTown
	BB     [][]byte
}

func FuzzBinaryCodec(f *testing.F) {
	c := &indextable.BinaryCodec{}
	seeds := []codecFuzzRecord{
		{},
		{S: "s", B: []byte{}, I: -1, I8: math.MinInt8, U: math.MaxUint64, U16: 7, OK: true, P: codecPtr(""),
			Strs: []string{}, M: map[string]int32{"k": -5}, Arr: [2]uint8{255, 0},
			Inner:  codecFuzzInner{Name: "in", Tags: []codecTown{"a"}, When: time.Date(2020, 1, 1, 0, 0, 0, 1, time.FixedZone("", 3600))},
			PInner: &codecFuzzInner{}, Ins: []codecFuzzInner{{}, {Name: "x"}},
			T: time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), Town: "\xff", BB: [][]byte{nil, {}, {0}}},
		{B: []byte("\x00\x01"), Strs: []string{"", "\xff\x00"}, M: map[string]int32{}, BB: [][]byte{}},
	}
	for _, s := range seeds {
		data, err := c.Marshal(&s)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		input := bytes.Clone(data)
		var v1 codecFuzzRecord
		if err := c.Unmarshal(data, &v1); err != nil {
			if !errors.Is(err, indextable.ErrCodec) {
				t.Fatalf("error not ErrCodec: %v", err)
			}
			return
		}
		require.Equal(t, input, data, "Unmarshal changed its input")
		enc, err := c.Marshal(&v1)
		require.NoError(t, err)
		var v2 codecFuzzRecord
		require.NoError(t, c.Unmarshal(enc, &v2))
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("re-decoded value differs:\nfirst  %#v\nsecond %#v", v1, v2)
		}
		// The canonical encoding is stable (maps of more than one entry
		// have no fixed order, so compare only without them).
		if len(v1.M) <= 1 {
			enc2, err := c.Marshal(v2)
			require.NoError(t, err)
			require.Equal(t, enc, enc2)
		}
	})
}

// codecFuzzRT is the record of FuzzBinaryCodecRoundTrip.
type codecFuzzRT struct {
	S    string
	Town codecTown
	B    []byte
	PS   *string
	Strs []string
	I    int64
	I8   int8
	I32  int32
	N    int
	U    uint64
	U8   uint8
	U16  uint16
	OK   bool
	F64  float64
	F32  float32
	M    map[string]int64
	Arr  [2]string
	In   codecInner
	T    time.Time
	PT   *time.Time
}

func FuzzBinaryCodecRoundTrip(f *testing.F) {
	f.Add("", []byte(nil), int64(0), uint64(0), false)
	f.Add("héllo", []byte{}, int64(-1), uint64(1), true)
	f.Add("\xff\x00", []byte{0, 0xff}, int64(math.MinInt64), uint64(math.MaxUint64), true)
	f.Add(strings.Repeat("x", 200), []byte("abc"), int64(math.MaxInt64), uint64(0x7ff8_0000_0000_0001), false)
	c := &indextable.BinaryCodec{}

	f.Fuzz(func(t *testing.T, s string, b []byte, i int64, u uint64, ok bool) {
		offset := int(i % (24*3600 + 1))
		zone := time.UTC
		if offset != 0 {
			zone = time.FixedZone("z", offset)
		}
		when := time.Unix(i/4, int64(u%1e9)).In(zone)
		v := codecFuzzRT{
			S: s, Town: codecTown(s), B: b, Strs: []string{s, "", s},
			I: i, I8: int8(i), I32: int32(i), N: int(i),
			U: u, U8: uint8(u), U16: uint16(u),
			OK:  ok,
			F64: math.Float64frombits(u), F32: math.Float32frombits(uint32(u)),
			M:   map[string]int64{s: i},
			Arr: [2]string{s, string(b)},
			In:  codecInner{Name: string(b), N: int(u), Tags: []string{s}},
			T:   when,
		}
		if ok {
			v.PS = &s
			v.PT = &when
			v.Strs = nil
			v.M = nil
		}
		data, err := c.Marshal(&v)
		require.NoError(t, err)
		var got codecFuzzRT
		require.NoError(t, c.Unmarshal(data, &got))

		require.Equal(t, math.Float64bits(v.F64), math.Float64bits(got.F64), "F64 bits")
		codecRequireFloat32Same(t, v.F32, got.F32, "F32")
		codecRequireTimeSame(t, v.T, got.T, "T")
		require.Equal(t, v.PT == nil, got.PT == nil)
		if v.PT != nil {
			codecRequireTimeSame(t, *v.PT, *got.PT, "PT")
		}
		require.Equal(t, v.B == nil, got.B == nil, "B nil-ness")
		v.F64, got.F64, v.F32, got.F32 = 0, 0, 0, 0
		v.T, got.T, v.PT, got.PT = time.Time{}, time.Time{}, nil, nil
		if !reflect.DeepEqual(v, got) {
			t.Fatalf("round trip differs:\nwant %#v\ngot  %#v", v, got)
		}
	})
}

// TestBinaryCodecMapsEncodeAlike checks that equal maps encode to the same
// bytes whatever Go's iteration order, so an unchanged record rewrites no
// index entry.
func TestBinaryCodecMapsEncodeAlike(t *testing.T) {
	type withMap struct{ M map[string]int }
	c := &indextable.BinaryCodec{}
	m := map[string]int{}
	for i := range 50 {
		m[fmt.Sprint("k", i)] = i
	}
	first, err := c.Marshal(withMap{m})
	require.NoError(t, err)
	for range 20 {
		again, err := c.Marshal(withMap{maps.Clone(m)})
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	var back withMap
	require.NoError(t, c.Unmarshal(first, &back))
	require.Equal(t, m, back.M)
}

// codecCustomer is the record of the benchmarks: strings, as most records
// are.
type codecCustomer struct{ ID, FirstName, LastName, Town, Email, Phone string }

// BenchmarkBinaryCodec encodes into a reused buffer and decodes into a
// fresh value, as a table does: a record of strings, one of small
// integers, and one of every kind; compile is a first use of a type.
func BenchmarkBinaryCodec(b *testing.B) {
	customer := codecCustomer{"C000042", "Ada", "Lovelace", "Redmond", "ada@example.com", "+1 425 555 0100"}
	ints := codecSmallInts{-128, 255, -32768, 65535, -7, 70000}
	rich := codecRichCases()[3].v // mixed
	for _, tc := range []struct {
		name string
		v    any
		into func() any
	}{
		{"customer", &customer, func() any { return new(codecCustomer) }},
		{"ints", &ints, func() any { return new(codecSmallInts) }},
		{"rich", &rich, func() any { return new(codecRich) }},
	} {
		c := &indextable.BinaryCodec{}
		data, err := c.Marshal(tc.v)
		require.NoError(b, err)
		b.Run("marshal/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for range b.N {
				if buf, err = c.AppendMarshal(buf[:0], tc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("unmarshal/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := c.Unmarshal(data, tc.into()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("compile/rich", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := (&indextable.BinaryCodec{}).Marshal(codecRich{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
