// Package deployschema is the table of the rolling deploy test and its
// helper process (internal/schemaproc): its record type, a record as a
// pure function of its ID and the round that wrote it, and the schema of
// each of the two program revisions.
package deployschema

import (
	"fmt"

	"github.com/indextable/indextable"
)

// Person is the test's record, the same in both revisions.
type Person struct {
	ID    int
	Round int
	Town  string
	Name  string
}

// Record returns the record that round writes as record id. Its Name
// differs from one round to the next (rounds 1 to 4 at least), so that an
// update moves the record's entry in the "name" index.
func Record(id, round int) Person {
	return Person{
		ID:    id,
		Round: round,
		Town:  fmt.Sprintf("t%d", (id+round)%5),
		Name:  fmt.Sprintf("n%02d", (id*7+round*5)%23),
	}
}

// Index names.
const (
	ByTown = "town" // both revisions
	ByName = "name" // revision 2 only
)

// Schema returns the schema of program revision rev: 1 has the index
// "town", 2 adds "name". Schema.Revision is rev, so that revision 1,
// restarted after revision 2 opened the table, leaves the catalog be.
func Schema(rev int) (indextable.Schema[Person], error) {
	s := indextable.Schema[Person]{
		Name:       "people",
		PrimaryKey: []string{"ID"},
		Indexes:    []indextable.Index[Person]{{Name: ByTown, Fields: []string{"Town"}}},
		Revision:   int64(rev),
	}
	switch rev {
	case 1:
	case 2:
		s.Indexes = append(s.Indexes, indextable.Index[Person]{Name: ByName, Fields: []string{"Name"}})
	default:
		return s, fmt.Errorf("unknown revision %d: want 1 or 2", rev)
	}
	return s, nil
}
