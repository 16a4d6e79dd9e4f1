// Command crashwriter is the crash test's child process: it writes records
// of the crashschema table to a Pebble store, forever, until it is killed.
//
//	crashwriter -dir DIR -mode sync|eventual -seed N -round N
//
// It prints one line to stdout per event, each in a single write:
//
//	ready N            the table is open and holds N records
//	try put ID REV     a write of crashschema.Record(ID, REV) begins
//	try del ID         a delete of record number ID begins
//	ack put ID REV     that write returned without error
//	ack del ID         that delete returned without error
//
// Writes are sequential, so at most one is in flight when the process is
// killed. In eventual mode a maintainer runs alongside the writes. Any
// error ends the process with a message on stderr and status 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/pebblestore/internal/crashschema"
)

func main() {
	dir := flag.String("dir", "", "the store's directory")
	mode := flag.String("mode", "sync", "the indexes' consistency: sync or eventual")
	seed := flag.Uint64("seed", 1, "seed of the writes")
	round := flag.Int64("round", 1, "the round, which makes every revision written unique")
	flag.Parse()
	if err := run(context.Background(), *dir, *mode, *seed, *round); err != nil {
		fmt.Fprintln(os.Stderr, "crashwriter:", err)
		os.Exit(1)
	}
}

// say prints one line to stdout, unbuffered, in one write.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

func run(ctx context.Context, dir, mode string, seed uint64, round int64) error {
	c, err := crashschema.Consistency(mode)
	if err != nil {
		return err
	}
	// The store is never closed: the process ends by SIGKILL.
	s, err := pebblestore.Open(dir, pebblestore.Options{})
	if err != nil {
		return err
	}
	t, err := indextable.Open(ctx, s, crashschema.Schema(c))
	if err != nil {
		return err
	}
	present := make([]bool, crashschema.IDs)
	n := 0
	for it, err := range t.Find(ctx, indextable.Query{}) {
		if err != nil {
			return err
		}
		id, err := strconv.Atoi(it.ID[1:])
		if err != nil || id >= crashschema.IDs {
			return fmt.Errorf("unexpected record %q", it.ID)
		}
		present[id] = true
		n++
	}
	say("ready %d", n)

	var maintainer chan error // nil, never ready, in sync mode
	if c == indextable.Eventual {
		maintainer = make(chan error, 1)
		go func() { maintainer <- t.RunMaintainer(ctx, indextable.MaintainerOptions{}) }()
	}
	rng := rand.New(rand.NewPCG(seed, uint64(round)))
	for seq := int64(1); ; seq++ {
		select {
		case err := <-maintainer:
			return fmt.Errorf("maintainer: %w", err)
		default:
		}
		id := rng.IntN(crashschema.IDs)
		rev := round*1_000_000 + seq
		rec := crashschema.Record(id, rev)
		p := rng.IntN(10)
		if present[id] && p < 2 {
			say("try del %d", id)
			if err := t.Delete(ctx, indextable.Tuple{rec.ID}); err != nil {
				return err
			}
			present[id] = false
			say("ack del %d", id)
			continue
		}
		say("try put %d %d", id, rev)
		switch {
		case p < 3: // either way
			_, err = t.Upsert(ctx, rec)
		case present[id]:
			_, err = t.Update(ctx, rec)
		default:
			_, err = t.Insert(ctx, rec)
		}
		if err != nil {
			return err
		}
		present[id] = true
		say("ack put %d %d", id, rev)
	}
}
