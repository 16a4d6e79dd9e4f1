package main

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/mod/module"
)

// errGoSum reports a go.sum line that is not "path version hash".
var errGoSum = errors.New("malformed go.sum line")

// hashes are the go.sum hashes of one module version: of its zip, and of
// its go.mod (the line whose version ends in "/go.mod").
type hashes struct{ Zip, Mod string }

// sumLines returns the go.sum lines of mod with hashes h.
func sumLines(mod module.Version, h hashes) map[module.Version][]string {
	return map[module.Version][]string{
		mod: {h.Zip},
		{Path: mod.Path, Version: mod.Version + "/go.mod"}: {h.Mod},
	}
}

// parseSum reads the lines of a go.sum, each module version's hashes.
func parseSum(name string, data []byte) (map[module.Version][]string, error) {
	sums := map[module.Version][]string{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch len(f) {
		case 0:
			continue
		case 3:
			mod := module.Version{Path: f[0], Version: f[1]}
			sums[mod] = append(sums[mod], f[2])
		default:
			return nil, fmt.Errorf("%w: %s:%d: %q", errGoSum, name, i+1, line)
		}
	}
	return sums, nil
}

// formatSum writes sums as the go command does: sorted by module path, then
// version, each version's hashes sorted.
func formatSum(sums map[module.Version][]string) []byte {
	mods := make([]module.Version, 0, len(sums))
	for mod := range sums {
		mods = append(mods, mod)
	}
	module.Sort(mods)
	var b bytes.Buffer
	for _, mod := range mods {
		hs := append([]string(nil), sums[mod]...)
		sort.Strings(hs)
		for i, h := range hs {
			if i == 0 || h != hs[i-1] {
				fmt.Fprintf(&b, "%s %s %s\n", mod.Path, mod.Version, h)
			}
		}
	}
	return b.Bytes()
}

// withSums returns the go.sum old (named name, for errors) with every line
// of a module drop selects removed and the lines of add added.
func withSums(name string, old []byte, drop func(path string) bool, add map[module.Version][]string) ([]byte, error) {
	sums, err := parseSum(name, old)
	if err != nil {
		return nil, err
	}
	for mod := range sums {
		if drop(mod.Path) {
			delete(sums, mod)
		}
	}
	for mod, hs := range add {
		sums[mod] = append(sums[mod], hs...)
	}
	return formatSum(sums), nil
}
