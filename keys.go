package indextable

import (
	"bytes"
	"slices"
)

// KeySpace is the part of a table's keys a stored key belongs to. Every
// key a table writes is a tuple (see AppendTuple) that starts with the
// table's name and its space:
//
//	space            key elements after (name, space)      value
//	0 records        primary key components                version, then the record
//	1 index entries  index name, generation, entry key     the strategy's payload
//	2 catalog        index name                            the index's definition, state
//	3 queue          primary key components, change ID     when, scope, the record before
//	4 leases         none: the partitioning record         Partitions, its last expiry
//	                 Partitions, Partition: a lease        owner, expiry
//	5 intra entries  as 1, for IntraPartition indexes      as 1
//	6 usage          none                                  usage totals
//	7 record type    none                                  codec, type descriptor, primary key
//	8 hints          as 3: the change record's key after it    hint flags, when hinted
//
// An index entry key is the entry's key fields, then, unless the index is
// unique, the primary key components (a unique entry's value starts with
// them). The entry key of an IntraPartition index starts with the
// record's first primary key component, like the record's own key and its
// queued changes, so a store that partitions by that element keeps them
// together. A ShardedStore keeps one record per shard outside every
// table's keys (see ShardedStore), under a key no tuple starts with.
//
// The functions of keys.go build every key but for its last elements:
// a record's primary key components (Table.factKey) and an entry's key
// fields (indexTable.keys) are appended where they are computed. A Store
// that partitions or shards keys reads them with ParseKey.
type KeySpace uint8

// The key spaces of a table.
const (
	SpaceRecords    KeySpace = 0
	SpaceIndex      KeySpace = 1
	SpaceCatalog    KeySpace = 2
	SpaceQueue      KeySpace = 3
	SpaceLeases     KeySpace = 4
	SpaceIntra      KeySpace = 5
	SpaceUsage      KeySpace = 6
	SpaceRecordType KeySpace = 7
	SpaceHints      KeySpace = 8
	// SpaceOther is a key whose second element is none of the above.
	SpaceOther KeySpace = 255
)

// tablePrefix returns the prefix of every key of table name.
func tablePrefix(name string) []byte { return slices.Clip(appendString(nil, name)) }

// spacePrefix returns the prefix of the keys in space s of the table whose
// prefix is table; for SpaceUsage and SpaceRecordType, the key itself, and
// for SpaceLeases, the key of the partitioning record (see lease).
func spacePrefix(table []byte, s KeySpace) []byte {
	return slices.Clip(appendInt(bytes.Clone(table), int64(s)))
}

// usageKey returns the key of the table's usage totals.
func usageKey(table []byte) []byte { return spacePrefix(table, SpaceUsage) }

// recordTypeKey returns the key of the table's record type.
func recordTypeKey(table []byte) []byte { return spacePrefix(table, SpaceRecordType) }

// catalogKey returns the key of the catalog entry of index name.
func catalogKey(table []byte, name string) []byte {
	return appendString(spacePrefix(table, SpaceCatalog), name)
}

// schemaVersionKey returns the key of the table's schema version: the
// catalog entry of the empty name, which no index has. Every change of the
// catalog's indexes, generations or states changes it, in the batch that
// makes the change; writes on a store of unbounded atomicity expect it.
func schemaVersionKey(table []byte) []byte { return catalogKey(table, "") }

// indexPrefix returns the prefix of the entries of every generation of
// index name, in SpaceIntra when intra is set, else SpaceIndex.
func indexPrefix(table []byte, intra bool, name string) []byte {
	s := SpaceIndex
	if intra {
		s = SpaceIntra
	}
	return appendString(spacePrefix(table, s), name)
}

// generationPrefix returns the prefix of the entries of generation gen of
// index name.
func generationPrefix(table []byte, intra bool, name string, gen int64) []byte {
	return slices.Clip(appendInt(indexPrefix(table, intra, name), gen))
}

// leasesOf returns the prefix of the leases of the maintainers of a
// partitioning of the queue into partitions.
func leasesOf(table []byte, partitions int) []byte {
	return appendInt(spacePrefix(table, SpaceLeases), int64(partitions))
}

// leaseKey returns the key of the lease of maintainer partition of
// partitions.
func leaseKey(table []byte, partitions, partition int) []byte {
	return appendInt(leasesOf(table, partitions), int64(partition))
}

// appendChangeKey appends to dst the key of a change record of the record
// with encoded primary key pk, with change ID id, in the table whose
// queue space is queue.
func appendChangeKey(dst, queue, pk []byte, id int64) []byte {
	return appendInt(append(append(dst, queue...), pk...), id)
}

// hintKey returns the key of the hint of the change record at changeKey,
// in the table whose queue space is queue and hint space is hints: the
// change record's key with the one space in place of the other.
func hintKey(hints, queue, changeKey []byte) []byte {
	return append(bytes.Clone(hints), changeKey[len(queue):]...)
}

// StoredKey is a key a table stores, parsed by ParseKey: its elements, as
// encoded, where the key has them.
type StoredKey struct {
	Table []byte   // the table's name: the prefix of every key of the table
	Space KeySpace // the key's space; SpaceOther for none of a table's
	// Index is the index name, in SpaceIndex and SpaceIntra (its
	// generation follows it).
	Index []byte
	// Lead is the element that places the key in a partition or a shard:
	// the record's first primary key component in SpaceRecords and
	// SpaceQueue, the entry key's first element in SpaceIndex and
	// SpaceIntra (in SpaceIntra, the record's first primary key
	// component). Nil in the other spaces, or when the key ends before it.
	Lead []byte
	// Rest is what follows Lead (the rest of the primary key, a change ID,
	// the rest of an entry key) or, when Lead is nil, what follows the
	// space.
	Rest []byte
}

// ParseKey parses key as a key a table stores. It reports false for a key
// that does not start with a string and one more element, which no table
// writes. A key cut short (a scan bound, say) parses as far as it goes.
func ParseKey(key []byte) (StoredKey, bool) {
	var ends [5]int // where the table name, space, and up to 3 more elements end
	n := 0
	for off := 0; n < len(ends) && off < len(key); n++ {
		l, err := ElementLen(key[off:])
		if err != nil {
			break
		}
		off += l
		ends[n] = off
	}
	if n < 2 || key[0] != codeString {
		return StoredKey{}, false
	}
	k := StoredKey{Table: key[:ends[0]], Space: SpaceOther, Rest: key[ends[1]:]}
	if s, _, err := DecodeElement(key[ends[0]:ends[1]]); err == nil {
		if s, ok := s.(int64); ok && s >= 0 && s <= int64(SpaceHints) {
			k.Space = KeySpace(s)
		}
	}
	lead := 0 // the element Lead is, if the space has one
	switch k.Space {
	case SpaceRecords, SpaceQueue:
		lead = 2
	case SpaceIndex, SpaceIntra:
		if n > 2 {
			k.Index = key[ends[1]:ends[2]]
		}
		lead = 4
	}
	if lead > 0 && n > lead {
		k.Lead, k.Rest = key[ends[lead-1]:ends[lead]], key[ends[lead]:]
	}
	return k, true
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
