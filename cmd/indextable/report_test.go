package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
)

// readFields reads, as a program would, writeStore's accounts by town
// naming the fields it uses, and saves the usage.
func readFields(t *testing.T, dir string) {
	ctx := context.Background()
	store, err := pebblestore.Open(dir, pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	tbl, err := indextable.Open(ctx, store, accounts)
	require.NoError(t, err)
	for _, err := range tbl.Find(ctx, indextable.Query{Index: "town", Eq: indextable.Tuple{"T3"}, Fields: []string{"Email", "Town"}}) {
		require.NoError(t, err)
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	require.NoError(t, store.Close())
}

// lowerCamelKey is the JSON object key style of the tool.
var lowerCamelKey = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// keysOf walks v, decoded JSON, and calls key with each object key and
// where it is.
func keysOf(v any, at string, key func(k, at string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			key(k, at)
			keysOf(e, at+"."+k, key)
		}
	case []any:
		for _, e := range v {
			keysOf(e, at+"[]", key)
		}
	}
}

// TestJSONKeys runs every command with -json on a store that has every
// part of their output (definitions, stats by key prefix, usage with the
// fields and keys read, findings, drift and its samples, repairs, a table
// that cannot be checked) and checks that every object key is lowerCamel.
func TestJSONKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)
	readFields(t, dir)
	damage(t, dir)
	addUndecodable(t, dir)
	seen := map[string]bool{}
	for _, args := range [][]string{
		{"catalog"}, {"stats"}, {"advise", "-min-writes", "100"}, {"verify"}, {"repair"},
	} {
		out, errs, code := runCLI(t, append(append(args, "-json"), dir)...)
		require.NotEqual(t, exitUsage, code, errs)
		var v any
		require.NoError(t, json.Unmarshal([]byte(out), &v), "%s: %s", args[0], out)
		keysOf(v, args[0], func(k, at string) {
			seen[k] = true
			assert.Regexp(t, lowerCamelKey, k, "at %s", at)
		})
	}
	for _, k := range []string{"tables", "indexes", "primaryKey", "distinctKeys", "prefixes", "commonEntries", "fieldsRead",
		"field", "readKeys", "writeAmplification", "findings", "kind", "drift", "missing", "dangling", "samples", "repaired", "error"} {
		assert.True(t, seen[k], "the output has %s", k)
	}
}

// TestLowerCamel: the names of drift kinds become lowerCamel keys.
func TestLowerCamel(t *testing.T) {
	for in, want := range map[string]string{
		"missing": "missing", "unique violation": "uniqueViolation", "low-cardinality": "lowCardinality",
		"DriftKind(9)": "driftKind9", "Écart  sûr": "écartSûr", "": "",
	} {
		assert.Equal(t, want, lowerCamel(in), in)
	}
	for _, k := range []indextable.DriftKind{indextable.DriftMissing, indextable.DriftStale, indextable.DriftDangling, indextable.DriftUniqueViolation} {
		assert.Regexp(t, lowerCamelKey, kindName(k), k.String())
	}
}

// TestCheckOf: drift is counted by lowerCamel kind, which the samples
// name too.
func TestCheckOf(t *testing.T) {
	r := &indextable.VerifyReport{Records: 2, Entries: 3, Repaired: 1,
		Drift:   map[indextable.DriftKind]int{indextable.DriftUniqueViolation: 1, indextable.DriftMissing: 2},
		Samples: []indextable.Drift{{Kind: indextable.DriftUniqueViolation, Index: "email", Key: indextable.Tuple{"a"}, PrimaryKey: indextable.Tuple{int64(2)}}}}
	c := checkOf("t", r)
	assert.Equal(t, map[string]int{"uniqueViolation": 1, "missing": 2}, c.Drift)
	assert.Equal(t, []driftReport{{Kind: "uniqueViolation", Index: "email", Key: keyJSON{"a"}, PrimaryKey: keyJSON{int64(2)}}}, c.Samples)
	assert.Equal(t, 3, c.total)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"t","records":2,"entries":3,"drift":{"uniqueViolation":1,"missing":2},"pending":0,"repaired":1,
		"samples":[{"kind":"uniqueViolation","index":"email","key":["a"],"primaryKey":[2],"repaired":false}]}`, string(b))
}

// TestUsageOf: the fields reads named are a list, the most read first,
// and the write amplification is the entry writes per record write.
func TestUsageOf(t *testing.T) {
	u := usageOf(indextable.IndexUsage{Reads: 5, Mutations: 30, FieldsRead: map[string]int64{"Town": 2, "Email": 5, "ID": 2},
		ReadKeys: []indextable.KeyReads{{Key: indextable.Tuple{"T3"}, Reads: 4}}}, 10)
	assert.Equal(t, []fieldReads{{"Email", 5}, {"ID", 2}, {"Town", 2}}, u.FieldsRead)
	assert.Equal(t, []keyReads{{keyJSON{"T3"}, 4}}, u.ReadKeys)
	assert.InDelta(t, 3.0, u.WriteAmplification, 1e-9)
	assert.Zero(t, usageOf(indextable.IndexUsage{Mutations: 3}, 0).WriteAmplification)
}

// TestJSONOfInfiniteKeys: -json prints a report for a store whose keys
// hold infinities or NaN (a float index, the most common key +Inf), which
// JSON has no numbers for: they are written as strings, where
// encoding/json refused them and the whole report was lost.
func TestJSONOfInfiniteKeys(t *testing.T) {
	type reading struct {
		ID    int
		Value float64
	}
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	store, err := pebblestore.Open(dir, pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	tbl, err := indextable.Open(ctx, store, indextable.Schema[reading]{Name: "readings", PrimaryKey: []string{"ID"},
		Codec: &indextable.BinaryCodec{}, Indexes: []indextable.Index[reading]{{Name: "value", Fields: []string{"Value"}}}})
	require.NoError(t, err)
	for i, v := range []float64{math.Inf(1), math.Inf(1), math.NaN(), 1} {
		_, err := tbl.Insert(ctx, reading{ID: i, Value: v})
		require.NoError(t, err)
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	require.NoError(t, store.Close())
	for _, cmd := range []string{"stats", "advise"} {
		out, errs, code := runCLI(t, cmd, "-json", dir)
		require.Equal(t, exitOK, code, "%s: %s", cmd, errs)
		var v any
		require.NoError(t, json.Unmarshal([]byte(out), &v), "%s: %s", cmd, out)
	}
}
