// Package examplestore opens the store the examples run on: the in-memory
// default, or a Pebble store in a directory, where the data outlives the
// run.
package examplestore

import (
	"flag"
	"fmt"
	"os"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
)

// EnvDir names the environment variable that, like the -pebble flag, puts an
// example's data in a Pebble store in that directory.
const EnvDir = "INDEXTABLE_PEBBLE_DIR"

// Flag defines the -pebble flag on the command line's flag set, defaulting
// to $INDEXTABLE_PEBBLE_DIR; call flag.Parse before reading it.
func Flag() *string {
	return flag.String("pebble", os.Getenv(EnvDir),
		"keep the data in a Pebble store in this directory (default $"+EnvDir+"; empty: in memory)")
}

// Open returns a new in-memory store when dir is empty, and otherwise the
// Pebble store in dir, saying which on standard output.
func Open(dir string) (indextable.Store, error) {
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
