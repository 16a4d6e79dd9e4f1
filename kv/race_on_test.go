//go:build race

package kv_test

// raceDetector is whether the race detector is on; with it, sync.Pool
// drops a share of what it is given, so reuse cannot be counted.
const raceDetector = true
