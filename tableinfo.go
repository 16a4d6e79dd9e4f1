package indextable

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// IndexInfo is one index of a TableInfo.
type IndexInfo struct {
	IndexStatus
	// Definition is nil for an index whose catalog entry an older version of
	// the library wrote, until the table is next opened.
	Definition *IndexDefinition
}

// TableInfo is a table of a store, as its catalog records it.
type TableInfo struct {
	Name string
	// PrimaryKey names its primary key fields, as the table was last opened
	// with, or as its index definitions record them; nil when neither is
	// kept.
	PrimaryKey []string
	// Indexes holds its indexes in name order, dropped ones left out.
	Indexes []IndexInfo
	// Codec names the codec of its records ("json", "binary", or a type)
	// and RecordType describes their type, as the table was last opened with;
	// both are empty when no record type is kept (see VerifyTable).
	Codec, RecordType string
}

// ReadCatalog lists the tables of store in name order, with their indexes
// as their catalogs record them, without the program's record types: it is
// for tools. A table that never had an index is listed with none; keys that
// are no table's (a ShardedStore's record type record, say) are passed over.
func ReadCatalog(ctx context.Context, store kv.Store) ([]TableInfo, error) {
	if err := checkArguments(ctx, store); err != nil {
		return nil, err
	}
	var out []TableInfo
	var from []byte
	for {
		var name string
		found := false
		var other []byte // a key that is no table's
		for e, err := range store.Scan(ctx, kv.ScanRange{Start: from, Limit: 1}) {
			if err != nil {
				return nil, err
			}
			v, _, err := kv.DecodeElement(e.Key)
			s, ok := v.(string)
			if err != nil || !ok {
				other = bytes.Clone(e.Key)
				continue
			}
			name, found = s, true
		}
		if other != nil {
			from = append(other, 0) // the next key
			continue
		}
		if !found {
			return out, nil
		}
		prefix := tablePrefix(name)
		info, err := readTableInfo(ctx, store, name, prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
		from = tuple.End(prefix)
	}
}

func readTableInfo(ctx context.Context, store kv.Store, name string, prefix []byte) (TableInfo, error) {
	info := TableInfo{Name: name}
	var err error
	if info.Codec, info.RecordType, info.PrimaryKey, err = readRecordType(ctx, store, prefix); err != nil {
		return TableInfo{}, fmt.Errorf("table %q: %w", name, err)
	}
	space := spacePrefix(prefix, kv.SpaceCatalog)
	for e, err := range store.Scan(ctx, kv.ScanRange{Start: space, End: tuple.End(space)}) {
		if err != nil {
			return TableInfo{}, err
		}
		v, _, err := kv.DecodeElement(e.Key[len(space):])
		ixName, ok := v.(string)
		if err != nil || !ok {
			return TableInfo{}, fmt.Errorf("%w: table %q: catalog key %q", ErrCodec, name, e.Key)
		}
		if ixName == "" {
			continue // the schema version
		}
		c, err := decodeCatalogEntry(e.Value)
		if err != nil {
			return TableInfo{}, fmt.Errorf("table %q, index %q: %w", name, ixName, err)
		}
		if c.state == indexDropped {
			continue
		}
		ii := IndexInfo{IndexStatus: IndexStatus{Name: ixName, State: c.state, Generation: c.gen, Placement: InterPartition, Done: c.done, Total: c.total}}
		if c.def != nil {
			d, err := decodeIndexDefinition(c.def)
			if err != nil {
				return TableInfo{}, fmt.Errorf("table %q, index %q: %w", name, ixName, err)
			}
			ii.Definition, ii.Placement = &d, d.Placement
		}
		info.Indexes = append(info.Indexes, ii)
		if len(info.PrimaryKey) == 0 && ii.Definition != nil { // kept by no record type
			info.PrimaryKey = slices.Clone(ii.Definition.PrimaryKey)
		}
	}
	return info, nil
}
