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

type account struct {
	ID     int
	Email  string
	Active bool
	Town   string
}

// writeStore writes, as a program would, 200 accounts whose Active index
// has two keys, whose Town index no query reads, and whose Email index is
// read by email; it saves the usage and closes the store.
func writeStore(t *testing.T, dir string) {
	ctx := context.Background()
	store, err := pebblestore.Open(dir, pebblestore.Options{NoSync: true})
	require.NoError(t, err)
	tbl, err := indextable.Open(ctx, store, indextable.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[account]{
			{Name: "email", Fields: []string{"Email"}, Unique: true},
			{Name: "active", Fields: []string{"Active"}, Strategy: indextable.FullCopy},
			{Name: "town", Fields: []string{"Town"}, Strategy: indextable.Partial, Projection: []string{"Email"}},
		}})
	require.NoError(t, err)
	for i := range 200 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Active: i%2 == 0, Town: fmt.Sprint("T", i%50)})
		require.NoError(t, err)
	}
	for i := range 100 {
		for _, err := range tbl.Find(ctx, indextable.Query{Index: "email", Eq: indextable.Tuple{fmt.Sprint(i, "@x")}}) {
			require.NoError(t, err)
		}
		for _, err := range tbl.Find(ctx, indextable.Query{Index: "active", Eq: indextable.Tuple{true}, Limit: 1}) {
			require.NoError(t, err)
		}
	}
	require.NoError(t, tbl.SaveUsage(ctx))
	// A second table with no index.
	logs, err := indextable.Open(ctx, store, indextable.Schema[account]{Name: "logs", PrimaryKey: []string{"ID"}})
	require.NoError(t, err)
	_, err = logs.Insert(ctx, account{ID: 1})
	require.NoError(t, err)
	require.NoError(t, store.Close())
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)

	out, errs, code := runCLI(t, "catalog", dir)
	require.Equal(t, 0, code, errs)
	t.Log("\n" + out)
	for _, want := range []string{"table accounts", "table logs: no index tables", "email", "readable", "keys-only", "unique", "full-copy", "partial", "Email", "inter-partition"} {
		assert.Contains(t, out, want)
	}

	out, errs, code = runCLI(t, "stats", dir)
	require.Equal(t, 0, code, errs)
	t.Log("\n" + out)
	assert.Contains(t, out, "table accounts: 200 records")
	assert.Regexp(t, `active\s+200\s+2\s+\[false\]\s+50%`, out)
	assert.Regexp(t, `email\s+200\s+200\s+.*\s+100\s+100\s+200\s+1\.00`, out)

	out, errs, code = runCLI(t, "-min-writes", "100", "advise", dir)
	require.Equal(t, 0, code, errs)
	t.Log("\n" + out)
	assert.Regexp(t, `active\s+low-cardinality\s+2 distinct keys over 200 entries`, out)
	assert.Regexp(t, `town\s+unused\s+no query read it in 200 record writes`, out)
	assert.NotRegexp(t, `email\s+(unused|low-cardinality|skewed|volatile)`, out, "the healthy index has no finding")
	assert.Contains(t, out, "table logs: no findings")

	out, errs, code = runCLI(t, "-json", "-table", "accounts", "-min-writes", "100", "advise", dir)
	require.Equal(t, 0, code, errs)
	var got struct {
		Tables []struct {
			Name     string
			Records  int64
			Findings []struct{ Index, Kind, Reason string }
			Indexes  []struct {
				Name  string
				Stats struct{ Entries, DistinctKeys int64 }
				Usage struct {
					Reads              int64
					WriteAmplification float64
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Tables, 1)
	acc := got.Tables[0]
	assert.Equal(t, int64(200), acc.Records)
	var kinds []string
	for _, f := range acc.Findings {
		kinds = append(kinds, f.Index+" "+f.Kind)
	}
	assert.Equal(t, []string{"active low-cardinality", "town unused"}, kinds)
	for _, ix := range acc.Indexes {
		if ix.Name == "email" {
			assert.Equal(t, int64(200), ix.Stats.DistinctKeys)
			assert.Equal(t, int64(100), ix.Usage.Reads)
			assert.InDelta(t, 1.0, ix.Usage.WriteAmplification, 1e-9)
		}
	}
}

func TestCLIErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "usage"},
		{[]string{"stats"}, 2, "usage"},
		{[]string{"drop", dir}, 2, `unknown command "drop"`},
		{[]string{"-bogus", "stats", dir}, 2, "bogus"},
		{[]string{"stats", filepath.Join(dir, "missing")}, 1, "no such file"},
		{[]string{"-table", "nope", "stats", dir}, 1, `no table "nope"`},
	} {
		_, errs, code := runCLI(t, tc.args...)
		assert.Equal(t, tc.code, code, "%q", tc.args)
		assert.Contains(t, errs, tc.says, "%q", tc.args)
	}

	// While a program has the store open, the tool is kept out.
	store, err := pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	defer store.Close()
	_, errs, code := runCLI(t, "catalog", dir)
	assert.Equal(t, 1, code)
	assert.True(t, strings.Contains(errs, "in use"), errs)
}

// TestCLIVerifyAndRepair damages a store's index tables behind its
// program's back; verify finds it (exit status 3) with a progress bar,
// repair fixes it, and verify then finds nothing.
func TestCLIVerifyAndRepair(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)

	out, errs, code := runCLI(t, "verify", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "table accounts: 200 records, 600 entries; no drift")
	assert.Contains(t, errs, "accounts records")
	assert.Contains(t, errs, "] 100% 200/200")

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
	require.NoError(t, store.Apply(ctx, &b))
	require.NoError(t, store.Close())

	out, errs, code = runCLI(t, "-quiet", "verify", dir)
	require.Equal(t, 3, code, errs)
	assert.Empty(t, errs, "quiet")
	assert.Contains(t, out, "drift: 1 missing, 1 dangling")
	assert.Contains(t, out, `missing entry in index "town": key [T3], record [3]`)

	out, errs, code = runCLI(t, "-json", "-quiet", "verify", dir)
	require.Equal(t, 3, code, errs)
	var got struct {
		Tables []struct {
			Name  string
			Drift map[string]int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, map[string]int{"missing": 1, "dangling": 1}, got.Tables[0].Drift)

	out, errs, code = runCLI(t, "-quiet", "repair", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "repaired 2")
	out, errs, code = runCLI(t, "-quiet", "verify", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "table accounts: 200 records, 600 entries; no drift")

	// A table whose records the tool cannot decode is reported, and does
	// not stop the others.
	store, err = pebblestore.Open(dir, pebblestore.Options{})
	require.NoError(t, err)
	priced, err := indextable.Open(ctx, store, indextable.Schema[pricedItem]{Name: "items", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[pricedItem]{{Name: "price", Fields: []string{"Name"}}}})
	require.NoError(t, err)
	_, err = priced.Insert(ctx, pricedItem{ID: 1, Name: "a", Price: 2})
	require.NoError(t, err)
	require.NoError(t, store.Close())
	out, errs, code = runCLI(t, "-quiet", "verify", dir)
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, "table accounts: 200 records, 600 entries; no drift")
	assert.Contains(t, out, "table items: not checked:")
	assert.Contains(t, errs, "keeps no record type")
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

// writeShardedStore writes, as examples/sharded does, the accounts of
// writeStore over n Pebble stores in dir's subdirectories shard-0 to
// shard-(n-1), applies the queued changes and closes it; it returns the
// shard directories.
func writeShardedStore(t *testing.T, dir string, n int) []string {
	ctx := context.Background()
	dirs := make([]string, n)
	shards := make([]kv.Store, n)
	for i := range shards {
		dirs[i] = filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		s, err := pebblestore.Open(dirs[i], pebblestore.Options{NoSync: true})
		require.NoError(t, err)
		shards[i] = s
	}
	store, err := indextable.OpenShardedStore(ctx, shards, indextable.WithShardedIndex("accounts", "town", indextable.ShardByHash))
	require.NoError(t, err)
	defer func() { require.NoError(t, store.Close()) }()
	tbl, err := indextable.Open(ctx, store, indextable.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[account]{
			{Name: "email", Fields: []string{"Email"}},
			{Name: "town", Fields: []string{"Town"}, Strategy: indextable.Partial, Projection: []string{"Email"}},
		}})
	require.NoError(t, err)
	for i := range 50 {
		_, err := tbl.Insert(ctx, account{ID: i, Email: fmt.Sprint(i, "@x"), Active: i%2 == 0, Town: fmt.Sprint("T", i%7)})
		require.NoError(t, err)
	}
	for {
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	return dirs
}

// TestCLIRefusesOneShard: every command, given one shard of a sharded
// store, refuses it, naming the shard, and writes nothing.
func TestCLIRefusesOneShard(t *testing.T) {
	dirs := writeShardedStore(t, t.TempDir(), 3)
	for _, command := range []string{"catalog", "stats", "advise", "verify", "repair"} {
		for i, dir := range dirs {
			out, errs, code := runCLI(t, "-quiet", command, dir)
			assert.Equal(t, 1, code, "%s %s: %s", command, dir, out)
			assert.Contains(t, errs, fmt.Sprintf("%s is shard %d of 3 of a sharded store", dir, i), command)
			assert.Empty(t, out, command)
		}
	}
	_, err := open(context.Background(), dirs[1:2], false)
	require.ErrorIs(t, err, errShard)
}

// TestCLIShardedStore: given all its shard directories in order, the tool
// reads a sharded store as one; repair fixes drift injected into single
// shards, and the program then finds none. Shards out of order, too few,
// or a plain store among them are refused.
func TestCLIShardedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dirs := writeShardedStore(t, dir, 3)

	out, errs, code := runCLI(t, append([]string{"catalog"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `town\s+readable\s+partial\s+Town\s+Email`, out)
	out, errs, code = runCLI(t, append([]string{"stats"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "table accounts: 50 records")
	out, errs, code = runCLI(t, append([]string{"-quiet", "verify"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "table accounts: 50 records, 100 entries; no drift")

	plain := filepath.Join(dir, "plain")
	writeStore(t, plain)
	for _, c := range []struct {
		dirs []string
		says string
	}{
		{[]string{dirs[1], dirs[0], dirs[2]}, dirs[1] + " is shard 1 of 3 of a sharded store (not the whole sharded store), given as 0 of 3"},
		{dirs[:2], dirs[0] + " is shard 0 of 3 of a sharded store (not the whole sharded store), given as 0 of 2"},
		{[]string{dirs[0], dirs[1], plain}, plain + " is no shard of a sharded store"},
	} {
		_, err := open(ctx, c.dirs, true)
		require.ErrorIs(t, err, errShard, c.says)
		out, errs, code := runCLI(t, append([]string{"-quiet", "repair"}, c.dirs...)...)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, errs, c.says)
	}

	// A missing entry and a dangling one, each on the shard it lies on.
	key := func(elems ...any) []byte {
		k, err := kv.EncodeTuple(elems...)
		require.NoError(t, err)
		return k
	}
	inject := func(email string, b func(*kv.Batch)) {
		i, err := indextable.ShardFor(3, email)
		require.NoError(t, err)
		s, err := pebblestore.Open(dirs[i], pebblestore.Options{})
		require.NoError(t, err)
		var batch kv.Batch
		b(&batch)
		require.NoError(t, s.Apply(ctx, &batch))
		require.NoError(t, s.Close())
	}
	inject("3@x", func(b *kv.Batch) { b.Delete(key("accounts", int64(1), "email", int64(1), "3@x", int64(3))) })
	inject("zz@x", func(b *kv.Batch) {
		b.Put(key("accounts", int64(1), "email", int64(1), "zz@x", int64(999)), nil)
	})

	out, errs, code = runCLI(t, append([]string{"-quiet", "verify"}, dirs...)...)
	require.Equal(t, 3, code, errs)
	assert.Contains(t, out, "drift: 1 missing, 1 dangling")
	out, errs, code = runCLI(t, append([]string{"-quiet", "repair"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "repaired 2")
	out, errs, code = runCLI(t, append([]string{"-quiet", "verify"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "table accounts: 50 records, 100 entries; no drift")

	// The program agrees.
	store, err := open(ctx, dirs, true)
	require.NoError(t, err)
	defer store.Close()
	tbl, err := indextable.Open(ctx, store, indextable.Schema[account]{Name: "accounts", PrimaryKey: []string{"ID"},
		Indexes: []indextable.Index[account]{
			{Name: "email", Fields: []string{"Email"}},
			{Name: "town", Fields: []string{"Town"}, Strategy: indextable.Partial, Projection: []string{"Email"}},
		}})
	require.NoError(t, err)
	r, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	assert.Zero(t, r.Total(), "%v", r.Samples)
}
