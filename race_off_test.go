//go:build !race

package indextable_test

// raceDetector is whether the race detector is on; with it, sync.Pool
// drops a share of what it is given, so reuse cannot be counted.
const raceDetector = false
