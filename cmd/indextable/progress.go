package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/indextable/indextable"
)

// progressFlag is -progress: unset, the bar is drawn on a terminal only;
// set, as it says.
type progressFlag struct {
	set, on bool
}

func (p *progressFlag) String() string {
	if p == nil || !p.set {
		return "auto"
	}
	return strconv.FormatBool(p.on)
}

func (p *progressFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	p.set, p.on = true, on
	return nil
}

// IsBoolFlag lets -progress stand for -progress=true.
func (p *progressFlag) IsBoolFlag() bool { return true }

// show reports whether to draw the bar on w, which terminal (isTerminal
// when nil) says is a terminal or not.
func (p *progressFlag) show(w io.Writer, terminal func(io.Writer) bool) bool {
	if p.set {
		return p.on
	}
	if terminal == nil {
		terminal = isTerminal
	}
	return terminal(w)
}

// isTerminal reports whether w is a terminal: a file that is a character
// device (a terminal, or /dev/null), not a regular file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// progressBar draws Verify's progress on one line, redrawn in place.
type progressBar struct {
	w     io.Writer
	table string
	width int // of the line last drawn, which a shorter one must cover
}

const barWidth = 30

func (b *progressBar) show(p indextable.VerifyProgress) {
	filled := barWidth
	percent := 100
	if p.Total > 0 {
		filled = int(min(p.Done, p.Total) * barWidth / p.Total)
		percent = int(min(p.Done, p.Total) * 100 / p.Total)
	}
	line := fmt.Sprintf("%s %-20s [%s%s] %3d%% %d/%d", b.table, p.Phase, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), percent, p.Done, p.Total)
	fmt.Fprintf(b.w, "\r%-*s", b.width, line)
	b.width = max(b.width, len(line))
}

// done ends the bar's line, if one was drawn.
func (b *progressBar) done() {
	if b.width > 0 {
		fmt.Fprintln(b.w)
	}
}
