package kv

import "github.com/indextable/indextable/internal/tuple"

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
// together. An indextable.ShardedStore keeps one record per shard outside
// every table's keys, under a key no tuple starts with.
//
// A Store that partitions or shards keys reads them with ParseKey.
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
	if n < 2 || key[0] != tuple.CodeString {
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
