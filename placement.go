package indextable

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// Placement says where an index table's entries lie on a store whose
// atomicity scope is a partition (Azure Table storage, for instance), in
// the terms of Microsoft's table design guidance. On other stores both
// placements behave alike.
type Placement uint8

const (
	// AutoPlacement picks IntraPartition when the index's first key field
	// is the table's first primary key field and the store puts such entries
	// in their record's partition, and InterPartition otherwise.
	AutoPlacement Placement = iota
	// InterPartition partitions the entries by the index key: a read of one
	// key, or of a prefix range, is one partition's query, from anywhere in
	// the table. A write's entries lie outside its record's partition, so on
	// a partitioned store the write falls back to the queue (see the
	// fallback rule) and the index is eventually consistent.
	InterPartition
	// IntraPartition keeps the entries in their record's partition: a write
	// commits its record and these entries in one transaction, so the index
	// is strongly consistent, and its unique keys can be checked. A read
	// fixes the first primary key field (the partition), as the index's key
	// starts with it. Only for an index whose first field, in Fields, is the
	// first primary key field.
	IntraPartition
)

// String names the placement.
func (p Placement) String() string {
	switch p {
	case AutoPlacement:
		return "auto"
	case InterPartition:
		return "inter-partition"
	case IntraPartition:
		return "intra-partition"
	}
	return fmt.Sprintf("Placement(%d)", uint8(p))
}

// resolvePlacement settles the placement asked of the index ix, whose
// key fields are fields, in a table whose first primary key field is pk0,
// over store s.
func (ix *indexTable) resolvePlacement(asked Placement, fields []string, pk0 field, tablePrefix, factSpace []byte, s kv.Store) error {
	leads := len(fields) > 0 && fields[0] == pk0.name
	switch asked {
	case InterPartition:
		return nil
	case AutoPlacement, IntraPartition:
	default:
		return fmt.Errorf("%w: index %q: unknown placement %v", ErrInvalidSchema, ix.name, asked)
	}
	if !leads {
		if asked == AutoPlacement {
			return nil
		}
		return fmt.Errorf("%w: index %q: an IntraPartition index needs the first primary key field, %q, as its first field",
			ErrInvalidSchema, ix.name, pk0.name)
	}
	partition := s.Atomicity().Partition
	if partition == nil {
		ix.intra = asked == IntraPartition
		return nil
	}
	// Does the store put an entry in its record's partition? Ask it, for a
	// record whose first key field holds its zero value.
	sample := tuple.AppendValue(nil, reflect.Zero(pk0.typ))
	record := append(bytes.Clone(factSpace), sample...)
	entry := append(generationPrefix(tablePrefix, true, ix.name, 1), sample...)
	if bytes.Equal(partition(record), partition(entry)) {
		ix.intra = true
		return nil
	}
	if asked == AutoPlacement {
		return nil
	}
	return fmt.Errorf("%w: index %q: IntraPartition, but the store puts its entries outside their records' partitions", ErrInvalidSchema, ix.name)
}

// checkUniquePlacement refuses a unique index whose entries a partitioned
// store s would put outside their records' partitions. A write checks that
// a key is free, and takes it, in the batch that writes its record, and a
// delete frees it so; only an entry in the record's partition can share
// that batch. Such an index would refuse most writes (those whose key lies
// in another partition than the record), and a record whose key moved
// there while the index was being built could be neither deleted nor
// indexed.
func (ix *indexTable) checkUniquePlacement(pk0 field, s kv.Store) error {
	if !ix.unique || ix.intra || s.Atomicity().Partition == nil {
		return nil
	}
	return fmt.Errorf("%w: unique index %q: on this store its entries would lie outside their records' partitions, "+
		"where no write can check a key; lead its Fields with the first primary key field, %q, to keep its entries with their records "+
		"(IntraPartition): a key is then unique among the records of one %s", ErrInvalidSchema, ix.name, pk0.name, pk0.name)
}

// placement returns where the entries of ix lie.
func (ix *indexTable) placement() Placement {
	if ix.intra {
		return IntraPartition
	}
	return InterPartition
}
