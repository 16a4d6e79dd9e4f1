package azstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/indextable/indextable"
	"github.com/indextable/indextable/azstore/azuritetest"
	"github.com/indextable/indextable/internal/fixture"
)

// BenchmarkLoad measures what Table.Load costs in requests on Azure Table
// storage (through Azurite), when records share partitions:
// loadCustomers customers of loadTowns towns, keyed by (Town, ID), so
// that a town is a partition (azstore's partition is the first primary
// key field) of loadCustomers/loadTowns records, which come in turn (town
// i%loadTowns). Requests are counted at the HTTP transport (retries
// included). An op is one whole load into a new Azure table; each
// reports requests/record, transactions/record (the requests that are
// entity group transactions) and ns/record. Names are
// BenchmarkLoad/<indexes>:
//
//   - intra: two keys-only indexes that lead with Town, (Town, LastName)
//     and (Town, Email), so that their entries lie in their records'
//     partitions (checked) and each batch of a partition's records, with
//     its entries, is one entity group transaction.
//   - intra+inter: (Town, LastName) and the LastName index, which lies in
//     the surnames' partitions (inter-partition, checked): a record's
//     LastName entry follows through the queue. Its requests/record and
//     ns/record are the load's; after the timed load, a maintainer drains
//     the queue (ApplyPending until it applies nothing, default
//     MaintainerOptions), and reports maintainer-requests/record,
//     maintainer-transactions/record and maintainer-ns/record, per record
//     loaded.
//
// Each op opens its table untimed and deletes it when done. Azurite does a
// few thousand entity writes a second on 2 cores: use -benchtime=1x and a
// small -count, as `make bench-azurite` does:
//
//	scripts/azurite go test -run='^$' -bench='^BenchmarkLoad$' -benchmem -benchtime=1x -count=5 ./azstore/
func BenchmarkLoad(b *testing.B) {
	conn := azuritetest.Connection(b)
	pop := fixture.Population{Towns: loadTowns, Surnames: loadCustomers / loadTowns, Digits: 4}
	recs := pop.Customers(0, loadCustomers)
	townLastName := indextable.Index[fixture.Customer]{Name: "town_lastname", Fields: []string{"Town", "LastName"}, Strategy: indextable.KeysOnly}
	for _, tc := range []struct {
		name    string
		indexes []indextable.Index[fixture.Customer]
	}{
		{"intra", []indextable.Index[fixture.Customer]{townLastName,
			{Name: "town_email", Fields: []string{"Town", "Email"}, Strategy: indextable.KeysOnly}}},
		{"intra+inter", []indextable.Index[fixture.Customer]{townLastName,
			{Name: "lastname", Fields: []string{"LastName"}, Strategy: indextable.KeysOnly}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var load, apply loadCounts
			b.ReportAllocs()
			b.StopTimer()
			for range b.N {
				l, a := loadAzure(b, conn, tc.indexes, recs)
				load.add(l)
				apply.add(a)
			}
			per := float64(b.N * len(recs))
			b.ReportMetric(float64(load.requests)/per, "requests/record")
			b.ReportMetric(float64(load.transactions)/per, "transactions/record")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/record")
			if apply.requests > 0 {
				b.ReportMetric(float64(apply.requests)/per, "maintainer-requests/record")
				b.ReportMetric(float64(apply.transactions)/per, "maintainer-transactions/record")
				b.ReportMetric(float64(apply.ns)/per, "maintainer-ns/record")
			}
		})
	}
}

// The shape of BenchmarkLoad's data set.
const (
	loadCustomers = 2000
	loadTowns     = 20
)

// loadCounts are the requests a load or a maintainer sent, of which
// transactions, and the maintainer's time.
type loadCounts struct{ requests, transactions, ns int64 }

func (c *loadCounts) add(d loadCounts) {
	c.requests, c.transactions, c.ns = c.requests+d.requests, c.transactions+d.transactions, c.ns+d.ns
}

// loadTransport is a countingTransport that also counts entity group
// transactions (the requests to $batch).
type loadTransport struct {
	countingTransport
	transactions atomic.Int64
}

func (t *loadTransport) Do(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/$batch") {
		t.transactions.Add(1)
	}
	return t.countingTransport.Do(req)
}

// take returns t's counts and zeroes them.
func (t *loadTransport) take() loadCounts {
	c := loadCounts{requests: t.n.Load(), transactions: t.transactions.Load()}
	t.reset()
	t.transactions.Store(0)
	return c
}

// loadAzure loads recs, timed, into a table with indexes on a new Azure
// table, which it deletes when done. It returns what the load sent and,
// when an index lies in other partitions than its records, what a
// maintainer then sent to drain the queue, and its time.
func loadAzure(b *testing.B, conn string, indexes []indextable.Index[fixture.Customer], recs []fixture.Customer) (load, apply loadCounts) {
	ctx := context.Background()
	name := fmt.Sprintf("load%016x", rand.Uint64())
	tr := &loadTransport{}
	s := openTable(b, conn, name, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: tr,
		Retry:     policy.RetryOptions{MaxRetries: 5}, // as azstore.Open's default
	}})
	defer s.Close()
	tbl, err := indextable.Open(ctx, s, indextable.Schema[fixture.Customer]{Name: "customers", PrimaryKey: []string{"Town", "ID"}, Indexes: indexes})
	if err != nil {
		b.Fatal(err)
	}
	inter := checkPlacements(b, tbl)
	tr.take()
	b.StartTimer()
	rep, err := tbl.Load(ctx, slices.Values(recs), indextable.LoadOptions{})
	b.StopTimer()
	load = tr.take()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Inserted != len(recs) || rep.Refused != 0 {
		b.Fatalf("loaded %+v of %d records", rep.LoadProgress, len(recs))
	}
	if inter {
		// The maintainer, untimed: its time is reported apart.
		start := time.Now()
		n, err := drainLoaded(ctx, tbl)
		apply = tr.take()
		apply.ns = time.Since(start).Nanoseconds()
		if err != nil {
			b.Fatal(err)
		}
		if n != len(recs) {
			b.Fatalf("the maintainer applied %d changes of %d records loaded", n, len(recs))
		}
	}
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	if err == nil {
		_, err = svc.DeleteTable(ctx, name, nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	return load, apply
}

// drainLoaded runs a maintainer until it applies nothing, and returns how
// many changes it applied.
func drainLoaded(ctx context.Context, tbl *indextable.Table[fixture.Customer]) (int, error) {
	applied := 0
	for {
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		if applied += n; err != nil || n == 0 {
			return applied, err
		}
	}
}

// checkPlacements fails b unless tbl's indexes that lead with Town lie in
// their records' partitions and the others do not, and reports whether
// there are others.
func checkPlacements(b *testing.B, tbl *indextable.Table[fixture.Customer]) (inter bool) {
	b.Helper()
	status, err := tbl.IndexStatus(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range status {
		want := indextable.IntraPartition
		if st.Name == "lastname" {
			want, inter = indextable.InterPartition, true
		}
		if st.Placement != want {
			b.Fatalf("index %q is %v, not %v", st.Name, st.Placement, want)
		}
	}
	return inter
}
