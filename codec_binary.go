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
// A struct of exported booleans, integers, float64s and strings (and arrays
// and structs of these) decodes exactly as it was: a table writing such
// records computes their entries from the record itself. For other types a
// write decodes its record back first, so that its entries are those of
// the record as later reads will see it.
//
// Being positional, it ties stored records to the shape of their type:
// each value starts with a fingerprint of the shape (field names and
// kinds), and decoding bytes written under another shape fails with
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
		return fmt.Errorf("%w: the bytes were not encoded for the current shape of %s", ErrCodec, v.Type())
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

// plan returns the compiled plan of t, compiling it on first use.
func (c *BinaryCodec) plan(t reflect.Type) (*binaryPlan, error) {
	if p, ok := c.plans.Load(t); ok {
		return p.(*binaryPlan), nil
	}
	h := fnv.New32a()
	enc, dec, err := (&binaryCompiler{shape: h, visiting: map[reflect.Type]bool{}}).compile(t)
	if err != nil {
		return nil, err
	}
	p, _ := c.plans.LoadOrStore(t, &binaryPlan{fingerprint: h.Sum32(), enc: enc, dec: dec})
	return p.(*binaryPlan), nil
}

// binaryCompiler builds the encoder and decoder of a type as encoding/json
// builds its encoders: compile dispatches on the kind to one builder per
// kind, and the builders of the kinds made of other types (pointers,
// slices, arrays, maps, structs) compile those in turn.
//
// A builder returns closures, called directly: not method values, which
// would add a call per value. The small functions that only return a
// closure are kept from being inlined, because Go (1.26) does not inline
// the calls within a closure of an inlined function (golang/go#81380):
// encoding a map, for one, then allocated its iterator.
type binaryCompiler struct {
	// shape is written what the fingerprint hashes: each type's kind, an
	// array's length and the names of a struct's exported fields.
	shape io.Writer
	// visiting holds the types being compiled, to refuse a type that
	// contains itself.
	visiting map[reflect.Type]bool
}

// compile returns the encoder and decoder of t.
func (c *binaryCompiler) compile(t reflect.Type) (encFn, decFn, error) {
	fmt.Fprintf(c.shape, "%s;", t.Kind())
	if t == timeType {
		return encTime, decTime, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return encBool, decBool, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return encInt, decInt, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return encUint, decUint, nil
	case reflect.Float32, reflect.Float64:
		return encFloat, decFloat, nil
	case reflect.String:
		return encString, decString, nil
	case reflect.Pointer:
		return c.nested(t, c.compilePointer)
	case reflect.Slice:
		return c.nested(t, c.compileSlice)
	case reflect.Array:
		return c.nested(t, c.compileArray)
	case reflect.Map:
		return c.nested(t, c.compileMap)
	case reflect.Struct:
		return c.nested(t, c.compileStruct)
	}
	return nil, nil, fmt.Errorf("%w: cannot encode values of type %s", ErrCodec, t)
}

// binaryExact reports whether every value of t decodes from its binary
// encoding to an identical value, as the == operator compares them, with the
// same bits: a struct of exported fields, all booleans, integers, float64s,
// strings, or arrays and structs of those. A float32 is widened (a NaN's
// bits may change); a time.Time loses its monotonic reading; pointers,
// slices and maps may come back non-nil where they were nil, or the
// reverse; unexported fields are not encoded.
func binaryExact(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return binaryExact(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return false
		}
		for i := range t.NumField() {
			if f := t.Field(i); !f.IsExported() || !binaryExact(f.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// nested compiles t, a kind made of other types, with build, unless t is
// being compiled already: a type that contains itself would compile
// forever.
func (c *binaryCompiler) nested(t reflect.Type, build func(reflect.Type) (encFn, decFn, error)) (encFn, decFn, error) {
	if c.visiting[t] {
		return nil, nil, fmt.Errorf("%w: recursive type %s", ErrCodec, t)
	}
	c.visiting[t] = true
	defer delete(c.visiting, t)
	return build(t)
}

// A bool is one byte, 0 for false; any other byte decodes as true.
func encBool(dst []byte, v reflect.Value) ([]byte, error) {
	if v.Bool() {
		return append(dst, 1), nil
	}
	return append(dst, 0), nil
}

func decBool(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
	b, d, err := d.fixed(1)
	if err == nil {
		v.SetBool(b[0] != 0)
	}
	return d, err
}

// An integer of any size is a varint: zig-zagged for a signed kind (as
// binary.AppendVarint does), so that small magnitudes of either sign take
// one byte. Decoding refuses a value that overflows the type.
func encInt(dst []byte, v reflect.Value) ([]byte, error) {
	return binary.AppendVarint(dst, v.Int()), nil
}

func encUint(dst []byte, v reflect.Value) ([]byte, error) {
	return binary.AppendUvarint(dst, v.Uint()), nil
}

var decInt, decUint = intDecoder(true), intDecoder(false)

// intDecoder returns the decoder of the signed or of the unsigned integer
// kinds.
//
// Not inlined: see binaryCompiler.
//
//go:noinline
func intDecoder(signed bool) decFn {
	return func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
		u, d, err := d.uvarint()
		if err != nil {
			return d, err
		}
		if signed {
			x := unzigzag(u)
			if v.OverflowInt(x) {
				return d, d.fail("integer %d overflows %s", x, v.Type())
			}
			v.SetInt(x)
			return d, nil
		}
		if v.OverflowUint(u) {
			return d, d.fail("integer %d overflows %s", u, v.Type())
		}
		v.SetUint(u)
		return d, nil
	}
}

// A float is the 8 little-endian bytes of its float64 bits, a float32
// widened to float64 first.
func encFloat(dst []byte, v reflect.Value) ([]byte, error) {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float())), nil
}

func decFloat(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
	b, d, err := d.fixed(8)
	if err == nil {
		var u uint64
		for i := 7; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		v.SetFloat(math.Float64frombits(u))
	}
	return d, err
}

// A string is its length as a uvarint, then its bytes as they are.
func encString(dst []byte, v reflect.Value) ([]byte, error) {
	return appendSized(dst, v.String()), nil
}

// appendSized appends s after its length as a uvarint.
func appendSized(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func decString(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
	s, d, err := d.str()
	if err == nil {
		v.SetString(s)
	}
	return d, err
}

// A []byte (any slice of a byte kind) is its length + 1 as a uvarint, 0
// for nil, then its bytes.
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

// A pointer is 0 for nil, else 1 then the value it points to.
func (c *binaryCompiler) compilePointer(t reflect.Type) (encFn, decFn, error) {
	elemEnc, elemDec, err := c.compile(t.Elem())
	if err != nil {
		return nil, nil, err
	}
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(dst, 0), nil
		}
		return elemEnc(append(dst, 1), v.Elem())
	}
	dec := func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
		b, d, err := d.fixed(1)
		if err != nil || b[0] == 0 {
			return d, err
		}
		p := reflect.New(t.Elem())
		if d, err = elemDec(d, p.Elem()); err == nil {
			v.Set(p)
		}
		return d, err
	}
	return enc, dec, nil
}

// An array is its elements one after another, as many as its type says.
func (c *binaryCompiler) compileArray(t reflect.Type) (encFn, decFn, error) {
	elemEnc, elemDec, err := c.compile(t.Elem())
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c.shape, "%d;", t.Len())
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		return encElems(dst, v, elemEnc)
	}
	dec := func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
		return decElems(d, v, elemDec)
	}
	return enc, dec, nil
}

// A slice is its length + 1 as a uvarint, 0 for nil, then its elements as
// an array's; a []byte (of any byte kind) is encBytes'.
func (c *binaryCompiler) compileSlice(t reflect.Type) (encFn, decFn, error) {
	if t.Elem().Kind() == reflect.Uint8 {
		return encBytes, decBytes, nil
	}
	elemEnc, elemDec, err := c.compile(t.Elem())
	if err != nil {
		return nil, nil, err
	}
	enc := func(dst []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(dst, 0), nil
		}
		return encElems(binary.AppendUvarint(dst, uint64(v.Len())+1), v, elemEnc)
	}
	dec := func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
		n, d, err := d.count()
		if err != nil || n < 0 {
			return d, err
		}
		s := reflect.MakeSlice(t, n, n)
		if d, err = decElems(d, s, elemDec); err == nil {
			v.Set(s)
		}
		return d, err
	}
	return enc, dec, nil
}

// encElems encodes the elements of v, an array or a slice, with elemEnc.
func encElems(dst []byte, v reflect.Value, elemEnc encFn) ([]byte, error) {
	for i := range v.Len() {
		var err error
		if dst, err = elemEnc(dst, v.Index(i)); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// decElems decodes the elements of v, an array or a slice, with elemDec.
func decElems(d binaryDecoder, v reflect.Value, elemDec decFn) (binaryDecoder, error) {
	var err error
	for i := range v.Len() {
		if d, err = elemDec(d, v.Index(i)); err != nil {
			return d, err
		}
	}
	return d, nil
}

// A map is its length + 1 as a uvarint, 0 for nil, then each key followed
// by its value.
func (c *binaryCompiler) compileMap(t reflect.Type) (encFn, decFn, error) {
	keyEnc, keyDec, err := c.compile(t.Key())
	if err != nil {
		return nil, nil, err
	}
	valEnc, valDec, err := c.compile(t.Elem())
	if err != nil {
		return nil, nil, err
	}
	return mapEncoder(keyEnc, valEnc), mapDecoder(t, keyDec, valDec), nil
}

// mapEncoder writes the entries in the order of their encoded keys, so
// that equal maps encode alike and an unchanged record rewrites no entry.
//
// Not inlined: see binaryCompiler.
//
//go:noinline
func mapEncoder(keyEnc, valEnc encFn) encFn {
	return func(dst []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(dst, 0), nil
		}
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
	}
}

// mapDecoder decodes the entries into a new map, which it sets v to.
//
// Not inlined: see binaryCompiler.
//
//go:noinline
func mapDecoder(t reflect.Type, keyDec, valDec decFn) decFn {
	return func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
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
	}
}

// binaryField is the codec of one exported field of a struct.
type binaryField struct {
	index  int     // in the struct
	offset uintptr // from the struct's start
	str    bool    // a string, read and written in place where it can be
	enc    encFn
	dec    decFn
}

// A struct is its exported fields in order; unexported ones are left out.
func (c *binaryCompiler) compileStruct(t reflect.Type) (encFn, decFn, error) {
	var fields []binaryField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fmt.Fprintf(c.shape, "%s:", sf.Name)
		enc, dec, err := c.compile(sf.Type)
		if err != nil {
			return nil, nil, wrapErrorf(ErrCodec, err, "field %s", sf.Name)
		}
		fields = append(fields, binaryField{i, sf.Offset, sf.Type.Kind() == reflect.String, enc, dec})
	}
	c.shape.Write([]byte("}"))
	return structEncoder(fields), structDecoder(fields), nil
}

// structEncoder reads a string field of an addressable struct in place,
// the hot path of records made of strings.
//
// Not inlined: see binaryCompiler.
//
//go:noinline
func structEncoder(fields []binaryField) encFn {
	return func(dst []byte, v reflect.Value) ([]byte, error) {
		var base unsafe.Pointer
		if v.CanAddr() {
			base = unsafe.Pointer(v.UnsafeAddr()) // not Addr, which looks up the pointer type
		}
		for i := range fields {
			f := &fields[i]
			if f.str && base != nil {
				dst = appendSized(dst, *(*string)(unsafe.Add(base, f.offset)))
				continue
			}
			var err error
			if dst, err = f.enc(dst, v.Field(f.index)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
}

// structDecoder writes a string field of a settable struct in place, as
// structEncoder reads it.
//
// Not inlined: see binaryCompiler.
//
//go:noinline
func structDecoder(fields []binaryField) decFn {
	return func(d binaryDecoder, v reflect.Value) (binaryDecoder, error) {
		var base unsafe.Pointer
		if v.CanSet() {
			base = unsafe.Pointer(v.UnsafeAddr()) // not Addr, which looks up the pointer type
		}
		var err error
		for i := range fields {
			f := &fields[i]
			if f.str && base != nil {
				s, next, ok := d.shortStr()
				if !ok {
					if s, next, err = d.str(); err != nil {
						return d, err
					}
				}
				*(*string)(unsafe.Add(base, f.offset)) = s
				d = next
				continue
			}
			if d, err = f.dec(d, v.Field(f.index)); err != nil {
				return d, err
			}
		}
		return d, nil
	}
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
	return unzigzag(ux), d, err
}

// unzigzag undoes the zig-zag encoding of binary.AppendVarint.
func unzigzag(ux uint64) int64 {
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
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

// shortStr reads a string shorter than 128 bytes, the usual case, whose
// length is one byte: a short cut that inlines. ok is false for any other
// string, and for bad input, which str then reads or reports.
func (d binaryDecoder) shortStr() (s string, next binaryDecoder, ok bool) {
	if d.off < len(d.s) && d.s[d.off] < 0x80 && int(d.s[d.off]) < len(d.s)-d.off {
		end := d.off + 1 + int(d.s[d.off])
		return d.s[d.off+1 : end], binaryDecoder{d.s, end}, true
	}
	return "", d, false
}

// str reads a string.
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
