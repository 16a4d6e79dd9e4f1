package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/indextable/indextable/kv"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errRetryNow makes read try again at once.
var errRetryNow = errors.New("etcdstore: retry")

// check returns the error of a call made with ctx: a nil ctx, a closed
// store, a done ctx.
func (s *Store) check(ctx context.Context) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("etcdstore: %w: nil context", kv.ErrInvalidArgument)
	case s.closed.Load():
		return fmt.Errorf("etcdstore: %w", kv.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcdstore: %w", err)
	}
	return nil
}

// read runs f, a read, until it succeeds, fails for good, or the store's
// Timeout ends; each try gets its own deadline.
func (s *Store) read(ctx context.Context, f func(context.Context) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	c := s.newCall()
	for {
		err := c.try(ctx, f)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errRetryNow):
			continue
		case !transient(ctx, err):
			return c.closed(err)
		}
		if err := c.pause(ctx, err); err != nil {
			return err
		}
	}
}

// call is the state of a call that tries again: the store's life, which
// Close ends, its deadline and its next pause.
type call struct {
	life     context.Context
	deadline time.Time
	wait     time.Duration
}

func (s *Store) newCall() *call {
	return &call{life: s.life, deadline: time.Now().Add(s.timeout), wait: 10 * time.Millisecond}
}

// try runs f with a context that ends at the try's deadline, or when the
// store closes.
func (c *call) try(ctx context.Context, f func(context.Context) error) error {
	d := time.Now().Add(tryTimeout)
	if c.deadline.Before(d) {
		d = c.deadline
	}
	ctx, cancel := context.WithDeadline(ctx, d)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	return f(ctx)
}

// pause waits before the next try, after a try failed with cause; it
// returns an error when the call should stop: ctx is done, the store
// closed or the deadline has passed.
func (c *call) pause(ctx context.Context, cause error) error {
	if time.Until(c.deadline) <= 0 {
		return c.closed(fmt.Errorf("no answer within the store's Timeout: %w", cause))
	}
	t := time.NewTimer(c.wait)
	defer t.Stop()
	c.wait = min(2*c.wait, time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.life.Done():
		return c.closed(cause)
	case <-t.C:
		return nil
	}
}

// closed returns err, wrapped with kv.ErrClosed if the store has closed.
func (c *call) closed(err error) error {
	if c.life.Err() != nil {
		return fmt.Errorf("%w: %w", kv.ErrClosed, err)
	}
	return err
}

// code returns err's gRPC code; codes.Unknown when it has none.
func code(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// transient reports whether err, from a try made under ctx, may pass if
// tried again: the try's own deadline passed, the cluster has no leader or
// lost it, a member is unreachable, or it is overloaded. For a write, such
// an error leaves the outcome unknown.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true // the try's deadline, not ctx's
	}
	switch code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	case codes.Canceled: // the member's, as when it stops; not the client closing
		var ee rpctypes.EtcdError
		return errors.As(err, &ee)
	case codes.ResourceExhausted:
		return strings.Contains(err.Error(), "too many requests")
	case codes.Unknown: // raft's own errors, which etcd does not map: a
		// proposal dropped while no member leads, a member stopping
		return strings.Contains(err.Error(), "raft proposal dropped") || strings.Contains(err.Error(), "raft: stopped")
	}
	return false
}

// refused reports whether err is the server's refusal of a request, which
// so changed nothing: a bad argument, a missing lease, no space left.
func refused(err error) bool {
	switch code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.ResourceExhausted, codes.FailedPrecondition, codes.OutOfRange, codes.Unauthenticated, codes.Unimplemented:
		return true
	}
	return false
}

// isCompacted reports whether err says a revision read was compacted.
func isCompacted(err error) bool { return errors.Is(err, rpctypes.ErrCompacted) }

// isLeaseNotFound reports whether err says a lease has expired.
func isLeaseNotFound(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }
