package indextable_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	it "github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// errRec is the record of the tables whose errors the tests below check.
type errRec struct {
	ID    int
	Age   int
	Score float64
	Note  string
}

// failingCodec is JSONCodec but for its own failures: a bare error, as a
// custom codec may return.
type failingCodec struct {
	it.JSONCodec
	marshal, unmarshal bool
}

var errCustom = errors.New("custom codec failure")

func (c failingCodec) Marshal(v any) ([]byte, error) {
	if c.marshal {
		return nil, errCustom
	}
	return c.JSONCodec.Marshal(v)
}

func (c failingCodec) Unmarshal(data []byte, v any) error {
	if c.unmarshal {
		return errCustom
	}
	return c.JSONCodec.Unmarshal(data, v)
}

// errorCase is an error path of the API: the call that takes it, the
// sentinels its error matches, and what the message says, after any
// "table %q: ".
type errorCase struct {
	name string
	call func(t *testing.T) error
	is   []error
	says string
}

// checkErrors runs each case: its error matches its sentinels, and its
// message names the package once ("indextable: <sentinel>: <what and
// where>: ..."), however many sentinels it wraps.
func checkErrors(t *testing.T, cases []errorCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t)
			require.Error(t, err)
			t.Log(err)
			for _, want := range tc.is {
				assert.ErrorIs(t, err, want)
			}
			assert.Equal(t, 1, strings.Count(err.Error(), "indextable:"), "%v", err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

// openErrTable opens the table "errs" of errRec over s, with codec c.
func openErrTable(t *testing.T, s kv.Store, c it.Codec) *it.Table[errRec] {
	t.Helper()
	tbl, err := it.Open(context.Background(), s, it.Schema[errRec]{SchemaLease: testLease, Name: "errs", PrimaryKey: []string{"ID"}, Codec: c, Indexes: []it.Index[errRec]{
		{Name: "age", Fields: []string{"Age"}},
		{Name: "age_note", Fields: []string{"Age"}, Strategy: it.Partial, Projection: []string{"Note"}},
		{Name: "computed", Key: func(r errRec) []it.Tuple {
			if r.Note == "chan" {
				return []it.Tuple{{make(chan int)}}
			}
			return []it.Tuple{{r.Note}}
		}},
	}})
	require.NoError(t, err)
	return tbl
}

// errTable opens the table "errs" on a new store holding record 1.
func errTable(t *testing.T, c it.Codec) (*it.Table[errRec], kv.Store) {
	t.Helper()
	s := it.NewMemoryStore()
	tbl := openErrTable(t, s, c)
	_, err := tbl.Insert(context.Background(), errRec{ID: 1, Age: 30, Note: "n"})
	require.NoError(t, err)
	return tbl, s
}

// putRaw writes value under key, past the table.
func putRaw(t *testing.T, s kv.Store, key, value []byte) {
	t.Helper()
	var b kv.Batch
	b.Put(key, value)
	require.NoError(t, s.Apply(context.Background(), &b))
}

// countErr returns the error of counting q.
func countErr(tbl *it.Table[errRec], q it.Query) error {
	_, err := tbl.Count(context.Background(), q)
	return err
}

// TestErrorsOfBadInput walks the error paths of bad keys and queries.
func TestErrorsOfBadInput(t *testing.T) {
	ctx := context.Background()
	checkErrors(t, []errorCase{
		{"Get, a primary key of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			_, err := tbl.Get(ctx, []int{1})
			return err
		}, []error{it.ErrInvalidKey, it.ErrUnsupportedType}, `indextable: invalid key: table "errs", primary key: unsupported key type: field "ID" takes one key component, not []int`},
		{"Get, a primary key of the wrong type", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			_, err := tbl.Get(ctx, "1")
			return err
		}, []error{it.ErrInvalidKey}, `indextable: invalid key: table "errs", primary key: field "ID" holds integer values, not string`},
		{"Delete, a primary key of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return tbl.Delete(ctx, it.Tuple{[]int{1}})
		}, []error{it.ErrInvalidKey, it.ErrUnsupportedType}, `indextable: invalid key: table "errs", primary key: unsupported key type: field "ID" takes one key component, not []int`},
		{"Eq of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Index: "age", Eq: it.Tuple{[]int{1}}})
		}, []error{it.ErrInvalidQuery, it.ErrUnsupportedType}, `indextable: invalid query: Eq: unsupported key type: field "Age" takes one key component, not []int`},
		{"Eq of a computed index, of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Index: "computed", Eq: it.Tuple{make(chan int)}})
		}, []error{it.ErrInvalidQuery, it.ErrUnsupportedType}, `indextable: invalid query: unsupported key type: element 0 has type chan int`},
		{"lower bound of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Index: "computed", Lower: &it.Bound{Value: make(chan int)}})
		}, []error{it.ErrInvalidQuery, it.ErrUnsupportedType}, `indextable: invalid query: lower bound: unsupported key type: chan int`},
		{"upper bound of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Index: "age", Upper: &it.Bound{Value: []int{1}}})
		}, []error{it.ErrInvalidQuery, it.ErrUnsupportedType}, `indextable: invalid query: upper bound: unsupported key type: field "Age" takes one key component, not []int`},
		{"Where on no field", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Where: map[string]any{"Nope": 1}})
		}, []error{it.ErrInvalidQuery, it.ErrInvalidSchema}, `indextable: invalid query: Where: invalid schema: `},
		{"Where of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Where: map[string]any{"Age": []int{1}}})
		}, []error{it.ErrInvalidQuery, it.ErrUnsupportedType}, `indextable: invalid query: Where: unsupported key type: field "Age" takes one key component, not []int`},
		{"Where of the wrong type", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			return countErr(tbl, it.Query{Where: map[string]any{"Age": "1"}})
		}, []error{it.ErrInvalidQuery}, `indextable: invalid query: Where: field "Age" holds integer values, not string`},
		{"a Key func's key of a type with no encoding", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			_, err := tbl.Insert(ctx, errRec{ID: 2, Note: "chan"})
			return err
		}, []error{it.ErrInvalidKey, it.ErrUnsupportedType}, `indextable: invalid key: index "computed": unsupported key type: element 0 has type chan int`},
	})
}

// TestErrorsOfCodecsAndStoredRecords walks the error paths of records a
// codec cannot encode or decode, and of stored records that do not decode.
func TestErrorsOfCodecsAndStoredRecords(t *testing.T) {
	ctx := context.Background()
	badUsage := func(t *testing.T, record []byte) error {
		tbl, s := errTable(t, nil)
		putRaw(t, s, mustKey(t, "errs", 6), record)
		_, err := tbl.Usage(ctx)
		return err
	}
	malformed := []byte{0xff, 0xff}
	checkErrors(t, []errorCase{
		{"JSON, a NaN", func(t *testing.T) error {
			tbl, _ := errTable(t, nil)
			_, err := tbl.Insert(ctx, errRec{ID: 2, Score: math.NaN()})
			return err
		}, []error{it.ErrCodec}, `indextable: codec: json: unsupported value: NaN`},
		{"JSON, stored bytes of the wrong type", func(t *testing.T) error {
			tbl, s := errTable(t, nil)
			putRaw(t, s, mustKey(t, "errs", 0, 2), append([]byte{1}, `{"ID":"two"}`...))
			_, err := tbl.Get(ctx, 2)
			return err
		}, []error{it.ErrCodec}, `indextable: codec: json: cannot unmarshal string`},
		{"a custom codec's encoding", func(t *testing.T) error {
			_, err := openErrTable(t, it.NewMemoryStore(), failingCodec{marshal: true}).Insert(ctx, errRec{ID: 2})
			return err
		}, []error{it.ErrCodec, errCustom}, `indextable: codec: custom codec failure`},
		{"a custom codec's decoding", func(t *testing.T) error {
			_, s := errTable(t, nil)
			_, err := openErrTable(t, s, failingCodec{unmarshal: true}).Get(ctx, 1)
			return err
		}, []error{it.ErrCodec, errCustom}, `indextable: codec: custom codec failure`},
		{"a custom codec's decoding of a projection", func(t *testing.T) error {
			_, s := errTable(t, nil)
			for _, err := range openErrTable(t, s, failingCodec{unmarshal: true}).Find(ctx, it.Query{Index: "age_note", Covered: true}) {
				if err != nil {
					return err
				}
			}
			return nil
		}, []error{it.ErrCodec, errCustom}, `indextable: codec: custom codec failure`},
		{"a stored usage record that is no tuple", func(t *testing.T) error {
			return badUsage(t, malformed)
		}, []error{it.ErrCodec, it.ErrMalformedKey}, `indextable: codec: usage record: malformed key at offset 0`},
		{"a stored usage record with a read key that is no tuple", func(t *testing.T) error {
			return badUsage(t, mustKey(t, 1, 0, 0, 0, "age", 1, 1, 0, 0, 0, 0, 1, malformed, 1))
		}, []error{it.ErrCodec, it.ErrMalformedKey}, `indextable: codec: usage of index "age": malformed key at offset 0`},
		{"a catalog's index definition that is no tuple", func(t *testing.T) error {
			_, s := errTable(t, nil)
			key := mustKey(t, "errs", 2, "age")
			v, err := s.Get(ctx, key)
			require.NoError(t, err)
			entry, err := kv.DecodeTuple(v)
			require.NoError(t, err)
			entry[len(entry)-1] = malformed
			putRaw(t, s, key, mustKey(t, entry...))
			_, err = it.ReadCatalog(ctx, s)
			return err
		}, []error{it.ErrCodec, it.ErrMalformedKey}, `indextable: codec: index definition "\xff\xff": malformed key at offset 0`},
	})
}

// TestErrorsOfKV: the errors package kv declares for stores and the key
// encoding are this package's, so that errors.Is(err, it.ErrNotFound)
// matches what any store returns.
func TestErrorsOfKV(t *testing.T) {
	for _, tc := range []struct {
		name     string
		core, kv error
	}{
		{"ErrNotFound", it.ErrNotFound, kv.ErrNotFound},
		{"ErrClosed", it.ErrClosed, kv.ErrClosed},
		{"ErrConflict", it.ErrConflict, kv.ErrConflict},
		{"ErrInvalidBatch", it.ErrInvalidBatch, kv.ErrInvalidBatch},
		{"ErrInvalidArgument", it.ErrInvalidArgument, kv.ErrInvalidArgument},
		{"ErrReadOnly", it.ErrReadOnly, kv.ErrReadOnly},
		{"ErrUnsupportedType", it.ErrUnsupportedType, kv.ErrUnsupportedType},
		{"ErrMalformedKey", it.ErrMalformedKey, kv.ErrMalformedKey},
	} {
		require.Same(t, tc.kv, tc.core, tc.name)
	}
	_, err := it.NewMemoryStore().Get(context.Background(), []byte("absent"))
	require.ErrorIs(t, err, it.ErrNotFound)
}
