package indextable

import "sync"

// arena hands out the byte slices and entry lists of a transaction's
// writes (their encoded records and their entries' keys) from a few large
// chunks, which the next transaction reuses once the commit is done: a
// bulk load's batches then allocate next to nothing. A single write's
// arena (single set) has small chunks, as a write needs little and every
// pooled write buffer keeps one. A nil *arena allocates each slice on its
// own.
type arena struct {
	bufs   chunks[byte]
	ents   chunks[entry]
	single bool
}

// chunks are the chunks of an arena of one element type.
type chunks[E any] struct {
	all  [][]E // all[n-1] is the current chunk
	n    int   // chunks in use
	free []E   // what is left of the current one
}

// Chunk sizes, in elements, of a transaction's arena and of a single
// write's; a request of more than a quarter of a chunk gets a slice of its
// own. An arena of more than arenaKept bytes of chunks, or a single
// write's of more than arenaSingleKept, is not reused.
const (
	arenaBytes         = 16 << 10
	arenaEntries       = 256
	arenaKept          = 4 << 20
	arenaSingleBytes   = 512
	arenaSingleEntries = 8
	arenaSingleKept    = 2 << 10
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
	switch {
	case a == nil:
		return make([]byte, 0, n)
	case a.single:
		return a.bufs.take(n, arenaSingleBytes)
	}
	return a.bufs.take(n, arenaBytes)
}

// entries returns an entry list of length 0 and capacity n.
func (a *arena) entries(n int) []entry {
	switch {
	case a == nil:
		return make([]entry, 0, n)
	case a.single:
		return a.ents.take(n, arenaSingleEntries)
	}
	return a.ents.take(n, arenaEntries)
}

// take returns a slice of length 0 and capacity n from chunks of size
// elements.
func (c *chunks[E]) take(n, size int) []E {
	if n > size/4 {
		return make([]E, 0, n)
	}
	if len(c.free) < n {
		if c.n == len(c.all) {
			c.all = append(c.all, make([]E, size))
		}
		c.free = c.all[c.n]
		c.n++
	}
	s := c.free[:0:n]
	c.free = c.free[n:]
	return s
}

// release empties the arena, whose slices nothing uses any more, and
// keeps it for another transaction unless it grew large.
func (a *arena) release() {
	if a == nil {
		return
	}
	a.reset()
	if a.keep() {
		arenas.Put(a)
	}
}

// keep reports whether a's chunks are few enough to keep for reuse.
func (a *arena) keep() bool {
	if a.single {
		return len(a.bufs.all)*arenaSingleBytes <= arenaSingleKept
	}
	return len(a.bufs.all)*arenaBytes <= arenaKept
}

// reset empties the arena, keeping its chunks.
func (a *arena) reset() {
	for _, c := range a.ents.all[:a.ents.n] {
		clear(c) // the indexes they name may go
	}
	a.bufs.n, a.bufs.free = 0, nil
	a.ents.n, a.ents.free = 0, nil
}
