// Command schemaproc is the rolling deploy test's child process: one run
// of one revision of a program that uses the deployschema table. It opens
// the Pebble store in DIR and the table with revision REV's schema, does
// one thing, prints the catalog's status of the indexes it knows, closes
// the store and exits.
//
//	schemaproc -dir DIR -rev 1|2 -do ACTION [-from A -to B] [-round R]
//
// The actions:
//
//	write    upsert deployschema.Record(id, R) for every id in [A, B)
//	delete   delete the records with ids in [A, B)
//	build    Build the table's write-only indexes
//	verify   Verify the table, and print "verify TOTAL RECORDS ENTRIES"
//	         and one "drift ..." line per sample finding
//	status   nothing
//	hold     print "holding", then hold the store until stdin closes
//
// Then it prints one "index NAME STATE GENERATION" line per index the
// table knows (learnt ones included), as IndexStatus reports them. Any
// error ends the process with a message on stderr and status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/pebblestore/internal/deployschema"
)

func main() {
	dir := flag.String("dir", "", "the store's directory")
	rev := flag.Int("rev", 1, "the program revision whose schema to open the table with: 1 or 2")
	do := flag.String("do", "", "the action: write, delete, build, verify, status or hold")
	from := flag.Int("from", 0, "the first record id of write and delete")
	to := flag.Int("to", 0, "the record id after the last of write and delete")
	round := flag.Int("round", 1, "the round whose records write writes")
	flag.Parse()
	if err := run(context.Background(), *dir, *rev, *do, *from, *to, *round); err != nil {
		fmt.Fprintln(os.Stderr, "schemaproc:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string, rev int, do string, from, to, round int) (err error) {
	schema, err := deployschema.Schema(rev)
	if err != nil {
		return err
	}
	// NoSync: the process closes the store before it exits, and the test
	// does not outlive the machine.
	s, err := pebblestore.Open(dir, pebblestore.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	t, err := indextable.Open(ctx, s, schema)
	if err != nil {
		return err
	}
	if err := act(ctx, t, do, from, to, round); err != nil {
		return fmt.Errorf("%s: %w", do, err)
	}
	status, err := t.IndexStatus(ctx)
	if err != nil {
		return err
	}
	for _, st := range status {
		fmt.Printf("index %s %s %d\n", st.Name, st.State, st.Generation)
	}
	return nil
}

func act(ctx context.Context, t *indextable.Table[deployschema.Person], do string, from, to, round int) error {
	switch do {
	case "write":
		for id := from; id < to; id++ {
			if _, err := t.Upsert(ctx, deployschema.Record(id, round)); err != nil {
				return fmt.Errorf("record %d: %w", id, err)
			}
		}
	case "delete":
		for id := from; id < to; id++ {
			if err := t.Delete(ctx, indextable.Tuple{id}); err != nil {
				return fmt.Errorf("record %d: %w", id, err)
			}
		}
	case "build":
		return t.Build(ctx, indextable.BuildOptions{})
	case "verify":
		rep, err := t.Verify(ctx, indextable.VerifyOptions{})
		if err != nil {
			return err
		}
		fmt.Printf("verify %d %d %d\n", rep.Total(), rep.Records, rep.Entries)
		for _, d := range rep.Samples {
			fmt.Printf("drift %+v\n", d)
		}
	case "status":
	case "hold":
		fmt.Println("holding")
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	default:
		return fmt.Errorf("unknown action: want write, delete, build, verify, status or hold")
	}
	return nil
}
