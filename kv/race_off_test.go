//go:build !race

package kv_test

// raceDetector is whether the race detector is on (see race_on_test.go).
const raceDetector = false
