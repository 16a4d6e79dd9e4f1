package pebblestore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/pebblestore/internal/crashschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrash kills a writer (internal/crashwriter) with SIGKILL at random
// moments, round after round on one directory, with synchronous and with
// eventual indexes. After each kill it reopens the store, lets a
// maintainer catch up, and checks that every acknowledged write is there
// with all its index entries, and that Verify finds no drift.
func TestCrash(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "crashwriter")
	out, err := exec.Command("go", "build", "-o", bin, "./internal/crashwriter").CombinedOutput()
	require.NoError(t, err, "build the writer: %s", out)
	rounds := 25
	if testing.Short() {
		rounds = 6
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for i, mode := range []string{"sync", "eventual"} {
		t.Run(mode, func(t *testing.T) {
			crashRounds(t, bin, mode, rounds, rand.New(rand.NewPCG(seed, uint64(i))))
		})
	}
}

// crashStats counts what the rounds of one mode did.
type crashStats struct {
	Rounds, Acks   int
	BeforeReady    int // kills during the writer's start, Open and recovery
	MidWrite       int // kills with a write in flight
	Landed         int // of which the write was found committed
	PendingRounds  int // reopens that found changes queued
	PendingChanges int // and how many
	Records        int // in the store at the end
}

func crashRounds(t *testing.T, bin, mode string, rounds int, rng *rand.Rand) {
	ctx := context.Background()
	c, err := crashschema.Consistency(mode)
	require.NoError(t, err)
	dir := t.TempDir()
	model := map[int]int64{} // the revision of each present record
	var st crashStats
	startup := 20 * time.Millisecond
	for round := 1; round <= rounds; round++ {
		lines := runAndKill(t, bin, dir, mode, round, rng, &startup)
		want, inflight, ready := replayAcks(t, model, lines)
		found, pending, landed := checkAfterKill(ctx, t, dir, c, want, inflight)
		st.Rounds++
		for _, l := range lines {
			if strings.HasPrefix(l, "ack ") {
				st.Acks++
			}
		}
		if !ready {
			st.BeforeReady++
		}
		if inflight != nil {
			st.MidWrite++
		}
		if landed {
			st.Landed++
		}
		if pending > 0 {
			st.PendingRounds++
			st.PendingChanges += pending
		}
		model = found
	}
	st.Records = len(model)
	t.Logf("%s: %+v", mode, st)
}

// writerStall is how long the writer may print nothing before its round
// calls it stuck: generous, as its start (Pebble's Open and recovery) may
// take many seconds on a busy machine, and a stuck writer prints nothing
// ever.
const writerStall = 2 * time.Minute

// runAndKill starts the writer on dir and kills it: in one round of five,
// at a random moment within startup, the time the writer took to get ready
// when last seen (which it updates), so during its start, Open and
// recovery; otherwise after a random number of acknowledged writes or a
// random time of writing, whichever comes first. It returns the lines the
// writer printed.
func runAndKill(t *testing.T, bin, dir, mode string, round int, rng *rand.Rand, startup *time.Duration) []string {
	t.Helper()
	cmd := exec.Command(bin, "-dir", dir, "-mode", mode,
		"-seed", strconv.FormatUint(rng.Uint64(), 10), "-round", strconv.Itoa(round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	started := time.Now()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	acks, target := 0, 1+rng.IntN(1000)
	writing := 5*time.Millisecond + time.Duration(rng.Int64N(int64(195*time.Millisecond)))
	var deadline <-chan time.Time // when to kill: timed from the start, or from ready
	if rng.IntN(5) == 0 {
		target = 0
		deadline = time.After(time.Duration(rng.Int64N(int64(*startup))))
	}
	stuck := time.NewTimer(writerStall)
	defer stuck.Stop()
	var got []string
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break wait // the writer exited: Wait reports why
			}
			stuck.Reset(writerStall)
			got = append(got, l)
			switch {
			case strings.HasPrefix(l, "ready "):
				*startup = time.Since(started)
				if deadline == nil {
					deadline = time.After(writing)
				}
			case strings.HasPrefix(l, "ack "):
				if acks++; acks == target {
					break wait
				}
			}
		case <-deadline:
			break wait
		case <-stuck.C:
			t.Errorf("round %d: the writer is stuck: it printed nothing for %v", round, writerStall)
			break wait
		}
	}
	_ = cmd.Process.Kill() // SIGKILL; fails only if the writer exited, as Wait reports
	for l := range lines {
		got = append(got, l)
	}
	err = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL,
		"round %d: the writer ended by itself (%v): %s", round, err, stderr.String())
	require.Empty(t, stderr.String(), "round %d: the writer's stderr", round)
	return got
}

// crashOp is a write of the writer: a put of crashschema.Record(id, rev),
// or a delete of record number id.
type crashOp struct {
	del bool
	id  int
	rev int64
}

// apply changes m, the revision of each present record, by o, and returns
// it.
func (o crashOp) apply(m map[int]int64) map[int]int64 {
	if o.del {
		delete(m, o.id)
	} else {
		m[o.id] = o.rev
	}
	return m
}

// parseCrashOp parses the fields after "try" or "ack".
func parseCrashOp(t *testing.T, f []string) crashOp {
	t.Helper()
	require.GreaterOrEqual(t, len(f), 2, "operation %q", f)
	id, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	switch {
	case f[0] == "del" && len(f) == 2:
		return crashOp{del: true, id: id}
	case f[0] == "put" && len(f) == 3:
		rev, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		return crashOp{id: id, rev: rev}
	}
	t.Fatalf("bad operation %q", f)
	return crashOp{}
}

// replayAcks applies the acknowledged writes of lines to model, the
// revision of each record present when the writer started, and returns the
// records the store must hold, the write in flight at the kill (nil if
// none), and whether the writer got ready.
func replayAcks(t *testing.T, model map[int]int64, lines []string) (want map[int]int64, inflight *crashOp, ready bool) {
	t.Helper()
	want = maps.Clone(model)
	for _, l := range lines {
		f := strings.Fields(l)
		require.NotEmpty(t, f, "an empty line")
		switch f[0] {
		case "ready":
			require.Len(t, f, 2, "line %q", l)
			require.False(t, ready, "ready twice")
			ready = true
			require.Equal(t, strconv.Itoa(len(model)), f[1], "the records the writer found at its start")
		case "try":
			require.True(t, ready, "a write before ready")
			require.Nil(t, inflight, "a write began before %+v was acknowledged", inflight)
			o := parseCrashOp(t, f[1:])
			inflight = &o
		case "ack":
			o := parseCrashOp(t, f[1:])
			require.Equal(t, inflight, &o, "%q is not the write tried", l)
			o.apply(want)
			inflight = nil
		default:
			t.Fatalf("unexpected line %q", l)
		}
	}
	return want, inflight, ready
}

// crashReads are the reads checkAfterKill makes: for each index, the keys a
// record has in it, and what a read by one of them returns of the record.
var crashReads = []struct {
	index   string
	covered bool
	keys    func(crashschema.Item) []indextable.Tuple
	view    func(crashschema.Item) crashschema.Item
}{
	{
		index: crashschema.ByGroupScore,
		keys:  func(it crashschema.Item) []indextable.Tuple { return []indextable.Tuple{{it.Group, it.Score}} },
		view:  wholeItem,
	},
	{
		index: crashschema.ByOwner,
		keys:  func(it crashschema.Item) []indextable.Tuple { return []indextable.Tuple{{it.Owner}} },
		view:  wholeItem,
	},
	{
		index: crashschema.ByScore,
		keys:  func(it crashschema.Item) []indextable.Tuple { return []indextable.Tuple{{it.Score}} },
		view:  wholeItem,
	},
	{
		// From the partial entries alone: the key, the primary key and the
		// projection.
		index:   crashschema.ByScore,
		covered: true,
		keys:    func(it crashschema.Item) []indextable.Tuple { return []indextable.Tuple{{it.Score}} },
		view: func(it crashschema.Item) crashschema.Item {
			return crashschema.Item{ID: it.ID, Score: it.Score, Owner: it.Owner, Note: it.Note}
		},
	},
	{
		index: crashschema.ByCode,
		keys:  func(it crashschema.Item) []indextable.Tuple { return []indextable.Tuple{{it.Code}} },
		view:  wholeItem,
	},
	{
		index: crashschema.ByTag,
		keys: func(it crashschema.Item) []indextable.Tuple {
			var keys []indextable.Tuple
			for _, tag := range it.Tags {
				keys = append(keys, indextable.Tuple{tag})
			}
			return keys
		},
		view: wholeItem,
	},
}

func wholeItem(it crashschema.Item) crashschema.Item { return it }

// checkAfterKill reopens the store in dir after a kill, catches up with the
// queued changes, and checks it: the records are want, or want with
// inflight applied; each index returns each record by each of its keys;
// Verify finds no drift. It returns the records found, how many changes
// were queued at the reopen, and whether the write in flight landed.
func checkAfterKill(ctx context.Context, t *testing.T, dir string, c indextable.Consistency, want map[int]int64, inflight *crashOp) (found map[int]int64, pending int, landed bool) {
	t.Helper()
	s := open(t, dir, pebblestore.Options{}) // the kill released the lock
	defer func() { assert.NoError(t, s.Close()) }()
	tbl, err := indextable.Open(ctx, s, crashschema.Schema(c))
	require.NoError(t, err)

	lag, err := tbl.Lag(ctx)
	require.NoError(t, err)
	pending = lag.Pending
	if c == indextable.Synchronous {
		require.Zero(t, pending, "changes queued with synchronous indexes only")
	}
	for i := 0; lag.Pending > 0; i++ {
		require.Less(t, i, 100, "the maintainer does not catch up: %+v", lag)
		_, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		require.NoError(t, err)
		lag, err = tbl.Lag(ctx)
		require.NoError(t, err)
	}
	status, err := tbl.IndexStatus(ctx)
	require.NoError(t, err)
	for _, st := range status {
		require.Equal(t, indextable.IndexReadable, st.State, "index %s", st.Name)
	}

	// Every acknowledged write, and the one in flight either way.
	var records []crashschema.Item // in ID order
	found = map[int]int64{}
	for it, err := range tbl.Find(ctx, indextable.Query{}) {
		require.NoError(t, err)
		id, err := strconv.Atoi(it.ID[1:])
		require.NoError(t, err, "record %q", it.ID)
		require.Equal(t, crashschema.Record(id, it.Rev), it)
		found[id] = it.Rev
		records = append(records, it)
	}
	if inflight != nil {
		if after := inflight.apply(maps.Clone(want)); maps.Equal(after, found) {
			want, landed = after, true
		}
	}
	require.Equal(t, want, found, "the records after the kill (write in flight: %+v)", inflight)

	// Each index returns exactly the records that have a key, in primary
	// key order.
	entries := 0
	for _, r := range crashReads {
		keys := map[string]indextable.Tuple{}
		expect := map[string][]crashschema.Item{}
		for _, it := range records {
			for _, k := range r.keys(it) {
				key := fmt.Sprint(k)
				keys[key] = k
				expect[key] = append(expect[key], r.view(it))
				if !r.covered {
					entries++
				}
			}
		}
		for key, k := range keys {
			var got []crashschema.Item
			for it, err := range tbl.Find(ctx, indextable.Query{Index: r.index, Eq: k, Covered: r.covered}) {
				require.NoError(t, err)
				got = append(got, it)
			}
			require.Equal(t, expect[key], got, "index %s, key %v, covered %v", r.index, k, r.covered)
		}
	}

	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "drift: %v", rep.Samples)
	require.Zero(t, rep.Pending, "records with changes pending")
	require.EqualValues(t, len(records), rep.Records, "records verified")
	require.EqualValues(t, entries, rep.Entries, "entries verified")
	return found, pending, landed
}
