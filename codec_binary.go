package indextable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// BinaryCodec encodes values in a compact positional binary form, compiled
// once per type: several times faster than JSON, and decoding a record
// makes one allocation for all its strings. It encodes the exported fields
// of structs (strings, []byte, booleans, numbers, time.Time, pointers,
// slices, arrays, maps and nested structs of these), and keeps any string
// bytes, valid UTF-8 or not.
//
// A type that contains itself (a tree of nodes, say) is refused with
// ErrCodec.
//
// Being positional, it ties stored records to the layout of their type:
// each value starts with a fingerprint of the layout (field names and
// kinds), and decoding bytes written under another layout fails with
// ErrCodec rather than misread them. Changing a record type therefore
// means rewriting its table; use JSONCodec where types evolve in place.
//
// The zero value is ready to use; use it through a pointer.
type BinaryCodec struct {
	plans sync.Map // reflect.Type -> *binaryPlan
}

// binaryPlan is the compiled encoder and decoder of one type.
type binaryPlan struct {
	fingerprint uint32
	enc         encFn
	dec         decFn
}

type (
	encFn func(dst []byte, v reflect.Value) ([]byte, error)
	// decFn decodes into v from d and returns d advanced past what it read.
	// The decoder goes by value, so that decoding allocates nothing of its
	// own.
	decFn func(d binaryDecoder, v reflect.Value) (binaryDecoder, error)
)

// binaryDecoder reads an encoding from s, the whole input as a string that
// decoded strings are cut from: one copy for all of them (Unmarshal), or
// none when the input may be kept.
type binaryDecoder struct {
	s   string
	off int
}

// Marshal implements Codec. As with encoding/json, for a v that is not
// itself a pointer, Marshal(&v) encodes what Marshal(v) does, and
// Unmarshal(data, &v) decodes either.
func (c *BinaryCodec) Marshal(v any) ([]byte, error) {
	return c.AppendMarshal(make([]byte, 0, 64), v)
}

// AppendMarshal implements AppendMarshaler.
func (c *BinaryCodec) AppendMarshal(dst []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil, fmt.Errorf("%w: cannot encode nil", ErrCodec)
	}
	p, err := c.plan(rv.Type())
	if err != nil {
		return nil, err
	}
	return p.enc(binary.BigEndian.AppendUint32(dst, p.fingerprint), rv)
}

// Unmarshal implements Codec.
func (c *BinaryCodec) Unmarshal(data []byte, v any) error {
	return c.unmarshalString(string(data), v)
}

// unmarshalString decodes s; decoded strings are cut from it.
func (c *BinaryCodec) unmarshalString(data string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%w: decode needs a non-nil pointer, not %T", ErrCodec, v)
	}
	p, err := c.plan(rv.Type().Elem())
	if err != nil {
		return err
	}
	return p.decode(data, rv.Elem())
}

// decode decodes data into v, a settable value of the plan's type; decoded
// strings are cut from data.
func (p *binaryPlan) decode(data string, v reflect.Value) error {
	if len(data) < 4 || uint32(data[0])<<24|uint32(data[1])<<16|uint32(data[2])<<8|uint32(data[3]) != p.fingerprint {
		return fmt.Errorf("%w: the bytes were not encoded for the current layout of %s", ErrCodec, v.Type())
	}
	d, err := p.dec(binaryDecoder{s: data, off: 4}, v)
	if err != nil {
		return err
	}
	if d.off != len(data) {
		return fmt.Errorf("%w: %d bytes left over", ErrCodec, len(data)-d.off)
	}
	return nil
}

func (c *BinaryCodec) plan(t reflect.Type) (*binaryPlan, error) {
	if p, ok := c.plans.Load(t); ok {
		return p.(*binaryPlan), nil
	}
	h := fnv.New32a()
	enc, dec, err := compileBinary(t, h, map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	p, _ := c.plans.LoadOrStore(t, &binaryPlan{fingerprint: h.Sum32(), enc: enc, dec: dec})
	return p.(*binaryPlan), nil
}

func compileBinary(t reflect.Type, h io.Writer, visiting map[reflect.Type]bool) (encFn, decFn, error) {
	fmt.Fprintf(h, "%s;", t.Kind())
	if t == timeType {
		return encTime, decTime, nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
		// A type that contains itself would compile forever.
		if visiting[t] {
			return nil, nil, fmt.Errorf("%w: recursive type %s", ErrCodec, t)
		}
		visiting[t] = true
		defer delete(visiting, t)
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				if v.Bool() {
					return append(dst, 1), nil
				}
				return append(dst, 0), nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				b, d, err := d.fixed(1)
				if err == nil {
					v.SetBool(b[0] != 0)
				}
				return d, err
			}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				return binary.AppendVarint(dst, v.Int()), nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				x, d, err := d.varint()
				if err == nil {
					if v.OverflowInt(x) {
						return d, d.fail("integer %d overflows %s", x, v.Type())
					}
					v.SetInt(x)
				}
				return d, err
			}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				return binary.AppendUvarint(dst, v.Uint()), nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				x, d, err := d.uvarint()
				if err == nil {
					if v.OverflowUint(x) {
						return d, d.fail("integer %d overflows %s", x, v.Type())
					}
					v.SetUint(x)
				}
				return d, err
			}, nil
	case reflect.Float32, reflect.Float64:
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float())), nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				b, d, err := d.fixed(8)
				if err == nil {
					var u uint64
					for i := 7; i >= 0; i-- {
						u = u<<8 | uint64(b[i])
					}
					v.SetFloat(math.Float64frombits(u))
				}
				return d, err
			}, nil
	case reflect.String:
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				s := v.String()
				return append(binary.AppendUvarint(dst, uint64(len(s))), s...), nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				s, d, err := d.str()
				if err == nil {
					v.SetString(s)
				}
				return d, err
			}, nil
	case reflect.Pointer:
		elemEnc, elemDec, err := compileBinary(t.Elem(), h, visiting)
		if err != nil {
			return nil, nil, err
		}
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				if v.IsNil() {
					return append(dst, 0), nil
				}
				return elemEnc(append(dst, 1), v.Elem())
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				b, d, err := d.fixed(1)
				if err != nil || b[0] == 0 {
					return d, err
				}
				p := reflect.New(t.Elem())
				if d, err = elemDec(d, p.Elem()); err == nil {
					v.Set(p)
				}
				return d, err
			}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return encBytes, decBytes, nil
		}
		elemEnc, elemDec, err := compileBinary(t.Elem(), h, visiting)
		if err != nil {
			return nil, nil, err
		}
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				if v.IsNil() {
					return append(dst, 0), nil
				}
				dst = binary.AppendUvarint(dst, uint64(v.Len())+1)
				for i := range v.Len() {
					var err error
					if dst, err = elemEnc(dst, v.Index(i)); err != nil {
						return dst, err
					}
				}
				return dst, nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				n, d, err := d.count()
				if err != nil || n < 0 {
					return d, err
				}
				s := reflect.MakeSlice(t, n, n)
				for i := range n {
					if d, err = elemDec(d, s.Index(i)); err != nil {
						return d, err
					}
				}
				v.Set(s)
				return d, nil
			}, nil
	case reflect.Array:
		elemEnc, elemDec, err := compileBinary(t.Elem(), h, visiting)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(h, "%d;", t.Len())
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				for i := range v.Len() {
					var err error
					if dst, err = elemEnc(dst, v.Index(i)); err != nil {
						return dst, err
					}
				}
				return dst, nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				var err error
				for i := range v.Len() {
					if d, err = elemDec(d, v.Index(i)); err != nil {
						return d, err
					}
				}
				return d, nil
			}, nil
	case reflect.Map:
		keyEnc, keyDec, err := compileBinary(t.Key(), h, visiting)
		if err != nil {
			return nil, nil, err
		}
		valEnc, valDec, err := compileBinary(t.Elem(), h, visiting)
		if err != nil {
			return nil, nil, err
		}
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				if v.IsNil() {
					return append(dst, 0), nil
				}
				// Entries go in the order of their encoded keys, so that equal
				// maps encode alike and an unchanged record rewrites no entry.
				var buf []byte
				spans := make([][3]int, 0, v.Len()) // key start, value start, end in buf
				for it := v.MapRange(); it.Next(); {
					start := len(buf)
					var err error
					if buf, err = keyEnc(buf, it.Key()); err != nil {
						return dst, err
					}
					mid := len(buf)
					if buf, err = valEnc(buf, it.Value()); err != nil {
						return dst, err
					}
					spans = append(spans, [3]int{start, mid, len(buf)})
				}
				slices.SortFunc(spans, func(x, y [3]int) int { return bytes.Compare(buf[x[0]:x[1]], buf[y[0]:y[1]]) })
				dst = binary.AppendUvarint(dst, uint64(v.Len())+1)
				for _, sp := range spans {
					dst = append(dst, buf[sp[0]:sp[2]]...)
				}
				return dst, nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				n, d, err := d.count()
				if err != nil || n < 0 {
					return d, err
				}
				m := reflect.MakeMapWithSize(t, n)
				k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
				for range n {
					k.SetZero()
					e.SetZero()
					if d, err = keyDec(d, k); err != nil {
						return d, err
					}
					if d, err = valDec(d, e); err != nil {
						return d, err
					}
					m.SetMapIndex(k, e)
				}
				v.Set(m)
				return d, nil
			}, nil
	case reflect.Struct:
		// A string field of an addressable struct is read and written in
		// place, the hot path of records made of strings.
		type fieldCodec struct {
			index  int
			offset uintptr
			str    bool
			enc    encFn
			dec    decFn
		}
		var fields []fieldCodec
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			fmt.Fprintf(h, "%s:", sf.Name)
			enc, dec, err := compileBinary(sf.Type, h, visiting)
			if err != nil {
				return nil, nil, wrapErrorf(ErrCodec, err, "field %s", sf.Name)
			}
			fields = append(fields, fieldCodec{i, sf.Offset, sf.Type.Kind() == reflect.String, enc, dec})
		}
		h.Write([]byte("}"))
		return func(dst []byte, v reflect.Value) ([]byte, error) {
				var base unsafe.Pointer
				if v.CanAddr() {
					base = v.Addr().UnsafePointer()
				}
				for _, f := range fields {
					if f.str && base != nil {
						s := *(*string)(unsafe.Add(base, f.offset))
						dst = append(binary.AppendUvarint(dst, uint64(len(s))), s...)
						continue
					}
					var err error
					if dst, err = f.enc(dst, v.Field(f.index)); err != nil {
						return dst, err
					}
				}
				return dst, nil
			}, func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
				var base unsafe.Pointer
				if v.CanSet() {
					base = v.Addr().UnsafePointer()
				}
				var err error
				for _, f := range fields {
					if f.str && base != nil {
						// A string shorter than 128 bytes, the usual case,
						// has a length of one byte.
						if d.off < len(d.s) && d.s[d.off] < 0x80 && int(d.s[d.off]) < len(d.s)-d.off {
							end := d.off + 1 + int(d.s[d.off])
							*(*string)(unsafe.Add(base, f.offset)) = d.s[d.off+1 : end]
							d.off = end
							continue
						}
						var s string
						if s, d, err = d.str(); err != nil {
							return d, err
						}
						*(*string)(unsafe.Add(base, f.offset)) = s
						continue
					}
					if d, err = f.dec(d, v.Field(f.index)); err != nil {
						return d, err
					}
				}
				return d, nil
			}, nil
	}
	return nil, nil, fmt.Errorf("%w: cannot encode values of type %s", ErrCodec, t)
}

func encBytes(dst []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(dst, 0), nil
	}
	b := v.Bytes()
	return append(binary.AppendUvarint(dst, uint64(len(b))+1), b...), nil
}

func decBytes(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
	n, d, err := d.count()
	if err != nil || n < 0 {
		return d, err
	}
	b, d, err := d.fixed(n)
	if err == nil {
		v.SetBytes([]byte(b)) // a copy the caller owns
	}
	return d, err
}

// A time is its Unix seconds, nanoseconds and zone offset in seconds; the
// zone's name is not kept, and offset zero decodes as UTC.
func encTime(dst []byte, v reflect.Value) ([]byte, error) {
	t := v.Interface().(time.Time)
	_, offset := t.Zone()
	dst = binary.AppendVarint(dst, t.Unix())
	dst = binary.AppendUvarint(dst, uint64(t.Nanosecond()))
	return binary.AppendVarint(dst, int64(offset)), nil
}

func decTime(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
	sec, d, err := d.varint()
	if err != nil {
		return d, err
	}
	nsec, d, err := d.uvarint()
	if err != nil {
		return d, err
	}
	offset, d, err := d.varint()
	if err != nil {
		return d, err
	}
	if nsec >= 1e9 || offset < -24*3600 || offset > 24*3600 {
		return d, d.fail("invalid time")
	}
	t := time.Unix(sec, int64(nsec)).UTC()
	if offset != 0 {
		t = t.In(time.FixedZone("", int(offset)))
	}
	v.Set(reflect.ValueOf(t))
	return d, nil
}

func (d binaryDecoder) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrCodec, d.off, fmt.Sprintf(format, args...))
}

// fixed reads n bytes.
func (d binaryDecoder) fixed(n int) (string, binaryDecoder, error) {
	if n < 0 || len(d.s)-d.off < n {
		return "", d, d.fail("truncated")
	}
	return d.s[d.off : d.off+n], binaryDecoder{d.s, d.off + n}, nil
}

func (d binaryDecoder) uvarint() (uint64, binaryDecoder, error) {
	x, n := uvarintString(d.s[d.off:])
	if n <= 0 {
		return 0, d, d.fail("bad varint")
	}
	return x, binaryDecoder{d.s, d.off + n}, nil
}

func (d binaryDecoder) varint() (int64, binaryDecoder, error) {
	ux, d, err := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, d, err
}

// count reads a length written as n+1, with 0 for nil (returned as -1). A
// length is bounded by the bytes left, so bad input cannot make a decoder
// allocate more than its input justifies.
func (d binaryDecoder) count() (int, binaryDecoder, error) {
	x, next, err := d.uvarint()
	if err != nil {
		return 0, d, err
	}
	if x > uint64(len(next.s)-next.off)+1 {
		return 0, d, d.fail("length %d exceeds the input", x-1)
	}
	return int(x) - 1, next, nil
}

func (d binaryDecoder) str() (string, binaryDecoder, error) {
	n, next, err := d.uvarint()
	if err != nil {
		return "", d, err
	}
	if n > uint64(len(next.s)-next.off) {
		return "", d, d.fail("truncated string")
	}
	return next.fixed(int(n))
}

// uvarintString is binary.Uvarint over a string.
func uvarintString(s string) (uint64, int) {
	var x uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<(7*i), i + 1
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	return 0, 0
}
