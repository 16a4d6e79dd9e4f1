package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// TransactionsOptions configures TestTransactions.
type TransactionsOptions struct {
	// Banks names the banks, the first primary key field of the accounts:
	// under ShardByLeadingKey a bank's accounts and their index entries
	// lie on one shard of a ShardedStore. Nil means {"north", "south"}.
	Banks []string
	// Partitioned says that the banks lie in different partitions of the
	// store's atomicity scope (shards, say): a transfer between banks must
	// then be refused with ErrInvalidBatch, and each bank's sum holds.
	// Otherwise such transfers commit, and the sum of all banks holds.
	Partitioned bool
	// Accounts is how many accounts each bank holds; 0 means 8.
	Accounts int
	// Ops is how many operations each of the four writers makes; 0 means
	// 300.
	Ops int
}

// TestTransactions runs a model of bank accounts over a table of the
// store that newStore opens: four writers move money between accounts
// in transactions (indextable.Transact), swap their unique handles, move
// them between owners, close accounts (their money goes to another) and
// open them again, while single writes change the same records; some
// transactions are overtaken on purpose, so that they conflict and run
// again. Two readers meanwhile read every account in read-only
// transactions, whose sums must never change, and read the accounts of a
// bank through the owner index between two such reads: when those found
// no change, the index must show exactly what they read. The table has a
// FullCopy owner index, a unique handle index and an Eventual balance
// index.
//
// At the end the test replays the commits against a brute-force model:
// each account's committed writes must form one chain of versions (none
// lost, none applied twice), whose last state is the stored record; the
// sums hold; the indexes (after draining the queue) hold exactly the
// model; every record a reader saw was one that a commit wrote; and
// Verify finds nothing.
func TestTransactions(t *testing.T, newStore func(t *testing.T) kv.Store, opts TransactionsOptions) {
	if opts.Banks == nil {
		opts.Banks = []string{"north", "south"}
	}
	if opts.Accounts <= 0 {
		opts.Accounts = 8
	}
	if opts.Ops <= 0 {
		opts.Ops = 300
	}
	ctx := context.Background()
	store := newStore(t)
	tbl, err := indextable.Open(ctx, store, txSchema())
	require.NoError(t, err)
	r := &txRun{t: t, ctx: ctx, store: store, tbl: tbl, opts: opts, counts: map[string]int{}, initial: map[txKey]txState{}}
	r.load()
	r.run()
	r.check()
}

// txAccount is the record of TestTransactions.
type txAccount struct {
	Bank    string
	ID      int
	Owner   string
	Handle  string
	Balance int
	Note    string // the write that made this state, so that no two states are alike
}

func (a txAccount) key() txKey { return txKey{a.Bank, a.ID} }

func txSchema() indextable.Schema[txAccount] {
	return indextable.Schema[txAccount]{Name: "accounts", PrimaryKey: []string{"Bank", "ID"}, Indexes: []indextable.Index[txAccount]{
		{Name: "owner", Fields: []string{"Bank", "Owner"}, Strategy: indextable.FullCopy},
		{Name: "handle", Fields: []string{"Bank", "Handle"}, Unique: true},
		{Name: "balance", Fields: []string{"Bank", "Balance"}, Consistency: indextable.Eventual},
	}}
}

// The owners of the accounts, and the model's writers and readers.
var txOwners = []string{"ann", "bob", "cy"}

const (
	txWriters = 4
	txReaders = 2
	txOpening = 100 // each account's balance at the start
)

type txKey struct {
	bank string
	id   int
}

// txState is a committed state of an account: absent, or rec at version.
type txState struct {
	version indextable.Version
	rec     txAccount
	present bool
}

// txEvent is one committed write of an account: an update or a delete of
// the version from, or an insert after a delete of the version from.
type txEvent struct {
	kind     string // "update", "delete", "insert"
	from, to indextable.Version
	rec      txAccount
}

// txRun is one run of TestTransactions.
type txRun struct {
	t       *testing.T
	ctx     context.Context
	store   kv.Store
	tbl     *indextable.Table[txAccount]
	opts    TransactionsOptions
	initial map[txKey]txState

	mu       sync.Mutex
	events   map[txKey][]txEvent
	observed []txAccount // every record a reader saw
	counts   map[string]int
}

// count adds n to the count of kind.
func (r *txRun) count(kind string, n int) {
	r.mu.Lock()
	r.counts[kind] += n
	r.mu.Unlock()
}

// load inserts every account, with single writes.
func (r *txRun) load() {
	r.events = map[txKey][]txEvent{}
	for _, bank := range r.opts.Banks {
		for id := range r.opts.Accounts {
			a := txAccount{Bank: bank, ID: id, Owner: txOwners[id%len(txOwners)], Handle: fmt.Sprint("h", id),
				Balance: txOpening, Note: "opened"}
			v, err := r.tbl.Insert(r.ctx, a)
			require.NoError(r.t, err)
			r.initial[a.key()] = txState{version: v, rec: a, present: true}
		}
	}
}

// run runs the writers and the readers, until the writers are done and
// each reader made one more pass.
func (r *txRun) run() {
	var writers, readers sync.WaitGroup
	done := make(chan struct{})
	for w := range txWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			newTxWriter(r, w).loop()
		}()
	}
	for i := range txReaders {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 99))
			for stop := false; !stop; {
				select {
				case <-done:
					stop = true // one pass more, at rest
				default:
				}
				r.readSums()
				r.readIndex(r.opts.Banks[rnd.IntN(len(r.opts.Banks))], stop)
			}
		}()
	}
	writers.Wait()
	close(done)
	readers.Wait()
}

// log records the events of a committed write.
func (r *txRun) log(keys []txKey, events []txEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range keys {
		r.events[k] = append(r.events[k], events[i])
	}
}

// snapshot reads the accounts of banks in a read-only transaction and
// returns them, when its commit finds them unchanged.
func (r *txRun) snapshot(banks []string) (map[txKey]txState, bool) {
	tx := indextable.NewTx(r.store)
	accounts := r.tbl.In(tx)
	got := map[txKey]txState{}
	for _, bank := range banks {
		for id := range r.opts.Accounts {
			a, v, err := accounts.GetVersioned(r.ctx, bank, id)
			if errors.Is(err, indextable.ErrNotFound) {
				got[txKey{bank, id}] = txState{}
				continue
			}
			if err != nil {
				r.t.Errorf("read %s/%d in a transaction: %v", bank, id, err)
				return nil, false
			}
			got[a.key()] = txState{version: v, rec: a, present: true}
		}
	}
	err := tx.Commit(r.ctx)
	if errors.Is(err, indextable.ErrConflict) {
		r.count("snapshot conflicted", 1)
		return nil, false
	}
	if err != nil {
		r.t.Errorf("commit a read-only transaction: %v", err)
		return nil, false
	}
	r.count("snapshot", 1)
	r.see(got)
	return got, true
}

// see records the records of a snapshot as observed.
func (r *txRun) see(states map[txKey]txState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range states {
		if s.present {
			r.observed = append(r.observed, s.rec)
		}
	}
}

// readSums reads every account in one transaction (each bank in its own,
// when the banks lie in different partitions) and checks the sums.
func (r *txRun) readSums() {
	groups := [][]string{r.opts.Banks}
	if r.opts.Partitioned {
		groups = nil
		for _, b := range r.opts.Banks {
			groups = append(groups, []string{b})
		}
	}
	for _, banks := range groups {
		got, ok := r.snapshot(banks)
		if !ok {
			continue
		}
		sum := 0
		for _, s := range got {
			sum += s.rec.Balance
		}
		if want := txOpening * r.opts.Accounts * len(banks); sum != want {
			r.t.Errorf("banks %v: a transaction read a sum of %d, want %d", banks, sum, want)
		}
	}
}

// readIndex reads bank's accounts through the owner index between two
// snapshots of them; when the snapshots agree (no commit changed the bank
// in between), the index must show what they read. At rest (last), they
// must agree.
func (r *txRun) readIndex(bank string, last bool) {
	before, ok := r.snapshot([]string{bank})
	var found []txAccount
	for a, err := range r.tbl.Find(r.ctx, indextable.Query{Index: "owner", Eq: indextable.Tuple{bank}}) {
		if err != nil {
			r.t.Errorf("read bank %s through the owner index: %v", bank, err)
			return
		}
		found = append(found, a)
	}
	r.mu.Lock()
	r.observed = append(r.observed, found...)
	r.mu.Unlock()
	after, ok2 := r.snapshot([]string{bank})
	if !ok || !ok2 || !sameStates(before, after) {
		if last {
			r.t.Errorf("bank %s: two reads at rest disagree", bank)
		}
		r.count("index read overtaken", 1)
		return
	}
	r.count("index read checked", 1)
	var want []txAccount
	for _, s := range before {
		if s.present {
			want = append(want, s.rec)
		}
	}
	if !sameAccounts(want, found) {
		r.t.Errorf("bank %s: the owner index shows %v, the records are %v", bank, found, want)
	}
}

func sameStates(a, b map[txKey]txState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, s := range a {
		if b[k] != s {
			return false
		}
	}
	return true
}

// sameAccounts reports whether a and b hold the same records, in any
// order.
func sameAccounts(a, b []txAccount) bool {
	order := func(x, y txAccount) int { return cmp.Or(cmp.Compare(x.Bank, y.Bank), cmp.Compare(x.ID, y.ID)) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, order)
	slices.SortFunc(b, order)
	return slices.Equal(a, b)
}

// check replays the commits against the model, and checks the table
// against it.
func (r *txRun) check() {
	t := r.t
	Drain(t, r.tbl)
	model, committed := r.replay()
	r.checkRecords(model)
	r.checkIndexes(model)
	for _, a := range r.observed {
		if !committed[a] {
			t.Errorf("a reader saw %+v, which no commit wrote", a)
		}
	}
	rep, err := r.tbl.Verify(r.ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "Verify: %v", rep.Samples)
	t.Logf("%+v", r.counts)
	require.Positive(t, r.counts["runs again"], "no transaction conflicted")
	require.Positive(t, r.counts["index read checked"])
}

// replay walks each account's committed writes from its first state: each
// must follow the state before it (the version it replaced), and each
// state be followed by one write at most (else an update was lost). It
// returns each account's last state, and every record a commit wrote.
func (r *txRun) replay() (map[txKey]txState, map[txAccount]bool) {
	model, committed := map[txKey]txState{}, map[txAccount]bool{}
	for k, cur := range r.initial {
		committed[cur.rec] = true
		events := r.events[k]
		used := make([]bool, len(events))
		for {
			next := -1
			for i, e := range events {
				if used[i] || e.from != cur.version || (e.kind == "insert") == cur.present {
					continue
				}
				if next >= 0 {
					r.t.Errorf("account %v: two commits replaced version %d: %+v and %+v", k, cur.version, events[next], e)
				}
				next = i
			}
			if next < 0 {
				break
			}
			used[next] = true
			if e := events[next]; e.kind == "delete" {
				cur = txState{version: e.from}
			} else {
				cur = txState{version: e.to, rec: e.rec, present: true}
				committed[e.rec] = true
			}
		}
		for i, u := range used {
			if !u {
				r.t.Errorf("account %v: commit %+v follows none of its states", k, events[i])
			}
		}
		model[k] = cur
	}
	return model, committed
}

// checkRecords checks every account, and the sums, against the model.
func (r *txRun) checkRecords(model map[txKey]txState) {
	sums := map[string]int{}
	for k, want := range model {
		a, v, err := r.tbl.GetVersioned(r.ctx, k.bank, k.id)
		if !want.present {
			require.ErrorIs(r.t, err, indextable.ErrNotFound, "account %v", k)
			continue
		}
		require.NoError(r.t, err)
		require.Equal(r.t, want, txState{version: v, rec: a, present: true}, "account %v", k)
		sums[k.bank] += a.Balance
	}
	total := 0
	for _, bank := range r.opts.Banks {
		total += sums[bank]
		if r.opts.Partitioned {
			require.Equal(r.t, txOpening*r.opts.Accounts, sums[bank], "bank %s", bank)
		}
	}
	require.Equal(r.t, txOpening*r.opts.Accounts*len(r.opts.Banks), total)
}

// checkIndexes reads every index, the queue drained, against the model.
func (r *txRun) checkIndexes(model map[txKey]txState) {
	find := func(index string, eq ...any) []txAccount {
		var out []txAccount
		for a, err := range r.tbl.Find(r.ctx, indextable.Query{Index: index, Eq: eq}) {
			require.NoError(r.t, err)
			out = append(out, a)
		}
		return out
	}
	for _, bank := range r.opts.Banks {
		byOwner, all := map[string][]txAccount{}, []txAccount(nil)
		for k, s := range model {
			if k.bank == bank && s.present {
				byOwner[s.rec.Owner] = append(byOwner[s.rec.Owner], s.rec)
				all = append(all, s.rec)
				require.Equal(r.t, []txAccount{s.rec}, find("handle", bank, s.rec.Handle))
			}
		}
		for _, owner := range txOwners {
			require.True(r.t, sameAccounts(byOwner[owner], find("owner", bank, owner)), "bank %s, owner %s", bank, owner)
		}
		require.True(r.t, sameAccounts(all, find("balance", bank)), "bank %s: the balance index", bank)
	}
}
