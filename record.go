package indextable

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/indextable/indextable/internal/tuple"
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

// appendKey appends the tuple element of the single-valued field f of the
// struct value rv to dst. It reports false, appending nothing, when the
// field is unreachable (behind a nil embedded pointer), or when it is zero
// and sparse is set: the record has no key with it.
func (f *field) appendKey(dst []byte, rv reflect.Value, sparse bool) ([]byte, bool) {
	fv := f.get(rv)
	if !fv.IsValid() || sparse && fv.IsZero() {
		return dst, false
	}
	return tuple.AppendValue(dst, fv), true
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

// settable returns the field of the struct value rv, a settable record,
// for a decoder to set: embedded pointers on its way that are nil are set
// to new structs, as the codecs do for a whole record, even unexported
// ones, which reflect would not set.
func (f *field) settable(rv reflect.Value) reflect.Value {
	v := rv.Field(f.index[0])
	for _, i := range f.index[1:] {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				p := reflect.New(v.Type().Elem())
				if !v.CanSet() { // the record's own memory all the same
					v = reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem()
				}
				v.Set(p)
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
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

// queryComponent checks that value v (of a query, or a primary key) may be
// compared with field f, saying why not for its caller to wrap, and returns
// it as the field would store it: nil matches anything (a nil
// pointer is indexed as nil); otherwise the encoded element types must
// agree, but for numbers: an integer for a float field, or a float for an
// integer field, is converted when that keeps its value exactly, and a
// float for a float32 field is rounded to float32, as the field's values
// were. converted reports a w other than v.
func queryComponent(f *field, v any) (w any, converted bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	if _, ok := v.(string); ok && !f.multi && f.typ.Kind() == reflect.String {
		return v, false, nil // the common case, without reflection
	}
	rv := reflect.ValueOf(v)
	vt := rv.Type()
	if vt.Kind() == reflect.Pointer {
		vt = vt.Elem()
	}
	if vt.Kind() == reflect.Slice && vt.Elem().Kind() != reflect.Uint8 {
		return nil, false, fmt.Errorf("%w: field %q takes one key component, not %v", ErrUnsupportedType, f.name, rv.Type())
	}
	t := f.typ
	if f.multi {
		t = t.Elem()
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want, got := kindClass(t), kindClass(vt)
	if want == got && t.Kind() != reflect.Float32 {
		return v, false, nil
	}
	if !isNumber(want) || !isNumber(got) {
		return nil, false, fmt.Errorf("field %q holds %s values, not %v", f.name, want, rv.Type())
	}
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, true, nil // a nil pointer is nil
		}
		rv = rv.Elem()
	}
	w, err = exactNumber(rv, t.Kind())
	if err != nil {
		return nil, false, fmt.Errorf("field %q holds %s values: %w", f.name, t, err)
	}
	return w, true, nil
}

func isNumber(class string) bool { return class == "integer" || class == "float" }

// exactNumber returns the number that rv holds as a field of kind k
// stores it (int64 or uint64 for an integer kind, float64 for a float
// one), or an error when that would change it; but a float for a float32
// field is rounded, as the field's values were.
func exactNumber(rv reflect.Value, k reflect.Kind) (any, error) {
	if k != reflect.Float32 && k != reflect.Float64 {
		f := rv.Float()
		switch {
		case f != math.Trunc(f) || math.IsInf(f, 0):
			return nil, fmt.Errorf("%v is not a whole number", f)
		case f >= -0x1p63 && f < 0x1p63:
			return int64(f), nil
		case f >= 0 && f < 0x1p64:
			return uint64(f), nil
		}
		return nil, fmt.Errorf("%v is out of the range of 64-bit integers", f)
	}
	var f float64
	exact := true
	switch {
	case rv.CanInt():
		i := rv.Int()
		f = float64(i)
		exact = f < 0x1p63 && int64(f) == i
	case rv.CanUint():
		u := rv.Uint()
		f = float64(u)
		exact = f < 0x1p64 && uint64(f) == u
	default:
		f = rv.Float()
	}
	if k == reflect.Float32 {
		if math.Abs(f) > math.MaxFloat32 && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is out of the range of float32", numberText(rv))
		}
		r := float64(float32(f))
		exact = exact && (r == f || rv.CanFloat())
		f = r
	}
	if !exact {
		return nil, fmt.Errorf("%s is not exactly a %v", numberText(rv), k)
	}
	return f, nil
}

// numberText returns the number rv holds, in decimal, after its type
// when that is not a predeclared one (a time.Duration is "time.Duration
// 16777217", not "16.777217ms"). Errors hold it, not rv: one that kept rv
// would make every caller's value escape to the heap.
func numberText(rv reflect.Value) string {
	var s string
	switch {
	case rv.CanInt():
		s = strconv.FormatInt(rv.Int(), 10)
	case rv.CanUint():
		s = strconv.FormatUint(rv.Uint(), 10)
	case rv.Kind() == reflect.Float32:
		s = strconv.FormatFloat(rv.Float(), 'g', -1, 32)
	default:
		s = strconv.FormatFloat(rv.Float(), 'g', -1, 64)
	}
	if t := rv.Type(); t.PkgPath() != "" {
		return t.String() + " " + s
	}
	return s
}
