package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// duration formats a time in nanoseconds.
func duration(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// ratio formats a/b as "1.23x", or "–" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// num formats a count per operation or a size: 3 significant figures at
// most, no exponent.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100 || v == math.Trunc(v):
		return grouped(v)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// grouped formats v rounded to an integer, with thousands separated by
// commas.
func grouped(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// para writes text as a paragraph, wrapped at 100 columns.
func para(w io.Writer, text string) {
	line := 0
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case line+1+len(word) > 100:
			fmt.Fprintln(w)
			line = 0
		default:
			fmt.Fprint(w, " ")
			line++
		}
		fmt.Fprint(w, word)
		line += len(word)
	}
	fmt.Fprint(w, "\n\n")
}

// table writes a Markdown table.
func table(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

type target struct {
	what, detail string
	met          bool
}

// writeTargets lists the targets, each met or missed.
func writeTargets(w io.Writer, ts []target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintln(w, "Targets, on the medians of this run:")
	fmt.Fprintln(w)
	for _, t := range ts {
		mark := "met"
		if !t.met {
			mark = "**missed**"
		}
		fmt.Fprintf(w, "- %s: %s (%s)\n", t.what, mark, t.detail)
	}
	fmt.Fprintln(w)
}

// atMost is the target that a/b be at most limit; none when b is 0.
func atMost(what string, a, b, limit float64) []target {
	if b == 0 || a == 0 {
		return nil
	}
	x := a / b
	return []target{{what, fmt.Sprintf("%.2fx", x), x <= limit}}
}

// faster is the target that a be less than b, as a ratio; none when either
// is 0.
func faster(what string, a, b float64) []target {
	if b == 0 || a == 0 {
		return nil
	}
	return []target{{what, fmt.Sprintf("%.2fx", a/b), a < b}}
}
