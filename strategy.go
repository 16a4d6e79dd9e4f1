package indextable

import (
	"encoding/binary"
	"fmt"
	"reflect"
)

// Strategy says what an index entry holds besides its key, and so what a
// read through the index costs.
type Strategy uint8

const (
	// KeysOnly is the normalized strategy: an entry holds only the key and
	// the record's primary key. A read does two lookups (the index, then the
	// fact table, fetched in batches). Least space and write work. It is
	// the zero Strategy, so an Index that names none is KeysOnly.
	KeysOnly Strategy = iota
	// FullCopy is full denormalization: an entry holds a whole copy of the
	// record. A read is one lookup; every change to the record rewrites the
	// entry, and each entry costs a record's space.
	FullCopy
	// Partial is partial denormalization: an entry holds the primary key and
	// the fields named in the index's Projection. Queries that ask only for
	// those fields (Query.Covered) are answered from the index alone; others
	// fetch the record from the fact table.
	Partial
)

// String names the strategy.
func (s Strategy) String() string {
	switch s {
	case KeysOnly:
		return "keys-only"
	case FullCopy:
		return "full-copy"
	case Partial:
		return "partial"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// projection is the compiled Projection of a Partial index. Its entry
// payload holds each field's value in the table's codec, so a field of any
// type can be kept.
type projection struct {
	fields []field
}

func compileProjection(rt reflect.Type, names []string) (projection, error) {
	var p projection
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return p, fmt.Errorf("%w: projection names %q twice", ErrInvalidSchema, n)
		}
		seen[n] = true
		f, err := lookupProjected(rt, n)
		if err != nil {
			return p, err
		}
		p.fields = append(p.fields, f)
	}
	return p, nil
}

// appendPayload appends the projected fields of rv, an addressable
// record: for each, its length as a uvarint, then its encoding. Each field
// is marshalled through a pointer, as it is unmarshalled, and appended in
// place after room for a one-byte length, which a longer one moves up.
func (p projection) appendPayload(dst []byte, rv reflect.Value, c Codec) ([]byte, error) {
	for i := range p.fields {
		at := len(dst)
		dst = append(dst, 0)
		fv := p.fields[i].get(rv)
		if !fv.IsValid() {
			continue // an empty field
		}
		var err error
		if dst, err = appendMarshal(c, dst, fv.Addr().Interface()); err != nil {
			return dst, fmt.Errorf("projected field %q: %w", p.fields[i].name, err)
		}
		n := len(dst) - at - 1
		if n < 0x80 {
			dst[at] = byte(n)
			continue
		}
		var buf [binary.MaxVarintLen64]byte
		length := binary.AppendUvarint(buf[:0], uint64(n))
		dst = append(dst, length[1:]...)
		copy(dst[at+len(length):], dst[at+1:at+1+n])
		copy(dst[at:], length)
	}
	return dst, nil
}

// decodePayload sets the projected fields of rv from a payload, setting
// the nil embedded pointers on their way; an empty field (behind a nil
// embedded pointer when written) is left zero, and its way nil.
func (p projection) decodePayload(payload string, rv reflect.Value, c Codec) error {
	sd, fast := c.(stringUnmarshaler)
	for i := range p.fields {
		n, w := uvarintString(payload)
		if w <= 0 || n > uint64(len(payload)-w) {
			return fmt.Errorf("%w: projected field %q: bad length", ErrCodec, p.fields[i].name)
		}
		b := payload[w : w+int(n)]
		payload = payload[w+int(n):]
		if len(b) == 0 {
			continue
		}
		fv := p.fields[i].settable(rv)
		var err error
		if fast {
			err = sd.unmarshalString(b, fv.Addr().Interface())
		} else {
			err = codecError(c.Unmarshal([]byte(b), fv.Addr().Interface()))
		}
		if err != nil {
			return fmt.Errorf("projected field %q: %w", p.fields[i].name, err)
		}
	}
	return nil
}
