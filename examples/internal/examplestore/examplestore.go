// Package examplestore opens the store the examples run on: the in-memory
// default, a Pebble store in a directory, or, for the examples that run
// there, an Azure table (Azurite's, for instance). The data in Pebble or
// Azure outlives the run.
package examplestore

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
)

const (
	// EnvDir names the environment variable that, like the -pebble flag,
	// puts an example's data in a Pebble store in that directory.
	EnvDir = "INDEXTABLE_PEBBLE_DIR"
	// EnvAzure names the environment variable that, like the -azure flag,
	// puts an example's data in Azure Table storage, on the account of the
	// connection string it holds.
	EnvAzure = "INDEXTABLE_AZURE_CONNECTION"
	// EnvAzureTable names the environment variable that, like the
	// -azure-table flag, names the Azure table in place of the example.
	EnvAzureTable = "INDEXTABLE_AZURE_TABLE"
)

// Run is an example's body, run on the store it is given.
type Run func(context.Context, kv.Store) error

// Main is an example's main: it parses the -pebble flag (default
// $INDEXTABLE_PEBBLE_DIR), opens the store, runs the example on it and
// closes it, and exits with the error if any.
func Main(run Run) { start("", run) }

// MainAzure is Main for an example that also runs on Azure Table storage:
// its flag -azure (default $INDEXTABLE_AZURE_CONNECTION) takes a connection
// string, and the example then keeps its data in the table named table, or
// by -azure-table (default $INDEXTABLE_AZURE_TABLE).
func MainAzure(table string, run Run) { start(table, run) }

// MainShards is Main for an example over n shards: n in-memory stores, or,
// with -pebble, n Pebble stores in the directory's subdirectories shard-0,
// shard-1, and so on. The example closes the shards (a ShardedStore's Close
// does).
func MainShards(n int, run func(context.Context, []kv.Store) error) {
	dir := flag.String("pebble", os.Getenv(EnvDir),
		"keep the data in Pebble stores in this directory's shard-N subdirectories (default $"+EnvDir+"; empty: in memory)")
	flag.Parse()
	shards := make([]kv.Store, n)
	for i := range shards {
		if *dir == "" {
			shards[i] = indextable.NewMemoryStore()
			continue
		}
		s, err := pebblestore.Open(filepath.Join(*dir, fmt.Sprintf("shard-%d", i)), pebblestore.Options{})
		if err != nil {
			for _, s := range shards[:i] {
				s.Close()
			}
			log.Fatal(err)
		}
		shards[i] = s
	}
	if *dir != "" {
		fmt.Printf("Store: Pebble in %s, %d stores: shard-0 to shard-%d\n\n", *dir, n, n-1)
	}
	if err := run(context.Background(), shards); err != nil {
		log.Fatal(err)
	}
}

// start is Main, with the Azure flags when table is set.
func start(table string, run Run) {
	dir := flag.String("pebble", os.Getenv(EnvDir),
		"keep the data in a Pebble store in this directory (default $"+EnvDir+"; empty: in memory)")
	// The Azure defaults are applied after parsing, so that the usage
	// message does not show an account key.
	var conn, azTable string
	if table != "" {
		flag.StringVar(&conn, "azure", "",
			"keep the data in Azure Table storage, on the account of this connection string (default $"+EnvAzure+")")
		flag.StringVar(&azTable, "azure-table", "",
			"the Azure table of -azure (default $"+EnvAzureTable+", else "+table+")")
	}
	flag.Parse()
	if table != "" {
		conn = cmp.Or(conn, os.Getenv(EnvAzure))
		table = cmp.Or(azTable, os.Getenv(EnvAzureTable), table)
	}
	ctx := context.Background()
	s, err := open(ctx, *dir, conn, table)
	if err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(run(ctx, s), s.Close()); err != nil {
		log.Fatal(err)
	}
}

// open returns the Pebble store in dir, or the store in the Azure table of
// the account of conn, saying which on standard output, and a new
// in-memory store when both are empty.
func open(ctx context.Context, dir, conn, table string) (kv.Store, error) {
	switch {
	case dir != "" && conn != "":
		return nil, errors.New("examplestore: -pebble and -azure exclude each other (mind $" + EnvDir + " and $" + EnvAzure + ")")
	case dir != "":
		s, err := pebblestore.Open(dir, pebblestore.Options{})
		if err != nil {
			return nil, err
		}
		fmt.Printf("Store: Pebble in %s\n\n", dir)
		return s, nil
	case conn != "":
		s, err := azstore.Open(ctx, conn, azstore.Options{Table: table})
		if err != nil {
			return nil, err
		}
		fmt.Printf("Store: Azure Table storage, table %s\n\n", table)
		return s, nil
	}
	return indextable.NewMemoryStore(), nil
}
