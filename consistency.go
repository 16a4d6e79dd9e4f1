package indextable

import (
	"context"
	"fmt"
)

// Consistency between a fact table and its index tables.
//
// Every write is synchronous and atomic: the fact record, each index entry
// that changes, and the expectations that guard them (the record is still as
// read; a unique key is still free) go to the store as one Batch, which the
// store applies all or nothing. A reader therefore never sees an index entry
// without its record, nor a record without its entries.
//
// That needs a batch within the store's atomicity scope (Store.Atomicity).
// An embedded store allows any batch. A store whose transactions are
// bounded, such as one partition of Azure Table storage, may not: commit
// then refuses the write with ErrInvalidBatch and writes nothing, rather
// than write the record and its entries non-atomically.

// commit applies b, a write planned by a table, atomically.
func commit(ctx context.Context, s Store, b *Batch) error {
	if err := s.Atomicity().Allows(b); err != nil {
		return fmt.Errorf("the write does not fit the store's atomicity scope: %w", err)
	}
	return s.Apply(ctx, b)
}
