package pebblestore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The store hands Pebble no empty key, which kv.Store allows and Pebble
// mishandles: its default comparer's Separator panics, in a flush or a
// compaction, when a data block ends at the empty key (one whose value
// fills a 4 KiB block, or its versions that snapshots keep), its
// columnar blocks cannot hold it alone, and under its invariant checks
// (the race detector's builds) its sstable writers assert that no block
// ends at it and columnar blocks hold none, and its iterators cannot seek
// to it. So the store keeps each key k
// under a Pebble key of its format:
//
//	k        when k starts with a byte other than 0x00
//	0x00     when k is empty
//	0x00 k   when k starts with 0x00
//
// This keeps the order of keys, keeps most of them as they are (every key
// a table writes starts with 0x02 or 0xFF), and leaves unused the keys
// that start with 0x00 and another byte, where the store keeps the marker
// of its format (formatKey, holding formatMagic and the format), which
// reads skip.
//
// A store of pebblestore v0.1.0 kept every key as it is, and has no
// marker (a key of its at formatKey is its own unless it holds a marker's
// value). Open of one rewrites the keys it holds below 0x01, in one batch
// with the marker; a read-only Open, which cannot, refuses it if it holds
// any (they would read wrong), and reads it as it is otherwise (every key
// then reads the same).

// ErrFormat reports a store that this version cannot read: one that a
// later version wrote, or one of v0.1.0 that holds the empty key or keys
// that start with 0x00 and that Open cannot upgrade: opened read-only
// (a writable Open upgrades it), or holding more under them than one
// Pebble batch (4 GiB).
var ErrFormat = errors.New("pebblestore: unsupported store format")

var (
	// formatKey holds the store's format, formatValue, which starts with
	// formatMagic; no kv key is stored under it.
	formatKey   = []byte("\x00\x01pebblestore format")
	formatMagic = []byte("pebblestore format ")
	formatValue = append(formatMagic[:len(formatMagic):len(formatMagic)], '1')
	// encodedEmpty is the Pebble key of the empty key.
	encodedEmpty = []byte{0x00}
	// legacyEnd ends the keys that v0.1.0 stored otherwise.
	legacyEnd = []byte{0x01}
)

// encodeKey returns the Pebble key of k: k itself, unless k is empty or
// starts with 0x00.
func encodeKey(k []byte) []byte {
	switch {
	case len(k) == 0:
		return encodedEmpty[:1:1]
	case k[0] == 0x00:
		return append([]byte{0x00}, k...)
	}
	return k
}

// decodeKey returns the kv key that the Pebble key p stores (non-nil, and
// sharing p's memory), or false when p stores none: it is the format
// marker, or another key the store never writes.
func decodeKey(p []byte) ([]byte, bool) {
	switch {
	case len(p) == 0:
		return nil, false
	case p[0] != 0x00:
		return p, true
	case len(p) == 1:
		return p[:0], true
	case p[1] == 0x00:
		return p[1:], true
	}
	return nil, false
}

// prepareFormat checks the format of the store in db, upgrading one of
// v0.1.0 unless readOnly, with a batch of less than limit bytes, which it
// commits with wo. It returns an error wrapping ErrFormat for a store it
// cannot read.
func prepareFormat(db *pebble.DB, readOnly bool, wo *pebble.WriteOptions, limit uint64) error {
	v, err := get(db, formatKey, nil)
	switch {
	case err != nil:
		return err
	case bytes.Equal(v, formatValue):
		return nil
	case bytes.HasPrefix(v, formatMagic):
		return fmt.Errorf("%w: %q, of a later version (this one reads %q)", ErrFormat, v, formatValue)
	}
	it, err := db.NewIter(&pebble.IterOptions{UpperBound: legacyEnd})
	if err != nil {
		return fmt.Errorf("pebblestore: format: %w", err)
	}
	defer it.Close()
	if readOnly {
		if it.First() {
			return fmt.Errorf("%w: a store of pebblestore v0.1.0 that holds keys below 0x01, opened read-only (a writable Open upgrades it)", ErrFormat)
		}
		return wrapFormat(it.Error())
	}
	return wrapFormat(upgrade(db, it, wo, limit))
}

// upgrade rewrites the keys that it, an iterator over the keys below 0x01
// of a store of v0.1.0, yields, under their keys of the format, in one
// batch with the format marker, of less than limit bytes.
func upgrade(db *pebble.DB, it *pebble.Iterator, wo *pebble.WriteOptions, limit uint64) error {
	b := db.NewBatch()
	defer b.Close()
	// Each key's Pebble key may be another's key of v0.1.0 (0x00 0x00 is
	// that of 0x00): every delete goes first.
	for pass := range 2 {
		for valid := it.First(); valid; valid = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return err
			}
			if uint64(b.Len())+uint64(len(it.Key())+len(v))+32 >= limit {
				return fmt.Errorf("%w: a store of pebblestore v0.1.0 that holds too much under keys below 0x01 for the one batch (under %d bytes) that upgrades them", ErrFormat, limit)
			}
			if pass == 0 {
				err = b.Delete(it.Key(), nil)
			} else {
				err = b.Set(encodeKey(it.Key()), v, nil)
			}
			if err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return err
		}
	}
	if err := b.Set(formatKey, formatValue, nil); err != nil {
		return err
	}
	return b.Commit(wo)
}

// comparer is Pebble's default comparer, under its name, with a
// Separator that takes the empty key: a store of v0.1.0 may hold it, in a
// write-ahead log whose flush, at Open, would panic in the default's
// (with a value that fills a block; as the empty key is never handed to
// Pebble otherwise, only builds without Pebble's invariant checks can
// flush it). The key before a block that ends at the empty key is that
// key itself.
var comparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	separator := c.Separator
	c.Separator = func(dst, a, b []byte) []byte {
		if len(a) == 0 || len(b) == 0 {
			return append(dst, a...)
		}
		return separator(dst, a, b)
	}
	return &c
}()

// wrapFormat wraps err, unless nil or already the store's, as an error
// of the format's check.
func wrapFormat(err error) error {
	if err == nil || errors.Is(err, ErrFormat) {
		return err
	}
	return fmt.Errorf("pebblestore: format: %w", err)
}
