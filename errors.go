package indextable

import (
	"errors"
	"fmt"
	"strings"
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
