package indextable

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArena(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *arena
	}{
		{"nil: every slice its own", nil},
		{"chunks", new(arena)},
		{"a single write's small chunks", &arena{single: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]byte
			for _, n := range []int{128, 7, arenaBytes / 4, arenaBytes/4 + 1, 300, arenaBytes / 8, 1} {
				b := tc.a.bytes(n)
				require.Len(t, b, 0)
				require.Equal(t, n, cap(b))
				got = append(got, b[:n])
			}
			// Each slice is its own: filling one to its capacity leaves the
			// others as they were, and appending past it moves it.
			for i, b := range got {
				for j := range b {
					b[j] = byte(i + 1)
				}
			}
			for i, b := range got {
				require.Equal(t, bytes.Repeat([]byte{byte(i + 1)}, len(b)), b, "slice %d", i)
			}
			b := append(got[1], 'x')
			require.NotSame(t, &got[1][0], &b[0])
			require.Equal(t, byte(3), got[2][0])

			e := tc.a.entries(2)
			require.Equal(t, 2, cap(e))
			e = append(e, entry{key: []byte("a")}, entry{key: []byte("b")})
			f := tc.a.entries(1)
			f = append(f, entry{key: []byte("c")})
			require.Equal(t, []byte("b"), e[1].key)
			require.Equal(t, []byte("c"), f[0].key)
			tc.a.release()
		})
	}
}

// TestArenaReused checks that an arena emptied allocates nothing for what
// it held before, so a load's batches reuse their memory, and keeps no
// index alive.
func TestArenaReused(t *testing.T) {
	a := new(arena)
	ix := &indexTable{}
	fill := func() {
		for range 100 {
			_ = a.bytes(200)
			_ = append(a.entries(2), entry{ix: ix})
		}
	}
	fill()
	allocs := testing.AllocsPerRun(10, func() {
		a.reset()
		fill()
	})
	require.Zero(t, allocs)

	a.reset()
	for _, c := range a.ents.all {
		for _, e := range c {
			require.Nil(t, e.ix, "a released arena keeps no index")
		}
	}
}

// TestArenaSingleKeepsLittle: a single write's arena, which every pooled
// write buffer of every table keeps, is kept only while its chunks are
// small; one that a large write grew is dropped, as a transaction's is
// past arenaKept.
func TestArenaSingleKeepsLittle(t *testing.T) {
	for _, a := range []*arena{{single: true}, {}} {
		size, kept := arenaBytes, arenaKept
		if a.single {
			size, kept = arenaSingleBytes, arenaSingleKept
		}
		for range kept / size {
			_ = a.bytes(size / 4)
			_ = a.bytes(size / 4)
			_ = a.bytes(size / 4)
			_ = a.bytes(size / 4)
			require.True(t, a.keep(), "single %v, %d chunks", a.single, len(a.bufs.all))
		}
		_ = a.bytes(1)
		require.False(t, a.keep(), "single %v, %d chunks", a.single, len(a.bufs.all))
	}
}
