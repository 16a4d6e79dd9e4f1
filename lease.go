package indextable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// errLeaseHeld reports a partition leased to another maintainer.
var errLeaseHeld = errors.New("leased to another maintainer")

// lease is a maintainer's hold on its partition of the queue, on a store
// with bounded atomicity, where two maintainers applying one record's
// changes in pieces could interleave. It is stored under the table's lease
// space, then Partitions and Partition: the owner (8 bytes) and the expiry
// (8 bytes, Unix nanoseconds).
type lease struct {
	key, value   []byte
	expires      time.Time // by this process's clock
	partitioning []byte    // the key of the table's partitioning record
}

// The partitioning record, at the lease space's own key, names the partitioning of the
// queue in force (its Partitions) and when its last lease expires: every
// acquisition and renewal rewrites it, conditional on it, so maintainers
// of two partitionings never hold leases at once, and one that takes over from
// another partitioning makes the old holders' renewals fail.
func encodePartitioning(partitions int, until time.Time) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(partitions))
	return binary.BigEndian.AppendUint64(v, uint64(until.UnixNano()))
}

func decodePartitioning(v []byte) (partitions int, until time.Time, ok bool) {
	if len(v) != 16 {
		return 0, time.Time{}, false
	}
	return int(binary.BigEndian.Uint64(v)), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), true
}

// livePartitioning returns the Partitions of the maintainers that hold leases of
// the table's queue now, or 0 when none does.
func (t *Table[T]) livePartitioning(ctx context.Context) (int, error) {
	v, err := t.store.Get(ctx, spacePrefix(t.prefix, kv.SpaceLeases))
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if n, until, ok := decodePartitioning(v); ok && time.Now().Before(until) {
		return n, nil
	}
	return 0, nil
}

// acquireLease takes this maintainer's lease, unless another maintainer
// holds it, or maintainers of another partitioning of the queue (another
// Partitions) hold leases: the two would apply the same records' changes
// at once.
func (t *Table[T]) acquireLease(ctx context.Context, o *MaintainerOptions) (*lease, error) {
	partitioning := spacePrefix(t.prefix, kv.SpaceLeases)
	key := leaseKey(t.prefix, o.Partitions, o.Partition)
	held, err := t.store.GetMany(ctx, [][]byte{partitioning, key}, nil)
	if err != nil {
		return nil, err
	}
	l := &lease{key: key, partitioning: partitioning}
	l.value, l.expires = o.leaseValue()
	var b kv.Batch
	until := l.expires
	if sv := held[0]; sv == nil {
		b.ExpectAbsent(partitioning)
	} else {
		n, end, ok := decodePartitioning(sv)
		live := ok && time.Now().Before(end)
		if live && n != o.Partitions {
			return nil, fmt.Errorf("%w: %w: table %q: maintainers of %d partitions hold leases until %v (this one is partition %d of %d)",
				ErrConflict, errLeaseHeld, t.name, n, end, o.Partition, o.Partitions)
		}
		if live && end.After(until) {
			until = end
		}
		b.ExpectValue(partitioning, sv)
	}
	b.Put(partitioning, encodePartitioning(o.Partitions, until))
	switch v := held[1]; {
	case v == nil:
		b.ExpectAbsent(key)
	case len(v) == 16 && binary.BigEndian.Uint64(v) != o.owner && time.Now().UnixNano() < int64(binary.BigEndian.Uint64(v[8:])):
		end := time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
		return nil, fmt.Errorf("%w: %w: table %q, partition %d of %d, until %v", ErrConflict, errLeaseHeld, t.name, o.Partition, o.Partitions, end)
	default:
		b.ExpectValue(key, v)
	}
	b.Put(key, l.value)
	if err := t.store.Apply(ctx, &b); err != nil {
		if errors.Is(err, ErrConflict) {
			err = fmt.Errorf("%w: %w: table %q, partition %d of %d", ErrConflict, errLeaseHeld, t.name, o.Partition, o.Partitions)
		}
		return nil, err
	}
	return l, nil
}

func (o *MaintainerOptions) leaseValue() ([]byte, time.Time) {
	expires := time.Now().Add(o.LeaseTTL)
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), o.owner)
	return binary.BigEndian.AppendUint64(v, uint64(expires.UnixNano())), expires
}

// holdLease makes sure l is held for at least half its TTL more, renewing
// it if need be, or fails if it was lost (it expired and another
// maintainer took it). A nil lease (an unbounded store) always holds.
func (t *Table[T]) holdLease(ctx context.Context, l *lease, o *MaintainerOptions) error {
	if l == nil || time.Until(l.expires) > o.LeaseTTL/2 {
		return nil
	}
	// The partitioning record must still name this partitioning, and last as long as
	// the lease; another maintainer of the partitioning may rewrite it meanwhile,
	// which makes this renewal read it again.
	for attempt := 1; ; attempt++ {
		sv, err := t.store.Get(ctx, l.partitioning)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("table %q: renew the maintainer's lease: %w", t.name, err)
		}
		n, until, ok := decodePartitioning(sv)
		if !ok || n != o.Partitions {
			return fmt.Errorf("table %q: renew the maintainer's lease: %w: maintainers of another partitioning took over", t.name, ErrConflict)
		}
		var b kv.Batch
		b.ExpectValue(l.key, l.value)
		next, expires := o.leaseValue()
		b.Put(l.key, next)
		b.ExpectValue(l.partitioning, sv)
		if until.Before(expires) {
			b.Put(l.partitioning, encodePartitioning(n, expires))
		}
		err = t.store.Apply(ctx, &b)
		if err == nil {
			l.value, l.expires = next, expires
			return nil
		}
		if errors.Is(err, ErrConflict) && attempt < maxAttempts {
			if v, gerr := t.store.Get(ctx, l.key); gerr == nil && bytes.Equal(v, l.value) {
				continue // the partitioning record moved; the lease is still ours
			}
		}
		return fmt.Errorf("table %q: renew the maintainer's lease: %w", t.name, err)
	}
}

// releaseLease gives l up, if it is still held, and shortens the partitioning
// record to the leases of its partitioning still held, so that another partitioning
// need not wait for l to expire. A maintainer of the partitioning that renews or
// releases at the same time makes it try again.
func (t *Table[T]) releaseLease(l *lease) {
	ctx := context.Background()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		var b kv.Batch
		b.ExpectValue(l.key, l.value)
		b.Delete(l.key)
		if err := t.shortenPartitioning(ctx, &b, l); err != nil {
			// Give the lease up at least; the partitioning record expires.
			_ = t.store.Apply(ctx, kv.NewBatch(b.Ops()[:2]...))
			return
		}
		err := t.store.Apply(ctx, &b)
		if !errors.Is(err, ErrConflict) {
			return
		}
		if v, err := t.store.Get(ctx, l.key); err != nil || !bytes.Equal(v, l.value) {
			return // not ours any more
		}
	}
}

// shortenPartitioning adds to b, which releases l, the rewrite of the partitioning
// record to last as long as the other leases of l's partitioning.
func (t *Table[T]) shortenPartitioning(ctx context.Context, b *kv.Batch, l *lease) error {
	sv, err := t.store.Get(ctx, l.partitioning)
	if err != nil {
		return err
	}
	n, _, ok := decodePartitioning(sv)
	if !ok {
		return fmt.Errorf("%w: partitioning record %q", ErrCodec, sv)
	}
	b.ExpectValue(l.partitioning, sv)
	until := time.Now()
	others := leasesOf(t.prefix, n)
	for e, err := range t.store.Scan(ctx, kv.ScanRange{Start: others, End: tuple.End(others)}) {
		if err != nil {
			return err
		}
		if bytes.Equal(e.Key, l.key) || len(e.Value) != 16 {
			continue
		}
		b.ExpectValue(bytes.Clone(e.Key), bytes.Clone(e.Value))
		if end := time.Unix(0, int64(binary.BigEndian.Uint64(e.Value[8:]))); end.After(until) {
			until = end
		}
	}
	b.Put(l.partitioning, encodePartitioning(n, until))
	return nil
}
