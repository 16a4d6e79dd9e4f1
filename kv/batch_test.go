package kv_test

import (
	"fmt"
	"testing"

	indextable "github.com/indextable/indextable/kv"
	"github.com/stretchr/testify/require"
)

// opBatch builds a Batch of ops; an unknown kind is set through Ops, the only
// way to build one.
func opBatch(ops ...indextable.Op) *indextable.Batch {
	var b indextable.Batch
	for _, op := range ops {
		switch op.Kind {
		case indextable.OpPut:
			b.Put(op.Key, op.Value)
		case indextable.OpDelete:
			b.Delete(op.Key)
		case indextable.OpExpectValue:
			b.ExpectValue(op.Key, op.Value)
		case indextable.OpExpectAbsent:
			b.ExpectAbsent(op.Key)
		default:
			b.Put(op.Key, op.Value)
			b.Ops()[b.Len()-1].Kind = op.Kind
		}
	}
	return &b
}

func opPut(k, v string) indextable.Op {
	return indextable.Op{Kind: indextable.OpPut, Key: []byte(k), Value: []byte(v)}
}

func opDelete(k string) indextable.Op {
	return indextable.Op{Kind: indextable.OpDelete, Key: []byte(k)}
}

func opExpect(k, v string) indextable.Op {
	return indextable.Op{Kind: indextable.OpExpectValue, Key: []byte(k), Value: []byte(v)}
}

func opAbsent(k string) indextable.Op {
	return indextable.Op{Kind: indextable.OpExpectAbsent, Key: []byte(k)}
}

// opPuts returns n puts of distinct keys.
func opPuts(n int) []indextable.Op {
	ops := make([]indextable.Op, n)
	for i := range ops {
		ops[i] = opPut(fmt.Sprint("k", i), "v")
	}
	return ops
}

func TestCheckBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []indextable.Op
		ok   bool
	}{
		{"empty", nil, true},
		{"distinct writes", []indextable.Op{opPut("a", ""), opDelete("b"), opPut("", "")}, true},
		{"put twice", []indextable.Op{opPut("a", "1"), opPut("b", ""), opPut("a", "2")}, false},
		{"put and delete", []indextable.Op{opPut("a", "1"), opDelete("a")}, false},
		{"empty key twice", []indextable.Op{opPut("", ""), opDelete("")}, false},
		{"compare and set", []indextable.Op{opExpect("a", "1"), opPut("a", "2"), opAbsent("b"), opDelete("b")}, true},
		{"write then expect", []indextable.Op{opPut("a", "2"), opExpect("a", "1")}, true},
		{"expectations twice", []indextable.Op{opExpect("a", "1"), opAbsent("a"), opExpect("a", "2")}, true},
		{"zero kind", []indextable.Op{{Key: []byte("a")}}, false},
		{"unknown kind", []indextable.Op{opPut("a", ""), {Kind: 99, Key: []byte("b")}}, false},
		{"many distinct", opPuts(20), true},
		{"many with a duplicate", append(opPuts(20), opDelete("k7")), false},
		{"many with compare and set", append(opPuts(20), opExpect("k3", "v"), opAbsent("x"), opDelete("x")), true},
		{"many with unknown kind", append(opPuts(20), indextable.Op{Kind: 99}), false},
	} {
		err := indextable.CheckBatch(opBatch(tc.ops...))
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, indextable.ErrInvalidBatch, tc.name)
		}
	}
}
