package indextable

import (
	"strconv"
)

// Consistency between a fact table and its index tables.
//
// A Synchronous index (the default) changes in the write's own batch: the
// fact record, each index entry that changes, and the expectations that
// guard them (the record is still as read; a unique key is still free) go
// to the store as one Batch, applied all or nothing. A reader never sees an
// entry without its record, nor a record without its entries.
//
// An Eventual index changes later. The write commits the fact record
// together with a change record in the table's durable queue (an outbox in
// the same store, in the same batch), and returns; a maintainer
// (RunMaintainer) applies the index mutations afterwards. A change record
// holds the record as it was before the write, so the maintainer knows which
// entries to delete; it computes the entries to put from the fact record as
// it is when the change is applied. The pending changes of one record are
// applied together, in one batch that expects the fact record as read and
// removes the change records (on a bounded store, in the steps applyInSteps
// describes): replaying a change is harmless, an older change never
// overwrites a newer one, and the queue alone is enough to resume after a
// crash. WaitIndexed waits for the changes committed before
// it; Lag reports how far behind the maintainers are. A pass applies the
// changes queued before it began, so that it ends under any write rate
// (see pass); a change that can never be applied is set aside after a few
// tries, in its own change record (see RunMaintainer and failure).
//
// The fallback rule: when a write's batch, with its synchronous entries,
// does not fit the store's atomicity scope (Store.Atomicity; for instance a
// store whose transactions stay within one partition), the write commits
// the fact record with a change record instead, and every non-unique index
// follows it eventually. What a maintainer will need to apply the change
// must fit one batch (see worstGuard), and a write that changes a unique
// index's entries cannot fall back (its uniqueness would go unchecked):
// such writes fail with ErrInvalidBatch and write nothing. On such a store, reads of any index
// check for staleness as reads of an Eventual index do.

// Consistency says when an index follows a write to its fact table.
type Consistency int8

const (
	// Synchronous indexes change in the write's own atomic batch.
	Synchronous Consistency = iota
	// Eventual indexes change later, when a maintainer applies the table's
	// queued changes. A unique index cannot be eventual.
	Eventual
)

func (c Consistency) String() string {
	switch c {
	case Synchronous:
		return "synchronous"
	case Eventual:
		return "eventual"
	}
	return "Consistency(" + strconv.Itoa(int(c)) + ")"
}
