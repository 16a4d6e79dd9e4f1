package indextable

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/indextable/indextable/internal/tuple"
)

// This file says what a composite key is. How one is encoded, so that its
// bytes sort as it does, is in package kv: kv.AppendTuple, kv.DecodeTuple
// and kv.CompareTuples.

// Tuple is a composite key, or a leading part of one: its components in
// order, most significant first, one for each field the key is made of
// (Town, then LastName). A query fixes the first components of an index's
// key with one (Query.Eq), a Key function returns a record's keys as
// Tuples, Get and Delete take a primary key's values or a Tuple of them,
// and reports (Stats, Verify) and errors show keys as Tuples.
//
// A component is nil, a []byte, string, bool, integer, float or time.Time,
// a named type of one of these but time.Time, or a pointer to one
// (kv.AppendElement). Tuples compare component by component, a tuple
// before its extensions (kv.CompareTuples), and their encodings
// (kv.EncodeTuple) sort alike: so the entries of an index on Town then
// LastName that share a Town lie in one range of the store, in LastName
// order.
type Tuple []any

// String shows t as Go would write its components, in parentheses:
// ("Redmond", "Smith"), ("", 42), (nil). Strings and []byte are quoted,
// so an empty string shows as "".
func (t Tuple) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, v := range t {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(componentString(v))
	}
	b.WriteByte(')')
	return b.String()
}

// componentString shows one component of a Tuple, through any pointer.
func componentString(v any) string {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "nil"
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return "nil"
	}
	switch x := rv.Interface().(type) {
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case Tuple:
		return x.String()
	}
	switch rv.Kind() {
	case reflect.String:
		return strconv.Quote(rv.String())
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return "[]byte(" + strconv.Quote(string(rv.Bytes())) + ")"
		}
	}
	return fmt.Sprint(rv.Interface())
}

// decodeTuple decodes a whole tuple encoding, as kv.DecodeTuple does, into
// a Tuple.
func decodeTuple(b []byte) (Tuple, error) { return tuple.Decode(b) }
