package indextable

import "github.com/indextable/indextable/internal/tuple"

// This file says what a composite key is. How one is encoded, so that its
// bytes sort as it does, is in package kv: kv.AppendTuple, kv.DecodeTuple
// and kv.CompareTuples.

// Tuple is a composite key, or a leading part of one: its components in
// order, most significant first, one for each field the key is made of
// (Town, then LastName). A query fixes the first components of an index's
// key with one (Query.Eq), a Key function returns a record's keys as
// Tuples, Delete takes a primary key as one, and reports (Stats, Verify)
// show keys as Tuples.
//
// A component is nil, a []byte, string, bool, integer, float or time.Time,
// a named type of one of these but time.Time, or a pointer to one
// (kv.AppendElement). Tuples compare component by component, a tuple
// before its extensions (kv.CompareTuples), and their encodings
// (kv.EncodeTuple) sort alike: so the entries of an index on Town then
// LastName that share a Town lie in one range of the store, in LastName
// order.
type Tuple []any

// decodeTuple decodes a whole tuple encoding, as kv.DecodeTuple does, into
// a Tuple.
func decodeTuple(b []byte) (Tuple, error) { return tuple.Decode(b) }
