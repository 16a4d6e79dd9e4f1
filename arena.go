package indextable

import "sync"

// arena hands out the byte slices and entry lists of a transaction's
// writes (their encoded records and their entries' keys) from a few large
// chunks, which the next transaction reuses once the commit is done: a
// bulk load's batches then allocate next to nothing. A nil *arena
// allocates each slice on its own, as single writes do.
type arena struct {
	bufs  [][]byte  // byte chunks; bufs[nb-1] is the current one
	nb    int       // chunks in use
	free  []byte    // what is left of the current byte chunk
	ents  [][]entry // entry chunks, in the same way
	ne    int
	efree []entry
}

// Chunk sizes; a request of more than a quarter of a chunk gets a slice
// of its own. An arena of more than arenaKept bytes is not reused.
const (
	arenaBytes   = 16 << 10
	arenaEntries = 256
	arenaKept    = 4 << 20
)

// arenas keeps arenas of transactions that are done, empty.
var arenas sync.Pool

// newArena returns an empty arena.
func newArena() *arena {
	if a, ok := arenas.Get().(*arena); ok {
		return a
	}
	return new(arena)
}

// bytes returns a slice of length 0 and capacity n.
func (a *arena) bytes(n int) []byte {
	if a == nil || n > arenaBytes/4 {
		return make([]byte, 0, n)
	}
	if len(a.free) < n {
		if a.nb == len(a.bufs) {
			a.bufs = append(a.bufs, make([]byte, arenaBytes))
		}
		a.free = a.bufs[a.nb]
		a.nb++
	}
	b := a.free[:0:n]
	a.free = a.free[n:]
	return b
}

// entries returns an entry list of length 0 and capacity n.
func (a *arena) entries(n int) []entry {
	if a == nil || n > arenaEntries/4 {
		return make([]entry, 0, n)
	}
	if len(a.efree) < n {
		if a.ne == len(a.ents) {
			a.ents = append(a.ents, make([]entry, arenaEntries))
		}
		a.efree = a.ents[a.ne]
		a.ne++
	}
	e := a.efree[:0:n]
	a.efree = a.efree[n:]
	return e
}

// release empties the arena, whose slices nothing uses any more, and
// keeps it for another transaction unless it grew large.
func (a *arena) release() {
	if a == nil {
		return
	}
	a.reset()
	if len(a.bufs)*arenaBytes <= arenaKept {
		arenas.Put(a)
	}
}

// reset empties the arena, keeping its chunks.
func (a *arena) reset() {
	for _, c := range a.ents[:a.ne] {
		clear(c) // the indexes they name may go
	}
	a.nb, a.ne, a.free, a.efree = 0, 0, nil, nil
}
