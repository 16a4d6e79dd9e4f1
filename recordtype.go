package indextable

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/indextable/indextable/kv"
)

// errRecordType reports a record type that no descriptor can describe.
var errRecordType = fmt.Errorf("%w: record type", ErrInvalidSchema)

// describeType appends to b the descriptor of t, whose values are stored
// with the JSON codec when forJSON is set, else with the binary codec.
func describeType(b []byte, t reflect.Type, forJSON bool) ([]byte, error) {
	d := describer{forJSON: forJSON, visiting: map[reflect.Type]bool{}}
	return d.describe(b, t)
}

type describer struct {
	forJSON  bool
	visiting map[reflect.Type]bool
}

var encodingMethods = []reflect.Type{
	reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler](),
	reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
}

func (d describer) describe(b []byte, t reflect.Type) ([]byte, error) {
	if t == timeType {
		return append(b, "time"...), nil
	}
	if d.forJSON && t.Kind() != reflect.Interface {
		for _, m := range encodingMethods {
			if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
				return nil, fmt.Errorf("%w: %s has its own encoding (%s)", errRecordType, t, m)
			}
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return append(b, t.Kind().String()...), nil
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return nil, fmt.Errorf("%w: interface %s has methods", errRecordType, t)
		}
		return append(b, "any"...), nil
	case reflect.Pointer:
		return d.nested(append(b, '*'), t.Elem(), t)
	case reflect.Slice:
		return d.nested(append(b, "[]"...), t.Elem(), t)
	case reflect.Array:
		return d.nested(append(b, "["+strconv.Itoa(t.Len())+"]"...), t.Elem(), t)
	case reflect.Map:
		b, err := d.nested(append(b, "map["...), t.Key(), t)
		if err != nil {
			return nil, err
		}
		return d.nested(append(b, ']'), t.Elem(), t)
	case reflect.Struct:
		if d.visiting[t] {
			return nil, fmt.Errorf("%w: recursive type %s", errRecordType, t)
		}
		d.visiting[t] = true
		defer delete(d.visiting, t)
		b = append(b, "struct{"...)
		for i := range t.NumField() {
			sf := t.Field(i)
			switch {
			case sf.Anonymous && sf.Type == timeType:
				return nil, fmt.Errorf("%w: %s embeds time.Time", errRecordType, t)
			case !sf.IsExported() && sf.Anonymous && d.forJSON:
				return nil, fmt.Errorf("%w: %s embeds %s, unexported, whose fields JSON stores", errRecordType, t, sf.Type)
			case !sf.IsExported():
				continue
			}
			if sf.Anonymous {
				b = append(b, "embed "...)
			}
			b = append(append(b, sf.Name...), ' ')
			var err error
			if b, err = d.describe(b, sf.Type); err != nil {
				return nil, err
			}
			b = append(strconv.AppendQuote(append(b, ' '), string(sf.Tag)), ';')
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("%w: %s has kind %s, which no codec stores", errRecordType, t, t.Kind())
}

func (d describer) nested(b []byte, elem, outer reflect.Type) ([]byte, error) {
	b, err := d.describe(b, elem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", outer, err)
	}
	return b, nil
}

// describedType returns the type that the descriptor s describes.
func describedType(s string) (t reflect.Type, err error) {
	defer func() {
		if r := recover(); r != nil { // reflect refuses a field set it cannot build
			t, err = nil, fmt.Errorf("%w: %q: %v", errRecordType, s, r)
		}
	}()
	t, rest, err := parseType(s)
	if err == nil && rest != "" {
		err = fmt.Errorf("%w: %q: %q left over", errRecordType, s, rest)
	}
	return t, err
}

var basicKinds = map[string]reflect.Type{
	"bool": reflect.TypeFor[bool](), "string": reflect.TypeFor[string](),
	"int": reflect.TypeFor[int](), "int8": reflect.TypeFor[int8](), "int16": reflect.TypeFor[int16](),
	"int32": reflect.TypeFor[int32](), "int64": reflect.TypeFor[int64](),
	"uint": reflect.TypeFor[uint](), "uint8": reflect.TypeFor[uint8](), "uint16": reflect.TypeFor[uint16](),
	"uint32": reflect.TypeFor[uint32](), "uint64": reflect.TypeFor[uint64](),
	"float32": reflect.TypeFor[float32](), "float64": reflect.TypeFor[float64](),
	"time": reflect.TypeFor[time.Time](), "any": reflect.TypeFor[any](),
}

func parseType(s string) (reflect.Type, string, error) {
	bad := func(why string) (reflect.Type, string, error) {
		return nil, "", fmt.Errorf("%w: %s at %q", errRecordType, why, s)
	}
	switch {
	case strings.HasPrefix(s, "*"):
		t, rest, err := parseType(s[1:])
		if err != nil {
			return nil, "", err
		}
		return reflect.PointerTo(t), rest, nil
	case strings.HasPrefix(s, "[]"):
		t, rest, err := parseType(s[2:])
		if err != nil {
			return nil, "", err
		}
		return reflect.SliceOf(t), rest, nil
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		n, err := strconv.Atoi(s[1:max(end, 1)])
		if end < 0 || err != nil || n < 0 {
			return bad("bad array length")
		}
		t, rest, err := parseType(s[end+1:])
		if err != nil {
			return nil, "", err
		}
		return reflect.ArrayOf(n, t), rest, nil
	case strings.HasPrefix(s, "map["):
		k, rest, err := parseType(s[4:])
		if err != nil {
			return nil, "", err
		}
		if !strings.HasPrefix(rest, "]") {
			return bad("no ] after a map key")
		}
		v, rest, err := parseType(rest[1:])
		if err != nil {
			return nil, "", err
		}
		if !k.Comparable() {
			return bad("map key not comparable")
		}
		return reflect.MapOf(k, v), rest, nil
	case strings.HasPrefix(s, "struct{"):
		rest := s[len("struct{"):]
		var fields []reflect.StructField
		for !strings.HasPrefix(rest, "}") {
			var f reflect.StructField
			if after, ok := strings.CutPrefix(rest, "embed "); ok {
				f.Anonymous, rest = true, after
			}
			name, after, ok := strings.Cut(rest, " ")
			if !ok || !token.IsIdentifier(name) || !token.IsExported(name) {
				return bad("bad field name")
			}
			t, after, err := parseType(after)
			if err != nil {
				return nil, "", err
			}
			after, ok = strings.CutPrefix(after, " ")
			if !ok {
				return bad("no tag")
			}
			quoted, err := strconv.QuotedPrefix(after)
			if err != nil {
				return bad("bad tag")
			}
			tag, _ := strconv.Unquote(quoted)
			rest, ok = strings.CutPrefix(after[len(quoted):], ";")
			if !ok {
				return bad("no ; after a field")
			}
			f.Name, f.Type, f.Tag = name, t, reflect.StructTag(tag)
			fields = append(fields, f)
		}
		return reflect.StructOf(fields), rest[1:], nil
	}
	end := strings.IndexAny(s, " ];}")
	if end < 0 {
		end = len(s)
	}
	t, ok := basicKinds[s[:end]]
	if !ok {
		return bad("unknown type")
	}
	return t, s[end:], nil
}

// recordTypeFormat 2 adds the primary key's field names to format 1's codec
// and descriptor, and keeps them, with no codec and descriptor, for a type
// that no descriptor can stand for.
const recordTypeFormat = 2

// codecName names c in the stored record type: "json" and "binary" for the
// library's codecs, which tools can decode, else c's type.
func codecName(c Codec) string {
	switch c.(type) {
	case JSONCodec, *JSONCodec:
		return "json"
	case *BinaryCodec:
		return "binary"
	}
	return fmt.Sprintf("%T", c)
}

// writeRecordType keeps the table's primary key, record type and codec in
// the store, for tools; without the record type and codec when no descriptor can
// stand for the type. It does its best and no more: Open does not fail for
// it (the store may be read-only, say); a tool then finds the record type
// missing, or the last one kept. Only a done ctx stops it.
func (t *Table[T]) writeRecordType(ctx context.Context) error {
	codec := codecName(t.codec)
	desc, err := describeType(nil, t.rtype, codec != "binary")
	if err == nil {
		_, err = describedType(string(desc))
	}
	if err != nil {
		codec, desc = "", nil
	}
	elems := []any{int64(recordTypeFormat), codec, string(desc)}
	for _, f := range t.pk {
		elems = append(elems, f.name)
	}
	want, err := kv.EncodeTuple(elems...)
	if err != nil {
		panic(err) // every element has a supported type
	}
	key := recordTypeKey(t.prefix)
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		have, err := t.store.Get(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			break
		}
		if bytes.Equal(have, want) {
			return nil
		}
		var b kv.Batch
		if have != nil {
			b.ExpectValue(key, have)
		} else {
			b.ExpectAbsent(key)
		}
		b.Put(key, want)
		if err = t.store.Apply(ctx, &b); !errors.Is(err, ErrConflict) {
			break
		}
	}
	return ctx.Err()
}

// readRecordType returns the codec name, type descriptor and primary key
// fields that the table with prefix keeps: empty strings when it keeps no
// record type, and no fields when it keeps no primary key (format 1 kept none).
func readRecordType(ctx context.Context, store kv.Store, tablePrefix []byte) (codec, desc string, pk []string, err error) {
	v, err := store.Get(ctx, recordTypeKey(tablePrefix))
	if errors.Is(err, ErrNotFound) {
		return "", "", nil, nil
	}
	if err != nil {
		return "", "", nil, err
	}
	bad := fmt.Errorf("%w: %w: %q", ErrCodec, errRecordType, v)
	t, err := decodeTuple(v)
	if err != nil || len(t) < 3 {
		return "", "", nil, bad
	}
	format, _ := asInt(t[0])
	codec, ok1 := t[1].(string)
	desc, ok2 := t[2].(string)
	if !ok1 || !ok2 || !(format == 1 && len(t) == 3 || format == recordTypeFormat && len(t) > 3) {
		return "", "", nil, bad
	}
	for _, e := range t[3:] {
		name, ok := e.(string)
		if !ok || name == "" {
			return "", "", nil, bad
		}
		pk = append(pk, name)
	}
	return codec, desc, pk, nil
}
