package azstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
)

// BenchmarkAzurite measures tables on Azure Table storage through Azurite:
// movies partitioned by genre, under three schemas, in one run so that
// they compare on the same emulator and machine. Every sub-benchmark
// reports round-trips/op, the HTTP requests the SDK sent (retries
// included) divided by the operations. Names are
// BenchmarkAzurite/<op>/<schema>:
//
//   - write/fact-only, write/two-intra, write/two-intra+inter: an Insert of
//     a new movie (a distinct title each, five genres in turn), into a
//     table of 100 movies. fact-only has no index. two-intra has two indexes
//     that lead with Genre, the first primary key field, so AutoPlacement
//     puts their entries in the record's partition (checked) and one write
//     is one entity group transaction, as fact-only's is. two-intra+inter
//     adds a multi-valued actor index, which lies in the actors' partitions:
//     the write falls back to the record, its two-intra entries and a
//     change record in one transaction, and the actor entries wait for a
//     maintainer. Its ns/op and round-trips/op leave the maintainer out;
//     after the timed loop it drains the queue (ApplyPending until it
//     applies nothing) and reports that separately, per write, as
//     apply-ns/op and apply-round-trips/op: a maintainer that fell behind
//     by b.N changes and catches up in batches. two-intra reports
//     x-fact-only, its ns/op over the median ns/op of fact-only's runs
//     (with as many iterations) before it in the same process.
//   - range100/keys-only: the 100 movies of one genre and year through the
//     KeysOnly index (genre, year): one partition's query, then the
//     records from the fact table (GetMany: one query a partition and 14
//     records, 8 at a time; the genre's records share a partition).
//   - range100/full-copy: the 100 movies of one genre with a rating in
//     [0, 5) through the FullCopy index (genre, rating): records from the
//     entries, one partition's query, after a query of the table's queue
//     for pending changes (on a store of bounded atomicity, a write may
//     fall back to the queue, so a full-copy read checks it first).
//   - get: a movie by primary key.
//
// First, untimed, a warm-up sends Azurite a few seconds of every kind of
// request. Then each sub-benchmark opens a table of its own in a new Azure
// table, loads it with Inserts before the timer starts (the read ones: 200
// movies of the genre read and 20 of each of two others), and deletes it
// when done. Azurite does a few hundred writes a second on 2 cores: use a
// small -benchtime=Nx, as `make bench-azurite` does (about 2 minutes):
//
//	scripts/azurite go test -run='^$' -bench=Azurite -benchmem -benchtime=400x -count=5 ./azstore/
//
// -count repeats each sub-benchmark in turn; compare medians. Azurite and
// the benchmark share the machine's cores, so other load skews the
// results.
func BenchmarkAzurite(b *testing.B) {
	conn := azuritetest.Connection(b)
	benchWarmUp(b, conn)
	// write/fact-only's ns/op in its runs of the most iterations.
	var factOnly struct {
		n  int
		ns []float64
	}
	b.Run("write", func(b *testing.B) {
		for _, sc := range benchSchemas {
			b.Run(sc.name, func(b *testing.B) {
				ns := benchWrite(b, conn, sc)
				switch {
				case sc.name == "fact-only" && b.N >= factOnly.n:
					if b.N > factOnly.n {
						factOnly.n, factOnly.ns = b.N, nil
					}
					factOnly.ns = append(factOnly.ns, ns)
				case sc.name == "two-intra" && len(factOnly.ns) > 0:
					b.ReportMetric(ns/benchMedian(factOnly.ns), "x-fact-only")
				}
			})
		}
	})
	b.Run("range100", func(b *testing.B) {
		b.Run("keys-only", func(b *testing.B) {
			// Year 1990: every other movie of the genre.
			benchRange(b, conn, indextable.Query{Index: "year", Eq: indextable.Tuple{benchReadGenre, 1990}})
		})
		b.Run("full-copy", func(b *testing.B) {
			// Ratings 0 to 4: half the genre's movies.
			benchRange(b, conn, indextable.Query{Index: "rating", Eq: indextable.Tuple{benchReadGenre},
				Lower: indextable.Inclusive(0), Upper: indextable.Exclusive(5)})
		})
	})
	b.Run("get", func(b *testing.B) {
		ctx := context.Background()
		tbl, rt := benchOpen(b, conn, benchSchemas[1])
		benchLoadReads(b, tbl)
		titles := make([]string, b.N)
		for i := range titles {
			titles[i] = benchTitle(rand.IntN(benchReadMovies))
		}
		rt.Store(0)
		b.ReportAllocs()
		b.ResetTimer()
		for _, title := range titles {
			m, err := tbl.Get(ctx, benchReadGenre, title)
			if err != nil {
				b.Fatal(err)
			}
			if m.Title != title {
				b.Fatalf("got %q, not %q", m.Title, title)
			}
		}
		b.StopTimer()
		benchReportTrips(b, rt.Load())
	})
}

// benchWarmUp sends Azurite the requests of every sub-benchmark for a
// few seconds, untimed: Azurite answers more slowly at first (its
// JavaScript is not compiled yet), which would otherwise fall on whichever
// sub-benchmark runs first. It deletes each of its tables when done with
// it, so that Azurite's memory holds none of them during the measurements.
func benchWarmUp(b *testing.B, conn string) {
	ctx := context.Background()
	svc, err := aztables.NewServiceClientFromConnectionString(conn, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range benchSchemas {
		name := fmt.Sprintf("w%016x", rand.Uint64())
		tbl, _ := benchOpenIn(b, conn, name, sc)
		for i := range 400 {
			if _, err := tbl.Insert(ctx, benchMake(benchGenres[i%len(benchGenres)], i)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := benchDrain(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		for i := range 20 {
			for _, q := range []indextable.Query{
				{Index: "year", Eq: indextable.Tuple{benchGenres[i%len(benchGenres)], 1990}},
				{Index: "rating", Eq: indextable.Tuple{benchGenres[i%len(benchGenres)]}, Upper: indextable.Exclusive(5)},
			} {
				if sc.indexes == nil {
					q = indextable.Query{Eq: q.Eq[:1]}
				}
				for _, err := range tbl.Find(ctx, q) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		if _, err := svc.DeleteTable(ctx, name, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDrain runs a maintainer until it applies nothing, and returns how
// many changes it applied.
func benchDrain(ctx context.Context, tbl *indextable.Table[benchMovie]) (int, error) {
	applied := 0
	for {
		n, err := tbl.ApplyPending(ctx, indextable.MaintainerOptions{})
		if applied += n; err != nil || n == 0 {
			return applied, err
		}
	}
}

// benchMedian returns the median of xs.
func benchMedian(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// benchMovie is a movie of the benchmarks.
type benchMovie struct {
	Genre, Title string
	Year, Rating int
	Actors       []string
}

// benchSchema is a schema of the benchmarks: the movies' indexes.
type benchSchema struct {
	name    string
	indexes []indextable.Index[benchMovie]
}

var benchIntra = []indextable.Index[benchMovie]{
	{Name: "year", Fields: []string{"Genre", "Year"}, Strategy: indextable.KeysOnly},
	{Name: "rating", Fields: []string{"Genre", "Rating"}, Strategy: indextable.FullCopy},
}

var benchSchemas = []benchSchema{
	{"fact-only", nil},
	{"two-intra", benchIntra},
	{"two-intra+inter", append(benchIntra[:len(benchIntra):len(benchIntra)],
		indextable.Index[benchMovie]{Name: "actor", Fields: []string{"Actors"}, MultiValued: true, Strategy: indextable.KeysOnly})},
}

var (
	benchGenres = []string{"Action", "Comedy", "Drama", "Horror", "Sci-Fi"}
	benchActors = []string{"Ava", "Ben", "Cara", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivo", "Jo"}
)

const (
	benchReadGenre  = "Drama"
	benchReadMovies = 200 // of benchReadGenre in a read benchmark's table
	benchOtherReads = 20  // of each of two other genres
	benchWriteLoad  = 100 // movies a write benchmark's table holds first
)

func benchTitle(i int) string { return fmt.Sprintf("Title%06d", i) }

// benchMake returns movie i of genre: years 1990 and 1991 and ratings 0 to
// 9 in turn, two actors.
func benchMake(genre string, i int) benchMovie {
	return benchMovie{
		Genre:  genre,
		Title:  benchTitle(i),
		Year:   1990 + i%2,
		Rating: i % 10,
		Actors: []string{benchActors[i%len(benchActors)], benchActors[(i/len(benchActors)+i+1)%len(benchActors)]},
	}
}

// countingTransport sends requests as the SDK's default client would
// (http.DefaultTransport with the SDK's 10 idle connections a host) and
// counts them: n, every request; scans, the queries whose filter names no
// partition, of which the server reads every entity; entities, the
// entities that queries returned.
type countingTransport struct {
	n, scans, entities atomic.Int64
}

var benchHTTP = func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 100, 10
	return tr
}()

func (c *countingTransport) Do(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	filter, query := req.URL.Query()["$filter"]
	if query && !strings.Contains(filter[0], "PartitionKey eq") {
		c.scans.Add(1)
	}
	resp, err := benchHTTP.RoundTrip(req)
	if err != nil || !query {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.entities.Add(int64(bytes.Count(body, []byte(`"RowKey":`))))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// reset zeroes c's counts.
func (c *countingTransport) reset() { c.n.Store(0); c.scans.Store(0); c.entities.Store(0) }

// report reports c's counts over ops operations.
func (c *countingTransport) report(b *testing.B, ops int) {
	b.ReportMetric(float64(c.n.Load())/float64(ops), "requests/op")
	b.ReportMetric(float64(c.scans.Load())/float64(ops), "table-scans/op")
	b.ReportMetric(float64(c.entities.Load())/float64(ops), "entities/op")
}

// benchOpen opens a table of schema sc on a new Azure table through a
// counting transport, checks that the indexes that lead with Genre lie in
// their records' partitions and the others do not, and returns the table
// and its request counter.
func benchOpen(b *testing.B, conn string, sc benchSchema) (*indextable.Table[benchMovie], *atomic.Int64) {
	b.Helper()
	return benchOpenIn(b, conn, azuritetest.FreshTable(b, conn, "t"), sc)
}

// benchOpenIn is benchOpen on the Azure table name.
func benchOpenIn(b *testing.B, conn, name string, sc benchSchema) (*indextable.Table[benchMovie], *atomic.Int64) {
	b.Helper()
	tbl, tr := benchOpenCounted(b, conn, name, sc)
	return tbl, &tr.n
}

// benchOpenCounted is benchOpenIn, returning the table's transport.
func benchOpenCounted(b *testing.B, conn, name string, sc benchSchema) (*indextable.Table[benchMovie], *countingTransport) {
	b.Helper()
	ctx := context.Background()
	tr := &countingTransport{}
	s := openTable(b, conn, name, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{
		Transport: tr,
		Retry:     policy.RetryOptions{MaxRetries: 5}, // as azstore.Open's default
	}})
	b.Cleanup(func() { s.Close() })
	tbl, err := indextable.Open(ctx, s, indextable.Schema[benchMovie]{
		Name:       "movies",
		PrimaryKey: []string{"Genre", "Title"},
		Indexes:    sc.indexes,
	})
	if err != nil {
		b.Fatal(err)
	}
	status, err := tbl.IndexStatus(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if len(status) != len(sc.indexes) {
		b.Fatalf("%d index statuses for %d indexes", len(status), len(sc.indexes))
	}
	for _, st := range status {
		want := indextable.IntraPartition
		if st.Name == "actor" {
			want = indextable.InterPartition
		}
		if st.Placement != want {
			b.Fatalf("index %q is %v, not %v", st.Name, st.Placement, want)
		}
	}
	return tbl, tr
}

// benchReportTrips reports n requests over b.N operations.
func benchReportTrips(b *testing.B, n int64) {
	b.ReportMetric(float64(n)/float64(b.N), "round-trips/op")
}

// benchLoadReads loads a read benchmark's movies.
func benchLoadReads(b *testing.B, tbl *indextable.Table[benchMovie]) {
	b.Helper()
	ctx := context.Background()
	for _, g := range []struct {
		genre string
		n     int
	}{{"Comedy", benchOtherReads}, {benchReadGenre, benchReadMovies}, {"Sci-Fi", benchOtherReads}} {
		for i := range g.n {
			if _, err := tbl.Insert(ctx, benchMake(g.genre, i)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchWrite runs a write benchmark of schema sc and returns its ns/op.
func benchWrite(b *testing.B, conn string, sc benchSchema) float64 {
	ctx := context.Background()
	tbl, rt := benchOpen(b, conn, sc)
	for i := range benchWriteLoad {
		if _, err := tbl.Insert(ctx, benchMake(benchGenres[i%len(benchGenres)], i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := benchDrain(ctx, tbl); err != nil { // an empty queue to start from
		b.Fatal(err)
	}
	recs := make([]benchMovie, b.N)
	for i := range recs {
		k := benchWriteLoad + i
		recs[i] = benchMake(benchGenres[k%len(benchGenres)], k)
	}
	rt.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range recs {
		if _, err := tbl.Insert(ctx, recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	benchReportTrips(b, rt.Load())
	if sc.name == "two-intra+inter" {
		rt.Store(0)
		start := time.Now()
		n, err := benchDrain(ctx, tbl)
		if err != nil {
			b.Fatal(err)
		}
		if n != b.N {
			b.Fatalf("the maintainer applied %d changes of %d writes", n, b.N)
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "apply-ns/op")
		b.ReportMetric(float64(rt.Load())/float64(b.N), "apply-round-trips/op")
	}
	return ns
}

// benchRange runs a read of q, which must find exactly 100 movies, in a
// table of two-intra's schema.
func benchRange(b *testing.B, conn string, q indextable.Query) {
	ctx := context.Background()
	tbl, rt := benchOpen(b, conn, benchSchemas[1])
	benchLoadReads(b, tbl)
	rt.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		for m, err := range tbl.Find(ctx, q) {
			if err != nil {
				b.Fatal(err)
			}
			if m.Genre != benchReadGenre {
				b.Fatalf("a %s movie in a %s query", m.Genre, benchReadGenre)
			}
			n++
		}
		if n != 100 {
			b.Fatalf("the range read %d movies, not 100", n)
		}
	}
	b.StopTimer()
	benchReportTrips(b, rt.Load())
}

// BenchmarkAzuriteCost counts what a table on Azure costs in requests, the
// unit Azure bills and throttles, for the operations whose cost may grow
// with the table or with time, at 500 and 5,000 movies (names
// BenchmarkAzuriteCost/<movies>/<op>). The table has the two intra-partition
// indexes of the other benchmarks and a FullCopy actor index, which lies in
// the actors' partitions. Each reports requests/op, table-scans/op (queries
// whose filter names no partition: the server reads every entity) and
// entities/op (what queries returned):
//
//   - read-actor: a full-copy read of one actor's movies, queue empty;
//
//   - read-actor-pending: the same with 100 changes pending;
//
//   - read-limit10-pending: the first 10 of them, changes pending;
//
//   - lag: Table.Lag, changes pending;
//
//   - idle-maintainer: 250 ms of a RunMaintainer with nothing to do, once
//     its waits between looks have grown (also requests/s);
//
//   - maintainer: a change applied, per change, when b.N changes wait.
//
//     scripts/azurite go test -run='^$' -bench=AzuriteCost -benchtime=20x -count=1 ./azstore/
func BenchmarkAzuriteCost(b *testing.B) {
	conn := azuritetest.Connection(b)
	for _, movies := range []int{500, 5000} {
		b.Run(fmt.Sprint(movies), func(b *testing.B) {
			tbl, tr := benchOpenCounted(b, conn, azuritetest.FreshTable(b, conn, "cost"), benchCostSchema)
			benchLoadMovies(b, tbl, movies)
			b.Run("read-actor", func(b *testing.B) { benchCostRead(b, tbl, tr, 0) })
			b.Run("maintainer", func(b *testing.B) { benchCostMaintainer(b, tbl, tr) })
			benchQueueChanges(b, tbl, 100)
			b.Run("read-actor-pending", func(b *testing.B) { benchCostRead(b, tbl, tr, 0) })
			b.Run("read-limit10-pending", func(b *testing.B) { benchCostRead(b, tbl, tr, 10) })
			b.Run("lag", func(b *testing.B) {
				benchCost(b, tr, func(ctx context.Context) error { _, err := tbl.Lag(ctx); return err })
			})
			if _, err := benchDrain(context.Background(), tbl); err != nil {
				b.Fatal(err)
			}
			b.Run("idle-maintainer", func(b *testing.B) { benchCostIdle(b, tbl, tr) })
		})
	}
}

var benchCostSchema = benchSchema{"two-intra+full-copy-actor", append(benchIntra[:len(benchIntra):len(benchIntra)],
	indextable.Index[benchMovie]{Name: "actor", Fields: []string{"Actors"}, MultiValued: true, Strategy: indextable.FullCopy})}

// benchLoadMovies loads n movies, the genres in turn, and applies the
// queue.
func benchLoadMovies(b *testing.B, tbl *indextable.Table[benchMovie], n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := tbl.Insert(ctx, benchMake(benchGenres[i%len(benchGenres)], i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := benchDrain(ctx, tbl); err != nil {
		b.Fatal(err)
	}
}

// benchShift makes each call of benchQueueChanges give other actors.
var benchShift atomic.Int64

// benchQueueChanges updates n movies' actors, leaving n changes queued.
func benchQueueChanges(b *testing.B, tbl *indextable.Table[benchMovie], n int) {
	b.Helper()
	ctx := context.Background()
	shift := int(benchShift.Add(1))
	for i := range n {
		m := benchMake(benchGenres[i%len(benchGenres)], i)
		m.Actors = []string{benchActors[0], fmt.Sprint("Extra", shift)}
		if _, err := tbl.Update(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCost times op b.N times and reports its counts.
func benchCost(b *testing.B, tr *countingTransport, op func(context.Context) error) {
	ctx := context.Background()
	tr.reset()
	b.ResetTimer()
	for range b.N {
		if err := op(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tr.report(b, b.N)
}

// benchCostRead reads one actor's movies (the first limit, if not 0).
func benchCostRead(b *testing.B, tbl *indextable.Table[benchMovie], tr *countingTransport, limit int) {
	q := indextable.Query{Index: "actor", Eq: indextable.Tuple{benchActors[0]}, Limit: limit}
	benchCost(b, tr, func(ctx context.Context) error {
		n := 0
		for _, err := range tbl.Find(ctx, q) {
			if err != nil {
				return err
			}
			n++
		}
		if n == 0 || limit > 0 && n != limit {
			return fmt.Errorf("the read found %d movies", n)
		}
		return nil
	})
}

// benchCostMaintainer queues b.N changes, then times the maintainer's
// passes that apply them.
func benchCostMaintainer(b *testing.B, tbl *indextable.Table[benchMovie], tr *countingTransport) {
	b.StopTimer()
	benchQueueChanges(b, tbl, b.N)
	tr.reset()
	b.StartTimer()
	n, err := benchDrain(context.Background(), tbl)
	b.StopTimer()
	if err != nil || n < b.N {
		b.Fatalf("the maintainer applied %d changes of %d: %v", n, b.N, err)
	}
	tr.report(b, n)
}

// benchCostIdle runs a maintainer with nothing to do and, after a second
// and a half for its waits between looks to grow to their longest, counts
// what it sends in 250 ms an iteration; it reports its requests a second
// besides its counts.
func benchCostIdle(b *testing.B, tbl *indextable.Table[benchMovie], tr *countingTransport) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tbl.RunMaintainer(ctx, indextable.MaintainerOptions{}) }()
	time.Sleep(1500 * time.Millisecond)
	tr.reset()
	start := time.Now()
	time.Sleep(time.Duration(b.N) * 250 * time.Millisecond)
	elapsed, sent := time.Since(start).Seconds(), tr.n.Load()
	tr.report(b, b.N)
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sent)/elapsed, "requests/s")
}
