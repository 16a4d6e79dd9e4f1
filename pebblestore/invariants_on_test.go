//go:build invariants || race

package pebblestore_test

// pebbleInvariants is whether Pebble runs its invariant checks (under the
// race detector, or the invariants build tag), which assert that no
// sstable holds the empty key.
const pebbleInvariants = true
