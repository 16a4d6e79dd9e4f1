package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

// damage damages the index tables of writeStore's store in dir behind its
// program's back: the town entry of account 3 goes missing, and an
// active entry dangles.
func damage(t *testing.T, dir string) {
	store, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	key := func(elems ...any) []byte {
		k, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		return k
	}
	var b kv.Batch
	b.Delete(key("accounts", int64(1), "town", int64(1), "T3", int64(3)))       // missing
	b.Put(key("accounts", int64(1), "active", int64(1), true, int64(999)), nil) // dangling
	require.NoError(t, store.Apply(context.Background(), &b))
	require.NoError(t, store.Close())
}

// addUndecodable adds to the store in dir a table whose records the tool
// cannot decode: it keeps no record type.
func addUndecodable(t *testing.T, dir string) {
	ctx := context.Background()
	store, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	priced, err := indextable.Open(ctx, store, indextable.Schema[pricedItem]{Name: "items", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[pricedItem]{{Name: "price", Fields: []string{"Name"}}}})
	require.NoError(t, err)
	_, err = priced.Insert(ctx, pricedItem{ID: 1, Name: "a", Price: 2})
	require.NoError(t, err)
	require.NoError(t, store.Close())
}

// pricedItem has a field with its own JSON encoding, which no record type can
// stand for.
type pricedItem struct {
	ID    int
	Name  string
	Price price
}

type price float64

func (p price) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%.2f", float64(p))), nil }

// TestVerifyAndRepair damages a store's index tables behind its
// program's back; verify finds it (exit status 3), repair fixes it, and
// verify then finds nothing.
func TestVerifyAndRepair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)

	out, errs, code := runCLI(t, "verify", dir)
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, "table accounts: 200 records, 600 entries; no drift\ntable logs: 1 records, 0 entries; no drift\n", out)
	assert.Empty(t, errs)

	damage(t, dir)
	out, errs, code = runCLI(t, "verify", dir)
	require.Equal(t, exitDrift, code, errs)
	assert.Empty(t, errs)
	assert.Contains(t, out, "drift: 1 missing, 1 dangling\n")
	assert.Contains(t, out, `missing entry in index "town": key ("T3"), record (3)`)

	out, errs, code = runCLI(t, "verify", "-json", dir)
	require.Equal(t, exitDrift, code, errs)
	var got struct {
		Tables []struct {
			Name    string         `json:"name"`
			Drift   map[string]int `json:"drift"`
			Samples []struct {
				Kind       string `json:"kind"`
				Index      string `json:"index"`
				Key        []any  `json:"key"`
				PrimaryKey []any  `json:"primaryKey"`
			} `json:"samples"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, map[string]int{"missing": 1, "dangling": 1}, got.Tables[0].Drift)
	require.Len(t, got.Tables[0].Samples, 2)
	for _, s := range got.Tables[0].Samples {
		assert.Contains(t, got.Tables[0].Drift, s.Kind, "a sample's kind is a key of drift")
	}

	out, errs, code = runCLI(t, "repair", dir)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "drift: 1 missing, 1 dangling; repaired 2\n")
	out, errs, code = runCLI(t, "verify", "-table", "accounts", dir)
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, "table accounts: 200 records, 600 entries; no drift\n", out)

	// A table whose records the tool cannot decode is reported, and does
	// not stop the others; its error names the table, and the tool once.
	addUndecodable(t, dir)
	out, errs, code = runCLI(t, "verify", dir)
	require.Equal(t, exitError, code, out)
	assert.Contains(t, out, "table accounts: 200 records, 600 entries; no drift")
	assert.Contains(t, out, "table items: not checked: ")
	assert.NotContains(t, out, "not checked: indextable:")
	assert.True(t, strings.HasPrefix(errs, "indextable: table items: "), errs)
	assert.Contains(t, errs, "keeps no record type")
	assert.Equal(t, 1, strings.Count(errs, "indextable:"), errs)
}

// TestPrintChecks: every kind of drift is printed in words, in order,
// and what repair fixed.
func TestPrintChecks(t *testing.T) {
	r := &indextable.VerifyReport{Records: 3, Entries: 4, Pending: 1, Repaired: 3, Skipped: []string{"computed"},
		Drift:   map[indextable.DriftKind]int{indextable.DriftUniqueViolation: 1, indextable.DriftStale: 2, indextable.DriftMissing: 1},
		Samples: []indextable.Drift{{Kind: indextable.DriftUniqueViolation, Index: "email", Key: indextable.Tuple{"a"}, PrimaryKey: indextable.Tuple{int64(2)}}}}
	var b bytes.Buffer
	printChecks([]checkReport{checkOf("t", r)}, true, &b)
	assert.Equal(t, "table t: 3 records, 4 entries, 1 records with queued changes (not checked); skipped computed (a Key func: check it in the program)"+
		"; drift: 1 missing, 2 stale, 1 unique violation; repaired 3\n"+
		"  unique violation entry in index \"email\": key (\"a\"), record (2)\n", b.String())
}
