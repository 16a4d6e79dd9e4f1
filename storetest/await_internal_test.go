package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAwait drives await with ticks and progress of its own making, so
// that no wall-clock budget is involved: a step is called stalled only
// when a whole limit passes without progress, however long it runs.
func TestAwait(t *testing.T) {
	const limit = time.Minute
	start := time.Unix(1000, 0)
	failure := errors.New("the step's own error")
	// A tick is a time after start and the step's progress count then,
	// which starts at 0.
	type tick struct {
		after time.Duration
		count int64
	}
	for _, tc := range []struct {
		name    string
		ticks   []tick
		result  error // what the step returns after the ticks, unless stalled
		stalled bool
	}{
		{"done at once", nil, nil, false},
		{"the step's error", []tick{{limit / 2, 0}}, failure, false},
		{"slow, with progress", []tick{{limit / 2, 1}, {2 * limit, 2}, {3 * limit, 3}, {3*limit + limit/2, 3}, {10 * limit, 4}}, nil, false},
		{"no progress for just under limit", []tick{{limit / 2, 1}, {limit/2 + limit - 1, 1}}, nil, false},
		{"no progress for limit", []tick{{limit / 2, 0}, {limit, 0}}, nil, true},
		{"no progress for limit after some", []tick{{limit / 2, 1}, {limit, 1}, {3 * limit / 2, 1}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := []int64{0} // await reads the count at start, then at each tick
			for _, k := range tc.ticks {
				counts = append(counts, k.count)
			}
			progress := func() int64 {
				n := counts[0]
				counts = counts[1:]
				return n
			}
			done := make(chan error, 1)
			ticks := make(chan time.Time)
			res := make(chan error, 1)
			go func() { res <- await(done, progress, ticks, start, limit) }()
			for i, k := range tc.ticks {
				select {
				case ticks <- start.Add(k.after):
				case err := <-res:
					require.Failf(t, "await returned early", "before tick %d: %v", i, err)
				}
			}
			if tc.stalled {
				require.ErrorIs(t, <-res, errStalled)
				return
			}
			done <- tc.result
			assert.Equal(t, tc.result, <-res)
		})
	}
}
