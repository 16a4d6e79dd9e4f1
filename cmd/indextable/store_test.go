package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

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
			out, errs, code := runCLI(t, command, dir)
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
	out, errs, code = runCLI(t, append([]string{"verify"}, dirs...)...)
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
		out, errs, code := runCLI(t, append([]string{"repair"}, c.dirs...)...)
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

	out, errs, code = runCLI(t, append([]string{"verify"}, dirs...)...)
	require.Equal(t, 3, code, errs)
	assert.Contains(t, out, "drift: 1 missing, 1 dangling")
	out, errs, code = runCLI(t, append([]string{"repair"}, dirs...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "repaired 2")
	out, errs, code = runCLI(t, append([]string{"verify"}, dirs...)...)
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
