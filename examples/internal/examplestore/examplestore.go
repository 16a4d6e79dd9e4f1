// Package examplestore opens the store the examples run on: the in-memory
// default, or a Pebble store in a directory, where the data outlives the
// run.
package examplestore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
)

// EnvDir names the environment variable that, like the -pebble flag, puts an
// example's data in a Pebble store in that directory.
const EnvDir = "INDEXTABLE_PEBBLE_DIR"

// Main is an example's main: it parses the -pebble flag (default
// $INDEXTABLE_PEBBLE_DIR), opens the store, runs the example on it and
// closes it, and exits with the error if any.
func Main(run func(context.Context, indextable.Store) error) {
	dir := flag.String("pebble", os.Getenv(EnvDir),
		"keep the data in a Pebble store in this directory (default $"+EnvDir+"; empty: in memory)")
	flag.Parse()
	s, err := open(*dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := errors.Join(run(context.Background(), s), s.Close()); err != nil {
		log.Fatal(err)
	}
}

// open returns a new in-memory store when dir is empty, and otherwise the
// Pebble store in dir, saying so on standard output.
func open(dir string) (indextable.Store, error) {
	if dir == "" {
		return indextable.NewMemoryStore(), nil
	}
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		return nil, err
	}
	fmt.Printf("Store: Pebble in %s\n\n", dir)
	return s, nil
}
