package etcdstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/indextable/indextable/kv"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Guards (see the package documentation): a guard's value says who wrote
// it, the batch or the store fencing it off.
const (
	guardApplied = "a"
	guardFenced  = "f"
	guardTTL     = 10 * time.Minute // a lease's
	leaseEvery   = time.Minute      // a new lease after
)

// attempt is one try of a batch: its guard key, under lease.
type attempt struct {
	guard string
	lease clientv3.LeaseID
}

// absent is the compare that a's guard is absent.
func (a attempt) absent() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(a.guard), "=", 0)
}

// put is the write of a's guard, saying who wrote it.
func (a attempt) put(who string) clientv3.Op {
	return clientv3.OpPut(a.guard, who, clientv3.WithLease(a.lease))
}

// Apply applies b as one transaction, or returns an error wrapping
// kv.ErrConflict that names a key whose expectation failed. A batch whose
// answer is lost is resolved by its guard (see the package
// documentation); one that cannot be returns an error wrapping
// ErrUnknownOutcome.
func (s *Store) Apply(ctx context.Context, b *kv.Batch) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := kv.CheckBatch(b); err != nil {
		return fmt.Errorf("etcdstore: %w", err)
	}
	if err := s.atom.Allows(b); err != nil {
		return fmt.Errorf("etcdstore: %w", err)
	}
	cmps, ops := s.txn(b)
	if len(ops) == 0 {
		return s.expect(ctx, b, cmps)
	}
	c := s.newCall()
	n := len(b.Ops())
	for {
		a, err := s.attempt(ctx)
		if err != nil {
			return fmt.Errorf("etcdstore: granting the guards' lease: %w", err)
		}
		var resp *clientv3.TxnResponse
		err = c.try(ctx, func(ctx context.Context) (err error) {
			resp, err = s.client.Txn(ctx).If(append(cmps[:len(cmps):len(cmps)], a.absent())...).
				Then(append(ops[:len(ops):len(ops)], a.put(guardApplied))...).
				Else(clientv3.OpGet(a.guard), a.put(guardFenced)).
				Commit()
			return err
		})
		switch {
		case err == nil && (resp.Succeeded || guardOf(resp) == guardApplied):
			// Applied; if by an earlier copy of the try (the client sends a
			// transaction again after some errors), its guard says so.
			return nil
		case err == nil:
			// The Else branch read the guard absent, then fenced it off: no
			// earlier copy of the try can apply any more. (Writing it
			// unconditionally keeps the branch flat: etcd counts a nested
			// transaction's operations against --max-txn-ops.)
			return s.conflict(ctx, b)
		case isLeaseNotFound(err): // nothing applied, and no copy can: a new lease
			s.dropLease(a.lease)
			if time.Until(c.deadline) <= 0 {
				return notApplied(n, err)
			}
			continue
		}
		refusal := !transient(ctx, err)
		if refusal && !refused(err) { // ctx ended, or the store closed, with b perhaps sent
			return fmt.Errorf("etcdstore: applying %d operations: %w: %w", n, ErrUnknownOutcome, c.closed(err))
		}
		// A refused try may follow a copy the client sent before it, still
		// in flight: the fence settles that one too.
		cause := err
		applied, err := s.resolve(ctx, c, a, cause)
		switch {
		case err != nil:
			return fmt.Errorf("etcdstore: applying %d operations: %w", n, err)
		case applied:
			return nil
		case refusal:
			return fmt.Errorf("etcdstore: applying %d operations: %w", n, cause)
		case time.Until(c.deadline) <= 0: // fenced off: b did not apply, and never will
			return notApplied(n, cause)
		}
		// Fenced off in time: a new attempt.
	}
}

// notApplied is the error of a batch of n operations known not to have
// applied when its Timeout ended, after a try failed with cause.
func notApplied(n int, cause error) error {
	return fmt.Errorf("etcdstore: applying %d operations: not applied within the store's Timeout: %w", n, cause)
}

// expect checks b, a batch of expectations alone, whose compares are cmps.
func (s *Store) expect(ctx context.Context, b *kv.Batch, cmps []clientv3.Cmp) error {
	// etcd serves a transaction of compares alone from any member's own
	// state, which may lag (it counts it serializable); a linearizable get
	// in it makes the member catch up with the leader first.
	get := clientv3.OpGet(s.data, clientv3.WithCountOnly())
	var resp *clientv3.TxnResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Txn(ctx).If(cmps...).Then(get).Else(get).Commit()
		return err
	})
	if err != nil {
		return fmt.Errorf("etcdstore: checking %d expectations: %w", len(cmps), err)
	}
	if !resp.Succeeded {
		return s.conflict(ctx, b)
	}
	return nil
}

// txn returns b's compares and its puts and deletes.
func (s *Store) txn(b *kv.Batch) ([]clientv3.Cmp, []clientv3.Op) {
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, op := range b.Ops() {
		k := s.key(op.Key)
		switch op.Kind {
		case kv.OpPut:
			ops = append(ops, clientv3.OpPut(k, string(op.Value)))
		case kv.OpDelete:
			ops = append(ops, clientv3.OpDelete(k))
		case kv.OpExpectValue:
			cmps = append(cmps, clientv3.Compare(clientv3.Value(k), "=", string(op.Value)))
		case kv.OpExpectAbsent:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		}
	}
	return cmps, ops
}

// conflict returns the error of b's failed expectations, naming the first
// that fails when read again (none if they all hold by then).
func (s *Store) conflict(ctx context.Context, b *kv.Batch) error {
	var keys [][]byte
	var exps []kv.Op
	for _, op := range b.Ops() {
		if !op.IsWrite() {
			keys, exps = append(keys, op.Key), append(exps, op)
		}
	}
	values, err := s.GetMany(ctx, keys, nil)
	if err == nil {
		for i, op := range exps {
			if err := kv.CheckExpectation(op, values[i]); err != nil {
				return fmt.Errorf("etcdstore: %w", err)
			}
		}
	}
	return fmt.Errorf("etcdstore: %w: an expectation of the batch failed", kv.ErrConflict)
}

// attempt returns a new attempt, under the current lease.
func (s *Store) attempt(ctx context.Context) (attempt, error) {
	lease, err := s.currentLease(ctx)
	if err != nil {
		return attempt{}, err
	}
	guard := binary.BigEndian.AppendUint64(append([]byte(s.guards), s.id[:]...), s.seq.Add(1))
	return attempt{guard: string(guard), lease: lease}, nil
}

// currentLease returns the guards' lease, granting a new one once a
// minute. One call grants at a time; the others wait for it as long as
// their ctx allows.
func (s *Store) currentLease(ctx context.Context) (clientv3.LeaseID, error) {
	if lease := s.freshLease(); lease != 0 {
		return lease, nil
	}
	select {
	case s.granting <- struct{}{}:
		defer func() { <-s.granting }()
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.life.Done():
		return 0, kv.ErrClosed
	}
	if lease := s.freshLease(); lease != 0 { // granted while this call waited
		return lease, nil
	}
	var resp *clientv3.LeaseGrantResponse
	err := s.read(ctx, func(ctx context.Context) (err error) { // granting twice is harmless
		resp, err = s.client.Grant(ctx, int64(guardTTL/time.Second))
		return err
	})
	if err != nil {
		return 0, err
	}
	s.leaseMu.Lock()
	s.lease, s.leaseAt = resp.ID, time.Now()
	s.leaseMu.Unlock()
	return resp.ID, nil
}

// freshLease returns the guards' lease if it was granted less than a
// minute ago; 0 if not.
func (s *Store) freshLease() clientv3.LeaseID {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease == 0 || time.Since(s.leaseAt) >= leaseEvery {
		return 0
	}
	return s.lease
}

// dropLease forgets lease, found expired, so that the next attempt takes a
// new one.
func (s *Store) dropLease(lease clientv3.LeaseID) {
	s.leaseMu.Lock()
	if s.lease == lease {
		s.lease = 0
	}
	s.leaseMu.Unlock()
}

// resolve finds out whether attempt a, whose try failed with cause,
// applied: it writes a's guard itself, expecting it absent. If that
// applies, a never will; if the guard is there, a's batch wrote it.
func (s *Store) resolve(ctx context.Context, c *call, a attempt, cause error) (bool, error) {
	// The fence is tried at least once, even past the call's Timeout, so
	// that the outcome is known whenever the cluster answers; c's own
	// deadline stays, so that Apply's attempts end.
	fence := &call{life: c.life, deadline: c.deadline, wait: c.wait}
	if least := time.Now().Add(tryTimeout); fence.deadline.Before(least) {
		fence.deadline = least
	}
	defer func() { c.wait = fence.wait }()
	for {
		if err := fence.pause(ctx, cause); err != nil {
			return false, fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
		}
		var resp *clientv3.TxnResponse
		err := fence.try(ctx, func(ctx context.Context) (err error) {
			resp, err = s.client.Txn(ctx).If(a.absent()).Then(a.put(guardFenced)).Else(clientv3.OpGet(a.guard)).Commit()
			return err
		})
		switch {
		case err == nil && resp.Succeeded:
			return false, nil
		case err == nil:
			return guardOf(resp) == guardApplied, nil
		case isLeaseNotFound(err):
			// The lease expired, and the guard with it, if a wrote it.
			return false, fmt.Errorf("%w: the guard's lease expired: %w", ErrUnknownOutcome, cause)
		case !transient(ctx, err):
			return false, fmt.Errorf("%w: %w", ErrUnknownOutcome, fence.closed(errors.Join(cause, err)))
		}
		cause = err
	}
}

// guardOf returns the value of the guard a failed transaction read in its
// Else branch: "" if the guard is absent.
func guardOf(resp *clientv3.TxnResponse) string {
	if len(resp.Responses) == 0 {
		return ""
	}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		return string(kvs[0].Value)
	}
	return ""
}
