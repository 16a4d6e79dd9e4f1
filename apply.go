package indextable

import (
	"bytes"
	"context"

	"github.com/indextable/indextable/kv"
)

// expectAsRead adds to b the expectation that key holds old, as read:
// absent when old is nil.
func expectAsRead(b *kv.Batch, key, old []byte) {
	if old == nil {
		b.ExpectAbsent(key)
	} else {
		b.ExpectValue(key, old)
	}
}

// deleteChunk is how many keys deleteRange and the builders handle in one
// batch.
const deleteChunk = 512

// deleteRange deletes the keys in [start, end) in batches.
func deleteRange(ctx context.Context, s kv.Store, start, end []byte) error {
	for {
		var b kv.Batch
		for e, err := range s.Scan(ctx, kv.ScanRange{Start: start, End: end, Limit: deleteChunk}) {
			if err != nil {
				return err
			}
			b.Delete(bytes.Clone(e.Key))
		}
		if b.Len() == 0 {
			return nil
		}
		if err := applyInPieces(ctx, s, &b, nil); err != nil {
			return err
		}
	}
}

// applyInPieces applies b in as few batches as the store's atomicity scope
// allows, cutting it where it must. Only for writes without expectations
// whose every subset leaves nothing a retry cannot finish: deletes of dead
// entries, and index mutations that a pending change will apply again.
// When before is set, it is called before each piece, and an error it
// returns stops the pieces.
func applyInPieces(ctx context.Context, s kv.Store, b *kv.Batch, before func() error) error {
	if s.Atomicity().Allows(b) == nil || b.Len() <= 1 {
		if before != nil {
			if err := before(); err != nil {
				return err
			}
		}
		return s.Apply(ctx, b)
	}
	ops := b.Ops()
	if part := s.Atomicity().Partition; part != nil {
		// One piece per partition first (neighbouring keys may lie in
		// different partitions, as on a ShardedStore), then halves.
		var order []string
		groups := map[string][]kv.Op{}
		for _, op := range ops {
			p := string(part(op.Key))
			if _, ok := groups[p]; !ok {
				order = append(order, p)
			}
			groups[p] = append(groups[p], op)
		}
		if len(order) > 1 {
			for _, p := range order {
				if err := applyInPieces(ctx, s, kv.NewBatch(groups[p]...), before); err != nil {
					return err
				}
			}
			return nil
		}
	}
	half := len(ops) / 2
	for _, part := range [][]kv.Op{ops[:half], ops[half:]} {
		if err := applyInPieces(ctx, s, kv.NewBatch(part...), before); err != nil {
			return err
		}
	}
	return nil
}
