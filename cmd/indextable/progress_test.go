package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/indextable/indextable"
)

// TestProgress: verify and repair draw their progress on stderr when it
// is a terminal, or when -progress says so, and not otherwise; what they
// print on stdout is the same either way.
func TestProgress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)
	for _, tc := range []struct {
		name     string
		args     []string
		terminal bool
		shown    bool
	}{
		{"no terminal", []string{"verify"}, false, false},
		{"no terminal, -progress", []string{"verify", "-progress"}, false, true},
		{"no terminal, -progress=true", []string{"repair", "-progress=true"}, false, true},
		{"terminal", []string{"verify"}, true, true},
		{"terminal, repair", []string{"repair"}, true, true},
		{"terminal, -progress=false", []string{"verify", "-progress=false"}, true, false},
		{"terminal, -json", []string{"verify", "-json"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var asked []io.Writer
			c := &cli{stdout: &stdout, stderr: &stderr, terminal: func(w io.Writer) bool {
				asked = append(asked, w)
				return tc.terminal
			}}
			code := c.run(context.Background(), append(tc.args, dir))
			require.Equal(t, exitOK, code, stderr.String())
			assert.NotContains(t, stdout.String(), "\r")
			if !tc.shown {
				assert.Empty(t, stderr.String())
				return
			}
			assert.Contains(t, stderr.String(), "\raccounts records")
			assert.Contains(t, stderr.String(), "] 100% 200/200")
			assert.True(t, strings.HasSuffix(stderr.String(), "\n"), "the bar's line ends")
			if !strings.Contains(strings.Join(tc.args, " "), "-progress") {
				assert.Equal(t, []io.Writer{&stderr}, asked, "stderr is what is asked about")
			}
		})
	}
}

// TestProgressFiles: with stderr a regular file, or a pipe, verify draws
// no progress on it unless told to.
func TestProgressFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)
	file := func(t *testing.T) (*os.File, func() string) {
		f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		require.NoError(t, err)
		return f, func() string {
			require.NoError(t, f.Close())
			b, err := os.ReadFile(f.Name())
			require.NoError(t, err)
			return string(b)
		}
	}
	pipe := func(t *testing.T) (*os.File, func() string) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		read := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			r.Close()
			read <- string(b)
		}()
		return w, func() string {
			require.NoError(t, w.Close())
			return <-read
		}
	}
	for name, open := range map[string]func(t *testing.T) (*os.File, func() string){"file": file, "pipe": pipe} {
		for _, flags := range [][]string{nil, {"-progress"}} {
			t.Run(name+strings.Join(flags, ""), func(t *testing.T) {
				stderr, written := open(t)
				var stdout bytes.Buffer
				c := &cli{stdout: &stdout, stderr: stderr}
				code := c.run(context.Background(), append(append([]string{"verify"}, flags...), dir))
				got := written()
				require.Equal(t, exitOK, code, got)
				if flags == nil {
					assert.NotContains(t, got, "\r")
					assert.Empty(t, got)
				} else {
					assert.Contains(t, got, "\raccounts records")
				}
			})
		}
	}
}

// TestIsTerminal: only a character device is taken for a terminal.
func TestIsTerminal(t *testing.T) {
	assert.False(t, isTerminal(&bytes.Buffer{}), "a buffer")
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f), "a regular file")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w), "a pipe")
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	assert.True(t, isTerminal(null), "a character device, as a terminal is")
	require.NoError(t, f.Close())
	assert.False(t, isTerminal(f), "a file that cannot be asked")
}

// TestProgressFlag: -progress is a boolean flag that remembers whether
// it was given.
func TestProgressFlag(t *testing.T) {
	never := func(io.Writer) bool { return false }
	always := func(io.Writer) bool { return true }
	var p progressFlag
	assert.Equal(t, "auto", p.String())
	assert.False(t, p.show(nil, never))
	assert.True(t, p.show(nil, always))
	assert.False(t, p.show(&bytes.Buffer{}, nil), "isTerminal by default")
	require.NoError(t, p.Set("false"))
	assert.Equal(t, "false", p.String())
	assert.False(t, p.show(nil, always))
	require.NoError(t, p.Set("true"))
	assert.True(t, p.show(nil, never))
	assert.Error(t, p.Set("sometimes"))
	assert.True(t, p.IsBoolFlag())
}

// TestProgressBar: the bar is redrawn in place, a shorter line covering
// a longer one, and its line ended once done.
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	bar := progressBar{w: &b, table: "t"}
	bar.done()
	assert.Empty(t, b.String(), "nothing drawn, nothing to end")
	bar.show(indextable.VerifyProgress{Phase: "records", Done: 5, Total: 10})
	bar.show(indextable.VerifyProgress{Phase: "email", Done: 0, Total: 0})
	bar.done()
	first := "t records              [###############...............]  50% 5/10"
	second := "t email                [##############################] 100% 0/0"
	assert.Equal(t, "\r"+first+"\r"+second+strings.Repeat(" ", len(first)-len(second))+"\n", b.String())
}
