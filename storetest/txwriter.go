package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/indextable/indextable"
)

// txWriter is one writer of TestTransactions. It alone closes and opens
// the accounts whose ID it owns (ID % txWriters), so it knows which of
// them are closed, and the version their delete removed.
type txWriter struct {
	r      *txRun
	w, n   int // the writer, and its operation
	rnd    *rand.Rand
	closed map[txKey]indextable.Version
}

func newTxWriter(r *txRun, w int) *txWriter {
	return &txWriter{r: r, w: w, rnd: rand.New(rand.NewPCG(uint64(w), 7)), closed: map[txKey]indextable.Version{}}
}

func (w *txWriter) loop() {
	for n := range w.r.opts.Ops {
		w.n = n
		switch op := w.rnd.IntN(100); {
		case op < 50:
			w.transfer(false)
		case op < 56:
			w.transfer(true)
		case op < 66:
			w.swapHandles()
		case op < 74:
			w.moveOwner()
		case op < 86:
			w.touch()
		case op < 93:
			w.close()
		default:
			w.reopen()
		}
	}
}

// tag names the writer's current operation, for the Note of what it
// writes.
func (w *txWriter) tag(what string) string { return fmt.Sprintf("w%d.%d %s", w.w, w.n, what) }

// pick returns an account of bank (of any bank when ""), other than not.
func (w *txWriter) pick(bank string, not ...txKey) txKey {
	for {
		b := bank
		if b == "" {
			b = w.r.opts.Banks[w.rnd.IntN(len(w.r.opts.Banks))]
		}
		k := txKey{b, w.rnd.IntN(w.r.opts.Accounts)}
		if len(not) == 0 || k != not[0] {
			return k
		}
	}
}

// txWrites are the writes of one run of a transaction, logged once it
// committed.
type txWrites struct {
	keys   []txKey
	events []txEvent
}

func (tw *txWrites) add(k txKey, e txEvent) {
	tw.keys, tw.events = append(tw.keys, k), append(tw.events, e)
}

// txAccounts is the table in a transaction.
type txAccounts = indextable.TableTx[txAccount]

func (w *txWriter) update(in txAccounts, tw *txWrites, a txAccount, from indextable.Version) error {
	v, err := in.Update(w.r.ctx, a, indextable.IfVersion(from))
	if err == nil {
		tw.add(a.key(), txEvent{kind: "update", from: from, to: v, rec: a})
	}
	return err
}

// get reads account k in the transaction; a closed one is errClosed.
func (w *txWriter) get(in txAccounts, k txKey) (txAccount, indextable.Version, error) {
	a, v, err := in.GetVersioned(w.r.ctx, k.bank, k.id)
	if errors.Is(err, indextable.ErrNotFound) {
		return a, v, errClosed
	}
	return a, v, err
}

// errClosed ends a run of a transaction that found an account closed: it
// writes nothing.
var errClosed = errors.New("the account is closed")

// transact runs fn in Transact and logs its writes once it committed. A
// run that meets a closed account commits its reads alone.
func (w *txWriter) transact(what string, fn func(in txAccounts, tw *txWrites, run int) error) (txWrites, error) {
	var tw txWrites
	runs := 0
	err := indextable.Transact(w.r.ctx, w.r.store, func(tx *indextable.Tx) error {
		runs++
		tw = txWrites{}
		err := fn(w.r.tbl.In(tx), &tw, runs)
		if errors.Is(err, errClosed) {
			tw, err = txWrites{}, nil
		}
		return err
	})
	w.r.count("runs again", runs-1)
	switch {
	case err == nil && len(tw.events) > 0:
		w.r.log(tw.keys, tw.events)
		w.r.count(what, 1)
	case errors.Is(err, indextable.ErrConflict):
		w.r.count("gave up", 1)
		err = nil
	}
	return tw, err
}

// failed reports an unexpected error of what.
func (w *txWriter) failed(what string, err error) {
	if err != nil {
		w.r.t.Errorf("writer %d, op %d: %s: %v", w.w, w.n, what, err)
	}
}

// transfer moves money between two accounts: of one bank, or across two.
func (w *txWriter) transfer(across bool) {
	from := w.pick("")
	bank := from.bank
	if across {
		bank = w.r.opts.Banks[(slices.Index(w.r.opts.Banks, bank)+1)%len(w.r.opts.Banks)]
	}
	to, amount, overtake := w.pick(bank, from), 1+w.rnd.IntN(30), w.rnd.IntN(6) == 0
	tw, err := w.transact("transfer", func(in txAccounts, tw *txWrites, run int) error {
		a, va, err := w.get(in, from)
		if err != nil {
			return err
		}
		b, vb, err := w.get(in, to)
		if err != nil {
			return err
		}
		if overtake && run == 1 {
			w.overtake(a, va) // the commit must find it and conflict
		}
		a.Balance, a.Note = a.Balance-amount, w.tag("sent")
		b.Balance, b.Note = b.Balance+amount, w.tag("received")
		if err := w.update(in, tw, a, va); err != nil {
			return err
		}
		return w.update(in, tw, b, vb)
	})
	if across && from.bank != to.bank && w.r.opts.Partitioned {
		if errors.Is(err, indextable.ErrInvalidBatch) || err == nil && len(tw.events) == 0 {
			w.r.count("refused across partitions", 1)
			return
		}
		w.failed("a transfer across partitions", fmt.Errorf("want ErrInvalidBatch, got %v with %d writes", err, len(tw.events)))
		return
	}
	w.failed("transfer", err)
}

// overtake writes account a, read at version v, by a single write.
func (w *txWriter) overtake(a txAccount, v indextable.Version) {
	a.Note = w.tag("overtook")
	v2, err := w.r.tbl.Update(w.r.ctx, a, indextable.IfVersion(v))
	if err == nil {
		w.r.log([]txKey{a.key()}, []txEvent{{kind: "update", from: v, to: v2, rec: a}})
		w.r.count("overtaken", 1)
		return
	}
	if !errors.Is(err, indextable.ErrConflict) && !errors.Is(err, indextable.ErrNotFound) { // another closed it
		w.failed("overtake", err)
	}
}

// touch changes an account's note by a single write.
func (w *txWriter) touch() {
	k := w.pick("")
	a, v, err := w.r.tbl.GetVersioned(w.r.ctx, k.bank, k.id)
	if errors.Is(err, indextable.ErrNotFound) {
		return
	}
	if err != nil {
		w.failed("get", err)
		return
	}
	a.Note = w.tag("touched")
	v2, err := w.r.tbl.Update(w.r.ctx, a, indextable.IfVersion(v))
	switch {
	case err == nil:
		w.r.log([]txKey{k}, []txEvent{{kind: "update", from: v, to: v2, rec: a}})
		w.r.count("single write", 1)
	case errors.Is(err, indextable.ErrConflict), errors.Is(err, indextable.ErrNotFound):
		w.r.count("single write overtaken", 1)
	default:
		w.failed("single write", err)
	}
}

// swapHandles swaps the unique handles of two accounts of one bank.
func (w *txWriter) swapHandles() {
	x := w.pick("")
	y := w.pick(x.bank, x)
	_, err := w.transact("swap", func(in txAccounts, tw *txWrites, _ int) error {
		a, va, err := w.get(in, x)
		if err != nil {
			return err
		}
		b, vb, err := w.get(in, y)
		if err != nil {
			return err
		}
		a.Handle, b.Handle = b.Handle, a.Handle
		a.Note, b.Note = w.tag("swapped"), w.tag("swapped")
		if err := w.update(in, tw, a, va); err != nil {
			return err
		}
		return w.update(in, tw, b, vb)
	})
	w.failed("swap handles", err)
}

// moveOwner gives an account to another owner.
func (w *txWriter) moveOwner() {
	k := w.pick("")
	owner := txOwners[w.rnd.IntN(len(txOwners))]
	_, err := w.transact("move", func(in txAccounts, tw *txWrites, _ int) error {
		a, v, err := w.get(in, k)
		if err != nil {
			return err
		}
		a.Owner, a.Note = owner, w.tag("moved")
		return w.update(in, tw, a, v)
	})
	w.failed("move owner", err)
}

// own returns one of the writer's accounts, open or closed as asked, or
// false.
func (w *txWriter) own(closed bool) (txKey, bool) {
	var list []txKey
	for _, bank := range w.r.opts.Banks {
		for id := w.w; id < w.r.opts.Accounts; id += txWriters {
			k := txKey{bank, id}
			if _, c := w.closed[k]; c == closed {
				list = append(list, k)
			}
		}
	}
	if len(list) == 0 {
		return txKey{}, false
	}
	return list[w.rnd.IntN(len(list))], true
}

// close closes one of the writer's accounts, whose money goes to another
// of its bank.
func (w *txWriter) close() {
	c, ok := w.own(false)
	if !ok {
		return
	}
	to := w.pick(c.bank, c)
	var gone indextable.Version
	tw, err := w.transact("close", func(in txAccounts, tw *txWrites, _ int) error {
		a, va, err := w.get(in, c)
		if err != nil {
			return fmt.Errorf("account %v, which only this writer closes: %v", c, err)
		}
		b, vb, err := w.get(in, to)
		if err != nil {
			return err
		}
		b.Balance, b.Note = b.Balance+a.Balance, w.tag("inherited")
		if err := in.Delete(w.r.ctx, c.bank, c.id, indextable.IfVersion(va)); err != nil {
			return err
		}
		tw.add(c, txEvent{kind: "delete", from: va})
		gone = va
		return w.update(in, tw, b, vb)
	})
	w.failed("close", err)
	if err == nil && len(tw.events) > 0 {
		w.closed[c] = gone
	}
}

// reopen opens one of the writer's closed accounts again, with money from
// another of its bank and a new handle.
func (w *txWriter) reopen() {
	c, ok := w.own(true)
	if !ok {
		return
	}
	from, amount := w.pick(c.bank, c), 1+w.rnd.IntN(30)
	tw, err := w.transact("reopen", func(in txAccounts, tw *txWrites, _ int) error {
		if _, _, err := w.get(in, c); !errors.Is(err, errClosed) {
			return fmt.Errorf("account %v, which this writer closed, reads as %v", c, err)
		}
		b, vb, err := w.get(in, from)
		if err != nil {
			return err
		}
		b.Balance, b.Note = b.Balance-amount, w.tag("lent")
		a := txAccount{Bank: c.bank, ID: c.id, Owner: txOwners[w.rnd.IntN(len(txOwners))],
			Handle: fmt.Sprintf("h%d w%d.%d", c.id, w.w, w.n), Balance: amount, Note: w.tag("reopened")}
		v, err := in.Insert(w.r.ctx, a)
		if err != nil {
			return err
		}
		tw.add(c, txEvent{kind: "insert", from: w.closed[c], to: v, rec: a})
		return w.update(in, tw, b, vb)
	})
	w.failed("reopen", err)
	if err == nil && len(tw.events) > 0 {
		delete(w.closed, c)
	}
}
