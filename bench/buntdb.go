package bench

import (
	"errors"
	"fmt"

	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
)

// buntDB keeps the workload in tidwall/buntdb, in memory: each customer is
// a JSON value under the key "c:"+ID, and the indexes are buntdb's JSON
// indexes over those values, "town_lastname" on (Town, LastName) and
// "lastname" on LastName.
//
// buntdb breaks ties between equal index values by key, and every key is
// "c:"+ID, so "town_lastname" is ordered by (Town, LastName, ID).
type buntDB struct {
	db *buntdb.DB
}

const buntPrefix = "c:"

// NewBuntDB returns a System kept in an in-memory tidwall/buntdb database.
func NewBuntDB() (System, error) {
	db, err := buntdb.Open(":memory:")
	if err != nil {
		return nil, err
	}
	var cfg buntdb.Config
	if err := db.ReadConfig(&cfg); err != nil {
		db.Close()
		return nil, err
	}
	cfg.SyncPolicy = buntdb.Never
	if err := db.SetConfig(cfg); err != nil {
		db.Close()
		return nil, err
	}
	// The case-sensitive JSON comparers: IndexJSON folds case, and the
	// workload's order (like go-memdb's and indextable's) is byte order.
	err = db.Update(func(tx *buntdb.Tx) error {
		if err := tx.CreateIndex("town_lastname", buntPrefix+"*",
			buntdb.IndexJSONCaseSensitive("Town"),
			buntdb.IndexJSONCaseSensitive("LastName")); err != nil {
			return err
		}
		return tx.CreateIndex("lastname", buntPrefix+"*",
			buntdb.IndexJSONCaseSensitive("LastName"))
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &buntDB{db: db}, nil
}

// Insert sets the record's value; buntdb's Set reports a replaced value,
// and returning an error from Update rolls the replacement back.
func (b *buntDB) Insert(c Customer) error {
	val := encodeCustomerJSON(c)
	return b.db.Update(func(tx *buntdb.Tx) error {
		_, replaced, err := tx.Set(buntPrefix+c.ID, val, nil)
		if err != nil {
			return err
		}
		if replaced {
			return fmt.Errorf("bench: customer %s exists", c.ID)
		}
		return nil
	})
}

// Update replaces the record's value, and with it its index entries; a
// Set that replaced nothing is rolled back.
func (b *buntDB) Update(c Customer) error {
	val := encodeCustomerJSON(c)
	return b.db.Update(func(tx *buntdb.Tx) error {
		_, replaced, err := tx.Set(buntPrefix+c.ID, val, nil)
		if err != nil {
			return err
		}
		if !replaced {
			return ErrNotFound
		}
		return nil
	})
}

// Lookup ascends "town_lastname" from the pivot (town, last): the pivot
// item's key is "", so it sorts before every entry equal to it, and the
// scan stops at the first entry past the pair. (AscendEqual would do the
// same, comparing pivot and entry once more per entry.)
func (b *buntDB) Lookup(town, last string, fn func(Customer)) error {
	buf := appendJSONField([]byte{'{'}, "Town", town, false)
	buf = appendJSONField(buf, "LastName", last, true)
	pivot := string(append(buf, '}'))
	return b.db.View(func(tx *buntdb.Tx) error {
		return tx.AscendGreaterOrEqual("town_lastname", pivot, func(_, v string) bool {
			c := decodeCustomerJSON(v)
			if c.Town != town || c.LastName != last {
				return false
			}
			fn(c)
			return true
		})
	})
}

// Range ascends "town_lastname" from the pivot {"Town":town}: its missing
// LastName is a JSON null, which gjson orders before every string, so the
// pivot is before the town's first entry. The scan stops after n entries
// or at the first entry of another town.
func (b *buntDB) Range(town string, n int, fn func(Customer)) error {
	if n <= 0 {
		return nil
	}
	pivot := string(append(appendJSONField([]byte{'{'}, "Town", town, false), '}'))
	return b.db.View(func(tx *buntdb.Tx) error {
		return tx.AscendGreaterOrEqual("town_lastname", pivot, func(_, v string) bool {
			c := decodeCustomerJSON(v)
			if c.Town != town {
				return false
			}
			fn(c)
			n--
			return n > 0
		})
	})
}

// Get reads the record's key.
func (b *buntDB) Get(id string) (Customer, error) {
	var c Customer
	err := b.db.View(func(tx *buntdb.Tx) error {
		v, err := tx.Get(buntPrefix + id)
		if err != nil {
			return err
		}
		c = decodeCustomerJSON(v)
		return nil
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return Customer{}, ErrNotFound
	}
	return c, err
}

// Scan ascends the keys; every key in the database is a customer's.
func (b *buntDB) Scan(fn func(Customer)) error {
	return b.db.View(func(tx *buntdb.Tx) error {
		return tx.Ascend("", func(_, v string) bool {
			fn(decodeCustomerJSON(v))
			return true
		})
	})
}

// Close closes the database.
func (b *buntDB) Close() error { return b.db.Close() }

// encodeCustomerJSON is a hand-written json.Marshal of c. Town and
// LastName come first, because every comparison in the indexes is a
// gjson.Get of them, which reads the object from its start.
func encodeCustomerJSON(c Customer) string {
	buf := make([]byte, 0, 80+len(c.ID)+len(c.FirstName)+len(c.LastName)+
		len(c.Town)+len(c.Email)+len(c.Phone))
	buf = append(buf, '{')
	buf = appendJSONField(buf, "Town", c.Town, false)
	buf = appendJSONField(buf, "LastName", c.LastName, true)
	buf = appendJSONField(buf, "ID", c.ID, true)
	buf = appendJSONField(buf, "FirstName", c.FirstName, true)
	buf = appendJSONField(buf, "Email", c.Email, true)
	buf = appendJSONField(buf, "Phone", c.Phone, true)
	buf = append(buf, '}')
	return string(buf)
}

// appendJSONField appends "name":"value", after a comma if comma is set.
// name must need no escaping.
func appendJSONField(buf []byte, name, value string, comma bool) []byte {
	if comma {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, name...)
	buf = append(buf, '"', ':')
	return appendJSONString(buf, value)
}

// appendJSONString appends s as a JSON string, escaping what JSON requires:
// the quote, the backslash and the control characters.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch ch {
		case '"', '\\':
			buf = append(buf, '\\', ch)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// decodeCustomerJSON reads a value encodeCustomerJSON wrote, in one pass
// with gjson (buntdb's own JSON reader). An unescaped string is a substring
// of v, so decoding allocates only for strings that held escapes.
func decodeCustomerJSON(v string) Customer {
	var c Customer
	gjson.Parse(v).ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "ID":
			c.ID = val.Str
		case "FirstName":
			c.FirstName = val.Str
		case "LastName":
			c.LastName = val.Str
		case "Town":
			c.Town = val.Str
		case "Email":
			c.Email = val.Str
		case "Phone":
			c.Phone = val.Str
		}
		return true
	})
	return c
}
