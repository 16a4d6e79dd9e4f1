package bench

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/indextable/indextable"
	"github.com/stretchr/testify/require"
)

// systems are the Systems TestPeersAgree checks against its reference
// model, by name.
var systems = map[string]func() (System, error){
	"floor":           NewFloor,
	"floor-keys-only": NewKeysOnlyFloor,
	"memdb":           NewMemDB,
	"buntdb":          NewBuntDB,
	"indextable-full-copy": func() (System, error) {
		return NewIndexTable(indextable.NewMemoryStore(), indextable.FullCopy)
	},
	"indextable-keys-only": func() (System, error) {
		return NewIndexTable(indextable.NewMemoryStore(), indextable.KeysOnly)
	},
	"indextable-partial": func() (System, error) {
		return NewIndexTable(indextable.NewMemoryStore(), indextable.Partial)
	},
}

// peerModel is the reference: the customers by ID, and the workload's
// queries answered by filtering and sorting them.
type peerModel map[string]Customer

// lookup is the customers of town named last, in ID order.
func (m peerModel) lookup(town, last string) []Customer {
	var out []Customer
	for _, c := range m {
		if c.Town == town && c.LastName == last {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Customer) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// rangeOf is the first n customers of town in (LastName, ID) order.
func (m peerModel) rangeOf(town string, n int) []Customer {
	var out []Customer
	for _, c := range m {
		if c.Town == town {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Customer) int {
		return cmp.Or(cmp.Compare(a.LastName, b.LastName), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(max(n, 0), len(out))]
}

// TestPeersAgree loads each System with customers, moves some of them to
// other towns and surnames, and checks every query against the reference
// model.
func TestPeersAgree(t *testing.T) {
	const (
		loaded = 2000
		moved  = 200
	)
	model := peerModel{}
	for i := range loaded {
		c := NewCustomer(i)
		model[c.ID] = c
	}
	// Every tenth customer moves. Moved(c, i) and Moved(c, i+1000) share a
	// town and surname, so some pairs name several customers, and a town
	// holds customers of interleaved IDs.
	var updates []Customer
	for k := range moved {
		i := k * (loaded / moved)
		u := Moved(NewCustomer(i), i)
		updates = append(updates, u)
		model[u.ID] = u
	}

	// The (town, surname) pairs to look up: every pair the model holds,
	// and pairs it does not.
	pairs := map[[2]string]bool{}
	shared := 0
	for _, c := range model {
		pair := [2]string{c.Town, c.LastName}
		if pairs[pair] {
			shared++
		}
		pairs[pair] = true
	}
	require.Positive(t, shared, "no (town, surname) pair names two customers")
	missingPairs := [][2]string{
		{"Town005", "Surname9999"}, // a surname the town lacks
		{"Town999", "Surname0000"}, // a town that does not exist
		{"Town00", "Surname0000"},  // a prefix of Town000..Town009
		{"Town000", "Surname000"},  // a prefix of Surname0000..Surname0009
	}
	var townNames []string
	for i := range Towns {
		townNames = append(townNames, fmt.Sprintf("Town%03d", i))
	}
	// Every customer of the towns Town000, Town010, ... moves away, to
	// Town003, Town013, ...: some towns are empty, some hold 40.
	sizes := map[int]bool{}
	for _, town := range townNames {
		sizes[len(model.rangeOf(town, loaded))] = true
	}
	require.True(t, sizes[0], "no town is empty")
	require.True(t, sizes[40], "no town holds 40")
	allIDs := make([]string, 0, len(model))
	for id := range model {
		allIDs = append(allIDs, id)
	}
	sort.Strings(allIDs)

	names := make([]string, 0, len(systems))
	for name := range systems {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := systems[name]()
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()

			for i := range loaded {
				require.NoError(t, s.Insert(NewCustomer(i)))
			}
			for _, u := range updates {
				require.NoError(t, s.Update(u))
			}

			// Get of every customer, and of missing IDs.
			for _, id := range allIDs {
				got, err := s.Get(id)
				require.NoError(t, err, "Get(%s)", id)
				require.Equal(t, model[id], got, "Get(%s)", id)
			}
			for _, id := range []string{"C9999999", "C000000", "", "C0000000x"} {
				_, err := s.Get(id)
				require.Truef(t, errors.Is(err, ErrNotFound), "Get(%q) = %v, want ErrNotFound", id, err)
			}

			// Lookup of every pair, in ID order, and of missing pairs.
			for pair := range pairs {
				var got []Customer
				require.NoError(t, s.Lookup(pair[0], pair[1], func(c Customer) { got = append(got, c) }))
				require.Equal(t, model.lookup(pair[0], pair[1]), got, "Lookup(%s, %s)", pair[0], pair[1])
			}
			for _, pair := range missingPairs {
				var got []Customer
				require.NoError(t, s.Lookup(pair[0], pair[1], func(c Customer) { got = append(got, c) }))
				require.Empty(t, got, "Lookup(%s, %s)", pair[0], pair[1])
			}

			// Range of every town: n = 1 and 7 (fewer than most towns
			// hold), 100 (more than any holds) and far more. (n = 0 is
			// left out: the interface does not say, and indextable's
			// Query takes a Limit of 0 as no limit.)
			for _, town := range townNames {
				for _, n := range []int{1, 7, 100, 10 * loaded} {
					var got []Customer
					require.NoError(t, s.Range(town, n, func(c Customer) { got = append(got, c) }))
					require.Equal(t, model.rangeOf(town, n), got, "Range(%s, %d)", town, n)
				}
			}
			for _, town := range []string{"Town999", "Town00", "Town0000", ""} {
				var got []Customer
				require.NoError(t, s.Range(town, 100, func(c Customer) { got = append(got, c) }))
				require.Empty(t, got, "Range(%q, 100)", town)
			}

			// Scan, as a set: each customer once, as the model has it.
			scanned := map[string]Customer{}
			require.NoError(t, s.Scan(func(c Customer) {
				_, dup := scanned[c.ID]
				require.False(t, dup, "Scan yields %s twice", c.ID)
				scanned[c.ID] = c
			}))
			require.Equal(t, map[string]Customer(model), scanned)
		})
	}
}
