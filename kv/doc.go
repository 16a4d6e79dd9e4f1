// Package kv is what a key/value store implements to hold indextable
// tables, and what it may use to do so: the store contract (Store, Batch,
// Atomicity), the errors a store returns, and the layout and encoding of
// the keys a table writes. It is to package indextable what
// database/sql/driver is to database/sql: a program that only picks a
// store (indextable.MemoryStore, a ShardedStore, pebblestore, azstore)
// passes it to indextable.Open; it names kv.Store only where it holds one
// store of several kinds in a variable, or shards a ShardedStore over
// them.
//
// # The contract
//
// A Store is an ordered map from byte keys to byte values: keys are any
// byte strings, the empty one included, ordered by bytes.Compare. It
// reads one key (Get), several at once (GetMany) and ranges in either
// order (Scan, over a ScanRange), and applies batches (Apply). A Batch is
// an ordered list of writes (Put, Delete) and expectations (ExpectValue,
// ExpectAbsent) that Apply makes all or nothing: every expectation is
// checked against the key's value before any write, and one that fails
// fails the batch, which writes nothing. Tables build on that alone: a
// write expects the record it read and the unique keys it takes to be
// free, so two writers never both win.
//
// Apply starts with CheckBatch, which refuses a batch that writes a key
// twice or holds an unknown operation, and checks each expectation with
// CheckExpectation, which gives the error a failed one must wrap. A store
// returns errors that wrap this package's sentinels, with what and where
// (fmt.Errorf("mystore: get %q: %w", key, ErrNotFound)):
//
//   - ErrNotFound from Get, for an absent key;
//   - ErrConflict from Apply, for a failed expectation;
//   - ErrInvalidBatch from Apply, for a batch it cannot apply;
//   - ErrClosed from any call after Close, and ErrReadOnly from a write to
//     a store opened for reading only.
//   - ErrInvalidArgument from any call given a nil context.
//
// Package indextable declares the same values under the same names, so
// its users test errors.Is(err, indextable.ErrNotFound) whatever the
// store.
//
// # Atomicity
//
// A store whose transactions are bounded says how in Atomicity: which
// keys share a partition (only those can be applied together), and how
// many operations, bytes, and key and value bytes one batch may hold.
// Tables plan their writes within those bounds, falling back to their
// queue when a write's index entries do not fit its batch (see the
// fallback rule in package indextable), and a store refuses what lies
// outside them with ErrInvalidBatch: Atomicity.Allows says what a store
// of that scope can apply. The zero Atomicity, of an embedded store such
// as Pebble, bounds nothing.
//
// # Memory
//
// A store copies the keys and values it keeps, and the caller of Get,
// GetMany and Scan must not modify what they return. The caller may keep
// what Get returns, and a table's Get decodes a record that shares it. A
// store that never modifies or reuses what GetMany and Scan return either
// implements StableStore, and tables then keep that too instead of
// copying it.
//
// # Keys
//
// Every key a table writes is a tuple (AppendTuple gives the encoding,
// which sorts as the tuple does) that starts with the table's name and a
// KeySpace. KeySpace lays out what follows in each space, and ParseKey
// reads a key back into a StoredKey, whose Lead is the element that
// places it: a store that partitions or shards keys keeps a record, its
// queued changes and its intra-partition entries together by their Lead.
// DecodeTuple and DecodeElement read tuples and their elements back, and
// CompareTuples orders tuples as their encodings sort.
//
// # Checking a store
//
// Package storetest holds the conformance suite every Store must pass,
// and runs tables over the store:
//
//	func TestMyStore(t *testing.T) {
//		storetest.TestStore(t, func(t *testing.T) kv.Store { return mystore.Open(t.TempDir()) })
//	}
package kv
