package azstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/indextable/indextable"
	"github.com/indextable/indextable/kv"
)

// alphabet holds the 64 characters of encoded keys, in ascending order.
// They are ASCII, where JavaScript's UTF-16 order (Azurite's) and byte
// order (Azure's) agree, and none is forbidden in a key (/ \ # ? and
// control characters).
const alphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// maxKeyChars is the longest PartitionKey or RowKey Azure takes: 1 KiB of
// UTF-16. maxKeyBytes is the longest key whose RowKey fits.
const (
	maxKeyChars = 512
	maxKeyBytes = (maxKeyChars - 1) * 6 / 8
)

// rowKey and partitionKey return the encoded key and partition, after a
// letter that keeps them from being empty, which the SDK refuses.
func rowKey(key []byte) string     { return "k" + encodeKey(key) }
func partitionKey(p []byte) string { return "p" + encodeKey(p) }

// keyOf inverts rowKey.
func keyOf(rk string) ([]byte, error) {
	enc, ok := strings.CutPrefix(rk, "k")
	if !ok {
		return nil, fmt.Errorf("%w: %q", errBadKey, rk)
	}
	return decodeKey(enc)
}

var errBadKey = errors.New("azstore: not an encoded key")

var decoding = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i := range len(alphabet) {
		d[alphabet[i]] = int8(i)
	}
	return d
}()

// encodeKey maps key to a string in the alphabet, six bits a character,
// the last padded with zero bits. The map preserves order: encoded strings
// compare as their keys do, a prefix included, since a key's bits followed
// by zero bits sort no later than any extension of them, and lengths
// differ. It is one to one: n bytes make ⌈8n/6⌉ characters.
func encodeKey(key []byte) string {
	out := make([]byte, 0, (len(key)*8+5)/6)
	var acc uint32
	bits := 0
	for _, c := range key {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 6 {
			bits -= 6
			out = append(out, alphabet[acc>>bits&63])
		}
	}
	if bits > 0 {
		out = append(out, alphabet[acc<<(6-bits)&63])
	}
	return string(out)
}

// decodeKey inverts encodeKey.
func decodeKey(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)*6/8)
	var acc uint32
	bits := 0
	for i := range len(s) {
		v := decoding[s[i]]
		if v < 0 {
			return nil, fmt.Errorf("%w: %q", errBadKey, s)
		}
		acc = acc<<6 | uint32(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			out = append(out, byte(acc>>bits))
		}
	}
	// What is left must be the zero padding of the last character, shorter
	// than a byte and not a whole character.
	if bits >= 6 || acc&(1<<bits-1) != 0 {
		return nil, fmt.Errorf("%w: %q", errBadKey, s)
	}
	return out, nil
}

// Partition is the store's atomicity scope: the partition of a key. A
// record shares its partition with its change records and with the entries
// of its table's intra-partition indexes (see indextable.Placement), all
// named by the record's first primary key component, so a write of the
// record, those entries and its queued changes is one entity group
// transaction. An inter-partition index table is partitioned by its first
// key component, so an exact or prefix read of it touches one partition.
// The catalog and the leases of a table have a partition each. A key that
// extends an indextable key with bytes that are not a tuple element is in
// that key's partition; any other key is partitioned by its first two
// bytes. Keep such keys out of the ranges of indextable keys: a scan that
// finds them out of order fails.
//
// Partitions ascend with keys within each space of a table (records,
// indexes, catalog, queue, leases) and within each generation of an
// intra-partition index, which lets a scan of one follow the table's
// (PartitionKey, RowKey) order.
//
// It reads a table's keys as kv.KeySpace lays them out, and agrees
// with kv.ParseKey on every one (a test checks it); it decodes keys
// itself because where it puts keys that are no table's is part of what it
// has stored, and must not move.
func Partition(key []byte) []byte {
	p, _ := partition(key)
	return p
}

// partition returns the partition p of key, and a prefix of key (nil if
// none) whose extensions as a tuple (the keys from prefix to prefix+0xFF)
// all lie in p: a scan within them is a query of one partition.
func partition(key []byte) (p, prefix []byte) {
	raw := key[:min(len(key), 2)]
	t := decodePrefix(key)
	if len(t) < 2 {
		return raw, nil
	}
	space, ok := t[1].(int64)
	if !ok {
		return raw, nil
	}
	records, index := int64(kv.SpaceRecords), int64(kv.SpaceIndex)
	queue, intra := int64(kv.SpaceQueue), int64(kv.SpaceIntra)
	var err error
	switch {
	case space == records && len(t) >= 3: // a record; its changes and entries below
		p, err = kv.EncodeTuple(t[:3]...)
		prefix = p
	case space == queue && len(t) >= 3: // a record's changes
		p, err = kv.EncodeTuple(t[0], records, t[2])
		if err == nil {
			prefix, err = kv.EncodeTuple(t[:3]...)
		}
	case space == intra && len(t) >= 5: // table, space, index, generation, record's partition
		p, err = kv.EncodeTuple(t[0], records, t[4])
		if err == nil {
			prefix, err = kv.EncodeTuple(t[:5]...)
		}
	case space == index && len(t) >= 5: // an index table, by its first component
		p, err = kv.EncodeTuple(t[:5]...)
		prefix = p
	default:
		p, err = kv.EncodeTuple(t[:2]...)
		if space != records && space != index && space != queue && space != intra {
			prefix = p
		}
	}
	if err != nil {
		return raw, nil
	}
	return p, prefix
}

// decodePrefix decodes the longest prefix of key that is a tuple, so that
// a key that extends a tuple with bytes that are not one falls in the
// tuple's partition.
func decodePrefix(key []byte) indextable.Tuple {
	for n := len(key); n > 0; n-- {
		if t, err := kv.DecodeTuple(key[:n]); err == nil {
			return t
		}
	}
	return nil
}
