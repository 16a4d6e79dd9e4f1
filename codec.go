package indextable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Codec turns records into the bytes stored in fact tables and in
// full-copy and partial index entries. The default is JSONCodec. A table
// marshals a pointer to a record or to a field, and unmarshals into one.
//
// A codec reports a value it cannot encode, or bytes it cannot decode,
// with an error, best one wrapping ErrCodec, as this package's codecs do.
// The table wraps any other error of a codec in ErrCodec, keeping it:
// errors.Is matches both.
type Codec interface {
	// Marshal encodes the value v points to: a record or one of its fields.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into the value v points to, which is zero. It
	// must neither modify data nor keep it after returning: data may be
	// the store's own memory.
	Unmarshal(data []byte, v any) error
}

// JSONCodec encodes values with encoding/json: self-describing, so fields
// can be added to or removed from a record type without rewriting stored
// records. It stores what encoding/json keeps: invalid UTF-8 becomes
// U+FFFD, and fields tagged json:"-" are dropped. Index entries follow the
// stored record, and a primary key JSON would alter is refused.
type JSONCodec struct{}

// Marshal implements Codec. A value JSON cannot encode (NaN, an
// infinity, a cycle, a channel or func field) fails with ErrCodec.
func (JSONCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return b, codecError(err)
}

// Unmarshal implements Codec. Data that is not JSON, or does not fit the
// value v points to, fails with ErrCodec.
func (JSONCodec) Unmarshal(data []byte, v any) error { return codecError(json.Unmarshal(data, v)) }

// AppendMarshaler is a Codec that can encode into a caller's buffer,
// which saves every write a copy of the record.
type AppendMarshaler interface {
	// AppendMarshal appends the encoding of v to dst.
	AppendMarshal(dst []byte, v any) ([]byte, error)
}

// appendMarshal appends the encoding of v to dst, through AppendMarshal
// when c has it (and checks that it did append). A failure matches
// ErrCodec, whatever error c returned.
func appendMarshal(c Codec, dst []byte, v any) ([]byte, error) {
	if am, ok := c.(AppendMarshaler); ok {
		out, err := am.AppendMarshal(dst, v)
		if err == nil && (len(out) < len(dst) || !bytes.Equal(out[:len(dst)], dst)) {
			err = fmt.Errorf("%w: %T.AppendMarshal did not append to its buffer", ErrCodec, c)
		}
		return out, codecError(err)
	}
	b, err := c.Marshal(v)
	return append(dst, b...), codecError(err)
}

// stringUnmarshaler is a Codec that decodes from a string that it may keep
// parts of, saving the copy Unmarshal makes.
type stringUnmarshaler interface {
	unmarshalString(s string, v any) error
}

// ErrCodec reports a value a codec cannot encode, or stored bytes that
// cannot be decoded.
var ErrCodec = errors.New("indextable: codec")
