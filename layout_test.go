package indextable

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type layoutInner struct {
	A int
	B []string `json:"b,omitempty"`
}

type LayoutEmbedded struct{ E string }

type layoutRecord struct {
	ID    string `json:"id"`
	N     int8
	U     uint64
	F     float32
	Ok    bool
	T     time.Time
	P     *layoutInner
	S     []layoutInner
	Arr   [3]int
	M     map[string]*layoutInner
	Bytes []byte
	LayoutEmbedded
	hidden int
}

// TestLayoutRoundTrip: the type a descriptor describes reads and writes
// what the original type does, with both codecs, and describes itself the
// same way.
func TestLayoutRoundTrip(t *testing.T) {
	rt := reflect.TypeFor[layoutRecord]()
	desc, err := describeType(nil, rt, true)
	require.NoError(t, err)
	t.Log(string(desc))
	dyn, err := layoutType(string(desc))
	require.NoError(t, err)
	again, err := describeType(nil, dyn, true)
	require.NoError(t, err)
	require.Equal(t, string(desc), string(again))

	rec := layoutRecord{ID: "x", N: -3, U: 1 << 60, F: 1.5, Ok: true, T: time.Date(2026, 11, 24, 1, 2, 3, 4, time.UTC),
		P: &layoutInner{A: 1, B: []string{"a"}}, S: []layoutInner{{A: 2}}, Arr: [3]int{1, 2, 3},
		M: map[string]*layoutInner{"k": {A: 3}}, Bytes: []byte{0, 1}, LayoutEmbedded: LayoutEmbedded{E: "e"}, hidden: 9}
	for _, c := range []Codec{JSONCodec{}, &BinaryCodec{}} {
		b, err := c.Marshal(&rec)
		require.NoError(t, err)
		v := reflect.New(dyn)
		require.NoError(t, c.Unmarshal(b, v.Interface()), "%T", c)
		b2, err := c.Marshal(v.Interface())
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2), "%T", c)
	}
	js, err := json.Marshal(rec)
	require.NoError(t, err)
	require.Contains(t, string(js), `"id":"x"`, "tags are kept")

	// An interface field, which JSON stores and the binary codec does not.
	withAny := struct{ A any }{A: map[string]any{"k": 1.5}}
	desc, err = describeType(nil, reflect.TypeOf(withAny), true)
	require.NoError(t, err)
	dyn, err = layoutType(string(desc))
	require.NoError(t, err)
	b, err := JSONCodec{}.Marshal(withAny)
	require.NoError(t, err)
	v := reflect.New(dyn)
	require.NoError(t, JSONCodec{}.Unmarshal(b, v.Interface()))
	require.Equal(t, withAny.A, v.Elem().Field(0).Interface())
}

func TestLayoutRefusesWhatNoCodecStores(t *testing.T) {
	type node struct{ Next *node }
	for _, v := range []any{
		struct{ C chan int }{},
		struct{ F func() }{},
		struct{ S fmtStringer }{},
		node{},
		struct{ C complex128 }{},
	} {
		_, err := describeType(nil, reflect.TypeOf(v), false)
		require.ErrorIs(t, err, errLayout, "%T", v)
	}
	// What JSON stores by methods, or promotes from an unexported embedded
	// struct, a descriptor cannot stand for; the binary codec goes by kinds.
	for _, v := range []any{
		struct{ M layoutMoney }{},
		struct{ K map[layoutText]int }{},
		struct{ P *layoutText }{},
		struct{ layoutHidden }{},
	} {
		_, err := describeType(nil, reflect.TypeOf(v), true)
		require.ErrorIs(t, err, errLayout, "%T", v)
		_, err = describeType(nil, reflect.TypeOf(v), false)
		require.NoError(t, err, "%T", v)
	}
	_, err := describeType(nil, reflect.TypeFor[struct {
		By string
		time.Time
	}](), false)
	require.ErrorIs(t, err, errLayout, "an embedded time.Time")
	for _, s := range []string{"", "struct{", "struct{a int \"\";}", "struct{A int;}", "map[[]int]int", "[x]int", "int8x", "struct{A nope \"\";}"} {
		_, err := layoutType(s)
		require.ErrorIs(t, err, errLayout, "%q", s)
	}
}

type fmtStringer interface{ String() string }

type layoutMoney float64

func (m layoutMoney) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.2f", float64(m))), nil
}

type layoutText [4]byte

func (x *layoutText) UnmarshalText([]byte) error { return nil }

type layoutHidden struct{ City string }

// FuzzLayoutType: no descriptor panics, and one that parses describes a
// type that parses to the same type.
func FuzzLayoutType(f *testing.F) {
	desc, _ := describeType(nil, reflect.TypeFor[layoutRecord](), true)
	f.Add(string(desc))
	f.Add("map[string][2]*struct{embed A struct{} \"x\";}")
	f.Fuzz(func(t *testing.T, s string) {
		rt, err := layoutType(s)
		if err != nil {
			return
		}
		d, err := describeType(nil, rt, true)
		if err != nil {
			t.Fatalf("%q parsed to %v, which does not describe: %v", s, rt, err)
		}
		rt2, err := layoutType(string(d))
		if err != nil || rt2 != rt {
			t.Fatalf("%q: %v, then %q: %v, %v", s, rt, d, rt2, err)
		}
	})
}
