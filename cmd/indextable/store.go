package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

// errShard reports directories that are not one whole store: one shard,
// or some, of a ShardedStore, or shards out of order. Read alone, a
// shard's index tables seem to drift, and a repair of it would corrupt the
// store.
var errShard = errors.New("not the whole sharded store")

// openTables opens the store in dirs (see open) and reads its catalog: the
// table named only, when only is not empty, else every table.
func openTables(ctx context.Context, dirs []string, readOnly bool, only string) (kv.Store, []indextable.TableInfo, error) {
	store, err := open(ctx, dirs, readOnly)
	if err != nil {
		return nil, nil, err
	}
	tables, err := indextable.ReadCatalog(ctx, store)
	if err == nil && only != "" {
		tables = slices.DeleteFunc(tables, func(t indextable.TableInfo) bool { return t.Name != only })
		if len(tables) == 0 {
			err = fmt.Errorf("%s has no table %q", strings.Join(dirs, " "), only)
		}
	}
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, tables, nil
}

// open opens the Pebble store in dirs, read-only if readOnly: one
// directory of a store, or the directories of every shard of a
// ShardedStore, in order, which it opens as one with the rules their
// layout records keep.
func open(ctx context.Context, dirs []string, readOnly bool) (store kv.Store, err error) {
	shards := make([]kv.Store, 0, len(dirs))
	defer func() {
		if err != nil {
			for _, s := range shards {
				s.Close()
			}
		}
	}()
	for at, dir := range dirs {
		s, err := pebblestore.Open(dir, pebblestore.Options{ReadOnly: readOnly})
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
		i, n, ok, err := indextable.IsShard(ctx, s)
		switch {
		case err != nil:
			return nil, wrapf(err, "%s", dir)
		case !ok && len(dirs) == 1:
			return s, nil
		case !ok:
			return nil, fmt.Errorf("%s is no shard of a sharded store (%w)", dir, errShard)
		case n != len(dirs) || i != at:
			return nil, fmt.Errorf("%s is shard %d of %d of a sharded store (%w), given as %d of %d: "+
				"give the directories of all %d shards, in order", dir, i, n, errShard, at, len(dirs), n)
		}
	}
	sharded, err := indextable.OpenShardedStore(ctx, shards, indextable.WithStoredLayout())
	if err != nil {
		return nil, err
	}
	return sharded, nil
}
