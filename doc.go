// Package indextable keeps secondary indexes, as index tables, over
// key/value stores that only know primary keys: the Index Table pattern.
// A store organizes a table (the fact table) by its primary key, say
// customers by ID; to find customers by town without scanning them all,
// an index table organizes the same data by Town.
//
// # Tables
//
// A Schema declares a table of records of a struct type T: its Name, the
// fields of its PrimaryKey, and its Indexes, each an Index that names the
// fields of its key. Open returns the Table of that schema in a store
// (see Stores), after comparing the schema with the one the store holds:
//
//	customers, err := indextable.Open(ctx, indextable.NewMemoryStore(), indextable.Schema[Customer]{
//		Name:       "customers",
//		PrimaryKey: []string{"ID"},
//		Indexes: []indextable.Index[Customer]{
//			{Name: "town_lastname", Fields: []string{"Town", "LastName"}},
//		},
//	})
//
// A Table writes records (Insert, Upsert, Update, Delete; IfVersion makes
// an update or a delete conditional on the Version a read returned) and
// reads them: Get by primary key, and Find, FindPage, Count and Exists
// with a Query, which names an index, fixes the leading components of its
// key with a Tuple (Eq) and bounds the next one (Lower, Upper):
//
//	q := indextable.Query{Index: "town_lastname", Eq: indextable.Tuple{"Redmond"}}
//	for c, err := range customers.Find(ctx, q) { // Redmond, in LastName order
//		...
//	}
//
// Keys may be composite (Town, then LastName), ordered by an
// order-preserving tuple encoding, so "everyone in Redmond" is one
// contiguous range of the index, in LastName order. An index may be
// unique, sparse or multi-valued, or compute its keys (Index.Key).
//
// # Strategies
//
// Each Index chooses what its entries hold (a Strategy):
//
//   - KeysOnly (normalized): the primary key only; a read looks up the index,
//     then the fact table.
//   - FullCopy (denormalized): the whole record; a read is one lookup, at the
//     price of space and write work.
//   - Partial: the primary key and a Projection of fields, so the common
//     queries are answered from the index alone.
//
// # Consistency
//
// A Synchronous index (the default) changes in the write's own batch: the
// fact record, each index entry that changes, and the expectations that
// guard them (the record is still as read; a unique key is still free) go
// to the store as one batch (a kv.Batch), applied all or nothing. A reader never sees an
// entry without its record, nor a record without its entries.
//
// An Eventual index changes later. The write commits the fact record
// together with a change record in the table's durable queue (an outbox in
// the same store, in the same batch), and returns; a maintainer
// (Table.RunMaintainer) applies the index mutations afterwards. A change
// record holds the record as it was before the write, so the maintainer
// knows which entries to delete; it computes the entries to put from the
// fact record as it is when the change is applied. The pending changes of
// one record are applied together, in one batch that expects the fact
// record as read and removes the change records (on a store whose batches
// are bounded, in steps, behind a marker): replaying a change is harmless,
// an older change never overwrites a newer one, and the queue alone is
// enough to resume after a crash. Table.WaitIndexed waits for the changes
// committed before it; Table.Lag reports how far behind the maintainers
// are. A pass applies the changes queued before it began, so that it ends
// under any write rate; a change that can never be applied is set aside
// after a few tries (MaintainerOptions.MaxFailures). A read of an index
// that may be behind checks the records with changes pending, so it never
// returns a record under a key it no longer has, unless the query asks for
// a Stale read, which takes the entries as they are.
//
// # The fallback rule
//
// When a write's batch, with its synchronous entries, does not fit the
// store's atomicity scope (kv.Store.Atomicity; for instance a store whose
// transactions stay within one partition), the write commits instead the
// fact record with the entries of IntraPartition indexes and a change
// record, the other indexes following it eventually; else the record with
// its unique entries and a change record; else the record and a change
// record alone. What a maintainer will need to apply the change must fit
// one batch, and a write that changes a unique index's entries outside its
// batch cannot fall back (its uniqueness would go unchecked): such writes
// fail with ErrInvalidBatch and write nothing. On such a store, reads of
// any index check for staleness as reads of an Eventual index do.
//
// # Transactions
//
// A Tx writes records of several tables of one store together: Table.In
// gives each table in the transaction (TableTx), with Get, GetVersioned,
// Insert, Upsert, Update and Delete as the table has them, and
// Tx.Commit applies every write in one Store.Apply, all or nothing.
// Transact runs a function in a transaction and commits it, running it
// again when the commit conflicts:
//
//	err := indextable.Transact(ctx, store, func(tx *indextable.Tx) error {
//		s, err := stock.In(tx).Get(ctx, "pen")
//		if err != nil {
//			return err
//		}
//		s.Count--
//		if _, err := stock.In(tx).Update(ctx, s); err != nil {
//			return err
//		}
//		_, err = orders.In(tx).Insert(ctx, Order{ID: "o1", Item: "pen"})
//		return err
//	})
//
// Transactions are optimistic: nothing is written or locked before the
// commit, whose batch expects every record the transaction read or wrote
// as it read it (absent ones still absent) and fails with ErrConflict when
// one changed. Reads are checked then, not when made: a function that
// fails for another reason may have seen records of different moments.
// Reads see the transaction's own writes; a record written twice is
// planned once, from its state as read to its last. An Insert of a record
// the transaction has not read takes it to be absent, as a single insert
// does, and the commit reports ErrExists if it is not. Each record's
// index maintenance follows the rules of a single write (synchronous
// entries in the batch, eventual indexes through the queue, unique keys
// checked and guarded); unique keys are checked at the commit against the
// transaction's own records too, as it leaves them, so a key one record
// frees another may take, and two records that take one key fail with
// ErrUniqueViolation. The fallback rule applies to each record as to a
// single write (its entries outside its partition follow it through the
// queue), but never to the transaction: one whose batch the store's
// atomicity scope does not allow (on a partitioned store, records of
// several partitions; on Azure Table storage, more than 99 puts and
// deletes) is refused with ErrInvalidBatch and writes nothing, never
// split. Queries (Find, Count, FindPage) are not part of a transaction:
// they read the table as committed, and a transaction that acts on what
// one found reads those records with Get.
//
// Table.Load inserts a sequence of records many to a batch, each batch a
// transaction (on a partitioned store, of one partition's records), the
// load as a whole not atomic: a record the table holds as given counts as
// present, so a load run again finishes what one that stopped began, and
// a record that cannot be inserted is refused with its position and why
// (LoadOptions.OnRefused: stop, or skip and report). Load encodes and
// plans each batch while the store applies the one before, so it keeps
// two cores busy.
//
// # The catalog and an index's lifecycle
//
// Each table keeps the definitions and states of its index tables in the
// store, one catalog entry per index, so that opening a table with a
// changed schema is detected rather than served from stale entries. Open
// compares the schema with the catalog. An index the catalog does not know
// is new; one whose definition changed (fields, their types, strategy,
// projection, Unique, Sparse, MultiValued, Consistency, Version) is
// replaced; one the schema no longer declares is dropped, leaving a
// tombstone. Each definition of an index gets its own generation of keys,
// never reused, so a replaced definition starts from an empty key range and
// never reads the entries of an old one; the entries of retired
// generations are deleted once no handle can still use them.
//
// A new or replaced index starts write-only (readable at once when the
// first Open of an empty table declares it; delete-only on a partitioned
// store), so every write maintains it, and Table.Build
// fills in the entries of the records written before, in chunks, while
// writes go on. Each chunk is one batch that puts the entries of its
// records, expects each record unchanged since it was read (a concurrent
// write makes the chunk read again), and moves the build's cursor in the
// catalog. A build that stops, or a process that crashes, resumes from the
// cursor. The chunk that finds no record after the cursor flips the index
// to readable, so queries see the index only when it is complete.
//
// Processes of different schemas share a table safely (schema.go): each
// handle reads the catalog again within its Schema.SchemaLease and
// maintains the indexes other processes added, compiled from their catalog
// definitions; on stores of unbounded atomicity every write expects the
// schema version it planned at, and on partitioned ones an index moves
// through delete-only and write-only, each held for two leases, before
// Build fills it, as in F1's online schema change. Schema.Revision keeps
// an older release's Open from undoing a newer one's schema.
//
// # Verification
//
// Table.Verify reads a table and its readable index tables in chunks and
// reports how the indexes drifted from the fact table; Table.Repair does
// the same and fixes what it finds. It makes two passes. The first reads
// the records and looks up the entries each should own (missing and stale
// entries, unique keys two records claim); the second reads each index
// table and looks up the record of each entry (dangling entries, and
// entries whose record no longer has their key). A record with changes
// still queued is skipped: its entries are late, not wrong. A finding is
// confirmed before it is reported: its record and its entry are read
// again, the record's queue is checked, and the index is checked to be
// still readable in the same generation, so neither a concurrent write nor
// a concurrent Repair, DisableIndex or EnableIndex is reported as drift;
// repairs are conditional on the record being unchanged.
//
// A record whose only queued changes are set aside is checked like one
// without: no maintainer will bring its entries up to date. Repair, once
// it made such a record's entries exact (it found nothing, or fixed all it
// found, in every index the maintainers keep), removes those changes,
// conditional on them and on the record as checked.
//
// # What an index costs
//
// An index is worth what it saves the queries that read it, against what it
// costs every write and the space it takes. A table counts, as it runs,
// what each index does (Table.Usage: reads, records returned, entries
// written), and measures on demand what each holds (Table.Stats: entries,
// distinct keys, the most common key and key prefixes, bytes against the
// fact table's). Table.Advise turns both into findings: an index is seldom
// worth keeping when the data changes far more often than it is read, when
// its key has few distinct values, or when a few values hold most records
// (unless queries ask for the rare ones). cmd/indextable shows the same for
// a store, and verifies and repairs it, without the program's types.
//
// # Stores
//
// A table lies over a store as database/sql over its driver: a program
// picks a store and passes it to Open, and a store implements only the
// narrow interface of package kv.
//
//   - MemoryStore (NewMemoryStore), the default: an in-memory B-tree, for
//     tests and data that need not outlive the process.
//   - ShardedStore (OpenShardedStore) spreads tables over several stores
//     of any backends: a record on the shard its first primary key
//     component hashes to (ShardFor), each index by its own rule
//     (IndexSharding).
//   - Modules of their own hold the stores of other backends: pebblestore
//     (Pebble, on disk) and azstore (Azure Table storage).
//
// Package kv is for store authors: the Store interface, the Batch a table
// applies, the Atomicity a store declares, the errors it returns (which
// this package declares too, as the same values: ErrNotFound, ErrConflict
// and the others) and the layout and encoding of the keys it is given.
// Package storetest checks a store against that contract, and runs tables
// over it.
//
// # Limits of a store
//
// A store may bound its keys and values (kv.Atomicity.MaxKeyBytes and
// MaxValueBytes) and its batches (MaxOps, MaxWrites, MaxBytes). What a write puts now
// the store refuses whole, but a maintainer applies a write's queued
// changes later, and a later write must be able to delete the record: a
// key, record or entry those would need and the store cannot hold makes a
// write that can never be finished. So before it writes a record, a table
// checks, on a store with any bound:
//
//   - every key the record has in the store: its own, its change records'
//     (the record's key, a byte and a 9-byte change ID), and its entries in
//     every maintained index, queued ones included; a key too long is
//     ErrInvalidKey, naming the field and the most bytes it may take;
//   - every entry's value, against MaxValueBytes;
//   - the record itself: a change record and a maintainer's marker hold a
//     copy of it, and a maintainer's last batch three (ErrInvalidBatch);
//   - that a delete of the record can free its unique keys in one batch.
//
// Build checks the entries it writes the same way.
//
// # Tool functions
//
// A tool reads tables it has no types for, such as cmd/indextable, which
// shows, verifies and repairs a store's tables. These functions take a
// store and what its catalog records, never a Table: ReadCatalog lists a
// store's tables (TableInfo, IndexInfo); StatsOf and UsageOf measure one
// (TableStats, TableUsage), and Findings judges them, as Table.Stats,
// Table.Usage and Table.Advise do; VerifyTable and RepairTable are
// Table.Verify and Table.Repair; IsShard tells one shard of a
// ShardedStore from a whole store. A program with its types uses the
// Table methods instead.
//
// A table keeps its record type in the store with its catalog, so that
// these functions can decode its records and compute their index entries: a descriptor of the record type that turns back into an
// equivalent type, with the same kinds, exported fields, tags and
// embedding, which the codec reads as the program's type. Methods are not
// kept, so for the JSON codec a type that no descriptor can stand for (one
// with its own JSON or text encoding, or an unexported embedded struct,
// whose fields JSON promotes) has no record type; the binary codec goes by
// kinds and field names alone. TableInfo.RecordType holds the descriptor:
//
//	type   = kind | "time" | "any" | "*" type | "[]" type | "[" n "]" type |
//	         "map[" type "]" type | "struct{" { field ";" } "}"
//	field  = ["embed "] name " " type " " quoted-tag
//
// # Reading the source
//
// One insert, from Insert to kv.Store.Apply: write.go encodes the record
// (writeRecord), computes its entries (entries.go), checks the store's
// limits (limits.go), then each attempt reads the current record, checks
// it, plans the batch (the entry diff, unique guards, and the fallback
// rule) and applies it. A change record's format and the readers of the
// queue are in queue.go; on partitioned stores, the queue's hints, and why
// they are enough to find every pending change, in hints.go; maintainer.go
// applies the queue, a record's changes at a time (changegroup.go), under
// leases (lease.go). keylayout.go builds the stored keys; catalog.go,
// schema.go, build.go and verify.go run an index's lifecycle; query.go
// reads; the codecs are in codec.go and codec_binary.go. Package kv holds
// the store contract (store.go, batch.go), the key layout (keys.go) and
// the tuple encoding's exports (tuple.go), which internal/tuple implements.
package indextable
