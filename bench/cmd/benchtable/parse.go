package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// run is one raw file: the results of its benchmarks and its configuration
// lines.
type run struct {
	// res holds, by benchmark name (without "Benchmark" and the GOMAXPROCS
	// suffix, such as "Compare/floor/lookup") and unit, each run's value.
	res map[string]map[string][]float64
	// order holds the names in the order they first appear.
	order []string
	// config holds, by key (date, go, goos, goarch, cpu, pkg), the distinct
	// values of the file's "key: value" lines, in order.
	config map[string][]string
	// before is the earlier run its section compares with (section.before),
	// if the section names one and its file exists.
	before *run
}

var (
	// A result line: BenchmarkCompare/floor/lookup-2  20000  312.5 ns/op  0 B/op ...
	resultLine = regexp.MustCompile(`^Benchmark(\S+)\s+\d+\s+(.+)$`)
	// A configuration line, such as "cpu: AMD EPYC 7B13" or "date: ...".
	configLine = regexp.MustCompile(`^([a-z]+): (.+)$`)
	// The GOMAXPROCS suffix go test adds to every name when it is above 1.
	procsSuffix = regexp.MustCompile(`-\d+$`)
)

// parse reads a raw file.
func parse(r io.Reader) (*run, error) {
	type line struct {
		name   string
		fields []string
	}
	var lines []line
	config := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		text := strings.TrimRight(sc.Text(), " \t\r")
		if m := resultLine.FindStringSubmatch(text); m != nil {
			lines = append(lines, line{m[1], strings.Fields(m[2])})
			continue
		}
		if m := configLine.FindStringSubmatch(text); m != nil && !slices.Contains(config[m[1]], m[2]) {
			config[m[1]] = append(config[m[1]], m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// go test adds "-N" to every name when GOMAXPROCS is N > 1, and nothing
	// when it is 1: strip a suffix only when every name has the same one, so
	// that a name of its own that ends in digits (Maintainer/batch-256) keeps
	// them.
	suffix := ""
	if len(lines) > 0 {
		suffix = procsSuffix.FindString(lines[0].name)
		for _, l := range lines {
			if !strings.HasSuffix(l.name, suffix) {
				suffix = ""
				break
			}
		}
	}
	r2 := &run{res: map[string]map[string][]float64{}, config: config}
	for _, l := range lines {
		name := strings.TrimSuffix(l.name, suffix)
		if r2.res[name] == nil {
			r2.res[name] = map[string][]float64{}
			r2.order = append(r2.order, name)
		}
		for i := 0; i+1 < len(l.fields); i += 2 {
			v, err := strconv.ParseFloat(l.fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("Benchmark%s: %q: %w", l.name, l.fields[i], err)
			}
			r2.res[name][l.fields[i+1]] = append(r2.res[name][l.fields[i+1]], v)
		}
	}
	return r2, nil
}

// med returns the median of name's values of unit, 0 when it has none.
func (r *run) med(name, unit string) float64 { return median(r.res[name][unit]) }

// has reports whether name has values of unit.
func (r *run) has(name, unit string) bool { return len(r.res[name][unit]) > 0 }

// runs returns how many values of unit name has.
func (r *run) runs(name, unit string) int { return len(r.res[name][unit]) }

// span returns the least and the greatest of name's values of unit.
func (r *run) span(name, unit string) (lo, hi float64) {
	v := r.res[name][unit]
	if len(v) == 0 {
		return 0, 0
	}
	return slices.Min(v), slices.Max(v)
}

// names returns the names that start with prefix, in order.
func (r *run) names(prefix string) []string {
	var out []string
	for _, n := range r.order {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// pooled returns the values of unit of every name under prefix whose last
// element is last, in the order of the names, and how many names those
// are: the runs of one benchmark timed in rounds, each round a name of its
// own (VersionCondition/round=01/condition=with, round=02, ...).
func (r *run) pooled(prefix, last, unit string) (values []float64, names int) {
	for _, n := range r.names(prefix) {
		if n == last || strings.HasSuffix(n, "/"+last) {
			values = append(values, r.res[n][unit]...)
			names++
		}
	}
	return values, names
}

// stamp says where and when the file's benchmarks ran.
func (r *run) stamp() string {
	get := func(key string) string {
		if v := r.config[key]; len(v) > 0 {
			return strings.Join(v, ", ")
		}
		return "unknown"
	}
	return fmt.Sprintf("run %s with %s on %s/%s, cpu: %s", get("date"), get("go"), get("goos"), get("goarch"), get("cpu"))
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
