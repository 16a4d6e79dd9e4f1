package storetest

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// TestStoreReopen runs the suite's check of extreme keys and values (the
// ExtremeKeys group of TestStore) on a store that keeps its data, closing
// and reopening it between its writes and its reads: a disk store then
// writes them out and reads them back from its files. reopen returns a
// function that opens one store: new and empty on its first call, and on
// each later call the same store again, which the test closed before.
// The test closes the store it opened last.
func TestStoreReopen(t *testing.T, reopen func(t *testing.T) func() kv.Store) {
	open := reopen(t)
	s := open()
	cycle := func(s kv.Store) kv.Store {
		within(t, "Close", func(func()) error { return s.Close() })
		return open()
	}
	s = testExtremes(t, s, cycle)
	within(t, "Close", func(func()) error { return s.Close() })
}

func testExtremeKeys(t *testing.T, s kv.Store) { testExtremes(t, s, nil) }

// extremeKeys are the first and last keys of the key space and their
// neighbours: the empty key, which precedes every other, keys of 0x00,
// the next ones, and keys of 0xFF. testExtremes writes large values under
// the first, third and last.
var extremeKeys = [][]byte{{}, {0x00}, {0x00, 0x00}, {0x00, 0x01}, {0x01}, {0xff}, {0xff, 0xff, 0xff}}

// extremeSizes returns the sizes of the values that testExtremes writes,
// within the limits that a declares: over a 4 KiB block of a disk store,
// 64 KiB, and 3 MiB, over half of a 4 MiB write buffer (which Pebble
// then writes to a file of its own at once); a size beyond the limits
// becomes the largest they allow under every extreme key, once.
func extremeSizes(a kv.Atomicity) []int {
	largest := 3 << 20
	if a.MaxValueBytes > 0 {
		largest = min(largest, a.MaxValueBytes)
	}
	if a.MaxBytes > 0 {
		longest := slices.MaxFunc(extremeKeys, func(a, b []byte) int { return len(a) - len(b) })
		largest = min(largest, a.MaxBytes-len(longest))
	}
	var sizes []int
	for _, n := range []int{4<<10 + 1, 64 << 10, 3 << 20} {
		sizes = append(sizes, min(n, largest))
	}
	return slices.Compact(sizes)
}

// pattern returns a value of n bytes that differs from the value of any
// other seed.
func pattern(n int, seed byte) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(i*7) ^ seed
	}
	return v
}

// testExtremes writes the empty key with large values, among small and
// large values of its neighbours (see extremeKeys), deletes it and writes
// it again (a value over 64 KiB, which some stores move slowly, it only
// writes and deletes), and after each step checks every read of them against a
// model; with cycle, which closes a store and reopens it, it checks them
// again after a cycle. It returns the store it holds last.
func testExtremes(t *testing.T, s kv.Store, cycle func(kv.Store) kv.Store) kv.Store {
	empty := extremeKeys[0]
	model := map[string][]byte{}
	write := func(key, value []byte) {
		t.Helper()
		if value == nil {
			del(t, s, key)
			delete(model, string(key))
		} else {
			put(t, s, key, value)
			model[string(key)] = value
		}
	}
	step := func(format string, args ...any) {
		t.Helper()
		what := fmt.Sprintf(format, args...)
		checkExtremes(t, s, model, what)
		if cycle != nil {
			s = cycle(s)
			checkExtremes(t, s, model, what+", reopened")
		}
	}
	for _, n := range extremeSizes(s.Atomicity()) {
		for i, k := range extremeKeys {
			v := []byte{'a' + byte(i)}
			if i == 0 || i == 2 || i == len(extremeKeys)-1 {
				v = pattern(n, byte(i))
			}
			write(k, v)
		}
		step("a value of %d bytes under the empty key", n)
		if n <= 64<<10 {
			write(empty, nil)
			step("the empty key deleted")
			write(empty, pattern(n, 0x80))
			write(extremeKeys[1], pattern(n, 0x81))
			step("the empty key written again")
		}
		for _, k := range extremeKeys {
			write(k, nil)
		}
		step("every key deleted")
	}
	return s
}

// extremeRanges are the scans checkExtremes compares with the model: whole,
// bounded by or starting after the empty key and its neighbours, both
// ways, and with a limit.
var extremeRanges = []kv.ScanRange{
	{}, {Reverse: true}, {Limit: 1, Reverse: true}, {End: []byte{}},
	{Start: []byte{}, End: []byte{0x00}}, {Start: []byte{0x00}, End: []byte{0x01}, Limit: 2},
	{End: []byte{0x00, 0x01}, Reverse: true, Limit: 2}, {After: []byte{}, Limit: 2},
	{After: []byte{}, Reverse: true}, {After: []byte{0x00}, Reverse: true}, {Start: []byte{0xff}},
}

// checkExtremes checks Get and GetMany of every extreme key and the scans
// of extremeRanges against model, the values each key should hold.
func checkExtremes(t *testing.T, s kv.Store, model map[string][]byte, what string) {
	t.Helper()
	for _, k := range extremeKeys {
		v, err := s.Get(bg, k)
		want, ok := model[string(k)]
		if !ok {
			require.ErrorIs(t, err, kv.ErrNotFound, "%s: Get %q", what, k)
			continue
		}
		require.NoError(t, err, "%s: Get %q", what, k)
		requireSame(t, want, v, "%s: Get %q", what, k)
	}
	keys := slices.Clone(extremeKeys)
	rand.New(rand.NewPCG(uint64(len(model)), 7)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	got, err := s.GetMany(bg, keys, nil)
	require.NoError(t, err, "%s: GetMany", what)
	require.Len(t, got, len(keys), "%s: GetMany", what)
	for i, k := range keys {
		requireSame(t, model[string(k)], got[i], "%s: GetMany's value of %q", what, k)
	}
	sorted := slices.SortedFunc(maps.Keys(model), func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
	for _, r := range extremeRanges {
		var want []string
		for i := range sorted {
			k := sorted[i]
			if r.Reverse {
				k = sorted[len(sorted)-1-i]
			}
			if r.Contains([]byte(k)) && (r.Limit <= 0 || len(want) < r.Limit) {
				want = append(want, k)
			}
		}
		var keys []string
		for e, err := range s.Scan(bg, r) {
			require.NoError(t, err, "%s: scan %s", what, fmtRange(r))
			keys = append(keys, string(e.Key))
			requireSame(t, model[string(e.Key)], e.Value, "%s: scan %s, value of %q", what, fmtRange(r), e.Key)
		}
		require.Equal(t, want, keys, "%s: the keys of scan %s", what, fmtRange(r))
	}
}

// requireSame fails t unless got holds want (nil: absent), without
// printing values of megabytes.
func requireSame(t *testing.T, want, got []byte, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	switch {
	case want == nil:
		require.Nil(t, got, "%s: absent", what)
	case got == nil:
		require.FailNowf(t, "absent value", "%s: absent, want %d bytes", what, len(want))
	case !bytes.Equal(want, got):
		require.FailNowf(t, "wrong value", "%s: %d bytes, want %d bytes (%.16x…, want %.16x…)",
			what, len(got), len(want), got, want)
	}
}
