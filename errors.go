package indextable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/indextable/indextable/kv"
)

// Errors of stores and of the key encoding, which package kv declares for
// store authors: these are the same values, so errors.Is matches either
// name.
var (
	// ErrNotFound reports that a key, or a record, does not exist.
	ErrNotFound = kv.ErrNotFound
	// ErrClosed reports a call on a closed Store or table.
	ErrClosed = kv.ErrClosed
	// ErrConflict reports a failed expectation: a value changed since it was
	// read, so the write was not applied (a write with IfVersion, say).
	ErrConflict = kv.ErrConflict
	// ErrInvalidBatch reports a batch that the store cannot apply atomically
	// or that touches one key twice: a write too big for its store.
	ErrInvalidBatch = kv.ErrInvalidBatch
	// ErrInvalidArgument reports an argument a call cannot use at all: a
	// nil context, store or option.
	ErrInvalidArgument = kv.ErrInvalidArgument
	// ErrReadOnly reports a write to a store opened for reading only (for
	// tools); like ErrClosed, no retry helps.
	ErrReadOnly = kv.ErrReadOnly
	// ErrUnsupportedType reports a key component of a type that has no
	// encoding.
	ErrUnsupportedType = kv.ErrUnsupportedType
	// ErrMalformedKey reports bytes that are not a canonical tuple
	// encoding, such as a corrupt stored key.
	ErrMalformedKey = kv.ErrMalformedKey
)

// errPrefix starts the message of each of the package's sentinel errors.
const errPrefix = "indextable: "

// wrapErrorf wraps err, which may carry a sentinel of its own, in
// sentinel: errors.Is matches sentinel and whatever err matches. The
// message names the package once, as "indextable: <sentinel>: <what and
// where>: <err>", where err's message loses its own leading "indextable: ",
// and its sentinel too when it is the same one. An empty format adds no
// what and where.
func wrapErrorf(sentinel, err error, format string, args ...any) error {
	msg := sentinel.Error()
	if format != "" {
		msg += ": " + fmt.Sprintf(format, args...)
	}
	inner := err.Error()
	if rest, ok := strings.CutPrefix(inner, sentinel.Error()); ok && (rest == "" || rest[0] == ':' || rest[0] == ' ') {
		inner = strings.TrimLeft(rest, ": ")
	} else {
		inner = strings.TrimPrefix(inner, errPrefix)
	}
	if inner != "" {
		msg += ": " + inner
	}
	return &wrappedError{msg: msg, errs: [2]error{sentinel, err}}
}

// wrappedError is an error of wrapErrorf.
type wrappedError struct {
	msg  string
	errs [2]error // the sentinel, and the error it wraps
}

func (e *wrappedError) Error() string { return e.msg }

func (e *wrappedError) Unwrap() []error { return e.errs[:] }

// codecError returns err, a codec's failure, as one that matches ErrCodec:
// unchanged if it does already, else wrapped in ErrCodec. It returns nil
// for nil.
func codecError(err error) error {
	if err == nil || errors.Is(err, ErrCodec) {
		return err
	}
	return wrapErrorf(ErrCodec, err, "")
}
