package indextable

import (
	"bytes"
	"slices"

	"github.com/indextable/indextable/internal/tuple"
	"github.com/indextable/indextable/kv"
)

// This file builds the keys of the layout kv.KeySpace describes, but for
// their last elements: a record's primary key components (Table.factKey)
// and an entry's key fields (indexTable.keys) are appended where they are
// computed.

// tablePrefix returns the prefix of every key of table name.
func tablePrefix(name string) []byte { return slices.Clip(tuple.AppendString(nil, name)) }

// spacePrefix returns the prefix of the keys in space s of the table whose
// prefix is table; for SpaceUsage and SpaceRecordType, the key itself, and
// for SpaceLeases, the key of the partitioning record (see lease).
func spacePrefix(table []byte, s kv.KeySpace) []byte {
	return slices.Clip(tuple.AppendInt(bytes.Clone(table), int64(s)))
}

// usageKey returns the key of the table's usage totals.
func usageKey(table []byte) []byte { return spacePrefix(table, kv.SpaceUsage) }

// recordTypeKey returns the key of the table's record type.
func recordTypeKey(table []byte) []byte { return spacePrefix(table, kv.SpaceRecordType) }

// catalogKey returns the key of the catalog entry of index name.
func catalogKey(table []byte, name string) []byte {
	return tuple.AppendString(spacePrefix(table, kv.SpaceCatalog), name)
}

// schemaVersionKey returns the key of the table's schema version: the
// catalog entry of the empty name, which no index has. Every change of the
// catalog's indexes, generations or states changes it, in the batch that
// makes the change; writes on a store of unbounded atomicity expect it.
func schemaVersionKey(table []byte) []byte { return catalogKey(table, "") }

// indexPrefix returns the prefix of the entries of every generation of
// index name, in SpaceIntra when intra is set, else SpaceIndex.
func indexPrefix(table []byte, intra bool, name string) []byte {
	s := kv.SpaceIndex
	if intra {
		s = kv.SpaceIntra
	}
	return tuple.AppendString(spacePrefix(table, s), name)
}

// generationPrefix returns the prefix of the entries of generation gen of
// index name.
func generationPrefix(table []byte, intra bool, name string, gen int64) []byte {
	return slices.Clip(tuple.AppendInt(indexPrefix(table, intra, name), gen))
}

// leasesOf returns the prefix of the leases of the maintainers of a
// partitioning of the queue into partitions.
func leasesOf(table []byte, partitions int) []byte {
	return tuple.AppendInt(spacePrefix(table, kv.SpaceLeases), int64(partitions))
}

// leaseKey returns the key of the lease of maintainer partition of
// partitions.
func leaseKey(table []byte, partitions, partition int) []byte {
	return tuple.AppendInt(leasesOf(table, partitions), int64(partition))
}

// appendChangeKey appends to dst the key of a change record of the record
// with encoded primary key pk, with change ID id, in the table whose
// queue space is queue.
func appendChangeKey(dst, queue, pk []byte, id int64) []byte {
	return tuple.AppendInt(append(append(dst, queue...), pk...), id)
}

// hintKey returns the key of the hint of the change record at changeKey,
// in the table whose queue space is queue and hint space is hints: the
// change record's key with the one space in place of the other.
func hintKey(hints, queue, changeKey []byte) []byte {
	return append(bytes.Clone(hints), changeKey[len(queue):]...)
}

// fnv1a is the 64-bit FNV-1a hash of b: the one hash of keys, which places
// records on shards and their changes in maintainer partitions, and
// fingerprints index definitions. Stored data depends on it: never change it.
func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
