package indextable

import (
	"strconv"
)

// Consistency says when an index follows a write to its fact table (see
// the package documentation's Consistency section: write.go commits a
// write, queue.go holds what is pending, maintainer.go applies it).
type Consistency int8

const (
	// Synchronous indexes change in the write's own atomic batch.
	Synchronous Consistency = iota
	// Eventual indexes change later, when a maintainer applies the table's
	// queued changes. A unique index cannot be eventual.
	Eventual
)

// String names the consistency.
func (c Consistency) String() string {
	switch c {
	case Synchronous:
		return "synchronous"
	case Eventual:
		return "eventual"
	}
	return "Consistency(" + strconv.Itoa(int(c)) + ")"
}
