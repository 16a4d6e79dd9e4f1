package indextable

import (
	"fmt"
	"reflect"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// field is a compiled accessor for one named field of a record type.
type field struct {
	name  string
	index []int
	typ   reflect.Type
	// multi is set for a slice field whose elements are the key components
	// (a multi-valued key).
	multi bool
}

// lookupField finds the exported field name of struct type rt and checks
// that it can be a key component (or, when multi is allowed, a slice of
// key components).
func lookupField(rt reflect.Type, name string, allowMulti bool) (field, error) {
	sf, ok := rt.FieldByName(name)
	if !ok || !sf.IsExported() {
		return field{}, fmt.Errorf("%w: %s has no exported field %q", ErrInvalidSchema, rt, name)
	}
	f := field{name: name, index: sf.Index, typ: sf.Type}
	if keyType(sf.Type) {
		return f, nil
	}
	if sf.Type.Kind() == reflect.Slice && keyType(sf.Type.Elem()) {
		if !allowMulti {
			return field{}, fmt.Errorf("%w: field %q is a slice; only a multi-valued index may key on it", ErrInvalidSchema, name)
		}
		f.multi = true
		return f, nil
	}
	return field{}, fmt.Errorf("%w: field %q has type %s, which cannot be a key component", ErrInvalidSchema, name, sf.Type)
}

// keyType reports whether values of t encode as one tuple element.
func keyType(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.Uint8
	case reflect.Struct:
		return t == timeType
	}
	return false
}

// lookupProjected finds an exported field of any type, for a projection.
func lookupProjected(rt reflect.Type, name string) (field, error) {
	sf, ok := rt.FieldByName(name)
	if !ok || !sf.IsExported() {
		return field{}, fmt.Errorf("%w: projection names %q, which %s has no exported field of", ErrInvalidSchema, name, rt)
	}
	return field{name: name, index: sf.Index, typ: sf.Type}, nil
}

// get returns the field of the struct value rv. Embedded pointers that are
// nil yield an invalid Value.
func (f *field) get(rv reflect.Value) reflect.Value {
	if len(f.index) == 1 {
		return rv.Field(f.index[0])
	}
	v, err := rv.FieldByIndexErr(f.index)
	if err != nil {
		return reflect.Value{}
	}
	return v
}

// appendKeyValue appends the tuple element encoding of v, a value of a
// keyType.
func appendKeyValue(dst []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return appendString(dst, v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return appendInt(dst, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return appendUint(dst, v.Uint())
	case reflect.Float32, reflect.Float64:
		return appendFloat(dst, v.Float())
	case reflect.Bool:
		return appendBool(dst, v.Bool())
	case reflect.Slice:
		return appendBytes(dst, v.Bytes())
	case reflect.Pointer:
		if v.IsNil() {
			return appendNil(dst)
		}
		return appendKeyValue(dst, v.Elem())
	case reflect.Struct:
		if v.CanAddr() {
			return appendTime(dst, *(*time.Time)(v.Addr().UnsafePointer()))
		}
		return appendTime(dst, v.Interface().(time.Time))
	}
	return appendNil(dst) // unreachable for a keyType
}

// setKeyValue stores a decoded tuple element into dst, a settable value of
// a keyType.
func setKeyValue(dst reflect.Value, elem any) error {
	if dst.Kind() == reflect.Pointer {
		if elem == nil {
			dst.SetZero()
			return nil
		}
		p := reflect.New(dst.Type().Elem())
		if err := setKeyValue(p.Elem(), elem); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	ok := true
	switch x := elem.(type) {
	case string:
		ok = dst.Kind() == reflect.String
		if ok {
			dst.SetString(x)
		}
	case []byte:
		ok = dst.Kind() == reflect.Slice
		if ok {
			dst.SetBytes(x)
		}
	case int64:
		switch {
		case dst.CanInt():
			dst.SetInt(x)
		case dst.CanUint() && x >= 0:
			dst.SetUint(uint64(x))
		default:
			ok = false
		}
	case uint64:
		ok = dst.CanUint()
		if ok {
			dst.SetUint(x)
		}
	case float64:
		ok = dst.CanFloat()
		if ok {
			dst.SetFloat(x)
		}
	case bool:
		ok = dst.Kind() == reflect.Bool
		if ok {
			dst.SetBool(x)
		}
	case time.Time:
		ok = dst.Type() == timeType
		if ok {
			dst.Set(reflect.ValueOf(x))
		}
	default:
		ok = elem == nil
		if ok {
			dst.SetZero()
		}
	}
	if !ok {
		return fmt.Errorf("%w: cannot store %T in a field of type %s", ErrMalformedKey, elem, dst.Type())
	}
	return nil
}

// kindClass groups Go kinds by the tuple element type they encode to, so a
// query value can be checked against the field it is compared with.
func kindClass(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Bool:
		return "bool"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return kindClass(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return "time"
		}
	}
	return t.String()
}

// checkComponent reports whether query value v may be compared with field
// f: nil matches anything (a nil pointer is indexed as nil), otherwise the
// encoded element types must agree.
func checkComponent(f *field, v any) error {
	if v == nil {
		return nil
	}
	if want, got := kindClass(f.typ), kindClass(reflect.TypeOf(v)); want != got {
		return fmt.Errorf("%w: field %q holds %s values, the query gives %T", ErrInvalidQuery, f.name, want, v)
	}
	return nil
}
