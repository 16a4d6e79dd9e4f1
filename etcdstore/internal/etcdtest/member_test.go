package etcdtest

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordTB records what is logged to it.
type recordTB struct {
	testing.TB
	mu    sync.Mutex
	lines []string
}

func (r *recordTB) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, args[0].(string))
}

func (r *recordTB) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines
}

func TestTestLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mute      bool
		closed    bool
		want      []string
		wantFatal string
	}{
		{"errors only", false, false, []string{"boom", "fatal"}, "fatal"},
		{"muted", true, false, nil, "fatal"},
		{"closed", false, true, nil, "fatal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &recordTB{TB: t}
			var fatal bytes.Buffer
			log := &testLog{t: tb, fatal: &fatal}
			var mute atomic.Bool
			mute.Store(tt.mute)
			lg := log.logger(&mute)
			if tt.closed {
				log.close()
			}
			lg.Warn("quiet")
			lg.Error("boom")
			lg.DPanic("fatal") // panics in development mode only
			var got []string
			for _, l := range tb.logged() {
				got = append(got, l[strings.LastIndex(l, "\t")+1:])
			}
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantFatal, strings.TrimSpace(fatal.String()[strings.LastIndex(fatal.String(), "\t")+1:]))
			require.Equal(t, 1, strings.Count(fatal.String(), "\n"))
		})
	}
}

// TestStopIsQuiet checks that a stop does not log its closed listeners as
// errors.
func TestStopIsQuiet(t *testing.T) {
	t.Parallel()
	tb := &recordTB{TB: t}
	c := Start(tb, 1, Options{})
	require.NoError(t, c.Stop(0))
	require.NoError(t, c.Restart(0))
	require.NoError(t, c.Stop(0))
	require.Empty(t, tb.logged())
}
