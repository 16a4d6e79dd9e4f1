package azstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Reading named rows of a partition. Azure bills and throttles every
// request, so reads of several rows of one partition go as one query,
// PartitionKey eq 'P' and (RowKey eq 'a' or RowKey eq 'b' ...), rather than
// one point read a row.

const (
	// rowsPerQuery is the most RowKey comparisons of one query: Azure
	// allows 15 discrete comparisons in a $filter, and the query spends
	// one on the PartitionKey.
	rowsPerQuery = 14
	// readsInFlight bounds the queries and point reads GetMany sends at
	// once.
	readsInFlight = 8
)

// quote returns s as an OData string literal, a quote doubled. Encoded
// keys and partitions hold none, but a filter should not depend on it.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// rowsFilter returns the filter of the rows of partition pk.
func rowsFilter(pk string, rows []string) string {
	var f strings.Builder
	f.WriteString("PartitionKey eq " + quote(pk) + " and (")
	for i, rk := range rows {
		if i > 0 {
			f.WriteString(" or ")
		}
		f.WriteString("RowKey eq " + quote(rk))
	}
	f.WriteString(")")
	return f.String()
}

// queryRows reads rows, at most rowsPerQuery of them, of partition pk with
// one query, following continuations if the service splits its answer,
// and calls fn with each entity's JSON, in RowKey order. format
// MetadataFormatMinimal gives each entity its ETag, as "odata.etag".
func (s *Store) queryRows(ctx context.Context, pk string, rows []string, format aztables.MetadataFormat, fn func(data []byte) error) error {
	if len(rows) > rowsPerQuery {
		return fmt.Errorf("azstore: %d rows for one query, which compares at most %d", len(rows), rowsPerQuery)
	}
	pager := s.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{
		Filter: to.Ptr(rowsFilter(pk, rows)),
		Format: to.Ptr(format),
	})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("azstore: query: %w", err)
		}
		for _, data := range page.Entities {
			if err := fn(data); err != nil {
				return err
			}
		}
	}
	return nil
}

// getRow reads row rk of partition pk with a point read, returning its
// value, or nil when it is absent.
func (s *Store) getRow(ctx context.Context, pk, rk string) ([]byte, error) {
	resp, err := s.client.GetEntity(ctx, pk, rk, nil)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("azstore: get: %w", err)
	}
	_, v, err := parseEntity(resp.Value)
	return v, err
}

// rowRead is one request of GetMany: rows of one partition, and what it
// found of them, by RowKey.
type rowRead struct {
	pk    string
	rows  []string
	found map[string][]byte
}

// read sends r: a point read for one row, a query for more.
func (r *rowRead) read(ctx context.Context, s *Store) error {
	r.found = make(map[string][]byte, len(r.rows))
	if len(r.rows) == 1 {
		v, err := s.getRow(ctx, r.pk, r.rows[0])
		if v != nil {
			r.found[r.rows[0]] = v
		}
		return err
	}
	return s.queryRows(ctx, r.pk, r.rows, aztables.MetadataFormatNone, func(data []byte) error {
		rk, v, err := parseEntity(data)
		if err == nil {
			r.found[rk] = v
		}
		return err
	})
}

// rowID names a key's entity: its PartitionKey and RowKey.
type rowID struct{ pk, rk string }

// rowIDs returns the entities of keys; a key too long to be stored has
// the zero rowID.
func rowIDs(keys [][]byte) []rowID {
	ids := make([]rowID, len(keys))
	for i, k := range keys {
		if len(k) <= maxKeyBytes {
			ids[i] = rowID{partitionKey(Partition(k)), rowKey(k)}
		}
	}
	return ids
}

// rowReads groups the distinct entities of ids by partition, in chunks of
// rowsPerQuery rows, leaving out the zero rowID.
func rowReads(ids []rowID) []*rowRead {
	var (
		byPartition = map[string][]string{}
		order       []string // partitions, as ids first name them
		seen        = map[rowID]bool{{}: true}
	)
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if byPartition[id.pk] == nil {
			order = append(order, id.pk)
		}
		byPartition[id.pk] = append(byPartition[id.pk], id.rk)
	}
	var reads []*rowRead
	for _, pk := range order {
		for rows := range slices.Chunk(byPartition[pk], rowsPerQuery) {
			reads = append(reads, &rowRead{pk: pk, rows: rows})
		}
	}
	return reads
}

// GetMany reads keys and appends their values to dst in the order of
// keys, with nil for each absent key. It reads each partition's keys with
// one query a rowsPerQuery of them (a point read for a single key), up to
// 8 requests at a time; a key too long to be stored is absent without a
// request.
func (s *Store) GetMany(ctx context.Context, keys [][]byte, dst [][]byte) ([][]byte, error) {
	if err := s.begin(ctx); err != nil {
		return dst, err
	}
	ids := rowIDs(keys)
	reads := rowReads(ids)
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readsInFlight)
	for i, r := range reads {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := ctx.Err(); err != nil {
				errs[i] = fmt.Errorf("azstore: %w", err)
				return
			}
			errs[i] = r.read(ctx, s)
		}()
	}
	wg.Wait()
	found := map[rowID][]byte{}
	for i, r := range reads {
		if errs[i] != nil {
			return dst, errs[i]
		}
		for rk, v := range r.found {
			found[rowID{r.pk, rk}] = v
		}
	}
	used := map[rowID]bool{}
	for _, id := range ids {
		v := found[id]
		if used[id] {
			v = bytes.Clone(v) // a key that keys repeat: its own copy
		}
		used[id] = true
		dst = append(dst, v)
	}
	return dst, nil
}
