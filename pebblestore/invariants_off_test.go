//go:build !invariants && !race

package pebblestore_test

// pebbleInvariants is whether Pebble runs its invariant checks (see
// invariants_on_test.go).
const pebbleInvariants = false
