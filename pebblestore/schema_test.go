package pebblestore_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
	"github.com/indextable/indextable/pebblestore"
	"github.com/indextable/indextable/pebblestore/internal/deployschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRollingDeployProcesses is a rolling deploy across real processes
// (internal/schemaproc), from a program of schema revision 1 (index
// "town") to one of revision 2 (adds "name"), on one Pebble directory:
//
//  1. revision 1 writes records;
//  2. revision 2 starts: its Open adds "name", write-only; it writes
//     records, and exits without building;
//  3. revision 1 starts again, as the previous release restarted before
//     the deploy is done: its Open, of an older Revision, must leave
//     "name" in the catalog, and its updates (which move Name values),
//     deletes and inserts must maintain "name", learnt from the catalog;
//     the test checks the catalog and the entries of "name" afterwards;
//  4. revision 2 runs Build, and both revisions Verify;
//  5. the test opens the table with revision 2's schema: Verify is clean,
//     the records are those every process wrote (revision 1's last), and
//     every query of "name" equals a scan of all records.
//
// A Pebble directory is held by one process at a time (Open fails with
// ErrLocked while another holds it), so the processes of the two
// revisions cannot run side by side: they take turns, as the instances of
// a service on one volume do. The test shows this too, while a process of
// revision 2 holds the directory.
func TestRollingDeployProcesses(t *testing.T) {
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "schemaproc")
	out, err := exec.Command("go", "build", "-o", bin, "./internal/schemaproc").CombinedOutput()
	require.NoError(t, err, "build the helper: %s", out)
	dir := t.TempDir()

	model := map[int]deployschema.Person{} // the records the store must hold
	// named holds the records last written since "name" was added: the
	// entries "name" must have before Build, one each.
	named := map[int]bool{}
	nameAdded := false
	write := func(rev, from, to, round int) []string {
		t.Helper()
		lines := runSchemaProc(t, bin, dir, rev, "write", "-from", strconv.Itoa(from), "-to", strconv.Itoa(to), "-round", strconv.Itoa(round))
		for id := from; id < to; id++ {
			model[id] = deployschema.Record(id, round)
			if nameAdded {
				named[id] = true
			}
		}
		return lines
	}
	del := func(rev, from, to int) []string {
		t.Helper()
		lines := runSchemaProc(t, bin, dir, rev, "delete", "-from", strconv.Itoa(from), "-to", strconv.Itoa(to))
		for id := from; id < to; id++ {
			delete(model, id)
			delete(named, id)
		}
		return lines
	}

	// 1. Revision 1 alone: the table is new and empty, "town" readable.
	requireIndexLines(t, write(1, 0, 120, 1), "town readable 1")

	// 2. Revision 2 adds "name", write-only as the table holds records;
	// updates 80..119 and inserts 120..159.
	nameAdded = true
	requireIndexLines(t, write(2, 80, 160, 2), "town readable 1", "name write-only 1")

	// While a process holds the directory, no other can open it: not this
	// one, nor a process of revision 1. Hence the turns.
	holdAndCheckLocked(t, bin, dir)

	// 3. Revision 1 restarted, in four processes, each of which opens the
	// table again with the older schema and must keep "name" as it is.
	want := []string{"town readable 1", "name write-only 1"}
	requireIndexLines(t, write(1, 40, 100, 3), want...) // moves the Names of 40..79 (round 1) and 80..99 (round 2)
	requireIndexLines(t, del(1, 100, 130), want...)     // records with entries in "name", 120..129 inserted by revision 2
	requireIndexLines(t, del(1, 0, 10), want...)        // records without
	requireIndexLines(t, write(1, 160, 180, 3), want...)
	checkCatalogAndNameEntries(ctx, t, dir, model, named)

	// 4. Revision 2 builds "name"; both revisions find the table clean.
	requireIndexLines(t, runSchemaProc(t, bin, dir, 2, "build"), "town readable 1", "name readable 1")
	for _, rev := range []int{1, 2} {
		lines := runSchemaProc(t, bin, dir, rev, "verify")
		require.Equal(t, fmt.Sprintf("verify 0 %d %d", len(model), 2*len(model)), lines[0], "revision %d: %q", rev, lines)
		requireIndexLines(t, lines, "town readable 1", "name readable 1")
	}

	// 5. This process, of revision 2.
	checkRollingDeployResult(ctx, t, dir, model)
}

// runSchemaProc runs the helper on dir with revision rev's schema and
// action do, requires that it succeeds, and returns the lines it printed.
func runSchemaProc(t *testing.T, bin, dir string, rev int, do string, args ...string) []string {
	t.Helper()
	args = append([]string{"-dir", dir, "-rev", strconv.Itoa(rev), "-do", do}, args...)
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "schemaproc %s: %s", strings.Join(args, " "), stderr.String())
	require.Empty(t, stderr.String(), "schemaproc %s: stderr", strings.Join(args, " "))
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

// requireIndexLines requires that the helper's lines report the indexes
// want ("NAME STATE GENERATION"), in that order, and no other.
func requireIndexLines(t *testing.T, lines []string, want ...string) {
	t.Helper()
	var got []string
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, "index "); ok {
			got = append(got, s)
		}
	}
	require.Equal(t, want, got, "the indexes the process knew, after its action: %q", lines)
}

// holdAndCheckLocked starts a process of revision 2 that holds dir, and
// checks that neither this process nor one of revision 1 can open the
// store meanwhile; then it ends the holder by closing its stdin.
func holdAndCheckLocked(t *testing.T, bin, dir string) {
	t.Helper()
	cmd := exec.Command(bin, "-dir", dir, "-rev", "2", "-do", "hold")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "holding" {
		_ = stdin.Close()
		err := cmd.Wait()
		t.Fatalf("the holder did not get the store: %q, %v: %s", sc.Text(), err, stderr.String())
	}

	_, err = pebblestore.Open(dir, pebblestore.Options{})
	assert.ErrorIs(t, err, pebblestore.ErrLocked, "this process, beside the holder")
	older := exec.Command(bin, "-dir", dir, "-rev", "1", "-do", "status")
	olderOut, err := older.CombinedOutput()
	assert.Error(t, err, "a process of revision 1, beside the holder")
	assert.Contains(t, string(olderOut), pebblestore.ErrLocked.Error())

	require.NoError(t, stdin.Close()) // the holder closes the store and exits
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	require.NoError(t, sc.Err())
	require.NoError(t, cmd.Wait(), "the holder: %s", stderr.String())
	require.Empty(t, stderr.String(), "the holder's stderr")
	requireIndexLines(t, rest, "town readable 1", "name write-only 1")
}

// checkCatalogAndNameEntries reads the store in dir, read-only, between
// the restarted revision 1 and Build: the catalog must still have "name"
// as revision 2 added it, and "name" must hold exactly one entry, with its
// record's Name, for each record of model that named holds (those written
// since it was added), and no other.
func checkCatalogAndNameEntries(ctx context.Context, t *testing.T, dir string, model map[int]deployschema.Person, named map[int]bool) {
	t.Helper()
	s := open(t, dir, pebblestore.Options{ReadOnly: true})
	defer func() { assert.NoError(t, s.Close()) }()
	tables, err := indextable.ReadCatalog(ctx, s)
	require.NoError(t, err)
	require.Len(t, tables, 1)
	var indexes []string
	for _, ix := range tables[0].Indexes { // in name order
		indexes = append(indexes, fmt.Sprintf("%s %s %d", ix.Name, ix.State, ix.Generation))
		require.Equal(t, indextable.InterPartition, ix.Placement, "index %s", ix.Name)
	}
	require.Equal(t, []string{"name write-only 1", "town readable 1"}, indexes, "the catalog after revision 1 restarted")

	nameIndex, err := kv.EncodeTuple(deployschema.ByName)
	require.NoError(t, err)
	got := map[int]string{} // by record id, the Name of its entry
	for e, err := range s.Scan(ctx, kv.ScanRange{}) {
		require.NoError(t, err)
		k, ok := kv.ParseKey(e.Key)
		if !ok || !bytes.Equal(k.Index, nameIndex) {
			continue
		}
		require.Equal(t, kv.SpaceIndex, k.Space, "key %q", e.Key)
		name, _, err := kv.DecodeElement(k.Lead)
		require.NoError(t, err, "key %q", e.Key)
		pk, err := kv.DecodeTuple(k.Rest)
		require.NoError(t, err, "key %q", e.Key)
		require.Len(t, pk, 1, "key %q", e.Key)
		id, ok := pk[0].(int64)
		require.True(t, ok, "key %q", e.Key)
		_, dup := got[int(id)]
		require.False(t, dup, "record %d has two entries in %q, the second %q", id, deployschema.ByName, name)
		got[int(id)] = name.(string)
	}
	want := map[int]string{}
	for id := range named {
		want[id] = model[id].Name
	}
	require.Equal(t, want, got, "the entries of %q before Build", deployschema.ByName)
}

// checkRollingDeployResult opens the store in dir with revision 2's schema
// after the deploy and checks the table: both indexes readable, Verify
// clean, the records model (revision 1's last writes among them), and
// every read of "name" the records a scan of all of them gives.
func checkRollingDeployResult(ctx context.Context, t *testing.T, dir string, model map[int]deployschema.Person) {
	t.Helper()
	s := open(t, dir, pebblestore.Options{NoSync: true})
	defer func() { assert.NoError(t, s.Close()) }()
	schema, err := deployschema.Schema(2)
	require.NoError(t, err)
	tbl, err := indextable.Open(ctx, s, schema)
	require.NoError(t, err)

	status, err := tbl.IndexStatus(ctx)
	require.NoError(t, err)
	var states []string
	for _, st := range status {
		states = append(states, fmt.Sprintf("%s %s %d", st.Name, st.State, st.Generation))
	}
	require.Equal(t, []string{"town readable 1", "name readable 1"}, states)
	rep, err := tbl.Verify(ctx, indextable.VerifyOptions{})
	require.NoError(t, err)
	require.Zero(t, rep.Total(), "drift: %v", rep.Samples)
	require.Zero(t, rep.Pending)
	require.Empty(t, rep.Skipped)
	require.EqualValues(t, len(model), rep.Records)
	require.EqualValues(t, 2*len(model), rep.Entries, "one entry per record in each index")

	// The records, in primary key order: the brute-force answer.
	var all []deployschema.Person
	for p, err := range tbl.Find(ctx, indextable.Query{}) {
		require.NoError(t, err)
		all = append(all, p)
	}
	ids := slices.Sorted(maps.Keys(model))
	want := make([]deployschema.Person, 0, len(ids))
	for _, id := range ids {
		want = append(want, model[id])
	}
	require.Equal(t, want, all, "the records after the deploy")
	// Revision 1's writes after revision 2's, spelled out.
	for _, id := range []int{40, 79, 80, 99, 160, 179} {
		p, err := tbl.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, deployschema.Record(id, 3), p, "record %d, written last by revision 1", id)
	}
	for _, id := range []int{0, 9, 100, 120, 129} {
		_, err := tbl.Get(ctx, id)
		require.ErrorIs(t, err, kv.ErrNotFound, "record %d, deleted by revision 1", id)
	}

	find := func(q indextable.Query) []deployschema.Person {
		var got []deployschema.Person
		for p, err := range tbl.Find(ctx, q) {
			require.NoError(t, err, "%+v", q)
			got = append(got, p)
		}
		return got
	}
	scan := func(keep func(deployschema.Person) bool) []deployschema.Person { // in index order
		var out []deployschema.Person
		for _, p := range all {
			if keep(p) {
				out = append(out, p)
			}
		}
		slices.SortStableFunc(out, func(a, b deployschema.Person) int { return cmp.Compare(a.Name, b.Name) })
		return out
	}
	names := map[string]bool{"n99": true} // one no record has
	for _, p := range all {
		names[p.Name] = true
	}
	for name := range names {
		q := indextable.Query{Index: deployschema.ByName, Eq: indextable.Tuple{name}}
		require.Equal(t, scan(func(p deployschema.Person) bool { return p.Name == name }), find(q), "Name %s", name)
	}
	require.Equal(t, scan(func(deployschema.Person) bool { return true }), find(indextable.Query{Index: deployschema.ByName}), "all of %q", deployschema.ByName)
	q := indextable.Query{Index: deployschema.ByName, Lower: indextable.Inclusive("n05"), Upper: indextable.Exclusive("n12")}
	require.Equal(t, scan(func(p deployschema.Person) bool { return p.Name >= "n05" && p.Name < "n12" }), find(q), "Names in [n05, n12)")
}
