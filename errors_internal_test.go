package indextable

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/assert"
)

// TestWrapErrorf: the wrapped error matches the sentinel and all the inner
// error matches, and its message names the package once: the sentinel,
// what and where, then the inner message without its own prefix, or
// without its sentinel when that is the same one.
func TestWrapErrorf(t *testing.T) {
	_, malformed := kv.DecodeTuple([]byte{0xff})
	pathErr := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name     string
		sentinel error
		err      error
		format   string
		args     []any
		want     string
		is       []error
	}{
		{"another sentinel", ErrInvalidQuery, fmt.Errorf("%w: element 0 has type chan int", ErrUnsupportedType), "lower bound", nil,
			"indextable: invalid query: lower bound: unsupported key type: element 0 has type chan int", []error{ErrInvalidQuery, ErrUnsupportedType}},
		{"the same sentinel", ErrInvalidQuery, fmt.Errorf("%w: field %q", ErrInvalidQuery, "Age"), "Where %q", []any{"Age"},
			`indextable: invalid query: Where "Age": field "Age"`, []error{ErrInvalidQuery}},
		{"the same sentinel, then a space", ErrMalformedKey, malformed, "index %q", []any{"town"},
			`indextable: malformed key: index "town": at offset 0: unknown type code 0xff`, []error{ErrMalformedKey}},
		{"the bare sentinel", ErrCodec, ErrCodec, "usage record", nil,
			"indextable: codec: usage record", []error{ErrCodec}},
		{"a sentinel's longer namesake", ErrInvalidKey, errors.New("indextable: invalid keys"), "", nil,
			"indextable: invalid key: invalid keys", []error{ErrInvalidKey}},
		{"no sentinel, no what and where", ErrCodec, pathErr, "", nil,
			"indextable: codec: open x: file does not exist", []error{ErrCodec, fs.ErrNotExist}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wrapErrorf(tc.sentinel, tc.err, tc.format, tc.args...)
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, 1, strings.Count(err.Error(), "indextable:"))
			for _, want := range tc.is {
				assert.ErrorIs(t, err, want)
			}
			assert.ErrorIs(t, err, tc.err)
		})
	}
	var pe *fs.PathError
	assert.ErrorAs(t, wrapErrorf(ErrCodec, pathErr, ""), &pe, "the inner error's type is found")
}

// TestCodecError: a codec's failure matches ErrCodec, once.
func TestCodecError(t *testing.T) {
	assert.NoError(t, codecError(nil))
	own := fmt.Errorf("%w: truncated", ErrCodec)
	assert.Same(t, own, codecError(own), "already ErrCodec: unchanged")
	bare := errors.New("bad bytes")
	err := codecError(bare)
	assert.ErrorIs(t, err, ErrCodec)
	assert.ErrorIs(t, err, bare)
	assert.Equal(t, "indextable: codec: bad bytes", err.Error())
}
