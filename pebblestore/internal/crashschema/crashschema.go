// Package crashschema is the table that the crash test's writer fills and
// the test checks: its record type, a record as a pure function of its ID
// and revision, and a schema with an index of every kind.
package crashschema

import (
	"fmt"

	"github.com/indextable/indextable"
)

// IDs is the number of record IDs the writer draws from, so that later
// rounds update and delete what earlier ones wrote.
const IDs = 300

// Item is the crash test's record.
type Item struct {
	ID    string
	Rev   int64
	Group string
	Score int
	Owner string
	Code  string
	Tags  []string
	Note  string
}

// Name returns the primary key of record number id.
func Name(id int) string { return fmt.Sprintf("r%03d", id) }

// Record returns the record that a write of revision rev to record number
// id stores. Its index keys move from one revision to the next.
func Record(id int, rev int64) Item {
	it := Item{
		ID:    Name(id),
		Rev:   rev,
		Group: fmt.Sprintf("g%d", (int64(id)+rev)%5),
		Score: int((int64(id)*31 + rev*17) % 50),
		Owner: fmt.Sprintf("o%d", (int64(id)+rev*7)%13),
		Code:  fmt.Sprintf("%s/%d", Name(id), rev%4),
		Note:  fmt.Sprintf("note %d", rev),
	}
	if rev%5 != 0 { // else no tags: no entries in the multi-valued index
		for i := range 1 + rev%3 {
			it.Tags = append(it.Tags, fmt.Sprintf("t%d", (int64(id)+rev+3*i)%8))
		}
	}
	return it
}

// Index names.
const (
	ByGroupScore = "group_score" // full copy, composite
	ByOwner      = "owner"       // keys only
	ByScore      = "score"       // partial
	ByCode       = "code"        // unique
	ByTag        = "tag"         // multi-valued
)

// Schema returns the table's schema: every index that may be Eventual has
// consistency c; the unique one is always Synchronous.
func Schema(c indextable.Consistency) indextable.Schema[Item] {
	return indextable.Schema[Item]{
		Name:       "items",
		PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[Item]{
			{Name: ByGroupScore, Fields: []string{"Group", "Score"}, Strategy: indextable.FullCopy, Consistency: c},
			{Name: ByOwner, Fields: []string{"Owner"}, Strategy: indextable.KeysOnly, Consistency: c},
			{Name: ByScore, Fields: []string{"Score"}, Strategy: indextable.Partial, Projection: []string{"Owner", "Note"}, Consistency: c},
			{Name: ByCode, Fields: []string{"Code"}, Unique: true},
			{Name: ByTag, Fields: []string{"Tags"}, MultiValued: true, Strategy: indextable.FullCopy, Consistency: c},
		},
	}
}

// Consistency parses a writer mode: "sync" or "eventual".
func Consistency(mode string) (indextable.Consistency, error) {
	switch mode {
	case "sync":
		return indextable.Synchronous, nil
	case "eventual":
		return indextable.Eventual, nil
	}
	return 0, fmt.Errorf("unknown mode %q: want sync or eventual", mode)
}
