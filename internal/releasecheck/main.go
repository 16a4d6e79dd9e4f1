// Command releasecheck proves that the modules of this repository can be
// published as they stand: it reads the version being released from the
// nested go.mod files (the version every module requires its siblings at),
// builds a file-based module proxy holding the core, pebblestore, azstore
// and cmd/indextable at that version, and, in a fresh module outside the
// tree, gets the core and each store from it, builds and runs the Quick
// start, builds a program on both stores and installs the indextable tool
// with go install ...@latest.
//
// Usage (from the repository's Makefile):
//
//	releasecheck -root DIR                   the check (make release-check)
//	releasecheck -root DIR -strict           also require the tree's go.sum lines for the version
//	releasecheck -root DIR -prepare VERSION  require VERSION everywhere and write its go.sum lines
//	releasecheck -root DIR -tidy             go mod tidy every module against the tree's proxy
//
// The check runs with a temporary module cache, so the versions it makes
// up never reach the host's.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o options
	flag.StringVar(&o.Root, "root", ".", "the repository's root `dir`ectory (it holds go.work)")
	flag.StringVar(&o.Prepare, "prepare", "", "require this `version` of the tree's modules everywhere and write its go.sum lines")
	flag.BoolVar(&o.Tidy, "tidy", false, "write the go.sum lines, then go mod tidy every module of go.work against the tree's proxy")
	flag.BoolVar(&o.Strict, "strict", false, "fail when a go.sum of the tree lacks the lines for the version as built from the tree")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		fmt.Fprintf(os.Stderr, "releasecheck: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	case o.Prepare != "" && (o.Tidy || o.Strict), o.Tidy && o.Strict:
		fmt.Fprintln(os.Stderr, "releasecheck: -prepare, -tidy and -strict do not go together")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "releasecheck: FAILED: %v\n", err)
		os.Exit(1)
	}
}
