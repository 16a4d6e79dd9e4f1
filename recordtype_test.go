package indextable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rtInner struct {
	A int
	B []string `json:"b,omitempty"`
}

type RTEmbedded struct{ E string }

type rtRecord struct {
	ID    string `json:"id"`
	N     int8
	U     uint64
	F     float32
	Ok    bool
	T     time.Time
	P     *rtInner
	S     []rtInner
	Arr   [3]int
	M     map[string]*rtInner
	Bytes []byte
	RTEmbedded
	hidden int
}

// TestRecordTypeRoundTrip: the type a descriptor describes reads and writes
// what the original type does, with both codecs, and describes itself the
// same way.
func TestRecordTypeRoundTrip(t *testing.T) {
	rt := reflect.TypeFor[rtRecord]()
	desc, err := describeType(nil, rt, true)
	require.NoError(t, err)
	t.Log(string(desc))
	dyn, err := describedType(string(desc))
	require.NoError(t, err)
	again, err := describeType(nil, dyn, true)
	require.NoError(t, err)
	require.Equal(t, string(desc), string(again))

	rec := rtRecord{ID: "x", N: -3, U: 1 << 60, F: 1.5, Ok: true, T: time.Date(2026, 11, 24, 1, 2, 3, 4, time.UTC),
		P: &rtInner{A: 1, B: []string{"a"}}, S: []rtInner{{A: 2}}, Arr: [3]int{1, 2, 3},
		M: map[string]*rtInner{"k": {A: 3}}, Bytes: []byte{0, 1}, RTEmbedded: RTEmbedded{E: "e"}, hidden: 9}
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
	dyn, err = describedType(string(desc))
	require.NoError(t, err)
	b, err := JSONCodec{}.Marshal(withAny)
	require.NoError(t, err)
	v := reflect.New(dyn)
	require.NoError(t, JSONCodec{}.Unmarshal(b, v.Interface()))
	require.Equal(t, withAny.A, v.Elem().Field(0).Interface())
}

func TestRecordTypeRefusesWhatNoCodecStores(t *testing.T) {
	type node struct{ Next *node }
	for _, v := range []any{
		struct{ C chan int }{},
		struct{ F func() }{},
		struct{ S fmtStringer }{},
		node{},
		struct{ C complex128 }{},
	} {
		_, err := describeType(nil, reflect.TypeOf(v), false)
		require.ErrorIs(t, err, errRecordType, "%T", v)
	}
	// What JSON stores by methods, or promotes from an unexported embedded
	// struct, a descriptor cannot stand for; the binary codec goes by kinds.
	for _, v := range []any{
		struct{ M rtMoney }{},
		struct{ K map[rtText]int }{},
		struct{ P *rtText }{},
		struct{ rtHidden }{},
	} {
		_, err := describeType(nil, reflect.TypeOf(v), true)
		require.ErrorIs(t, err, errRecordType, "%T", v)
		_, err = describeType(nil, reflect.TypeOf(v), false)
		require.NoError(t, err, "%T", v)
	}
	_, err := describeType(nil, reflect.TypeFor[struct {
		By string
		time.Time
	}](), false)
	require.ErrorIs(t, err, errRecordType, "an embedded time.Time")
	for _, s := range []string{"", "struct{", "struct{a int \"\";}", "struct{A int;}", "map[[]int]int", "[x]int", "int8x", "struct{A nope \"\";}"} {
		_, err := describedType(s)
		require.ErrorIs(t, err, errRecordType, "%q", s)
	}
}

type fmtStringer interface{ String() string }

type rtMoney float64

func (m rtMoney) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.2f", float64(m))), nil
}

type rtText [4]byte

func (x *rtText) UnmarshalText([]byte) error { return nil }

type rtHidden struct{ City string }

// FuzzRecordType: no descriptor panics, and one that parses describes a
// type that parses to the same type.
func FuzzRecordType(f *testing.F) {
	desc, _ := describeType(nil, reflect.TypeFor[rtRecord](), true)
	f.Add(string(desc))
	f.Add("map[string][2]*struct{embed A struct{} \"x\";}")
	f.Fuzz(func(t *testing.T, s string) {
		rt, err := describedType(s)
		if err != nil {
			return
		}
		d, err := describeType(nil, rt, true)
		if err != nil {
			t.Fatalf("%q parsed to %v, which does not describe: %v", s, rt, err)
		}
		rt2, err := describedType(string(d))
		if err != nil || rt2 != rt {
			t.Fatalf("%q: %v, then %q: %v, %v", s, rt, d, rt2, err)
		}
	})
}

// rtVisit is the record of the primary key tests.
type rtVisit struct {
	Region string
	ID     int
	Age    int
}

// rtPriced has its own JSON encoding: no descriptor stands for it.
type rtPriced struct {
	ID    int
	Price rtMoney
}

// refusingStore refuses every batch, as a store opened read-only does.
type refusingStore struct{ kv.Store }

func (refusingStore) Apply(context.Context, *kv.Batch) error { return errors.New("read-only") }

// TestRecordTypeKeepsThePrimaryKey: a table keeps its primary key fields with
// its record type, in order, with indexes or none, and with no record type for a
// type that no descriptor stands for, so that a tool (ReadCatalog, then
// Findings) knows the primary key of a table without indexes; it learned
// it from index definitions only.
func TestRecordTypeKeepsThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		open     func(kv.Store) error
		pk       []string
		codec    string
		withType bool
	}{
		{"no index", func(s kv.Store) error {
			_, err := Open(ctx, s, Schema[rtVisit]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}})
			return err
		}, []string{"ID"}, "json", true},
		{"a composite primary key", func(s kv.Store) error {
			_, err := Open(ctx, s, Schema[rtVisit]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"Region", "ID"}, Codec: &BinaryCodec{},
				Indexes: []Index[rtVisit]{{Name: "age", Fields: []string{"Age"}}}})
			return err
		}, []string{"Region", "ID"}, "binary", true},
		{"no record type", func(s kv.Store) error {
			_, err := Open(ctx, s, Schema[rtPriced]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}})
			return err
		}, []string{"ID"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMemoryStore()
			require.NoError(t, tc.open(s))
			tables, err := ReadCatalog(ctx, s)
			require.NoError(t, err)
			require.Len(t, tables, 1)
			assert.Equal(t, tc.pk, tables[0].PrimaryKey)
			assert.Equal(t, tc.codec, tables[0].Codec)
			assert.Equal(t, tc.withType, tables[0].RecordType != "", tables[0].RecordType)
		})
	}
}

// TestRecordTypeOfFormat1Decodes: a record type that an earlier version kept, with
// no primary key, still decodes; the primary key is then the one index
// definitions record, if any, until the table is opened again.
func TestRecordTypeOfFormat1Decodes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		indexes []Index[rtVisit]
		pk      []string // read before the table is opened again
	}{
		{"with an index", []Index[rtVisit]{{Name: "age", Fields: []string{"Age"}}}, []string{"ID"}},
		{"without", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewMemoryStore()
			schema := Schema[rtVisit]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}, Indexes: tc.indexes}
			_, err := Open(ctx, s, schema)
			require.NoError(t, err)
			desc, err := describeType(nil, reflect.TypeFor[rtVisit](), true)
			require.NoError(t, err)
			old, err := kv.EncodeTuple(int64(1), "json", string(desc))
			require.NoError(t, err)
			var b kv.Batch
			b.Put(recordTypeKey(tablePrefix("t")), old)
			require.NoError(t, s.Apply(ctx, &b))

			tables, err := ReadCatalog(ctx, s)
			require.NoError(t, err)
			require.Len(t, tables, 1)
			assert.Equal(t, "json", tables[0].Codec)
			assert.Equal(t, string(desc), tables[0].RecordType)
			assert.Equal(t, tc.pk, tables[0].PrimaryKey)

			_, err = Open(ctx, s, schema)
			require.NoError(t, err)
			tables, err = ReadCatalog(ctx, s)
			require.NoError(t, err)
			assert.Equal(t, []string{"ID"}, tables[0].PrimaryKey, "kept once opened again")
		})
	}
}

// TestRecordTypeRefusesMalformedPrimaryKeys: a stored record type whose primary key
// is missing, or no names, is ErrCodec.
func TestRecordTypeRefusesMalformedPrimaryKeys(t *testing.T) {
	ctx := context.Background()
	for _, v := range [][]any{
		{int64(2), "json", "struct{}"},
		{int64(2), "json", "struct{}", int64(1)},
		{int64(2), "json", "struct{}", ""},
		{int64(1), "json", "struct{}", "ID"},
		{int64(3), "json", "struct{}", "ID"},
	} {
		s := NewMemoryStore()
		enc, err := kv.EncodeTuple(v...)
		require.NoError(t, err)
		var b kv.Batch
		b.Put(recordTypeKey(tablePrefix("t")), enc)
		require.NoError(t, s.Apply(ctx, &b))
		_, err = ReadCatalog(ctx, s)
		assert.ErrorIs(t, err, ErrCodec, "%v", v)
	}
}

// TestAdviseKnowsThePrimaryKeyOnAStoreThatRefusesWrites: a table opened on
// a store that refuses writes keeps no record type, and Advise takes the primary
// key from the table itself.
func TestAdviseKnowsThePrimaryKeyOnAStoreThatRefusesWrites(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	tbl, err := Open(ctx, s, Schema[rtVisit]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	for i := range 10 {
		_, err := tbl.Insert(ctx, rtVisit{ID: i})
		require.NoError(t, err)
	}
	var b kv.Batch
	b.Delete(recordTypeKey(tablePrefix("t")))
	require.NoError(t, s.Apply(ctx, &b))

	tbl, err = Open(ctx, refusingStore{s}, Schema[rtVisit]{SchemaLease: testLease, Name: "t", PrimaryKey: []string{"ID"}})
	require.NoError(t, err, "the record type is best effort")
	tables, err := ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Nil(t, tables[0].PrimaryKey, "kept nowhere")
	for i := range 100 {
		_, err := tbl.Count(ctx, Query{Where: map[string]any{"ID": i % 10}})
		require.NoError(t, err)
	}
	findings, err := tbl.Advise(ctx, AdviseOptions{})
	require.NoError(t, err)
	require.Len(t, findings, 1)
	assert.Contains(t, findings[0].Reason, "which the primary key leads with")
}
