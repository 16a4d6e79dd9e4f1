package kv

import "github.com/indextable/indextable/internal/tuple"

// This file exports the tuple encoding of stored keys, which package
// internal/tuple implements for this package and for indextable.

// Tuple encoding errors. Package indextable declares the same values under
// the same names, for its users' errors.Is.
var (
	// ErrUnsupportedType reports a key component of a type that has no
	// encoding.
	ErrUnsupportedType = tuple.ErrUnsupportedType
	// ErrMalformedKey reports bytes that are not a canonical tuple
	// encoding.
	ErrMalformedKey = tuple.ErrMalformedKey
)

// AppendTuple appends the encoding of each element to dst. The result
// sorts, under bytes.Compare, as the tuple does under CompareTuples. On
// error dst is returned with its original length. To encode an
// indextable.Tuple t, pass t... .
//
// Each element is a type code, one byte, followed by a body:
//
//	0x00       nil
//	0x01       []byte: body with 0x00 escaped as 0x00 0xFF, then 0x00
//	0x02       string: as []byte
//	0x0C..0x13 negative integer: one's complement of the magnitude, 8..1 bytes
//	0x14       zero
//	0x15..0x1C positive integer: 1..8 big-endian bytes, no leading zero
//	0x21       float64: 8 bytes, sign bit flipped (positive) or all bits flipped (negative)
//	0x26, 0x27 false, true
//	0x30       time.Time: Unix seconds (8 bytes, sign bit flipped), then nanoseconds (4 bytes)
//
// Encodings sort as their tuples because:
//
//   - The codes are in the order in which CompareTuples ranks types, so
//     elements of two types compare by their first byte.
//   - Within a type, bodies sort as values. An integer's code holds its
//     sign and its length in bytes, which its shortest form ties to its
//     magnitude: negative integers of more bytes come first, positive ones
//     of more bytes last, and bodies of one length sort as their values
//     (the one's complement reverses magnitudes). The flipped bits make
//     floats and times sort as unsigned integers do.
//   - Each element ends where its code and body say, so two encodings first
//     differ where their tuples do, and a tuple's encoding is a prefix of
//     its extensions', which sort after it. The end of a byte string, 0x00
//     followed by anything but 0xFF, sorts below any byte that continues a
//     longer one, an escaped 0x00 (0x00 0xFF) included, as no code is 0xFF.
//
// And as no code is 0xFF, a tuple's encoding followed by 0xFF sorts after
// the encodings of all its extensions: the end of a prefix's range.
//
// Equal values encode alike: integers of every Go type by value, -0 as
// +0, and every NaN as one quiet NaN, which sorts after +Inf. DecodeTuple
// accepts these canonical encodings only.
func AppendTuple(dst []byte, elems ...any) ([]byte, error) { return tuple.Append(dst, elems...) }

// EncodeTuple returns the encoding of the tuple made of elems.
func EncodeTuple(elems ...any) ([]byte, error) { return tuple.Encode(elems...) }

// AppendElement appends the encoding of v to dst. Supported types are
// nil, []byte, string, all integer types, float32, float64, bool,
// time.Time, named types whose underlying type is one of these (except
// time.Time), and pointers to them; a nil pointer encodes as nil. Others
// fail with ErrUnsupportedType.
func AppendElement(dst []byte, v any) ([]byte, error) { return tuple.AppendElement(dst, v) }

// DecodeTuple decodes a whole tuple encoding. Elements come back as nil,
// []byte, string, int64 (uint64 for integers above math.MaxInt64),
// float64, bool or time.Time in UTC, so a round trip preserves values up
// to these types, time zones and monotonic clock readings. Any input that
// EncodeTuple could not have produced gives ErrMalformedKey. The result
// may be assigned to an indextable.Tuple.
func DecodeTuple(b []byte) ([]any, error) { return tuple.Decode(b) }

// DecodeElement decodes the first element of b, as DecodeTuple does, and
// returns the bytes that follow it.
func DecodeElement(b []byte) (v any, rest []byte, err error) { return tuple.DecodeElement(b) }

// ElementLen returns the length of the encoding of the first element of
// b. It validates that element as DecodeElement does, without allocating.
func ElementLen(b []byte) (int, error) { return tuple.ElementLen(b) }

// CompareTuples compares two tuples in key order, returning -1, 0 or +1:
// element by element, a tuple sorting before any longer tuple it is a
// prefix of. Elements order first by type (nil, byte strings, strings,
// integers, floats, booleans, times), then by value: integers of all Go
// types by numeric value, floats as Go compares them (-0 equals +0) but
// with every NaN equal and above +Inf, false before true, times
// chronologically. It panics on an element of an unsupported type. An
// indextable.Tuple passes as either argument.
func CompareTuples(a, b []any) int { return tuple.Compare(a, b) }
