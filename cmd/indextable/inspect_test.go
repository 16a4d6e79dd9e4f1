package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInspect: catalog, stats and advise, as tables and as JSON.
func TestInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	writeStore(t, dir)

	out, errs, code := runCLI(t, "catalog", dir)
	require.Equal(t, exitOK, code, errs)
	t.Log("\n" + out)
	for _, want := range []string{"table accounts", "table logs: no index tables", "email", "readable", "keys-only", "unique", "full-copy", "partial", "Email", "inter-partition"} {
		assert.Contains(t, out, want)
	}

	out, errs, code = runCLI(t, "stats", dir)
	require.Equal(t, exitOK, code, errs)
	t.Log("\n" + out)
	assert.Contains(t, out, "table accounts: 200 records")
	assert.Regexp(t, `active\s+200\s+2\s+\(false\)\s+50%`, out)
	assert.Regexp(t, `email\s+200\s+200\s+.*\s+100\s+100\s+200\s+1\.00`, out)

	out, errs, code = runCLI(t, "advise", "-min-writes", "100", dir)
	require.Equal(t, exitOK, code, errs)
	t.Log("\n" + out)
	assert.Regexp(t, `active\s+low-cardinality\s+2 distinct keys over 200 entries`, out)
	assert.Regexp(t, `town\s+unused\s+no query read it in 200 record writes`, out)
	assert.NotRegexp(t, `email\s+(unused|low-cardinality|skewed|volatile)`, out, "the healthy index has no finding")
	assert.Contains(t, out, "table logs: no findings")

	// The default of -min-writes, 1000, is more than the 200 writes.
	out, errs, code = runCLI(t, "advise", dir)
	require.Equal(t, exitOK, code, errs)
	assert.NotContains(t, out, "unused")

	out, errs, code = runCLI(t, "advise", "-json", "-table", "accounts", "-min-writes", "100", dir)
	require.Equal(t, exitOK, code, errs)
	var got struct {
		Tables []struct {
			Name     string `json:"name"`
			Records  int64  `json:"records"`
			Findings []struct {
				Index  string `json:"index"`
				Kind   string `json:"kind"`
				Reason string `json:"reason"`
			} `json:"findings"`
			Indexes []struct {
				Name  string `json:"name"`
				Stats struct {
					Entries      int64 `json:"entries"`
					DistinctKeys int64 `json:"distinctKeys"`
				} `json:"stats"`
				Usage struct {
					Reads              int64   `json:"reads"`
					WriteAmplification float64 `json:"writeAmplification"`
				} `json:"usage"`
			} `json:"indexes"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got.Tables, 1)
	acc := got.Tables[0]
	assert.Equal(t, int64(200), acc.Records)
	var kinds []string
	for _, f := range acc.Findings {
		kinds = append(kinds, f.Index+" "+f.Kind)
	}
	assert.Equal(t, []string{"active low-cardinality", "town unused"}, kinds)
	for _, ix := range acc.Indexes {
		assert.Equal(t, int64(200), ix.Stats.Entries, ix.Name)
		if ix.Name == "email" {
			assert.Equal(t, int64(200), ix.Stats.DistinctKeys)
			assert.Equal(t, int64(100), ix.Usage.Reads)
			assert.InDelta(t, 1.0, ix.Usage.WriteAmplification, 1e-9)
		}
	}

	// Stats says what the tables hold and did, and no findings.
	out, errs, code = runCLI(t, "stats", "-json", dir)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, `"distinctKeys"`)
	assert.NotContains(t, out, `"findings"`)
}
