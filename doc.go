// Package indextable keeps secondary indexes, as index tables, over
// key/value stores that only know primary keys: the Index Table pattern.
//
// A store organizes a table (the fact table) by its primary key, say
// customers by ID. To find customers by town without scanning them all,
// an index table organizes the same data by Town. Each Index chooses what
// its entries hold (a Strategy):
//
//   - KeysOnly (normalized): the primary key only; a read looks up the index,
//     then the fact table.
//   - FullCopy (denormalized): the whole record; a read is one lookup, at the
//     price of space and write work.
//   - Partial: the primary key and a Projection of fields, so the common
//     queries are answered from the index alone.
//
// Keys may be composite (Town, then LastName), ordered by an order-preserving
// tuple encoding, so "everyone in Redmond" is one contiguous range of the
// index, in LastName order. An index may be unique, sparse or multi-valued.
//
// A Table keeps its index tables consistent with the fact table. For a
// Synchronous index, every write goes to the Store as one atomic Batch
// holding the record, the index entries that change, and the expectations
// that guard against concurrent writers. For an Eventual index (and for
// any write too big for the store's atomicity scope) the write commits the
// record with a change record in a durable queue, and a maintainer
// (Table.RunMaintainer) applies it; Table.WaitIndexed waits for it. On a
// store whose transactions stay within a partition, an index placed
// IntraPartition (its first field the record's partition) keeps its entries
// with their record and stays in the write's transaction. Any
// ordered key/value store can sit underneath by implementing Store;
// MemoryStore, an in-memory B-tree, is the default, and package storetest
// checks a Store implementation. A ShardedStore spreads a table over
// several stores: records by a stable hash of their primary key, index
// tables by their leading key (one-shard range reads) or by hash.
//
// Index definitions are kept in a catalog in the store: reopening a table
// with a new, changed or removed index is detected, and a new index on a
// table that holds records is write-only until Table.Build fills it in,
// online. Table.Verify reports how index tables drifted from the fact table
// and Table.Repair fixes it.
//
// Indexes are not free: each costs space and work on every write. An index
// is seldom worth keeping when the data changes far more often than it is
// read, when its key has few distinct values, or when a few values hold most
// records (unless queries ask for the rare ones). A Table counts what each
// index does (Table.Usage), measures what each holds (Table.Stats), and
// Table.Advise says which of those rules an index breaks; cmd/indextable
// shows the same for a store, and verifies and repairs it, without the
// program's types.
package indextable
