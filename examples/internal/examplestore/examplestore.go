// Package examplestore opens the store the examples run on: the in-memory
// default, a Pebble store in a directory, an etcd cluster, or, for the
// examples that run there, an Azure table (Azurite's, for instance). The
// data in Pebble, etcd or Azure outlives the run.
package examplestore

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore"
	"github.com/indextable/indextable/etcdstore"
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
	// EnvEtcd names the environment variable that, like the -etcd flag,
	// puts an example's data in etcd, on the cluster of the comma-separated
	// client URLs it holds.
	EnvEtcd = "INDEXTABLE_ETCD_ENDPOINTS"
)

// ErrExclusive reports that more than one store was chosen: -pebble, -etcd
// and -azure (or their environment variables) exclude each other.
var ErrExclusive = errors.New("examplestore: more than one store chosen")

// Run is an example's body, run on the store it is given.
type Run func(context.Context, kv.Store) error

// Main is an example's main: it parses the -pebble flag (default
// $INDEXTABLE_PEBBLE_DIR) and the -etcd and -etcd-prefix flags (see
// Choice), opens the store, runs the example on it and closes it, and
// exits with the error if any.
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
	var c Choice
	flag.StringVar(&c.Dir, "pebble", os.Getenv(EnvDir),
		"keep the data in a Pebble store in this directory (default $"+EnvDir+"; empty: in memory)")
	etcd := flag.String("etcd", os.Getenv(EnvEtcd),
		"keep the data in etcd, on the cluster of these comma-separated client URLs (default $"+EnvEtcd+")")
	flag.StringVar(&c.EtcdPrefix, "etcd-prefix", DefaultEtcdPrefix(),
		"the part of the etcd cluster's key space that -etcd keeps the data under")
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
		c.Azure = cmp.Or(conn, os.Getenv(EnvAzure))
		c.AzureTable = cmp.Or(azTable, os.Getenv(EnvAzureTable), table)
	}
	c.Etcd = Endpoints(*etcd)
	ctx := context.Background()
	s, err := c.Open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(run(ctx, s), s.Close()); err != nil {
		log.Fatal(err)
	}
}

// Choice is the store an example runs on, as its flags chose it: at most
// one of Dir, Etcd and Azure is set, and none for the in-memory store.
type Choice struct {
	Dir        string   // -pebble: the Pebble store in this directory
	Etcd       []string // -etcd: the etcd cluster of these client URLs
	EtcdPrefix string   // -etcd-prefix: the key space of Etcd's store
	Azure      string   // -azure: the connection string of the account
	AzureTable string   // -azure-table: the table on Azure's account
}

// Open returns the store of c, saying which on standard output, and a new
// in-memory store when c chooses none. More than one store is an error
// wrapping ErrExclusive.
func (c Choice) Open(ctx context.Context) (kv.Store, error) {
	var chosen, vars []string
	for _, o := range []struct {
		set       bool
		flag, env string
	}{{c.Dir != "", "-pebble", EnvDir}, {len(c.Etcd) > 0, "-etcd", EnvEtcd}, {c.Azure != "", "-azure", EnvAzure}} {
		if o.set {
			chosen, vars = append(chosen, o.flag), append(vars, "$"+o.env)
		}
	}
	if len(chosen) > 1 {
		return nil, fmt.Errorf("%w: %s exclude each other (mind %s)", ErrExclusive, and(chosen), and(vars))
	}
	switch {
	case c.Dir != "":
		s, err := pebblestore.Open(c.Dir, pebblestore.Options{})
		if err != nil {
			return nil, err
		}
		fmt.Printf("Store: Pebble in %s\n\n", c.Dir)
		return s, nil
	case len(c.Etcd) > 0:
		s, err := etcdstore.Open(ctx, c.Etcd, etcdstore.Options{Prefix: c.EtcdPrefix})
		if err != nil {
			return nil, err
		}
		fmt.Printf("Store: etcd at %s, prefix %s\n\n", strings.Join(c.Etcd, ","), cmp.Or(c.EtcdPrefix, etcdstore.DefaultPrefix))
		return s, nil
	case c.Azure != "":
		s, err := azstore.Open(ctx, c.Azure, azstore.Options{Table: c.AzureTable})
		if err != nil {
			return nil, err
		}
		fmt.Printf("Store: Azure Table storage, table %s\n\n", c.AzureTable)
		return s, nil
	}
	return indextable.NewMemoryStore(), nil
}

// and joins words as a list: "a and b", "a, b and c".
func and(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// Endpoints returns the client URLs of list, comma-separated, with spaces
// and empty items left out.
func Endpoints(list string) []string {
	var eps []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return eps
}

// DefaultEtcdPrefix returns the -etcd-prefix of the running example:
// "examples/" and the last element of its main package's path, such as
// "examples/customers/", so that examples share a cluster without sharing
// their data; "examples/" when the binary does not say.
func DefaultEtcdPrefix() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Path != "" {
		return "examples/" + path.Base(info.Path) + "/"
	}
	return "examples/"
}
