// Command benchtable turns the output of the bench module's
// BenchmarkCompare (go test -bench, several -count runs) into a Markdown
// table of medians and their ratios to the floor, and checks the targets
// the library sets itself against them.
//
//	go test -run='^$' -bench=Compare -count=5 . | go run ./cmd/benchtable
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var ops = []string{"insert", "update", "lookup", "range100", "get"}

// A line such as
// BenchmarkCompare/floor/lookup-2  20000  312.5 ns/op  0 B/op  0 allocs/op
// (or BenchmarkScaling/100000/lookup-2 ..., whose system is its size).
var line = regexp.MustCompile(`^Benchmark(Compare|Scaling)/([^/\s]+)/([^/\s]+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// results holds, by system and operation, each run's value of each unit.
type results map[string]map[string]map[string][]float64

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	res, order, err := parse(bytes.NewReader(in), "Compare")
	if err != nil {
		log.Fatal(err)
	}
	scale, sizes, err := parse(bytes.NewReader(in), "Scaling")
	if err != nil {
		log.Fatal(err)
	}
	if len(order) == 0 && len(sizes) == 0 {
		log.Fatal("benchtable: no BenchmarkCompare or BenchmarkScaling results in the input")
	}
	if len(order) > 0 {
		if order[0] != "floor" {
			log.Fatal("benchtable: no BenchmarkCompare/floor results in the input")
		}
		write(os.Stdout, res, order)
	}
	if len(sizes) > 0 {
		writeScaling(os.Stdout, scale, sizes)
	}
}

// parse reads the results of benchmark Benchmark+name, and the order in
// which their systems first appear.
func parse(r io.Reader, name string) (results, []string, error) {
	res := results{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != name {
			continue
		}
		sys, op, fields := m[2], m[3], strings.Fields(m[4])
		if res[sys] == nil {
			res[sys] = map[string]map[string][]float64{}
			order = append(order, sys)
		}
		if res[sys][op] == nil {
			res[sys][op] = map[string][]float64{}
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("benchtable: %q: %w", sc.Text(), err)
			}
			res[sys][op][fields[i+1]] = append(res[sys][op][fields[i+1]], v)
		}
	}
	return res, order, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r results) med(sys, op, unit string) float64 { return median(r[sys][op][unit]) }

func duration(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func write(w io.Writer, r results, order []string) {
	fmt.Fprintf(w, "| system | %s | heap bytes/record |\n|---|%s---|\n", strings.Join(ops, " | "), strings.Repeat("---|", len(ops)))
	for _, sys := range order {
		cells := []string{sys}
		for _, op := range ops {
			if len(r[sys][op]["ns/op"]) == 0 {
				cells = append(cells, "–")
				continue
			}
			ns, floor := r.med(sys, op, "ns/op"), r.med("floor", op, "ns/op")
			cell := duration(ns)
			if sys != "floor" && floor > 0 {
				cell += fmt.Sprintf(" (%.2fx)", ns/floor)
			}
			cells = append(cells, cell)
		}
		bytes := "n/a (off-heap)"
		if b := r.med(sys, "get", "heap-bytes/record"); b > 0 {
			bytes = fmt.Sprintf("%.0f", b)
			if f := r.med("floor", "get", "heap-bytes/record"); sys != "floor" && f > 0 {
				bytes += fmt.Sprintf(" (%.2fx)", b/f)
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", strings.Join(cells, " | "), bytes)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets, on the medians of this run:")
	fmt.Fprintln(w)
	for _, t := range targets(r, order) {
		mark := "met"
		if !t.met {
			mark = "**missed**"
		}
		fmt.Fprintf(w, "- %s: %s (%s)\n", t.what, mark, t.detail)
	}
}

type target struct {
	what, detail string
	met          bool
}

// targets checks the library's memory-store systems against the targets:
// every operation faster than go-memdb and buntdb; inserts at most 2x the
// floor; full-copy reads at most 1.5x; keys-only bytes per record at most
// 2x.
func targets(r results, order []string) []target {
	var out []target
	ratio := func(sys, op, unit, to string) float64 {
		if d := r.med(to, op, unit); d > 0 {
			return r.med(sys, op, unit) / d
		}
		return 0
	}
	for _, sys := range order {
		if !strings.HasPrefix(sys, "indextable-") || strings.Contains(sys, "pebble") {
			continue
		}
		for _, peer := range []string{"go-memdb", "buntdb"} {
			if r[peer] == nil {
				continue
			}
			var slower []string
			for _, op := range ops {
				if x := ratio(sys, op, "ns/op", peer); x >= 1 {
					slower = append(slower, fmt.Sprintf("%s %.2fx", op, x))
				}
			}
			detail := "every operation faster"
			if len(slower) > 0 {
				detail = "slower at " + strings.Join(slower, ", ")
			}
			out = append(out, target{sys + " faster than " + peer, detail, len(slower) == 0})
		}
		x := ratio(sys, "insert", "ns/op", "floor")
		out = append(out, target{sys + " insert at most 2x the floor", fmt.Sprintf("%.2fx", x), x <= 2})
		if strings.HasSuffix(sys, "full-copy") {
			for _, op := range []string{"lookup", "range100", "get"} {
				x := ratio(sys, op, "ns/op", "floor")
				out = append(out, target{sys + " " + op + " at most 1.5x the floor", fmt.Sprintf("%.2fx", x), x <= 1.5})
			}
		}
		if strings.HasSuffix(sys, "keys-only") {
			x := ratio(sys, "get", "heap-bytes/record", "floor")
			out = append(out, target{sys + " bytes per record at most 2x the floor", fmt.Sprintf("%.2fx", x), x <= 2})
		}
	}
	return out
}

// writeScaling writes the medians of BenchmarkScaling by operation and
// size, each with its growth over the size before, and how many times an
// indexed lookup beats a scan of the fact table.
func writeScaling(w io.Writer, r results, sizes []string) {
	fmt.Fprintf(w, "\n| operation | %s |\n|---|%s\n", strings.Join(sizes, " | "), strings.Repeat("---|", len(sizes)))
	for _, op := range []string{"get", "floor-get", "lookup", "floor-lookup", "range100", "floor-range100", "insert", "scan-lookup"} {
		cells := []string{op}
		for i, size := range sizes {
			ns := r.med(size, op, "ns/op")
			cell := duration(ns)
			if prev := r.med(sizesAt(sizes, i-1), op, "ns/op"); i > 0 && prev > 0 {
				cell += fmt.Sprintf(" (x%.2f)", ns/prev)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	cells := []string{"lookup speedup over the scan"}
	for _, size := range sizes {
		cells = append(cells, fmt.Sprintf("%.0fx", r.med(size, "scan-lookup", "ns/op")/r.med(size, "lookup", "ns/op")))
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

func sizesAt(sizes []string, i int) string {
	if i < 0 {
		return ""
	}
	return sizes[i]
}
